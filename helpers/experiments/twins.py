"""Train a plain net and its residual twin from the same initial weights, with one recipe.

The recipe (He et al. 2015's CIFAR recipe scaled down to the digits): SGD with momentum
0.9, weight decay 1e-4, batches of 128, a constant learning rate, He init, BatchNorm,
post-activation blocks. The residual net is built first and the plain net is its
:meth:`~helpers.models.mlp.DeepMLP.twin`.
"""

from __future__ import annotations

from .._checks import non_empty, positive_int
from ..models import DeepMLP
from ..parallel import run_all
from ..seeding import seed_everything
from ..training import fit


def train_twins(data, depth: int, *, seed: int = 0, width: int = 32, epochs: int = 30,
                lr: float = 0.05, batch_size: int = 128, **model_options) -> dict:
    """``{"plain": (model, history), "residual": (model, history)}``, trained on ``data``.

    ``model_options`` go to :class:`~helpers.models.mlp.DeepMLP` (``norm``, ``init``, ...).
    """
    seed = positive_int("seed", seed, minimum=0)
    seed_everything(seed)
    residual = DeepMLP(depth, width, kind="residual", in_features=data.n_features,
                       n_classes=data.n_classes, **model_options)
    out = {}
    for model in (residual.twin(), residual):
        history = fit(model, data.x_train, data.y_train, epochs=epochs, lr=lr,
                      batch_size=batch_size, seed=seed, progress=False)
        out[model.kind] = (model, history)
    return out


def train_twins_for_seeds(data, depth: int, seeds, *, workers: int | None = None, **options) -> list[dict]:
    """:func:`train_twins` once per seed, side by side on the available cores
    (:func:`helpers.parallel.run_all`); returns the results in the order of ``seeds``.
    ``options`` go to :func:`train_twins`."""
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    return run_all(train_twins, [dict(data=data, depth=depth, seed=s, **options) for s in seeds],
                   workers=workers, description="seeds")
