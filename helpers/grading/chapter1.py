"""Checkers for the exercises of chapter 1."""

from __future__ import annotations

import numpy as np

from ..measure.gradients import per_layer_factor
from .base import Case, Feedback, run_cases


def _geometric(g: float, n: int, scale: float = 1.0) -> np.ndarray:
    """Norms listed input -> output that shrink by ``g`` per layer going back to the input."""
    return scale * g ** np.arange(n - 1, -1, -1, dtype=float)


def check_per_layer_factor(fn) -> Feedback:
    """Check a learner's ``fn(norms) -> g``, the per-layer factor of a gradient-norm profile.

    Known answers: exact geometric profiles (vanishing, exploding, flat, two layers), and
    a noisy profile whose least-squares factor is :func:`helpers.measure.gradients.per_layer_factor`.
    """
    rng = np.random.default_rng(0)
    noisy = _geometric(0.7, 12) * np.exp(rng.normal(0, 0.1, 12))
    reversed_hint = ("norms are listed from the input layer to the output layer; a gradient that "
                     "vanishes on its way back is *small* at index 0, and its factor is < 1.")
    cases = [
        Case("vanishing profile, g = 0.5 over 10 layers", (_geometric(0.5, 10),), 0.5, reversed_hint),
        Case("exploding profile, g = 1.3 over 6 layers", (_geometric(1.3, 6, scale=2.0),), 1.3, reversed_hint),
        Case("flat profile, g = 1", (np.full(8, 3.0),), 1.0, "a constant profile neither shrinks nor grows."),
        Case("two layers only, g = 0.25", (_geometric(0.25, 2),), 0.25,
             "with two layers the factor is norms[0] / norms[1]."),
        Case("noisy 12-layer profile (least-squares fit on log norms)", (noisy,), per_layer_factor(noisy),
             "fit a straight line to log(norms) against the layer index, using every layer, "
             "not just the first and last."),
    ]
    return run_cases("Per-layer factor", fn, [
        Case(c.description, c.args, c.expected, c.hint,
             compare=lambda got, exp: _compare_factor(got, exp)) for c in cases
    ])


def _compare_factor(got, expected) -> str | None:
    if got is None:
        return "returned None: did you forget the `return` statement?"
    try:
        value = float(got)
    except (TypeError, ValueError):
        return f"returned a {type(got).__name__}; expected one number"
    if not np.isfinite(value):
        return f"returned {value}"
    if np.isclose(value, 1 / expected, rtol=1e-4) and not np.isclose(expected, 1.0):
        return f"returned {value:.4g}, the reciprocal of the expected {expected:.4g}."
    if not np.isclose(value, expected, rtol=1e-4):
        return f"returned {value:.4g}; expected {expected:.4g}."
    return None
