"""Second moments through a chain of linear layers, and parameter gradients at initialisation.

**The chain** (claim 5.3). Widths ``n_0, ..., n_L``; layer ``l`` maps ``R^{n_{l-1}}`` to
``R^{n_l}`` as ``h_l = phi(h_{l-1}) W_l``, with ``W_l`` of shape ``(n_{l-1}, n_l)`` drawn
with zero mean and variance ``sigma_l^2``, ``phi`` the identity (a linear chain) or ReLU,
and ``h_0`` a standard normal input. Write ``n = n_{l-1}`` (fan-in) and ``m = n_l``
(fan-out). The **forward** second moment ``q_l = E[h_l^2]`` (mean over the batch and the
units) obeys::

    q_l = c * n * sigma_l^2 * q_{l-1},     c = 1 (linear), 1/2 (ReLU)

since each unit of ``h_l`` sums ``n`` independent terms of variance
``sigma_l^2 E[phi(h_{l-1})^2]``, and ReLU keeps half of the second moment of a symmetric
input. The **backward** second moment ``p_l = E[(dL/dh_l)^2]``, with the loss
``L = sum(h_L * g)`` for a fixed standard normal ``g`` (so ``p_L = E[g^2] = 1``), obeys::

    p_{l-1} = c * m * sigma_l^2 * p_l

because ``dL/dh_{l-1} = (dL/dh_l W_l^T) * phi'(h_{l-1})``. The inits (:data:`INITS`) set
``sigma_l^2`` to ``1/n``, ``2/n`` (with ReLU), ``1/m`` or Xavier's ``2/(n + m)``.
:func:`predicted_moments` multiplies the factors up; :func:`chain_moments` measures them.

**Parameter gradients** (claim 5.4): :func:`block_gradient_rms` is the root mean square
of ``dL/dθ`` over every parameter of a :class:`~helpers.models.mlp.DeepMLP`'s blocks,
``sqrt(||dL/dθ_blocks||^2 / K)`` for ``K`` parameters, so that
``||dL/dθ_blocks||^2 = K * rms^2``: the quantity whose growth with depth the incremental
explosion is about.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._checks import choice, non_empty, positive_int, real_number

INITS = ("1/n", "2/n, ReLU", "1/m", "Xavier")
"""The four inits of the chain, by weight variance ``1/n``, ``2/n`` with ReLU between layers,
``1/m`` and ``2/(n + m)`` (``n`` fan-in, ``m`` fan-out)."""

PROFILES = ("widening", "alternating", "constant", "narrowing")
"""Width profiles of :func:`width_profile`."""


def init_variance(init: str, n: int, m: int) -> float:
    """The weight variance ``sigma^2`` of a layer with fan-in ``n`` and fan-out ``m`` under ``init``."""
    choice("init", init, INITS)
    n, m = positive_int("n", n), positive_int("m", m)
    return {"1/n": 1 / n, "2/n, ReLU": 2 / n, "1/m": 1 / m, "Xavier": 2 / (n + m)}[init]


def uses_relu(init: str) -> bool:
    """Whether the chain of ``init`` has a ReLU before each layer (only ``"2/n, ReLU"``)."""
    return choice("init", init, INITS) == "2/n, ReLU"


def width_profile(profile: str, depth: int = 50, low: int = 32, high: int = 256) -> np.ndarray:
    """The ``depth + 1`` widths ``n_0, ..., n_depth`` of a chain:

    * ``"widening"``: four equal stretches of ``low``, ``2 low``, ... up to ``high``
      (powers of two apart), so a few layers widen by ``m/n = 2`` and the rest are square;
    * ``"narrowing"``: the same, reversed;
    * ``"alternating"``: ``low, high, low, ...``: every layer has ``m/n = high/low`` or its inverse;
    * ``"constant"``: ``sqrt(low * high)``, rounded up to a power of two, throughout (the
      square control: 128 for the defaults).
    """
    choice("profile", profile, PROFILES)
    depth, low, high = positive_int("depth", depth, minimum=2), positive_int("low", low), positive_int("high", high)
    if high <= low:
        raise ValueError(f"high must be > low, got low={low}, high={high}")
    layer = np.arange(depth + 1)
    if profile == "alternating":
        return np.where(layer % 2 == 0, low, high)
    if profile == "constant":
        return np.full(depth + 1, int(2 ** np.ceil(np.log2(np.sqrt(low * high)))))
    steps = int(round(np.log2(high / low)))
    if 2 ** steps * low != high:
        raise ValueError(f"high/low must be a power of two for a {profile!r} profile, got {high}/{low}")
    stretch = np.minimum(layer * (steps + 1) // (depth + 1), steps)
    widths = low * 2 ** stretch
    return widths if profile == "widening" else widths[::-1].copy()


def _widths(widths) -> np.ndarray:
    widths = np.array([positive_int("widths[i]", w) for w in non_empty("widths", widths)])
    if widths.size < 2:
        raise ValueError(f"widths must list at least 2 widths (one layer), got {widths.tolist()}")
    return widths


def layer_factors(widths, init: str) -> tuple[np.ndarray, np.ndarray]:
    """The formula's factor per layer, forward ``c n sigma^2`` and backward ``c m sigma^2``
    (``c`` 1/2 with ReLU, else 1), each an array of ``len(widths) - 1`` layers."""
    widths = _widths(widths)
    c = 0.5 if uses_relu(init) else 1.0
    n, m = widths[:-1], widths[1:]
    var = np.array([init_variance(init, int(a), int(b)) for a, b in zip(n, m)])
    return c * n * var, c * m * var


def predicted_moments(widths, init: str) -> tuple[np.ndarray, np.ndarray]:
    """The formula's second moments at ``h_0, ..., h_L``: forward ``q_l / q_0`` (the product
    of the forward factors of layers ``1..l``) and backward ``p_l / p_L`` (the product of the
    backward factors of layers ``l+1..L``)."""
    forward, backward = layer_factors(widths, init)
    return (np.concatenate([[1.0], np.cumprod(forward)]),
            np.concatenate([np.cumprod(backward[::-1])[::-1], [1.0]]))


def chain_second_moments(weights, x, g, *, relu: bool, scales=None):
    """Run ``x`` through ``h_l = phi(h_{l-1}) W_l`` and ``L = sum(h_L * g)`` backward; return the
    second moments ``E[h_l^2]`` and ``E[(dL/dh_l)^2]`` of ``h_0 = x, ..., h_L``, each a tensor of
    shape ``(chains, L + 1)``: the mean over each chain's batch and units.

    ``weights[l]`` has shape ``(chains, n_l, n_{l+1})``, ``x`` ``(chains, batch, n_0)`` and ``g``
    ``(chains, batch, n_L)``: each chain runs its own batch through its own weights. With
    ``scales``, layer ``l``'s weights are ``scales[l] * weights[l]`` (applied to the product,
    which is cheaper than scaling the matrices)."""
    scales = [1.0] * len(weights) if scales is None else list(scales)
    hs = [x.detach().clone().requires_grad_()]
    for w, s in zip(weights, scales, strict=True):
        h = torch.relu(hs[-1]) if relu else hs[-1]
        hs.append((h @ w) * s)
        hs[-1].retain_grad()
    (hs[-1] * g).sum().backward()
    forward = torch.stack([h.detach().pow(2).mean((1, 2)) for h in hs], 1)
    backward = torch.stack([h.grad.pow(2).mean((1, 2)) for h in hs], 1)
    return forward, backward


@dataclass(frozen=True)
class ChainMoments:
    """Measured and predicted second moments of one init on one width profile.

    ``forward[c, l]`` is ``E[h_l^2] / E[h_0^2]`` in chain ``c``; ``backward[c, l]`` is
    ``E[(dL/dh_l)^2] / E[(dL/dh_L)^2]``; ``predicted_*`` are the formula's
    (:func:`predicted_moments`). Each chain is one draw of all the weights."""

    init: str
    widths: np.ndarray
    forward: np.ndarray
    backward: np.ndarray
    predicted_forward: np.ndarray
    predicted_backward: np.ndarray

    @property
    def mean_forward(self) -> np.ndarray:
        """``forward`` averaged over the chains: an estimate of the expectation the formula gives."""
        return self.forward.mean(0)

    @property
    def mean_backward(self) -> np.ndarray:
        return self.backward.mean(0)

    @property
    def forward_factors(self) -> np.ndarray:
        """Each layer's measured forward factor ``E[h_l^2] / E[h_{l-1}^2]``, averaged over the chains."""
        return (self.forward[:, 1:] / self.forward[:, :-1]).mean(0)

    @property
    def backward_factors(self) -> np.ndarray:
        """Each layer's measured backward factor ``E[(dL/dh_{l-1})^2] / E[(dL/dh_l)^2]``, averaged over the chains."""
        return (self.backward[:, :-1] / self.backward[:, 1:]).mean(0)

    def factor_off(self, what: str = "moments") -> float:
        """The largest factor by which a measurement is off the formula, ``exp(max |log(measured /
        predicted)|)`` over all layers and both directions: of the chain-averaged second moments
        (``what="moments"``) or of the per-layer factors (``"factors"``). 1 is a perfect match."""
        choice("what", what, ("moments", "factors"))
        if what == "moments":
            pairs = [(self.mean_forward, self.predicted_forward), (self.mean_backward, self.predicted_backward)]
        else:
            fwd, bwd = layer_factors(self.widths, self.init)
            pairs = [(self.forward_factors, fwd), (self.backward_factors, bwd)]
        return float(np.exp(max(np.abs(np.log(got / want)).max() for got, want in pairs)))


