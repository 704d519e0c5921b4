"""Claim 1.1: deeper plain nets reach a higher *training* error; their residual twins do not.

One recipe for every net (:mod:`helpers.experiments.twins`): for each depth and seed, a
plain net and its residual twin start from exactly the same weights. To rule out that the
plain nets only fail at the recipe's learning rate, every net is also trained at each rate
of a small grid, from the same initial weights, and compared at its *best* rate; and
:func:`run_variants` trains the same nets with one thing of the recipe changed (a warm-up,
a wider net), the controls for the deepest plain net's failure.

Besides the errors, every run records how far training moved each weight layer,
:func:`helpers.measure.updates.relative_updates`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import choice, non_empty, positive_int, real_number
from ..measure.lesion import error_rate
from ..measure.tuning import best_setting
from ..measure.updates import relative_updates
from ..parallel import run_all
from .twins import KINDS, train_twin_group


@dataclass
class DegradationResult:
    """Training curves and final errors of plain and residual nets, per depth, learning rate and seed.

    ``curves[kind, depth, lr]`` is an array (seeds x epochs) of per-epoch training error;
    ``train_error`` and ``test_error`` ``[kind, depth, lr]`` are arrays over seeds of the
    final error on the whole training / test set (eval mode). Errors are fractions in
    [0, 1]. ``lr`` is the recipe's learning rate, ``lrs`` the grid swept. ``updates[kind,
    depth, lr]`` is an array (seeds x weight layers, stem first) of each layer's relative
    change over training, ``||W(T) - W(0)|| / ||W(0)||``.
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
    updates: dict = field(default_factory=dict)

    def mean_train_error(self, kind: str, depth: int, lr: float | None = None) -> float:
        """Mean over seeds of the final training error, at ``lr`` (default: the recipe's)."""
        return float(self.train_error[kind, depth, self.lr if lr is None else lr].mean())

    def mean_test_error(self, kind: str, depth: int, lr: float | None = None) -> float:
        return float(self.test_error[kind, depth, self.lr if lr is None else lr].mean())

    def best_lr(self, kind: str, depth: int) -> float:
        """The learning rate of the grid with the lowest mean training error over seeds for this
        kind and depth (:func:`helpers.measure.tuning.best_setting`)."""
        return best_setting({lr: self.train_error[kind, depth, lr] for lr in self.lrs})

    def rate_table(self) -> str:
        """The final training error (%), mean over the seeds, of every kind and depth at each
        learning rate of the grid, and the best rate: a printable table."""
        lines = [f"final training error (%), mean of {len(self.seeds)} seeds, at each learning rate",
                 " " * 12 + "".join(f"{lr:>8g}" for lr in self.lrs) + "   best"]
        for kind in self.kinds:
            for depth in self.depths:
                row = "".join(f"{100 * self.mean_train_error(kind, depth, lr):8.1f}" for lr in self.lrs)
                lines.append(f"{kind:>8}-{depth:<2} {row}   {self.best_lr(kind, depth):g}")
        return "\n".join(lines)

    def best_train_error(self, kind: str, depth: int) -> float:
        return self.mean_train_error(kind, depth, self.best_lr(kind, depth))


RECIPE = {"width": 32, "epochs": 30, "batch_size": 128, "warmup_steps": 0}
"""The recipe's defaults that a variant may change (:func:`run_variants`)."""


def _kinds(kinds) -> tuple[str, ...]:
    """``kinds`` checked, in the order of :data:`~helpers.experiments.twins.KINDS`."""
    asked = {choice("kinds[i]", k, KINDS) for k in non_empty("kinds", kinds)}
    return tuple(k for k in KINDS if k in asked)


