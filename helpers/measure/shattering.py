"""Shattered gradients: how a net's gradient changes from one input to the next.

* :func:`input_gradients`: ``dy/dx`` of a scalar net at every point of a 1-D grid. BatchNorm
  layers normalise with the grid's own statistics, measured once and then held fixed, so
  the net is one deterministic function of ``x`` and each point's gradient is its own.
* :func:`neighbour_correlation`: the Pearson correlation of the gradient at neighbouring
  grid points, ``corr(g[i], g[i + 1])`` over ``i``: about 1 for a smooth gradient (brown
  noise, a random walk), about 0 for white noise. Balduzzi et al. (2017) call the second
  "shattered".
* :func:`minibatch_gradient_cosine`: the cosine between the parameter gradients of two
  different mini-batches: whether two samples of the data agree on the way down;
  :func:`minibatch_gradient_cosine_by_layer` also gives it for each weight layer.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._checks import positive_int


def freeze_batch_statistics(net: nn.Module, x: torch.Tensor, **forward) -> nn.Module:
    """Set every BatchNorm of ``net`` to normalise with the statistics of the batch ``x``
    (its mean and variance measured in one forward pass, ``net(x, **forward)``), then put
    ``net`` in eval mode."""
    norms = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
    net.train()
    with torch.no_grad():
        net(x, **forward)
    return net.eval()


def input_gradients(net: nn.Module, x: torch.Tensor) -> np.ndarray:
    """``dy/dx`` at each row of ``x`` (shape ``(n, 1)``) for a net with one input and one
    output, BatchNorm statistics frozen at those of ``x`` (:func:`freeze_batch_statistics`)."""
    if x.ndim != 2 or x.shape[1] != 1:
        raise ValueError(f"x must be a column of inputs, shape (n, 1), got {tuple(x.shape)}")
    freeze_batch_statistics(net, x)
    x = x.detach().clone().requires_grad_(True)
    out = net(x)
    if out.shape != x.shape:
        raise ValueError(f"net must map each input to one output, got an output of shape {tuple(out.shape)}")
    (grad,) = torch.autograd.grad(out.sum(), x)
    return grad.squeeze(1).numpy()


def neighbour_correlation(g) -> float:
    """``corr(g[:-1], g[1:])``: the correlation between values at neighbouring points of a series
    (the lag-1 autocorrelation). 0 for a constant series, which has no variation to correlate."""
    g = np.asarray(g, dtype=float)
    if g.ndim != 1 or g.size < 3:
        raise ValueError(f"g must be a 1-D series of at least 3 values, got shape {g.shape}")
    a, b = g[:-1] - g[:-1].mean(), g[1:] - g[1:].mean()
    denominator = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / denominator) if denominator > 0 else 0.0


def _gradients(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    net.zero_grad()
    nn.functional.cross_entropy(net(x), y).backward()
    # a parameter the loss does not reach counts as a zero gradient, so the list lines up with
    # net.parameters()
    return [(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in net.parameters()]


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(nn.functional.cosine_similarity(a, b, dim=0))


def minibatch_gradient_cosine_by_layer(net: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = 64,
                                       pairs: int = 8, generator: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`minibatch_gradient_cosine`, and also per weight layer: returns ``(whole,
    by_layer)`` with ``whole[j]`` the cosine of pair ``j``'s whole gradients and
    ``by_layer[j, l]`` the cosine of their gradients with respect to the ``l``-th weight
    matrix (every parameter with two or more dimensions, in the net's order: for a
    :class:`~helpers.models.chain.LayerChain` the stem, each hidden layer, the head). A
    whole-vector cosine is dominated by the layers with the largest gradients; the
    per-layer cosine weighs every layer alike (the *gradient confusion* of Sankararaman
    et al. 2020, layer by layer)."""
    batch_size, pairs = positive_int("batch_size", batch_size, minimum=2), positive_int("pairs", pairs)
    if 2 * batch_size > len(x):
        raise ValueError(f"batch_size must be at most half the {len(x)} examples, got {batch_size}")
    is_matrix = [p.ndim >= 2 for p in net.parameters()]
    net.train()
    whole, by_layer = [], []
    for _ in range(pairs):
        order = torch.randperm(len(x), generator=generator)
        a, b = order[:batch_size], order[batch_size:2 * batch_size]
        ga, gb = _gradients(net, x[a], y[a]), _gradients(net, x[b], y[b])
        whole.append(_cosine(torch.cat(ga), torch.cat(gb)))
        by_layer.append([_cosine(p, q) for p, q, matrix in zip(ga, gb, is_matrix) if matrix])
    net.zero_grad()
    return np.array(whole), np.array(by_layer)


def minibatch_gradient_cosine(net: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = 64,
                              pairs: int = 8, generator: torch.Generator) -> np.ndarray:
    """For ``pairs`` random pairs of disjoint mini-batches of ``batch_size`` examples, the
    cosine between the two gradients of the cross-entropy loss with respect to all
    parameters (in training mode: BatchNorm uses each mini-batch's statistics)."""
    return minibatch_gradient_cosine_by_layer(net, x, y, batch_size=batch_size, pairs=pairs,
                                              generator=generator)[0]
