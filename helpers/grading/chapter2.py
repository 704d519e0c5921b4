"""Checkers for the exercises of chapter 2: the backward pass, by hand, of a two-layer net
and of a residual block, for one example.

As in chapter 1, each checker runs fixed cases, shown in the notebook with hints, and
hidden cases of random sizes and activation drawn on every call (from fresh entropy, so
the notebook's seeded random state is left alone). The expected gradients come from
PyTorch's autograd in float64, computed before the learner's function runs; while it
runs, the course's references (:data:`REFERENCES`) raise, so calling them is no solution.
A wrong answer is reported for the first wrong gradient, in the order the backward pass
produces them, and the usual slips are named: a missing f'(z1), the activation in place
of its slope, a transposed outer product, a wrong sign, z1 in place of a1, and for the
residual block a missing skip or branch term in the gradient of the input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import torch

from .._checks import choice
from ..measure.backprop import backprop_by_autograd, backprop_by_hand
from .base import Case, Feedback, run_cases
from .chapter1 import _rng
from .values import WrongType, as_numeric_array, float32_rounding

ACTIVATIONS = ("relu", "sigmoid")
_RTOL, _ATOL = 1e-7, 1e-10  # float64: a right answer agrees with autograd to about 1e-15
_KINK = 1e-6  # no entry of z1 this close to 0, so ReLU's kink never matters
_TWO_LAYER = ("W1", "b1", "W2", "b2")
_BACKWARD = ("W2", "b2", "W1", "b1")  # the order the backward pass produces the gradients
_OUTER = {"W2": ("{d}", "a1", "one per output"), "W1": ("δ1", "x", "one per hidden unit")}


def _problem(rng: np.random.Generator, d: int, h: int, o: int, *, signs=None,
             zero_out: bool = False) -> tuple:
    """A random problem ``(x, y, W1, b1, W2, b2)`` in float64 for one example: ``x`` of width
    ``d``, ``h`` hidden units, ``o`` outputs. No entry of ``z1 = W1 x + b1`` lies within
    1e-6 of 0 (the draw is repeated). ``signs`` (``h`` values of +1 or -1) sets the sign of
    each entry of ``z1`` by moving ``b1``; ``zero_out`` makes ``W2`` and ``b2`` zero."""
    if signs is not None and (len(signs) != h or not all(s in (1, -1) for s in signs)):
        raise ValueError(f"signs must be {h} values of +1 or -1, got {signs!r}")
    while True:
        x, y = rng.normal(size=d), rng.normal(size=o)
        W1, b1 = rng.normal(size=(h, d)) / np.sqrt(d), rng.normal(size=h) * 0.5
        W2, b2 = rng.normal(size=(o, h)) / np.sqrt(h), rng.normal(size=o) * 0.5
        z1 = W1 @ x + b1
        if np.all(np.abs(z1) > _KINK):
            break
    if signs is not None:
        b1 = b1 + np.asarray(signs, dtype=float) * np.abs(z1) - z1
    if zero_out:
        W2, b2 = np.zeros_like(W2), np.zeros_like(b2)
    return x, y, W1, b1, W2, b2


def _two_layer_autograd(x, y, W1, b1, W2, b2, activation: str, *, residual: bool = False) -> dict:
    """The answer key: the gradients of ``L = 1/2 ||z2 - y||^2`` for one example, by PyTorch
    autograd in float64, with ``z2 = W2 f(W1 x + b1) + b2`` (plus ``x`` when ``residual``).
    Keys ``"W1"``, ``"b1"``, ``"W2"``, ``"b2"``, and ``"x"`` when ``residual``."""
    choice("activation", activation, ACTIVATIONS)
    if residual and W2.shape[0] != x.shape[0]:
        raise ValueError(f"a residual block needs W2 with {x.shape[0]} rows, got shape {W2.shape}")
    names = ("x", "W1", "b1", "W2", "b2")
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in zip(names, (x, W1, b1, W2, b2))}
    f = torch.relu if activation == "relu" else torch.sigmoid
    with torch.enable_grad():
        z2 = t["W2"] @ f(t["W1"] @ t["x"] + t["b1"]) + t["b2"] + (t["x"] if residual else 0.0)
        loss = 0.5 * ((z2 - torch.as_tensor(y, dtype=torch.float64)) ** 2).sum()
        grads = dict(zip(names, torch.autograd.grad(loss, list(t.values()))))
    return {k: grads[k].numpy() for k in (("x",) if residual else ()) + _TWO_LAYER}


def _activation(z1: np.ndarray, activation: str) -> tuple[np.ndarray, np.ndarray]:
    """``f(z1)`` and its slope ``f'(z1)``."""
    if activation == "relu":
        return np.maximum(z1, 0.0), (z1 > 0).astype(float)
    s = 1.0 / (1.0 + np.exp(-z1))
    return s, s * (1.0 - s)


