"""How much a gradient grows on its way back through ``N`` residual layers ``y = x + eps f(x)``.

Each layer's branch is the pre-activation branch of :class:`helpers.models.mlp.Block`
(``norm="none"``, ``init="he"``) at initialisation::

    f(x) = W2 relu(W1 relu(x)),    W1: (hidden, width), W2: (width, hidden),
    entries N(0, 2 / fan_in) (He), biases 0.

**The backward view.** A gradient ``v`` (a row vector) arriving at the output of layer
``l`` leaves its input as ``v (I + eps J_l)``, where ``J_l = df_l/dx`` at the layer's input
``x_l``. Its vector-Jacobian product is::

    v J_l = ((v W2) * 1[W1 relu(x_l) > 0]) W1 * 1[x_l > 0]      (``*``: entry by entry)

:func:`backward_growth` runs ``x`` forward through the stack, then ``v`` backward, and
records the squared growth ``G_k = ||v_k||^2 / ||v_0||^2`` after each of the ``k`` layers
passed, counted from the top. It also records, per layer, the branch's squared gain
``q_l = ||v J_l||^2 / ||v||^2`` and an *aligned* growth that applies each measured gain
``sqrt(q_l)`` along ``v`` instead of in the branch's own direction:
``prod_l (1 + eps sqrt(q_l))^2``.

**The two formulas.** ``||v (I + eps J)||^2 = ||v||^2 + 2 eps <v, v J> + eps^2 ||v J||^2``.
With He init ``E ||v J||^2 = ||v||^2`` and the middle term averages to 0, so in high
dimension each layer multiplies the squared norm by about ``1 + eps^2``:
:func:`high_dim_growth`, ``(1 + eps^2)^N``. If instead every branch's output pointed along
``v`` (the one-dimensional estimate, slope ``+1``), each layer would multiply it by
``(1 + eps)^2``: :func:`aligned_growth`, ``(1 + eps)^(2N)``.
:func:`one_dimensional_growth` measures what random one-dimensional branches do.

Since the branches have no biases, ``f(c x) = c f(x)`` for ``c > 0``: the ReLU masks, hence
the Jacobians, do not depend on the size of ``x``. The measurement rescales ``x`` and ``v``
to unit norm at every layer (and keeps the logarithm of what it took out), so a growth of
``10^150`` neither overflows nor loses precision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int, real_number


def high_dim_growth(eps: float, depth: int) -> float:
    """``(1 + eps^2)^depth``: the expected squared growth through ``depth`` layers when each
    branch's vector-Jacobian product is orthogonal to ``v`` on average and as long as ``v``."""
    eps, depth = real_number("eps", eps, low=0.0), positive_int("depth", depth, minimum=0)
    return math.exp(depth * math.log1p(eps ** 2))


def aligned_growth(eps: float, depth: int) -> float:
    """``(1 + eps)^(2 depth)``: the squared growth when every branch adds ``eps v`` along ``v``
    (the one-dimensional estimate ``dy/dx = 1 + eps``, squared)."""
    eps, depth = real_number("eps", eps, low=0.0), positive_int("depth", depth, minimum=0)
    return math.exp(2 * depth * math.log1p(eps))


def he_branch(width: int, hidden: int | None = None, *, generator: torch.Generator | None = None):
    """The weights ``(W1, W2)`` of one random branch, as :class:`helpers.models.mlp.Block`
    draws them with ``init="he"``: ``W1`` (hidden, width) with entries ``N(0, 2 / width)``,
    ``W2`` (width, hidden) with entries ``N(0, 2 / hidden)``; ``hidden`` defaults to ``width``."""
    width = positive_int("width", width)
    hidden = width if hidden is None else positive_int("hidden", hidden)
    w1 = torch.empty(hidden, width).normal_(0.0, math.sqrt(2.0 / width), generator=generator)
    w2 = torch.empty(width, hidden).normal_(0.0, math.sqrt(2.0 / hidden), generator=generator)
    return w1, w2


