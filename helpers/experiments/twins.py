"""Train a plain net and its residual twin from the same initial weights, with one recipe.

The recipe (He et al. 2015's CIFAR recipe scaled down to the digits): SGD with momentum
0.9, weight decay 1e-4, batches of 128, a constant learning rate, He init, BatchNorm,
post-activation blocks. The residual net is built first and the plain net is its
:meth:`~helpers.models.mlp.DeepMLP.twin`.

:func:`train_twin` trains one net with the readable loop of :func:`helpers.training.fit`;
:func:`train_twin_group` trains many at once with the same loop (a stack of nets: the
same updates, to float rounding, several times faster).
"""

from __future__ import annotations

import copy

from .._checks import choice, non_empty, real_number
from ..models import DeepMLP
from ..seeding import isolated
from ..training import fit

KINDS = ("plain", "residual")


def _draw_twins(data, depth: int, seed: int, width: int, **model_options) -> dict:
    """``{"plain": net, "residual": net}``: the residual net drawn from ``seed``, the plain net its twin."""
    with isolated(seed):
        residual = DeepMLP(depth, width, kind="residual", in_features=data.n_features,
                           n_classes=data.n_classes, **model_options)
    return {"plain": residual.twin(), "residual": residual}


def train_twin(data, depth: int, kind: str, *, seed: int = 0, width: int = 32, epochs: int = 30,
               lr: float = 0.05, batch_size: int = 128, **model_options) -> tuple:
    """``(model, history)``: one of the twins drawn from ``seed``, trained alone by
    :func:`~helpers.training.fit`; the mini-batch order depends on ``seed`` only."""
    model = _draw_twins(data, depth, seed, width, **model_options)[choice("kind", kind, KINDS)]
    history = fit(model, data.x_train, data.y_train, epochs=epochs, lr=lr,
                  batch_size=batch_size, seed=seed, progress=False)
    return model, history


def train_twin_group(data, depth: int, seeds, *, lrs=(0.05,), width: int = 32, epochs: int = 30,
                     batch_size: int = 128, kinds=KINDS, warmup_steps: int = 0, weight_decay: float = 1e-4,
                     progress: bool | None = None, initial: dict | None = None, **model_options) -> dict:
    """Both twins (or only ``kinds``) for every seed and learning rate, trained together;
    ``{(kind, seed, lr): (model, history)}``.

    For each seed the twins are drawn once; every learning rate starts from a copy of
    those same weights and sees the same mini-batches, so the learning rates are
    compared on equal terms. Each net is the one :func:`train_twin` would train (to float
    rounding: :func:`helpers.training.fit` with a list of nets). ``warmup_steps`` > 0 ramps
    each rate up linearly over the first steps; ``weight_decay`` is the recipe's 1e-4 unless
    given (:func:`helpers.training.fit`). A dict passed
    as ``initial`` receives ``{(kind, seed): net}``, the untrained nets.
    """
    seeds = non_empty("seeds", seeds)  # each seed checked where it is used (isolated, fit)
    lrs = [real_number("lrs[i]", lr, low=0.0, low_inclusive=False) for lr in non_empty("lrs", lrs)]
    kinds = [choice("kinds[i]", k, KINDS) for k in non_empty("kinds", kinds)]
    if initial is not None and not isinstance(initial, dict):
        raise TypeError(f"initial must be a dict to fill in (or None), got {type(initial).__name__}")
    keys, models = [], []
    for seed in seeds:
        twins = _draw_twins(data, depth, seed, width, **model_options)
        for lr in lrs:
            for kind in KINDS:
                if kind in kinds:
                    keys.append((kind, seed, lr))
                    models.append(copy.deepcopy(twins[kind]))
        if initial is not None:
            initial.update({(kind, seed): twins[kind] for kind in kinds})
    histories = fit(models, data.x_train, data.y_train, epochs=epochs, lr=[k[2] for k in keys],
                    seed=[k[1] for k in keys], batch_size=batch_size, warmup_steps=warmup_steps,
                    weight_decay=weight_decay, progress=progress, description=f"{len(models)} nets of depth {depth}")
    return dict(zip(keys, zip(models, histories)))


def train_twins(data, depth: int, *, seed: int = 0, **options) -> dict:
    """``{"plain": (model, history), "residual": (model, history)}``, trained on ``data``
    from the same initial weights. ``options`` go to :func:`train_twin_group` (``width``,
    ``epochs``, ``batch_size``) and to :class:`~helpers.models.mlp.DeepMLP` (``norm``,
    ``init``, ...); ``lr`` is one learning rate."""
    lr = options.pop("lr", 0.05)
    group = train_twin_group(data, depth, [seed], lrs=[lr], **options)
    return {kind: group[kind, seed, lr] for kind in KINDS}


def train_twins_for_seeds(data, depth: int, seeds, *, lr: float = 0.05, **options) -> list[dict]:
    """:func:`train_twins` for each seed, all nets trained together; returns the results in
    the order of ``seeds``. ``options`` go to :func:`train_twin_group`."""
    seeds = non_empty("seeds", seeds)
    group = train_twin_group(data, depth, seeds, lrs=[lr], **options)
    return [{kind: group[kind, seed, lr] for kind in KINDS} for seed in seeds]