def _gradients(x, W1, W2, delta, a1, gate, residual: bool) -> dict:
    """The backward pass from the output error ``delta``, with ``a1`` as the second layer's
    input in its gradient and ``gate`` multiplied into ``delta1`` (``f'(z1)`` when right):
    the expected gradients and, with a wrong ingredient, a usual mistake."""
    delta1 = (W2.T @ delta) * gate
    grads = {"W2": np.outer(delta, a1), "b2": delta, "W1": np.outer(delta1, x), "b1": delta1}
    if residual:
        grads["x"] = delta + W1.T @ delta1
    return grads


def _slope_message(activation: str, d: str) -> str:
    if activation == "sigmoid":
        return (f"δ1 uses σ(z1) as the sigmoid's slope. The slope is σ(z1)(1 − σ(z1)): "
                f"δ1 = (W2ᵀ {d}) ⊙ σ(z1)(1 − σ(z1)).")
    return (f"δ1 uses relu(z1) = a1 as the ReLU's slope. The slope is 1 where z1 > 0 and 0 elsewhere: "
            f"δ1 = (W2ᵀ {d}) ⊙ f'(z1).")


def _transposed(key: str, d: str) -> tuple[str, str, str]:
    """The swapped outer product for ``key``, the right one, and what its rows go with."""
    left, right, rows = _OUTER[key]
    left = left.format(d=d)
    return f"outer({right}, {left})", f"outer({left}, {right})", f"its rows go with {key}'s rows, {rows}"


def _mistakes(args: tuple, residual: bool) -> list[tuple[str, np.ndarray, str]]:
    """The usual mistakes for one case, as ``(key, wrong gradient, message)``, recomputed in NumPy."""
    x, y, W1, b1, W2, b2, activation = args
    z1 = W1 @ x + b1
    a1, slope = _activation(z1, activation)
    branch = W2 @ a1 + b2
    delta = branch + (x if residual else 0.0) - y
    d, z = ("δ", "z") if residual else ("δ2", "z2")

    def variant(**changes):
        return _gradients(x, W1, W2, **{"delta": delta, "a1": a1, "gate": slope, **changes}, residual=residual)

    right, everything = variant(), (("x",) if residual else ()) + _BACKWARD
    no_slope = variant(gate=np.ones_like(slope))
    mistakes = []
    if residual:
        mistakes += [
            ("x", right["x"] - delta, "this is the branch's path alone, W1ᵀ δ1; add δ, the gradient that "
                                      "flows through the skip connection."),
            ("x", delta, "this is δ alone, the skip connection's part: the branch's path W1ᵀ δ1 is missing."),
            ("x", no_slope["x"], "the branch's path lacks f'(z1): δ1 was taken as W2ᵀ δ. Use dL/dx = δ + W1ᵀ δ1 "
                                 "with δ1 = (W2ᵀ δ) ⊙ f'(z1)."),
        ]
    variants = [
        (no_slope, ("W1", "b1"), f"δ1 is missing the factor f'(z1): it was taken as W2ᵀ {d}. Multiply it entry "
                                 f"by entry by the activation's slope: δ1 = (W2ᵀ {d}) ⊙ f'(z1)."),
        (variant(gate=a1), ("x", "W1", "b1"), _slope_message(activation, d)),
        (variant(delta=-delta), everything, f"it has the wrong sign, as from the error y − {z}. Use "
                                            f"{d} = {z} − y, the derivative of ½‖{z} − y‖² with respect to {z}."),
        (variant(a1=z1), ("W2",), f"this is outer({d}, z1), with the pre-activation z1. W2 multiplies the "
                                  f"activation a1 = f(z1), so use outer({d}, a1)."),
    ]
    if residual:
        variants.append((variant(delta=branch - y), everything,
                         "δ leaves out the skip: it was computed from W2 a1 + b2 − y, without x. The block's "
                         "output is z = x + W2 a1 + b2, so δ = z − y."))
    mistakes += [(key, grads[key], message) for grads, keys, message in variants for key in keys if key in grads]
    for key in _OUTER:
        wrong, good, rows = _transposed(key, d)
        mistakes.append((key, right[key].T, f"this is {wrong}, the transpose of the right gradient. "
                                            f"Use {good}: {rows}."))
    return mistakes


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=_RTOL, atol=_ATOL))


