"""Claim 1.1: deeper plain nets reach a higher *training* error; their residual twins do not.

One recipe for every net (:func:`helpers.experiments.twins.train_twin`): for each
depth and seed, a plain net and its residual twin start from exactly the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import non_empty, positive_int
from ..measure.lesion import error_rate
from ..parallel import run_all
from .twins import KINDS, train_twin


@dataclass
class DegradationResult:
    """Training curves and final errors of plain and residual nets, per depth and seed.

    ``curves[kind, depth]`` is an array (seeds x epochs) of per-epoch training error;
    ``train_error`` and ``test_error`` ``[kind, depth]`` are arrays over seeds of the final
    error on the whole training / test set (eval mode). Errors are fractions in [0, 1].
    """

    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    epochs: int
    curves: dict
    train_error: dict
    test_error: dict
    kinds: tuple[str, ...] = KINDS

    def mean_train_error(self, kind: str, depth: int) -> float:
        return float(self.train_error[kind, depth].mean())

    def mean_test_error(self, kind: str, depth: int) -> float:
        return float(self.test_error[kind, depth].mean())


def _train_and_measure(data, depth: int, kind: str, seed: int, **recipe) -> tuple:
    """One net: ``(training-error curve, final train error, final test error)``."""
    model, hist = train_twin(data, depth, kind, seed=seed, **recipe)
    return (hist.train_error, error_rate(model, data.x_train, data.y_train),
            error_rate(model, data.x_test, data.y_test))


def run_degradation(data, *, depths=(8, 20, 56), seeds=(0, 1, 2), width: int = 32,
                    epochs: int = 30, lr: float = 0.05, batch_size: int = 128,
                    progress: bool | None = None, workers: int | None = None) -> DegradationResult:
    """Train a plain and a residual :class:`~helpers.models.mlp.DeepMLP` for each depth and seed.

    The runs are independent and go side by side on the available cores
    (:func:`helpers.parallel.run_all`); each seeds itself, so the result does not depend
    on ``workers``.
    """
    depths = tuple(positive_int("depths[i]", d, minimum=4) for d in non_empty("depths", depths))
    seeds = tuple(positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds))
    epochs = positive_int("epochs", epochs)
    recipe = dict(width=width, epochs=epochs, lr=lr, batch_size=batch_size)
    # One job per net, the deepest first, so that two cores finish at about the same time.
    runs = sorted(((d, k, s) for d in depths for k in KINDS for s in seeds), key=lambda r: -r[0])
    measured = run_all(_train_and_measure, [dict(data=data, depth=d, kind=k, seed=s, **recipe) for d, k, s in runs],
                       workers=workers, progress=progress, description="nets")
    by_run = dict(zip(runs, measured))
    curves, train_err, test_err = {}, {}, {}
    for depth in depths:
        for seed in seeds:
            for kind in KINDS:
                curve, train, test = by_run[depth, kind, seed]
                curves.setdefault((kind, depth), []).append(curve)
                train_err.setdefault((kind, depth), []).append(train)
                test_err.setdefault((kind, depth), []).append(test)
    as_arrays = lambda d: {k: np.array(v) for k, v in d.items()}  # noqa: E731
    return DegradationResult(depths, seeds, epochs, as_arrays(curves), as_arrays(train_err),
                             as_arrays(test_err))
