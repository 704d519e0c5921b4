"""Checkers for the exercises of chapter 1."""

from __future__ import annotations

import numpy as np
import torch

from ..measure.gradients import per_layer_factor
from ..measure.lesion import single_block_lesions
from ..measure.paths import path_length_counts
from .base import Case, Feedback, compare_numeric, run_cases


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


def _residual_reference(x, w1, b1, w2, b2):
    return x + torch.relu(x @ w1.T + b1) @ w2.T + b2


def _compare_residual(args):
    """A comparison that recognises the usual mistakes in a residual block's forward pass."""
    x, w1, b1, w2, b2 = args
    branch = torch.relu(x @ w1.T + b1) @ w2.T + b2
    mistakes = [
        (branch, "this is F(x) alone: add the block's input x (the skip connection)."),
        (torch.relu(x + branch), "this applies a ReLU after the addition (the post-activation block); "
                                 "here return x + F(x) itself."),
        (x + (x @ w1.T + b1) @ w2.T + b2, "the ReLU between the two layers is missing."),
        (x + torch.relu(x @ w1.T + b1) @ w2.T, "the second bias b2 is missing."),
    ]

    def compare(got, expected):
        problem = compare_numeric(got, expected)
        if problem is None or not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return problem
        for wrong, message in mistakes:
            if torch.allclose(got, wrong, rtol=1e-5, atol=1e-6):
                return message
        return problem
    return compare


def check_residual_forward(fn) -> Feedback:
    """Check a learner's ``fn(x, w1, b1, w2, b2) -> x + W2 relu(W1 x + b1) + b2``.

    ``x`` is a batch ``(batch, d)``; weights follow PyTorch's ``nn.Linear`` layout
    ``(out_features, in_features)``, so the layer is ``x @ w1.T + b1``. Cases include a
    branch wider than the stream (so a forgotten transpose fails) and a zero second
    layer (the block must then be exactly the identity).
    """
    gen = torch.Generator().manual_seed(1)

    def case(batch, d, hidden, zero_out=False):
        x = torch.randn(batch, d, generator=gen, dtype=torch.float64)
        w1 = torch.randn(hidden, d, generator=gen, dtype=torch.float64) / d ** 0.5
        b1 = torch.randn(hidden, generator=gen, dtype=torch.float64)
        w2 = torch.randn(d, hidden, generator=gen, dtype=torch.float64) / hidden ** 0.5
        b2 = torch.randn(d, generator=gen, dtype=torch.float64)
        if zero_out:
            w2, b2 = torch.zeros_like(w2), torch.zeros_like(b2)
        return x, w1, b1, w2, b2

    shape_hint = ("weights are (out_features, in_features), as in nn.Linear: a layer computes "
                  "x @ w.T + b.")
    cases = []
    for description, args in [
        ("batch of 5, width 4, branch width 4", case(5, 4, 4)),
        ("batch of 3, width 4, branch width 8", case(3, 4, 8)),
        ("a single row, width 6, branch width 12", case(1, 6, 12)),
    ]:
        cases.append(Case(description, args, _residual_reference(*args), shape_hint,
                          compare=_compare_residual(args)))
    args = case(4, 5, 10, zero_out=True)
    cases.append(Case("second layer all zeros: the block must return x exactly", args, args[0],
                      "with w2 = 0 and b2 = 0 the branch F is 0, so H(x) = x + 0 = x.",
                      compare=_compare_residual(args)))
    return run_cases("Residual block, forward pass", fn, cases)


def check_path_counts(fn) -> Feedback:
    """Check a learner's ``fn(n)`` that returns the number of paths of each length ``k = 0..n``
    through ``n`` residual blocks: the binomial coefficients ``C(n, k)``, summing to ``2^n``."""

    def compare(got, expected):
        if got is None:
            return "returned None: did you forget the `return` statement?"
        try:
            values = np.asarray(got, dtype=float).ravel()
        except (TypeError, ValueError):
            return f"returned a {type(got).__name__}; expected a list or array of counts"
        n = len(expected) - 1
        if values.size == n:
            return (f"returned {values.size} counts; expected {n + 1}: lengths run from k = 0 "
                    "(the path that skips every block) to k = n.")
        if values.size != n + 1:
            return f"returned {values.size} counts; expected {n + 1} (k = 0, 1, ..., {n})"
        if not np.isclose(values.sum(), 2.0 ** n, rtol=1e-9):
            return (f"the counts add up to {values.sum():.6g}, but there are 2^{n} = {2 ** n} paths "
                    "in all: each block is either taken or skipped.")
        if not np.allclose(values, expected, rtol=1e-9):
            k = int(np.argmax(np.abs(values - expected)))
            return f"the count for k = {k} is {values[k]:.6g}; expected {expected[k]}."
        return None

    cases = [Case(f"n = {n}", (n,), path_length_counts(n),
                  "a path of length k chooses which k of the n blocks it goes through.", compare=compare)
             for n in (1, 3, 10, 27)]
    return run_cases("Paths of each length", fn, cases)


def check_most_harmful_block(fn, model, x, y, *, prediction=None) -> Feedback:
    """Check ``fn(model, x, y) -> i``, the 0-based index of the block whose deletion raises the
    test error most, against :func:`helpers.measure.lesion.single_block_lesions`; then say how
    the learner's ``prediction`` (a 0-based index, made before measuring) fared."""
    errors = single_block_lesions(model, x, y)
    worst = int(np.argmax(errors))
    table = ", ".join(f"{i}: {100 * e:.1f} %" for i, e in enumerate(errors))

    def compare(got, expected):
        if got is None:
            return "returned None: did you forget the `return` statement?"
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
            return f"returned a {type(got).__name__}; expected a block index (an int)"
        got = int(got)
        if got == expected + 1:
            return (f"returned {got}, one more than the answer: use the 0-based index that "
                    "model(x, skip=[i]) takes.")
        if not 0 <= got < len(errors):
            return f"returned {got}, but the net has blocks 0 to {len(errors) - 1}."
        if got != expected:
            return (f"returned block {got}; deleting it gives {100 * errors[got]:.1f} % test error, "
                    f"but deleting block {expected} gives {100 * errors[expected]:.1f} %. "
                    f"Errors by block: {table}.")
        return None

    feedback = run_cases("Which deleted block hurts most", fn, [
        Case("the block whose deletion raises the test error most", (model, x, y), worst,
             "delete one block at a time with model(x, skip=[i]) and keep the i with the largest error.",
             compare=compare)])
    if prediction is not None:
        if prediction == worst:
            feedback.lines.append(f"Your prediction, block {prediction}, was right.")
        elif isinstance(prediction, (int, np.integer)) and 0 <= prediction < len(errors):
            feedback.lines.append(
                f"You predicted block {prediction} ({100 * errors[prediction]:.1f} % when deleted); the "
                f"measurement says block {worst} ({100 * errors[worst]:.1f} %). Errors by block: {table}.")
        else:
            feedback.lines.append(f"Your prediction {prediction!r} is not a block index 0 to {len(errors) - 1}.")
    return feedback