def _train_and_measure(data, depth: int, seeds, lrs, **recipe) -> dict:
    """Every net of one depth: ``{(kind, seed, lr): (training-error curve, final train error,
    final test error, relative update of each weight layer)}``."""
    initial: dict = {}
    group = train_twin_group(data, depth, seeds, lrs=lrs, progress=False, initial=initial, **recipe)
    return {key: (hist.train_error, error_rate(model, data.x_train, data.y_train),
                  error_rate(model, data.x_test, data.y_test), relative_updates(initial[key[:2]], model))
            for key, (model, hist) in group.items()}


def _collect(depths, seeds, kinds, lrs, chunks, measured) -> dict:
    """The per-job results of :func:`_train_and_measure` as :class:`DegradationResult`'s dicts."""
    by_depth: dict = {d: {} for d in depths}
    for (depth, _), by_net in zip(chunks, measured):
        by_depth[depth].update(by_net)
    fields = {"curves": {}, "train_error": {}, "test_error": {}, "updates": {}}
    for depth, by_net in by_depth.items():
        for kind in kinds:
            for rate in lrs:
                runs = [by_net[kind, seed, rate] for seed in seeds]
                for i, name in enumerate(fields):
                    fields[name][kind, depth, rate] = np.array([r[i] for r in runs])
    return fields


def run_degradation(data, *, depths=(8, 20, 56), seeds=(0, 1, 2), lr: float = 0.05, lrs=None,
                    width: int = RECIPE["width"], epochs: int = RECIPE["epochs"],
                    batch_size: int = RECIPE["batch_size"], kinds=KINDS,
                    warmup_steps: int = RECIPE["warmup_steps"], progress: bool | None = None,
                    workers: int | None = None) -> DegradationResult:
    """Train a plain and a residual :class:`~helpers.models.mlp.DeepMLP` (or only ``kinds``) for
    each depth, seed and learning rate of ``lrs`` (default: only ``lr``, the recipe's; ``lr`` is
    added to ``lrs``).

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
    kinds = _kinds(kinds)
    epochs = positive_int("epochs", epochs)
    recipe = dict(width=width, epochs=epochs, batch_size=batch_size, kinds=kinds,
                  warmup_steps=positive_int("warmup_steps", warmup_steps, minimum=0))
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
    return DegradationResult(depths, seeds, epochs, lr, lrs, kinds=kinds,
                             **_collect(order, seeds, kinds, lrs, chunks, measured))


def run_variants(data, variants: dict, *, depth: int = 56, seeds=(0, 1, 2), lr: float = 0.05,
                 kinds=("plain",), progress: bool | None = None,
                 workers: int | None = None) -> dict[str, DegradationResult]:
    """The nets of :func:`run_degradation` at one ``depth`` and rate, once per variant of the
    recipe: ``variants`` maps a name to the options that differ (``width``, ``warmup_steps``,
    ``epochs``, ``batch_size``), e.g. ``{"width 64": {"width": 64}}``. Each variant is one job, side
    by side on ``workers`` cores; returns ``{name: DegradationResult}`` (one depth, one rate)."""
    if not isinstance(variants, dict) or not variants:
        raise TypeError(f"variants must be a non-empty dict of name -> recipe options, got {variants!r}")
    allowed = set(RECIPE)
    for name, options in variants.items():
        if not isinstance(options, dict) or set(options) - allowed:
            raise ValueError(f"variants[{name!r}] must be a dict of options among {sorted(allowed)}, got {options!r}")
    depth = positive_int("depth", depth, minimum=4)
    seeds = tuple(positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds))
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    kinds = _kinds(kinds)
    recipes = {name: {**RECIPE, **options} for name, options in variants.items()}
    jobs = [dict(data=data, depth=depth, seeds=seeds, lrs=(lr,), kinds=kinds, **recipe) for recipe in recipes.values()]
    measured = run_all(_train_and_measure, jobs, workers=workers, progress=progress, description="variants")
    return {name: DegradationResult((depth,), seeds, recipe["epochs"], lr, (lr,), kinds=kinds,
                                    **_collect((depth,), seeds, kinds, (lr,), [(depth, (lr,))], [by_net]))
            for (name, recipe), by_net in zip(recipes.items(), measured)}
