"""Checkers for the exercises of chapter 3: LayerNorm's forward pass, by hand.

As in chapters 1 and 2, the checker runs fixed cases, shown in the notebook with hints,
and hidden cases of random shape and ``eps`` drawn on every call (from fresh entropy, so
the notebook's seeded random state is left alone). The expected output is
``torch.nn.functional.layer_norm`` in float64, computed before the learner's function
runs; while it runs, ``layer_norm`` (the function and the module) raise, so calling them
is no solution. A wrong output is matched against the usual slips, each recomputed here,
and named: the wrong axis, the unbiased variance, ``eps`` outside the square root or left
out, no centring (that is RMSNorm), a missing or swapped scale and shift.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .base import Case, Feedback, run_cases
from .chapter1 import _rng
from .values import WrongType, as_numeric_array, float32_rounding

_RTOL, _ATOL = 1e-6, 1e-9  # float64: a right answer agrees with PyTorch's to about 1e-15


def _layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float, *,
                dims: tuple[int, ...] = (-1,), unbiased: bool = False, eps_where: str = "inside",
                centre: bool = True, affine: str = "both") -> torch.Tensor:
    """LayerNorm and its usual slips, for the checker's messages: normalise ``x`` over
    ``dims`` as ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with the variance
    unbiased (divided by n - 1) if ``unbiased``, ``eps`` added ``"inside"`` the square root,
    ``"outside"`` it or ``"none"``, the mean subtracted if ``centre`` (else the root mean
    square divides), and the affine part ``"both"``, ``"none"``, ``"weight"`` (no shift) or
    ``"swapped"`` (``bias`` scales, ``weight`` shifts)."""
    mean = x.mean(dim=dims, keepdim=True) if centre else torch.zeros_like(x)
    var = ((x - mean) ** 2).sum(dim=dims, keepdim=True)
    n = int(np.prod([x.shape[d] for d in dims]))
    var = var / (n - 1) if unbiased else var / n
    scale = {"inside": torch.sqrt(var + eps), "outside": torch.sqrt(var) + eps, "none": torch.sqrt(var)}[eps_where]
    y = (x - mean) / scale
    if affine == "both":
        return y * weight + bias
    if affine == "weight":
        return y * weight
    if affine == "swapped":
        return y * bias + weight
    return y


def _mistakes(x: torch.Tensor, weight, bias, eps: float) -> list[tuple[torch.Tensor, str]]:
    """The usual slips for one case, as ``(wrong output, message)``."""
    last = x.ndim - 1
    out = [
        (dict(unbiased=True), "it divides the squared deviations by n − 1 (the unbiased variance, "
                              "torch.var's and pandas' default); LayerNorm divides by n, the biased variance: "
                              "use x.var(dim=-1, unbiased=False, keepdim=True), or np.var's default ddof=0."),
        (dict(eps_where="outside"), "eps is added outside the square root, (x − μ) / (√σ² + ε); LayerNorm adds it "
                                    "inside: (x − μ) / √(σ² + ε)."),
        (dict(eps_where="none"), "eps is missing: the output is (x − μ) / √σ², not (x − μ) / √(σ² + ε)."),
        (dict(centre=False), "the mean is not subtracted: this divides x by its root mean square, which is "
                             "RMSNorm, not LayerNorm. Use x − μ in the numerator and the variance about μ."),
        (dict(affine="none"), "the scale and the shift are missing: multiply the normalised x by weight and "
                              "add bias."),
        (dict(affine="weight"), "the shift is missing: add bias after multiplying by weight."),
        (dict(affine="swapped"), "weight and bias are swapped: weight multiplies the normalised x, bias is "
                                 "added."),
    ]
    axes = [((0,), "the first axis")] if x.ndim > 1 else []
    axes += [(tuple(range(x.ndim)), "all the axes at once")] if x.ndim > 1 else []
    axes += [((last - 1,), "the second-to-last axis")] if x.ndim > 2 else []
    wrong_axis = [(dict(dims=dims), f"it normalises over {where}; LayerNorm normalises over the last axis only "
                                    "(the features of each position): mean and variance with dim=-1, "
                                    "keepdim=True.") for dims, where in axes if dims != (last,)]
    found = []
    for changes, message in wrong_axis + out:
        try:
            found.append((_layer_norm(x, weight, bias, eps, **changes), message))
        except (RuntimeError, ValueError):  # a slip that cannot even be computed for this shape
            continue
    return found


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=False))


def _compare(args: tuple):
    """A comparison for one case: the output's type and shape, then its values, naming a
    usual slip where the output matches one."""
    x, weight, bias, eps = args
    mistakes = [(m.numpy(), message) for m, message in _mistakes(x, weight, bias, eps)]

    def compare(got, expected) -> str | None:
        value, problem = as_numeric_array(got)
        if problem:
            return WrongType(problem)
        if isinstance(got, torch.Tensor) and got.dtype != x.dtype:
            return WrongType(f"the output is a {got.dtype} tensor, but x is {x.dtype}: keep x's dtype (a float32 "
                    "step in between rounds away the digits the check compares).")
        expected = expected.numpy()
        if value.shape != expected.shape:
            return (f"the output has shape {value.shape}; expected {expected.shape}, the shape of x "
                    "(LayerNorm keeps the shape: keepdim=True keeps the mean and variance broadcastable).")
        if _close(value, expected):
            return None
        for wrong, message in mistakes:
            if not _close(wrong, expected) and np.all(np.isfinite(wrong)) and _close(value, wrong):
                return f"the output is wrong: {message}"
        bad = int(np.sum(~np.isfinite(value)))
        if bad:
            hint = (" With one feature, n − 1 = 0: is the variance unbiased?" if x.shape[-1] == 1 else
                    " A row whose entries are all equal has variance 0: is eps inside the square root?")
            return f"the output has NaN or infinite entries ({bad} of {value.size}).{hint}"
        rounding = float32_rounding(value, expected, what="the output", reference="PyTorch",
                                    fix="compute in the dtype of x (float64 here)")
        err = float(np.max(np.abs(value - expected)))
        return rounding or f"the output is wrong: its entries differ from PyTorch's layer_norm by up to {err:.3g}."
    return compare


def _problem(rng: np.random.Generator, shape: tuple[int, ...], *, affine: bool = True,
             constant_rows: bool = False, spread: float = 1.0) -> tuple:
    """``(x, weight, bias)`` in float64: ``x`` of ``shape`` with entries of scale ``spread``
    about an offset, ``weight`` and ``bias`` of the last axis's size (ones and zeros unless
    ``affine``); with ``constant_rows`` the first row along the last axis is constant."""
    x = rng.normal(loc=rng.normal() * 2, scale=spread, size=shape)
    if constant_rows:
        x.reshape(-1, shape[-1])[0] = 1.5
    d = shape[-1]
    weight = rng.normal(loc=1.0, scale=0.5, size=d) if affine else np.ones(d)
    bias = rng.normal(scale=0.5, size=d) if affine else np.zeros(d)
    return tuple(torch.tensor(a, dtype=torch.float64) for a in (x, weight, bias))


def _case(description: str, problem: tuple, eps: float, hint: str) -> Case:
    """A case for ``fn(x, weight, bias, eps)``, its answer by ``torch.nn.functional.layer_norm``."""
    x, weight, bias = problem
    args = (x, weight, bias, float(eps))
    expected = F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
    return Case(description, args, expected, hint, compare=_compare(args))


def check_layer_norm(fn) -> Feedback:
    """Check a learner's ``fn(x, weight, bias, eps) -> tensor``: LayerNorm's forward pass.

    ``x`` is a float64 tensor of any shape; ``weight`` and ``bias`` have the size of its last
    axis; ``eps`` is a float. The answer normalises each vector along the last axis::

        mu = mean(x, last axis);  var = mean((x - mu)^2, last axis)    (biased: divide by n)
        y = (x - mu) / sqrt(var + eps) * weight + bias

    as ``torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)`` computes it.
    Cases: a batch of vectors (2, 5) without scale and shift; a (batch, sequence, feature)
    tensor (3, 4, 6) with them; a large ``eps`` (0.5) on small deviations, where ``eps``'s
    place matters; a row of equal entries (variance 0); one feature (n = 1, where the
    unbiased variance divides by 0); one vector of 7 features (a 1-D ``x``); then two hidden
    cases of random shape (1 to 4 axes, last axis 2 to 12) and ``eps``. An output passes
    within ``rtol = 1e-6``, ``atol = 1e-9`` of PyTorch's; a wrong one is matched against the
    usual slips (wrong axis, unbiased variance, ``eps`` outside the square root or missing,
    no centring, a missing or swapped scale and shift), which are named.
    """
    rng = np.random.default_rng(4)
    general = "y = (x − μ) / √(σ² + ε) · weight + bias, with μ and σ² (divided by n) over the last axis."
    cases = [
        _case("a batch of 2 vectors of 5 features, weight 1 and bias 0, eps = 1e-5",
              _problem(rng, (2, 5), affine=False), 1e-5, general),
        _case("(batch, sequence, features) = (3, 4, 6) with weight and bias, eps = 1e-5",
              _problem(rng, (3, 4, 6)), 1e-5,
              "normalise each position's 6 features on their own: mean and variance over dim=-1 only."),
        _case("large eps = 0.5 on small deviations, (4, 8)", _problem(rng, (4, 8), spread=0.3), 0.5,
              "with σ² ≈ 0.09 and ε = 0.5, √(σ² + ε) and √σ² + ε are far apart: ε goes inside the root."),
        _case("a row whose 6 entries are all equal (variance 0), (3, 6), eps = 1e-5",
              _problem(rng, (3, 6), constant_rows=True), 1e-5,
              "a constant row has x − μ = 0 and σ² = 0: ε keeps the division finite and the output is bias."),
        _case("one feature per position, (5, 1), eps = 1e-5", _problem(rng, (5, 1)), 1e-5,
              "with one feature x − μ = 0, so the output is bias; the variance divides by n = 1, not n − 1 = 0."),
        _case("a single vector of 7 features (x is 1-D), eps = 1e-3", _problem(rng, (7,)), 1e-3,
              "x may have any number of axes, even one: use dim=-1, not dim=1."),
    ]
    hidden = _rng()
    for _ in range(2):
        ndim = int(hidden.integers(1, 5))
        shape = tuple(int(n) for n in hidden.integers(2, 6, size=ndim - 1)) + (int(hidden.integers(2, 13)),)
        eps = float(hidden.choice([1e-5, 1e-3, 0.1]))
        cases.append(_case(f"hidden random case: shape {shape}, eps = {eps:g}", _problem(hidden, shape), eps,
                           general))
    return run_cases("LayerNorm, forward pass", fn, cases, off_limits=REFERENCES)


REFERENCES = (F.layer_norm, torch.layer_norm, torch.nn.LayerNorm, _layer_norm)
"""The answer keys for chapter 3 (PyTorch's LayerNorm as a function, an op and a module, and
the checker's own), off limits while a learner's function is checked."""