def draw_chain(widths, chains: int, *, generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Standard normal weights for ``chains`` chains of ``widths``: ``weights[l]`` of shape
    ``(chains, n_l, n_{l+1})``, float32. :func:`chain_moments` scales them by each init's ``sigma``."""
    widths, chains = _widths(widths), positive_int("chains", chains)
    return [torch.randn(chains, int(n), int(m), generator=generator) for n, m in zip(widths[:-1], widths[1:])]


def chain_moments(widths, inits=INITS, *, chains: int = 32, batch: int = 8,
                  generator: torch.Generator | None = None) -> dict[str, ChainMoments]:
    """Measure the forward and backward second moments of the chain of ``widths`` under each of
    ``inits``: ``{init: ChainMoments}``.

    ``chains`` independent draws of standard normal matrices (:func:`draw_chain`), each run on
    its own standard normal batch of ``batch`` inputs and its own ``g``; every init uses the
    same draws, scaled by its ``sigma_l`` (and the ReLU chain puts a ReLU before each layer),
    so the inits differ by their variance alone. Random numbers come from ``generator``."""
    widths = _widths(widths)
    inits = [choice("inits[i]", i, INITS) for i in non_empty("inits", inits)]
    chains, batch = positive_int("chains", chains), positive_int("batch", batch)
    raw = draw_chain(widths, chains, generator=generator)
    x = torch.randn(chains, batch, int(widths[0]), generator=generator)
    g = torch.randn(chains, batch, int(widths[-1]), generator=generator)
    out = {}
    for init in inits:
        scales = [init_variance(init, int(n), int(m)) ** 0.5 for n, m in zip(widths[:-1], widths[1:])]
        forward, backward = chain_second_moments(raw, x, g, relu=uses_relu(init), scales=scales)
        forward, backward = forward.double().numpy(), backward.double().numpy()
        out[init] = ChainMoments(init, widths, forward / forward[:, :1], backward / backward[:, -1:],
                                 *predicted_moments(widths, init))
    return out


GAIN_RANGE = (0.5, 6.0)
"""The gains :func:`relu_chain_growth` accepts: within them 50 layers keep every second moment
well inside float32's range (about 1e-38 to 3e38)."""


def gain_problem(gain) -> str | None:
    """What is wrong with ``gain`` as the gain of a ReLU chain (``Var W = gain / fan_in``), in
    words for a learner, or ``None`` when it can be used (a real number in :data:`GAIN_RANGE`)."""
    low, high = GAIN_RANGE
    if gain is None:
        return ("no gain yet: set my_gain to the gain you choose (Var W = my_gain / n, n the fan-in), then run "
                "this cell again.")
    try:
        value = real_number("my_gain", gain)
    except (TypeError, ValueError) as err:
        return f"{err}."
    if not low <= value <= high:
        return f"my_gain must be between {low} and {high}, got {value:g}."
    return None


def relu_chain_growth(gain, *, depth: int = 50, width: int = 128, chains: int = 128, batch: int = 1,
                      generator: torch.Generator | None = None) -> float:
    """``E[h_L^2] / E[h_0^2]`` of a ReLU chain (``h_l = relu(h_{l-1}) W_l``, all layers ``width``
    wide, ``Var W = gain / width``), averaged over ``chains`` independent chains of ``batch``
    standard normal inputs each. Raises ValueError for a gain that :func:`gain_problem` refuses."""
    problem = gain_problem(gain)
    if problem:
        raise ValueError(problem)
    depth, width = positive_int("depth", depth), positive_int("width", width)
    chains, batch = positive_int("chains", chains), positive_int("batch", batch)
    scale = (float(gain) / width) ** 0.5
    h = torch.randn(chains, batch, width, generator=generator)
    start = h.pow(2).mean((1, 2))
    for _ in range(depth):
        h = (torch.relu(h) @ torch.randn(chains, width, width, generator=generator)) * scale
    return float((h.pow(2).mean((1, 2)) / start).mean())


def block_gradient_rms(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """The root mean square of ``dL/dθ`` over every parameter of ``model.blocks`` after one
    backward pass of the cross-entropy ``L`` of ``model(x)`` against ``y``:
    ``sqrt(sum(dL/dθ^2) / K)`` over the blocks' ``K`` parameters. Existing gradients are cleared."""
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        raise TypeError(f"model must have a non-empty ModuleList .blocks (a DeepMLP), got {type(model).__name__}")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.shape[0] != y.shape[0]:
        raise ValueError("x and y must be tensors with one row per example")
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()
    grads = torch.cat([p.grad.reshape(-1) for block in blocks for p in block.parameters()])
    return float(grads.double().pow(2).mean().sqrt())