def _dict_problem(got, keys: tuple[str, ...]) -> str | None:
    """What is wrong with ``got`` as a dict of gradients with ``keys``; extra keys are let be."""
    names = ", ".join(repr(k) for k in keys)
    if not isinstance(got, Mapping):
        return WrongType(f"returned a {type(got).__name__}; expected a dict with keys {names}")
    missing = [k for k in keys if k not in got]
    if not missing:
        return None
    have = ", ".join(repr(k) for k in list(got)[:8]) + (", ..." if len(got) > 8 else "")
    have = f"it has {have}" if got else "it is empty"
    if len(missing) == len(keys):
        return WrongType(f"returned a dict without the keys {names} ({have})")
    return WrongType(f"returned a dict without the key{'s' * (len(missing) > 1)} "
                     f"{', '.join(repr(k) for k in missing)}; expected the keys {names} ({have})")


def _gradient_problem(key: str, got, expected: np.ndarray, mistakes: list, d: str) -> str | None:
    """What is wrong with the returned gradient for ``key``, naming a usual mistake."""
    value, problem = as_numeric_array(got)
    if problem:
        return WrongType(f"under the key {key!r}: {problem}")
    if value.shape != expected.shape:
        if value.ndim == 2 and key in _OUTER and value.shape == expected.shape[::-1]:
            _, good, rows = _transposed(key, d)
            return (f"the gradient for {key} has shape {value.shape}, the transpose of {key}'s shape "
                    f"{expected.shape}: the outer product's factors are swapped. Use {good}: {rows}.")
        return f"the gradient for {key} has shape {value.shape}; expected {expected.shape}, the shape of {key}."
    bad = int(np.sum(~np.isfinite(value)))
    if bad:
        return f"the gradient for {key} has NaN or infinite entries ({bad} of {value.size})."
    if _close(value, expected):
        return None
    for name, wrong, message in mistakes:
        if name == key and not _close(wrong, expected) and _close(value, wrong):
            return f"the gradient for {key} is wrong: {message}"
    rounding = float32_rounding(value, expected, what=f"the gradient for {key}", reference="autograd",
                                fix="compute in float64 (NumPy's default), not float32")
    err = float(np.max(np.abs(value - expected)))
    return rounding or f"the gradient for {key} is wrong: its entries differ from autograd's by up to {err:.3g}."


def _compare_gradients(args: tuple, residual: bool):
    """A comparison for one case: a dict with the right keys, then each gradient in the order
    the backward pass produces it (``x`` first for the residual block), naming the first wrong
    one and, where it is one, the usual mistake."""
    mistakes = _mistakes(args, residual)
    keys, order = (("x", *_TWO_LAYER), ("x", *_BACKWARD)) if residual else (_TWO_LAYER, _BACKWARD)
    d = "δ" if residual else "δ2"

    def compare(got, expected) -> str | None:
        problem = _dict_problem(got, keys)
        for key in order:
            if problem:
                return problem
            problem = _gradient_problem(key, got[key], expected[key], mistakes, d)
        return problem
    return compare


def _case(description: str, problem: tuple, activation: str, hint: str, *, residual: bool) -> Case:
    """A case for ``fn(x, y, W1, b1, W2, b2, activation)``, its answer by autograd."""
    args = (*problem, choice("activation", activation, ACTIVATIONS))
    return Case(description, args, _two_layer_autograd(*args, residual=residual), hint,
                compare=_compare_gradients(args, residual))


