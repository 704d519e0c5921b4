"""Train a plain net and its residual twin from the same initial weights, with one recipe.

The recipe (He et al. 2015's CIFAR recipe scaled down to the digits): SGD with momentum
0.9, weight decay 1e-4, batches of 128, a constant learning rate, He init, BatchNorm,
post-activation blocks. The residual net is built first and the plain net is its
:meth:`~helpers.models.mlp.DeepMLP.twin`.
"""

from __future__ import annotations

from .._checks import choice, non_empty, positive_int
from ..models import DeepMLP
from ..parallel import run_all
from ..seeding import seed_everything
from ..training import fit

KINDS = ("plain", "residual")


def train_twin(data, depth: int, kind: str, *, seed: int = 0, width: int = 32, epochs: int = 30,
               lr: float = 0.05, batch_size: int = 128, **model_options) -> tuple:
    """``(model, history)``: one of the twins of :func:`train_twins`, trained alone.

    The residual net is drawn from ``seed`` and the plain net is its twin, and the
    mini-batch order depends on ``seed`` only, so this is bit for bit the same net as
    ``train_twins(...)[kind]``; two jobs of one net each share two cores better than one
    job of two nets.
    """
    seed = positive_int("seed", seed, minimum=0)
    kind = choice("kind", kind, KINDS)
    seed_everything(seed)
    residual = DeepMLP(depth, width, kind="residual", in_features=data.n_features,
                       n_classes=data.n_classes, **model_options)
    model = residual if kind == "residual" else residual.twin()
    history = fit(model, data.x_train, data.y_train, epochs=epochs, lr=lr,
                  batch_size=batch_size, seed=seed, progress=False)
    return model, history


def train_twins(data, depth: int, *, seed: int = 0, **options) -> dict:
    """``{"plain": (model, history), "residual": (model, history)}``, trained on ``data``
    from the same initial weights. ``options`` go to :func:`train_twin` (``width``,
    ``epochs``, ``lr``, ``batch_size``) and to :class:`~helpers.models.mlp.DeepMLP`
    (``norm``, ``init``, ...)."""
    return {kind: train_twin(data, depth, kind, seed=seed, **options) for kind in KINDS}


def train_twins_for_seeds(data, depth: int, seeds, *, workers: int | None = None, **options) -> list[dict]:
    """:func:`train_twins` once per seed, each net a job of its own, side by side on the
    available cores (:func:`helpers.parallel.run_all`); returns the results in the order
    of ``seeds``. ``options`` go to :func:`train_twin`."""
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    jobs = [dict(data=data, depth=depth, kind=k, seed=s, **options) for s in seeds for k in KINDS]
    nets = run_all(train_twin, jobs, workers=workers, description="nets")
    return [{job["kind"]: net for job, net in zip(jobs[2 * i:2 * i + 2], nets[2 * i:2 * i + 2])}
            for i in range(len(seeds))]
