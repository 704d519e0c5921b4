"""Claim 1.8: loss-landscape slices around trained plain and residual nets, several at once.

Each 2-D slice (:func:`helpers.measure.landscape.loss_surface_2d`) costs a few hundred
evaluations of the training loss; the slices of different nets are independent, so they
are computed side by side on the available cores (:func:`helpers.parallel.run_all`).
"""

from __future__ import annotations

import numpy as np
from torch.nn import functional as F

from .._checks import non_empty, positive_int, real_number
from ..measure.landscape import loss_at, loss_surface_2d
from ..parallel import run_all
from .twins import train_twin_group


def train_loss_surfaces(runs, data, grid, *, seed: int = 0, workers: int | None = None) -> dict[str, list[np.ndarray]]:
    """Training cross-entropy on the ``grid x grid`` slice around every net of ``runs``.

    ``runs`` is a list of ``{kind: model}`` (one entry per seed); the result is
    ``{kind: [surface of run 0, surface of run 1, ...]}``, each surface indexed ``[b, a]``.
    Every net is sliced along directions drawn with the same ``seed``.
    """
    runs = non_empty("runs", runs)
    if not all(isinstance(r, dict) for r in runs):
        raise TypeError("runs must be a list of {kind: model} dicts")
    pairs = [(kind, model) for run in runs for kind, model in run.items()]
    jobs = [dict(model=model, loss_fn=F.cross_entropy, x=data.x_train, y=data.y_train, alphas=grid, seed=seed)
            for _, model in pairs]
    surfaces = run_all(loss_surface_2d, jobs, workers=workers, description="loss surfaces")
    out: dict[str, list[np.ndarray]] = {}
    for (kind, _), surface in zip(pairs, surfaces):
        out.setdefault(kind, []).append(surface)
    return out


def checkpoint_at_loss(data, depth: int, seed: int, target: float, *, kind: str = "residual",
                       max_epochs: int = 30, **options):
    """``(net, epochs)``: the ``kind`` twin of ``seed`` as the recipe's run
    (:func:`~helpers.experiments.twins.train_twin_group`) left it after ``epochs`` epochs, the
    epoch whose training loss (cross-entropy on the whole training set, in evaluation mode)
    is nearest ``target`` on a log scale, among the epochs up to the first at or below it
    (at most ``max_epochs``). The first ``epochs`` epochs of a longer run are a run of
    ``epochs`` epochs (a constant rate, the same mini-batches; to float rounding, since the
    recipe trains nets in a stack), so each is trained anew."""
    target = real_number("target", target, low=0.0, low_inclusive=False)
    best = None
    for epochs in range(1, positive_int("max_epochs", max_epochs) + 1):
        [(net, _)] = train_twin_group(data, depth, [seed], kinds=(kind,), epochs=epochs, progress=False,
                                      **options).values()
        loss = train_loss(net, data)
        if best is None or abs(np.log(loss / target)) < abs(np.log(best[2] / target)):
            best = (net, epochs, loss)
        if loss <= target:
            break
    return best[0], best[1]


def train_loss(model, data) -> float:
    """Cross-entropy (nats) of ``model`` on the whole training set, in evaluation mode (the
    centre of the landscape's slices, :func:`helpers.measure.landscape.loss_at` with no step)."""
    return loss_at(model, F.cross_entropy, data.x_train, data.y_train, [])
