"""Claim 1.1: deeper plain nets reach a higher *training* error; their residual twins do not.

One recipe for every net (:mod:`helpers.experiments.twins`): for each depth and seed, a
plain net and its residual twin start from exactly the same weights. To rule out that the
plain nets only fail at the recipe's learning rate, every net is also trained at each rate
of a small grid, from the same initial weights, and compared at its *best* rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import non_empty, positive_int, real_number
from ..measure.lesion import error_rate
from ..measure.tuning import best_setting
from ..parallel import run_all
from .twins import KINDS, train_twin_group


@dataclass
class DegradationResult:
    """Training curves and final errors of plain and residual nets, per depth, learning rate and seed.

    ``curves[kind, depth, lr]`` is an array (seeds x epochs) of per-epoch training error;
    ``train_error`` and ``test_error`` ``[kind, depth, lr]`` are arrays over seeds of the
    final error on the whole training / test set (eval mode). Errors are fractions in
    [0, 1]. ``lr`` is the recipe's learning rate, ``lrs`` the grid swept.
    """

    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    epochs: int
    lr: float
    lrs: tuple[float, ...]
    curves: dict
    train_error: dict
    test_error: dict
    kinds: tuple[str, ...] = KINDS

    def mean_train_error(self, kind: str, depth: int, lr: float | None = None) -> float:
        """Mean over seeds of the final training error, at ``lr`` (default: the recipe's)."""
        return float(self.train_error[kind, depth, self.lr if lr is None else lr].mean())

    def mean_test_error(self, kind: str, depth: int, lr: float | None = None) -> float:
        return float(self.test_error[kind, depth, self.lr if lr is None else lr].mean())

    def best_lr(self, kind: str, depth: int) -> float:
        """The learning rate of the grid with the lowest mean training error over seeds for this
        kind and depth (:func:`helpers.measure.tuning.best_setting`)."""
        return best_setting({lr: self.train_error[kind, depth, lr] for lr in self.lrs})

    def best_train_error(self, kind: str, depth: int) -> float:
        return self.mean_train_error(kind, depth, self.best_lr(kind, depth))


def _train_and_measure(data, depth: int, seeds, lrs, **recipe) -> dict:
    """Every net of one depth: ``{(kind, seed, lr): (training-error curve, final train error, final test error)}``."""
    group = train_twin_group(data, depth, seeds, lrs=lrs, progress=False, **recipe)
    return {key: (hist.train_error, error_rate(model, data.x_train, data.y_train),
                  error_rate(model, data.x_test, data.y_test)) for key, (model, hist) in group.items()}


def run_degradation(data, *, depths=(8, 20, 56), seeds=(0, 1, 2), lr: float = 0.05, lrs=None,
                    width: int = 32, epochs: int = 30, batch_size: int = 128,
                    progress: bool | None = None, workers: int | None = None) -> DegradationResult:
    """Train a plain and a residual :class:`~helpers.models.mlp.DeepMLP` for each depth, seed
    and learning rate of ``lrs`` (default: only ``lr``, the recipe's; ``lr`` is added to ``lrs``).

    The nets of one depth train together (:func:`helpers.experiments.twins.train_twin_group`);
    the depths go side by side on ``workers`` cores (default: all; :func:`helpers.parallel.run_all`).
    Every net seeds itself and the jobs are the same whatever ``workers`` is, so the result does
    not depend on ``workers`` or on the machine's cores, bit for bit (a test checks 1, 2 and 4).
    """
    depths = tuple(positive_int("depths[i]", d, minimum=4) for d in non_empty("depths", depths))
    seeds = tuple(positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds))
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    lrs = tuple(sorted({lr, *(real_number("lrs[i]", v, low=0.0, low_inclusive=False)
                              for v in non_empty("lrs", (lr,) if lrs is None else lrs))}))
    epochs = positive_int("epochs", epochs)
    recipe = dict(width=width, epochs=epochs, batch_size=batch_size)
    # One job per depth, the deepest first; the deepest depth's learning rates are always split
    # into two jobs, since a job's cost grows with its depth (with depths 8, 20, 56 two cores
    # then finish at about the same time). The split is a property of the experiment, never of
    # the machine: the nets of one job train as one batched stack, and batched products round
    # differently with the stack's size, so a split chosen by the number of cores would make
    # the numbers depend on the machine (a test trains with 1, 2 and 4 workers).
    order = sorted(depths, reverse=True)
    chunks = [(d, lrs) for d in order]
    if len(lrs) > 1:
        half = len(lrs) // 2
        chunks[:1] = [(order[0], lrs[:half]), (order[0], lrs[half:])]
    jobs = [dict(data=data, depth=d, seeds=seeds, lrs=rates, **recipe) for d, rates in chunks]
    measured = run_all(_train_and_measure, jobs, workers=workers, progress=progress, description="training jobs")
    by_depth: dict = {d: {} for d in order}
    for (depth, _), by_net in zip(chunks, measured):
        by_depth[depth].update(by_net)
    curves, train_err, test_err = {}, {}, {}
    for depth, by_net in by_depth.items():
        for kind in KINDS:
            for rate in lrs:
                runs = [by_net[kind, seed, rate] for seed in seeds]
                curves[kind, depth, rate] = np.array([r[0] for r in runs])
                train_err[kind, depth, rate] = np.array([r[1] for r in runs])
                test_err[kind, depth, rate] = np.array([r[2] for r in runs])
    return DegradationResult(depths, seeds, epochs, lr, lrs, curves, train_err, test_err)