def _hidden_cases(hint: str, *, residual: bool) -> list[Case]:
    """Three cases of random activation, from fresh entropy: two of random sizes (1 to 8), and
    one of 500 to 700 units a layer, which the backward pass answers in milliseconds and a
    numerical gradient (a forward pass per parameter, about half a million) in minutes."""
    rng, cases = _rng(), []
    for low, high in ((1, 9), (1, 9), (500, 701)):
        d, h, o = (int(n) for n in rng.integers(low, high, size=3))
        o = d if residual else o
        activation = str(rng.choice(ACTIVATIONS))
        sizes = f"d = {d}, h = {h}" if residual else f"(d, h, o) = ({d}, {h}, {o})"
        kind = (f"hidden large case ({h * (d + o + 1) + o:,} parameters: a numerical gradient, a forward pass per "
                "parameter, cannot finish within the time limit)") if low > 1 else "hidden random case"
        cases.append(_case(f"{kind}: {activation}, {sizes}", _problem(rng, d, h, o), activation, hint,
                           residual=residual))
    return cases


def _by_hand(feedback: Feedback) -> Feedback:
    """No points unless the large hidden case passes: a backward pass answers it as fast as the
    small ones, while a numerical gradient (or anything else that needs a pass per parameter)
    passes the small cases and fails only this one."""
    if any(line.startswith("✗ hidden large case") for line in feedback.lines):
        return dataclasses.replace(feedback, score=0.0, lines=[*feedback.lines, (
            "No points: the large case is where a backward pass by hand and a numerical gradient part "
            "ways, and this answer did not pass it.")])
    return feedback


def check_two_layer_backprop(fn) -> Feedback:
    """Check a learner's ``fn(x, y, W1, b1, W2, b2, activation) -> dict``: the gradients of a
    two-layer net for one example.

    ``x`` is ``(d,)``, ``y`` ``(o,)``, ``W1`` ``(h, d)``, ``b1`` ``(h,)``, ``W2`` ``(o, h)``,
    ``b2`` ``(o,)``, all NumPy float64, and ``activation`` is ``"relu"`` or ``"sigmoid"``. With
    ``z1 = W1 x + b1``, ``a1 = f(z1)``, ``z2 = W2 a1 + b2`` and ``L = 1/2 ||z2 - y||^2``, the
    answer is a dict with keys ``"W1"``, ``"b1"``, ``"W2"``, ``"b2"``, each ``dL/dparam`` in its
    parameter's shape::

        delta2 = z2 - y;                      dW2 = outer(delta2, a1),  db2 = delta2
        delta1 = (W2^T delta2) * f'(z1);      dW1 = outer(delta1, x),   db1 = delta1

    with ``f'(z) = 1`` where ``z > 0`` else 0 for ReLU, ``sigma(z)(1 - sigma(z))`` for the
    sigmoid. Cases: ReLU and sigmoid at ``(d, h, o) = (3, 4, 2)``; one active hidden unit;
    a ReLU unit that is inactive (``z1 < 0``, so a missing ``f'`` shows); a square case
    ``d = h = o = 3`` (a transposed outer product has the right shape there); then three
    hidden cases (the last of them too large for a numerical gradient; an
    answer that fails it scores nothing). The expected values are
    autograd's in float64; a gradient passes within ``rtol = 1e-7``, ``atol = 1e-10``.
    """
    rng = np.random.default_rng(2)
    general = "δ2 = z2 − y; dW2 = outer(δ2, a1), db2 = δ2; δ1 = (W2ᵀ δ2) ⊙ f'(z1); dW1 = outer(δ1, x), db1 = δ1."
    cases = [
        _case("relu, (d, h, o) = (3, 4, 2)", _problem(rng, 3, 4, 2), "relu", general, residual=False),
        _case("sigmoid, (d, h, o) = (3, 4, 2)", _problem(rng, 3, 4, 2), "sigmoid",
              "the sigmoid's slope is σ(z)(1 − σ(z)), with σ(z) = 1 / (1 + e^(−z)).", residual=False),
        _case("one hidden unit, active: relu, (d, h, o) = (2, 1, 1)", _problem(rng, 2, 1, 1, signs=[1]), "relu",
              "with one hidden unit, W1's gradient still has W1's shape (1, d) and W2's the shape (o, 1).",
              residual=False),
        _case("relu with one inactive unit (z1 < 0), (d, h, o) = (4, 3, 2)",
              _problem(rng, 4, 3, 2, signs=[1, -1, 1]), "relu",
              "a ReLU unit with z1 < 0 has slope f'(z1) = 0: it passes no gradient back, so its row of dW1 is 0.",
              residual=False),
        _case("square: sigmoid, d = h = o = 3", _problem(rng, 3, 3, 3), "sigmoid",
              "with d = h = o the shapes cannot tell outer(δ1, x) from outer(x, δ1): row i of dW1 belongs to "
              "hidden unit i, like row i of W1.", residual=False),
    ]
    cases += _hidden_cases(general, residual=False)
    return _by_hand(run_cases("Two-layer backward pass", fn, cases, off_limits=REFERENCES))


