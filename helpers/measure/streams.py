"""What repeated addition does to the residual stream, and what normalisation undoes.

A stack of ``depth`` random feed-forward branches joins a stream of tokens ``x``::

    none:  x <- x + F(x)              (the bare sum)
    post:  x <- LN(x + F(x))          (Add, then Norm: the original Transformer)
    pre:   x <- x + F(LN(x))          (Norm inside the branch)

with ``F(x) = scale * W2 act(W1 x)`` (``act`` ReLU, GELU or, as a control, the identity),
``W1`` of variance ``2 / width`` (He), ``W2`` of variance
``1 / d_ff`` and no biases. For a sum of two uncorrelated terms the variances add::

    Var(x + F) = Var(x) + Var(F) + 2 Cov(x, F),   with Cov(x, F) ~ 0 for random weights,

so without normalisation each layer multiplies the stream's variance by ``1 + Var(F)/Var(x)``:
it grows geometrically with depth. :func:`residual_stream` measures, layer by layer, the
three terms of that sum, the stream's mean, variance, skewness and per-feature offset
(:func:`feature_offset`), and the same moments of
the branch's hidden activations after the nonlinearity (ReLU or GELU), which are what the
nonlinearity does to the distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import choice, positive_int, real_number

ACTIVATIONS = ("relu", "gelu", "identity")  # identity: a linear branch, the control
STREAM_NORMS = ("none", "post", "pre")


def moments(t: torch.Tensor) -> tuple[float, float, float]:
    """``(mean, variance, skewness)`` of all entries of ``t``: the skewness is
    ``E[(t - mean)^3] / Var^(3/2)`` (0 for a symmetric distribution; about 1.64 for a
    rectified standard normal, ReLU(z))."""
    t = t.double().flatten()
    mean = t.mean()
    centred = t - mean
    var = centred.pow(2).mean()
    skew = centred.pow(3).mean() / var.clamp_min(1e-300).pow(1.5)
    return float(mean), float(var), float(skew)


def feature_offset(t: torch.Tensor) -> float:
    """How far the features of ``t`` (tokens x features) are from being centred, each on its
    own: the root mean square over the features of each feature's mean over the tokens,
    divided by the standard deviation of all entries. About ``1 / sqrt(tokens)`` for centred
    random features; a pooled mean (:func:`moments`) can be 0 while this is large, when some
    features sit above 0 and others below."""
    if t.ndim != 2:
        raise ValueError(f"t must be (tokens, features), got shape {tuple(t.shape)}")
    t = t.double()
    return float(t.mean(0).pow(2).mean().sqrt() / t.std(unbiased=False).clamp_min(1e-300))


def variance_terms(x: torch.Tensor, f: torch.Tensor) -> tuple[float, float, float, float]:
    """``(Var(x), Var(F), Var(x + F), 2 Cov(x, F))`` over all entries: the measured sides of
    ``Var(x + F) = Var(x) + Var(F) + 2 Cov(x, F)`` (an identity; the claim is that the last term
    is small)."""
    if x.shape != f.shape:
        raise ValueError(f"x and f must have the same shape, got {tuple(x.shape)} and {tuple(f.shape)}")
    x, f = x.double().flatten(), f.double().flatten()
    cov = ((x - x.mean()) * (f - f.mean())).mean()
    return float(x.var(unbiased=False)), float(f.var(unbiased=False)), float((x + f).var(unbiased=False)), \
        float(2 * cov)


@dataclass
class StreamRecord:
    """Layer-by-layer measurements of :func:`residual_stream`; arrays of length ``depth + 1``
    for the stream (index 0 is the input) and ``depth`` for the branches."""

    stream_mean: np.ndarray
    stream_var: np.ndarray
    stream_skew: np.ndarray
    stream_offset: np.ndarray  # feature_offset of the stream: how far each feature's mean is from 0
    branch_var: np.ndarray  # Var(F) at each layer
    sum_var: np.ndarray  # Var(x + F), measured before any normalisation
    twice_cov: np.ndarray  # 2 Cov(x, F)
    hidden_mean: np.ndarray  # of act(W1 x), inside each branch
    hidden_var: np.ndarray
    hidden_skew: np.ndarray

    @property
    def predicted_var(self) -> np.ndarray:
        """``Var(x) + Var(F)`` at each layer, ``x`` the stream entering it: the sum's variance
        if the two were uncorrelated."""
        return self.stream_var[:-1] + self.branch_var


@torch.no_grad()
def residual_stream(depth: int, width: int = 64, tokens: int = 512, *, activation: str = "relu",
                    norm: str = "none", scale: float = 1.0, d_ff: int | None = None,
                    generator: torch.Generator | None = None) -> StreamRecord:
    """Send ``tokens`` standard-normal vectors of ``width`` through ``depth`` random branches
    (see the module docstring) and record, per layer, the stream's moments, ``Var(x)``,
    ``Var(F)``, ``Var(x + F)``, ``2 Cov(x, F)`` and the moments of the branch's hidden
    activations. ``d_ff`` (default ``4 * width``) is the branch's hidden width; ``scale``
    multiplies each branch's output. Weights come from ``generator`` (the global one if
    ``None``)."""
    depth, width, tokens = positive_int("depth", depth), positive_int("width", width), positive_int("tokens", tokens)
    d_ff = 4 * width if d_ff is None else positive_int("d_ff", d_ff)
    choice("activation", activation, ACTIVATIONS)
    choice("norm", norm, STREAM_NORMS)
    scale = real_number("scale", scale, low=0.0)
    act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "identity": lambda t: t}[activation]

    def ln(t):
        return torch.nn.functional.layer_norm(t, (width,))

    x = torch.randn(tokens, width, generator=generator, dtype=torch.float64)
    rows = {k: [] for k in ("branch_var", "sum_var", "twice_cov", "hidden_mean", "hidden_var", "hidden_skew")}
    stream, offsets = [moments(x)], [feature_offset(x)]
    for _ in range(depth):
        w1 = torch.randn(d_ff, width, generator=generator, dtype=torch.float64) * (2.0 / width) ** 0.5
        w2 = torch.randn(width, d_ff, generator=generator, dtype=torch.float64) * (1.0 / d_ff) ** 0.5
        hidden = act((ln(x) if norm == "pre" else x) @ w1.T)
        f = scale * hidden @ w2.T
        _, var_f, var_sum, twice_cov = variance_terms(x, f)
        for key, value in zip(("branch_var", "sum_var", "twice_cov"), (var_f, var_sum, twice_cov)):
            rows[key].append(value)
        for key, value in zip(("hidden_mean", "hidden_var", "hidden_skew"), moments(hidden)):
            rows[key].append(value)
        x = ln(x + f) if norm == "post" else x + f
        stream.append(moments(x))
        offsets.append(feature_offset(x))
    mean, var, skew = (np.array(column) for column in zip(*stream))
    return StreamRecord(mean, var, skew, np.array(offsets), **{k: np.array(v) for k, v in rows.items()})