def branch_masks(x: torch.Tensor, w1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which ReLUs of ``f(x) = W2 relu(W1 relu(x))`` pass their input, for each row of ``x``:
    ``(x > 0, W1 relu(x) > 0)``. They are all the Jacobian needs to know about ``x``."""
    return x > 0, (torch.relu(x) @ w1.T) > 0


def branch_vjp(v: torch.Tensor, masks, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """``v J`` for each row of ``v``, ``J`` the Jacobian of ``f(x) = W2 relu(W1 relu(x))`` at the
    point whose :func:`branch_masks` are ``masks`` (one row per row of ``v``, or one for all)::

        v J = ((v W2) * 1[W1 relu(x) > 0]) W1 * 1[x > 0]
    """
    outer, inner = masks
    if v.shape[-1] != w2.shape[0] or w2.shape != w1.shape[::-1] or outer.shape[-1] != w1.shape[1] \
            or inner.shape[-1] != w1.shape[0]:
        raise ValueError(f"shapes do not fit: v {tuple(v.shape)}, masks {tuple(outer.shape)} and "
                         f"{tuple(inner.shape)}, w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)}")
    return ((v @ w2) * inner) @ w1 * outer


def backward_step(v: torch.Tensor, masks, w1: torch.Tensor, w2: torch.Tensor, eps):
    """One residual layer, backward: ``v (I + eps J)`` for each row of ``v``, and each row's
    squared gain ``||v J||^2 / ||v||^2`` (``eps``: a number, or a column with one per row)."""
    vj = branch_vjp(v, masks, w1, w2)
    gain = vj.pow(2).sum(1) / v.pow(2).sum(1)
    return v + eps * vj, gain


@dataclass
class GrowthRun:
    """One stack's measurement (:func:`backward_growth`). Row ``k`` of the arrays is the
    state after the top ``k`` layers (row 0: before any); each column is one random input
    and its random gradient ``v``."""

    eps: float
    depth: int
    width: int
    log_growth: np.ndarray  # (depth + 1, vectors): ln ||v_k||^2 / ||v_0||^2
    log_aligned: np.ndarray  # (depth + 1, vectors): ln prod (1 + eps sqrt(q_l))^2 over the top k layers
    gains: np.ndarray  # (depth,): q_l = ||v J_l||^2 / ||v||^2, mean over the vectors, top layer first

    @staticmethod
    def _mean(logs: np.ndarray) -> np.ndarray:
        top = logs.max(axis=1, keepdims=True)
        return np.exp(top[:, 0]) * np.exp(logs - top).mean(axis=1)

    @property
    def growth(self) -> np.ndarray:
        """The squared growth after each layer, ``E ||v_k||^2 / ||v_0||^2``, the mean over the vectors."""
        return self._mean(self.log_growth)

    @property
    def aligned(self) -> np.ndarray:
        """The aligned growth after each layer, mean over the vectors."""
        return self._mean(self.log_aligned)

    @property
    def final(self) -> float:
        """The squared growth through the whole stack."""
        return float(self.growth[-1])

    @property
    def aligned_final(self) -> float:
        """The aligned growth through the whole stack."""
        return float(self.aligned[-1])


def bank_branch(seed: int, layer: int, width: int = 256):
    """The weights ``(W1, W2)`` (:func:`he_branch`) of layer ``layer`` (0 = next to the input)
    of the bank of branches that :func:`backward_growth` draws from ``seed``: each layer has
    its own generator, so any layer can be drawn again, alone."""
    seed, layer = positive_int("seed", seed, minimum=0), positive_int("layer", layer, minimum=0)
    layer_seed = int(np.random.SeedSequence([seed, layer]).generate_state(1, dtype=np.uint32)[0])
    return he_branch(width, generator=torch.Generator().manual_seed(layer_seed))


def backward_growth(settings: Sequence[tuple[float, int]], *, width: int = 256, vectors: int = 16,
                    seed: int = 0) -> list[GrowthRun]:
    """Measure the squared growth of ``vectors`` random gradients through residual stacks, one
    per ``(eps, depth)`` of ``settings`` (see the module docstring).

    Every stack is built from one bank of random branches drawn from ``seed``: layer ``l``
    (from the input) of each stack is the same branch, whatever its ``eps``, and a stack of
    depth ``N`` uses the bank's first ``N`` layers. Each stack sends ``vectors`` random inputs
    ``x`` forward and then, from its top layer down, one random gradient ``v`` per input back
    through the Jacobians at that input. ``G`` is the mean over these pairs. The bank is
    drawn again for the backward pass rather than kept (it can hold 1024 layers of 256 x 256
    weights); of the forward pass only the ReLU masks are kept."""
    settings = non_empty("settings", settings)
    runs = []
    for i, item in enumerate(settings):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"settings[{i}] must be a pair (eps, depth), got {item!r}")
        runs.append((real_number(f"settings[{i}] eps", item[0], low=0.0),
                     positive_int(f"settings[{i}] depth", item[1])))
    width, vectors = positive_int("width", width, minimum=2), positive_int("vectors", vectors)
    seed = positive_int("seed", seed, minimum=0)
    layers = max(depth for _, depth in runs)
    start = torch.Generator().manual_seed(seed)
    x0 = torch.randn(vectors, width, generator=start)
    v0 = torch.randn(vectors, width, generator=start)

    # All stacks advance together, one row block of ``vectors`` rows each, deepest first, so
    # that the stacks that have layer ``l`` are the first rows; each row has its stack's eps.
    order = sorted(range(len(runs)), key=lambda r: -runs[r][1])
    depths = np.array([runs[r][1] for r in order])
    eps = torch.tensor([runs[r][0] for r in order], dtype=torch.float32).repeat_interleave(vectors)[:, None]

    def rows(layer):  # the rows of the stacks that have this layer
        return vectors * int(np.sum(depths > layer))

    # forward: each layer's ReLU masks (at unit norm: the masks ignore the size)
    x = (x0 / x0.norm(dim=1, keepdim=True)).repeat(len(runs), 1)
    masks = []
    for layer in range(layers):
        w1, w2 = bank_branch(seed, layer, width)
        n = rows(layer)
        outer, inner = branch_masks(x[:n], w1)
        masks.append((outer, inner))
        y = x[:n] + eps[:n] * (torch.relu(x[:n]) @ w1.T * inner) @ w2.T
        x[:n] = y / y.norm(dim=1, keepdim=True)
    # backward: every stack from its own top layer down, ln of the growth so far after each layer
    v = (v0 / v0.norm(dim=1, keepdim=True)).repeat(len(runs), 1)
    log_growth = torch.zeros(len(v), dtype=torch.float64)
    log_aligned = torch.zeros(len(v), dtype=torch.float64)
    history = []  # per layer, top first: (ln growth, ln aligned growth, gain) of its rows
    for layer in reversed(range(layers)):
        w1, w2 = bank_branch(seed, layer, width)
        n = rows(layer)
        step, gain = backward_step(v[:n], masks[layer], w1, w2, eps[:n])
        size = step.pow(2).sum(1)
        log_growth[:n] += torch.log(size).double()
        log_aligned[:n] += 2 * torch.log1p(eps[:n, 0] * gain.sqrt()).double()
        v[:n] = step / size.sqrt()[:, None]
        history.append((log_growth[:n].clone(), log_aligned[:n].clone(), gain.double()))
    results = [None] * len(runs)
    for block, r in enumerate(order):
        (value, depth), part = runs[r], slice(block * vectors, (block + 1) * vectors)
        passed = history[layers - depth:]  # this stack's layers, its top first
        results[r] = GrowthRun(
            value, depth, width,
            np.vstack([np.zeros(vectors)] + [h[0][part].numpy() for h in passed]),
            np.vstack([np.zeros(vectors)] + [h[1][part].numpy() for h in passed]),
            np.array([float(h[2][part].mean()) for h in passed]),
        )
    return results


def one_dimensional_growth(eps: float, depth: int, *, stacks: int = 10_000, hidden: int = 8,
                           generator: torch.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The squared growth ``prod_l (1 + eps s_l)^2`` through ``stacks`` independent stacks of
    ``depth`` one-dimensional residual layers, and every slope ``s_l`` (``stacks x depth``).

    Each branch maps a number to a number through ``hidden`` ReLU units:
    ``f(x) = sum_i a_i relu(b_i x)`` with ``b_i ~ N(0, 1)`` and ``a_i ~ N(0, 2 / hidden)``, so
    that its slope ``s = f'(x) = sum_i a_i b_i 1[b_i x > 0]`` has mean 0 and
    ``E s^2 = 1``, the high-dimensional branch's ``E ||v J||^2 / ||v||^2``. Without biases
    ``f(x) = s x``, so ``x`` moves by the factor ``1 + eps s`` and a gradient coming back by
    the same factor. The slope's sign is random: ``E prod (1 + eps s_l)^2 = (1 + eps^2)^N``,
    but one stack's growth is spread widely around that mean."""
    eps = real_number("eps", eps, low=0.0)
    depth, stacks, hidden = positive_int("depth", depth), positive_int("stacks", stacks), positive_int("hidden", hidden)
    x = torch.ones(stacks, dtype=torch.float64)
    log_growth = torch.zeros(stacks, dtype=torch.float64)
    slopes = torch.empty(stacks, depth, dtype=torch.float64)
    for layer in range(depth):
        b = torch.randn(stacks, hidden, generator=generator).double()
        a = torch.randn(stacks, hidden, generator=generator).double() * math.sqrt(2.0 / hidden)
        s = (a * b * (b * x[:, None] > 0)).sum(1)
        slopes[:, layer] = s
        factor = 1 + eps * s
        log_growth += torch.log(factor.pow(2))
        x = torch.sign(x * factor)  # the stream at unit size: only its sign picks the active units
    return log_growth.exp().numpy(), slopes.numpy()
