"""Claim 1.8: loss-landscape slices around trained plain and residual nets, several at once.

Each 2-D slice (:func:`helpers.measure.landscape.loss_surface_2d`) costs a few hundred
evaluations of the training loss; the slices of different nets are independent, so they
are computed side by side on the available cores (:func:`helpers.parallel.run_all`).
"""

from __future__ import annotations

import numpy as np
from torch.nn import functional as F

from .._checks import non_empty
from ..measure.landscape import loss_surface_2d
from ..parallel import run_all


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
