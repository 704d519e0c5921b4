"""Back-propagation by hand through a two-layer net, in NumPy, and the same gradients by autograd.

The net of chapter 2, for a batch of ``n`` examples stored as rows (``x`` is ``(n, d)``)::

    z1 = x W1^T + b1,   a1 = f(z1),   z2 = a1 W2^T + b2 (+ x for the residual block)
    L  = 1/2 sum over examples of ||z2 - y||^2

Its backward pass, one line per step (for one example these are the column-vector formulas
of the page; for a batch each outer product becomes a sum over the rows)::

    delta2 = z2 - y                         dL/dz2
    dW2    = delta2^T a1,  db2 = sum delta2  (one example: the outer product delta2 a1^T)
    delta1 = (delta2 W2) * f'(z1)           dL/dz1
    dW1    = delta1^T x,   db1 = sum delta1
    dx     = delta1 W1 (+ delta2 through the skip connection of the residual block)
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import choice

ACTIVATIONS = ("relu", "sigmoid")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def activation_and_slope(z: np.ndarray, activation: str) -> tuple[np.ndarray, np.ndarray]:
    """``f(z)`` and ``f'(z)`` for ``"relu"`` (slope 1 where z > 0, else 0) or ``"sigmoid"``
    (slope sigma(z) (1 - sigma(z)))."""
    choice("activation", activation, ACTIVATIONS)
    if activation == "relu":
        return np.maximum(z, 0.0), (z > 0).astype(z.dtype)
    s = _sigmoid(z)
    return s, s * (1.0 - s)


def _check_shapes(x, y, W1, b1, W2, b2, residual: bool) -> None:
    arrays = {"x": x, "y": y, "W1": W1, "b1": b1, "W2": W2, "b2": b2}
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{name} must be a NumPy array, got {type(value).__name__}")
    if x.ndim != 2:
        raise ValueError(f"x must be a batch of shape (n, d), got shape {x.shape}")
    (n, d), (h, o) = x.shape, (W1.shape[0], W2.shape[0])
    expected = {"W1": (h, d), "b1": (h,), "W2": (o, h), "b2": (o,), "y": (n, o)}
    for name, shape in expected.items():
        if arrays[name].shape != shape:
            raise ValueError(f"{name} must have shape {shape} to match x {x.shape}, W1 {W1.shape} and "
                             f"W2 {W2.shape}; got {arrays[name].shape}")
    if residual and o != d:
        raise ValueError(f"a residual block needs W2 to map back to x's width {d}, got {o} outputs")


def backprop_by_hand(x, y, W1, b1, W2, b2, activation: str = "relu", *, residual: bool = False) -> dict:
    """The gradients of ``L = 1/2 sum ||z2 - y||^2`` by the backward pass of the module
    docstring, in NumPy (no autograd). ``x`` and ``y`` are batches of rows.

    Returns ``{"W1", "b1", "W2", "b2", "x"}`` (each the shape of its variable) plus the
    intermediate ``"delta1"``, ``"delta2"`` and ``"a1"``. With ``residual=True`` the block
    outputs ``z2 = x + W2 f(W1 x + b1) + b2``."""
    _check_shapes(x, y, W1, b1, W2, b2, residual)
    z1 = x @ W1.T + b1
    a1, slope = activation_and_slope(z1, activation)
    z2 = a1 @ W2.T + b2 + (x if residual else 0.0)
    delta2 = z2 - y
    delta1 = (delta2 @ W2) * slope
    dx = delta1 @ W1 + (delta2 if residual else 0.0)
    return {"W2": delta2.T @ a1, "b2": delta2.sum(0), "W1": delta1.T @ x, "b1": delta1.sum(0), "x": dx,
            "delta1": delta1, "delta2": delta2, "a1": a1}


def backprop_by_autograd(x, y, W1, b1, W2, b2, activation: str = "relu", *, residual: bool = False) -> dict:
    """The same gradients as :func:`backprop_by_hand`, by PyTorch autograd in float64."""
    _check_shapes(x, y, W1, b1, W2, b2, residual)
    choice("activation", activation, ACTIVATIONS)
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for k, v in {"x": x, "W1": W1, "b1": b1, "W2": W2, "b2": b2}.items()}
    f = torch.relu if activation == "relu" else torch.sigmoid
    z2 = f(t["x"] @ t["W1"].T + t["b1"]) @ t["W2"].T + t["b2"]
    if residual:
        z2 = z2 + t["x"]
    loss = 0.5 * ((z2 - torch.as_tensor(y, dtype=torch.float64)) ** 2).sum()
    grads = torch.autograd.grad(loss, list(t.values()))
    return {k: g.numpy() for k, g in zip(t, grads)}


def largest_relative_error(by_hand: dict, reference: dict, keys=("W1", "b1", "W2", "b2", "x")) -> float:
    """``max over keys of max |a - b| / max(max |b|, 1e-300)``: the largest entry-wise error of
    one set of gradients against another, relative to each reference gradient's largest entry."""
    return max(float(np.max(np.abs(by_hand[k] - reference[k])) / max(np.max(np.abs(reference[k])), 1e-300))
               for k in keys)


def random_two_layer(d: int, h: int, o: int, n: int = 1, *, rng: np.random.Generator,
                     residual: bool = False) -> tuple:
    """A random problem ``(x, y, W1, b1, W2, b2)`` in float64: ``n`` examples of width ``d``,
    ``h`` hidden units, ``o`` outputs (``o = d`` for a residual block), weights of variance
    1/fan_in."""
    if residual and o != d:
        raise ValueError(f"a residual block has o = d, got d={d} and o={o}")
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, o))
    W1, b1 = rng.normal(size=(h, d)) / np.sqrt(d), rng.normal(size=h) * 0.1
    W2, b2 = rng.normal(size=(o, h)) / np.sqrt(h), rng.normal(size=o) * 0.1
    return x, y, W1, b1, W2, b2


def gradient_rank(gradient: np.ndarray, rtol: float = 1e-10) -> int:
    """The numerical rank of a weight gradient: how many singular values exceed ``rtol`` times
    the largest. One example's gradient ``delta x^T`` has rank 1; a batch's, a sum of ``n``
    such outer products, has rank at most ``min(n, rows, columns)``."""
    s = np.linalg.svd(np.asarray(gradient, dtype=float), compute_uv=False)
    return int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