def check_residual_backprop(fn) -> Feedback:
    """Check a learner's ``fn(x, y, W1, b1, W2, b2, activation) -> dict``: the gradients of a
    residual block for one example, the input's included.

    The arguments are those of :func:`check_two_layer_backprop` with ``W2`` of shape
    ``(d, h)`` and ``y`` of shape ``(d,)``. With ``z = x + W2 f(W1 x + b1) + b2`` and
    ``L = 1/2 ||z - y||^2``, the answer is a dict with keys ``"x"``, ``"W1"``, ``"b1"``,
    ``"W2"``, ``"b2"``::

        delta = z - y;                        dW2 = outer(delta, a1),   db2 = delta
        delta1 = (W2^T delta) * f'(z1);       dW1 = outer(delta1, x),   db1 = delta1
        dL/dx = delta + W1^T delta1           (the skip's part + the branch's part)

    The gradient for ``x`` is checked first, then the parameters', naming a missing skip
    term, a missing branch term and the slips of :func:`check_two_layer_backprop`. Cases:
    ReLU with ``d = 4, h = 3``; sigmoid with ``d = 3, h = 5``; a zero second layer
    (``W2 = 0``, ``b2 = 0``: then ``dL/dx = delta`` exactly and ``dW1 = db1 = 0``); then three
    hidden cases, as for :func:`check_two_layer_backprop`. Autograd in float64 gives the expected
    values, matched within ``rtol = 1e-7``, ``atol = 1e-10``.
    """
    rng = np.random.default_rng(3)
    general = ("δ = z − y with z = x + W2 f(W1 x + b1) + b2; the parameters' gradients are the two-layer "
               "ones with δ for δ2, and dL/dx = δ + W1ᵀ δ1.")
    cases = [
        _case("relu, d = 4, h = 3", _problem(rng, 4, 3, 4), "relu", general, residual=True),
        _case("sigmoid, d = 3, h = 5", _problem(rng, 3, 5, 3), "sigmoid", general, residual=True),
        _case("second layer all zeros (W2 = 0, b2 = 0): relu, d = 4, h = 6", _problem(rng, 4, 6, 4, zero_out=True),
              "relu", "with W2 = 0 and b2 = 0 the branch passes no gradient back (δ1 = 0), so dL/dx = δ, the "
                      "skip's part alone, and dW1 = db1 = 0.", residual=True),
    ]
    cases += _hidden_cases(general, residual=True)
    return _by_hand(run_cases("Residual block, backward pass", fn, cases, off_limits=REFERENCES))


REFERENCES = (_two_layer_autograd, _gradients, backprop_by_hand, backprop_by_autograd,
              torch.autograd.grad, torch.autograd.backward)
"""The course's answer keys for chapter 2 (autograd, the checker's own backward pass and
:mod:`helpers.measure.backprop`'s), off limits while a learner's function is checked; and
PyTorch's autograd itself (``torch.autograd.grad``, and ``torch.autograd.backward``, which
``Tensor.backward`` calls), since these exercises ask for the backward pass by hand."""
