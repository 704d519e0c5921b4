"""Claim 2.4c: order and chaos. Gradients shatter without any normalisation once a net is chaotic.

A plain chain of ``tanh`` layers with one input and one output, no normalisation::

    h_0 = w_0 x + b_0,    h_l = W_l tanh(h_{l-1}) + b_l,    y = w_out . tanh(h_L)

with ``W_l ~ N(0, sigma_w^2 / width)``, ``w_0 ~ N(0, sigma_w^2)``, biases ``~ N(0, sigma_b^2)``
and ``w_out ~ N(0, 1 / width)``. Mean-field theory (Poole et al. 2016; Schoenholz et al. 2017)
follows the size of a wide layer's pre-activations, ``q_l = sigma_w^2 E[tanh(sqrt(q_{l-1}) z)^2]
+ sigma_b^2`` (``z`` standard normal), to its fixed point ``q*``, and then

    chi_1 = sigma_w^2 E[tanh'(sqrt(q*) z)^2],

the slope at ``c = 1`` of the map from one layer's correlation ``c`` between two inputs to
the next: the factor by which a layer multiplies the squared distance between two nearly
equal inputs. ``chi_1 < 1``: the *ordered* phase, nearby inputs are pulled together;
``chi_1 > 1``: the *chaotic* phase, they are pushed apart, and the gradient with respect to
the input shatters. :func:`critical_weight_variance` finds the ``sigma_w^2`` at which
``chi_1 = 1``. A ReLU chain without biases and without normalisation never enters the chaotic
phase: ReLU is positively homogeneous, so its correlation map does not depend on ``sigma_w``
and has slope exactly 1 at ``c = 1`` (its weight scale changes only the signal's size).
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.polynomial.hermite_e import hermegauss

from .._checks import non_empty, positive_int, real_number
from ..measure.shattering import input_gradients, neighbour_correlation
from ..seeding import generator, seeds_of_run
from .shattering import input_grid

BIAS_VARIANCE = 0.05
"""``sigma_b^2`` of the tanh chains: small, so that the ordered phase has a fixed point above 0."""

_Z, _W = hermegauss(101)
_W = _W / _W.sum()  # Gauss-Hermite nodes and weights for E[f(z)], z ~ N(0, 1)


def _fixed_point(weight_variance: float, bias_variance: float) -> float:
    q = 1.0
    for _ in range(1000):
        q_next = weight_variance * float(_W @ np.tanh(np.sqrt(q) * _Z) ** 2) + bias_variance
        if abs(q_next - q) < 1e-13:
            break
        q = q_next
    return q


def chi1(weight_variance: float, bias_variance: float = BIAS_VARIANCE) -> float:
    """Mean-field ``chi_1 = sigma_w^2 E[tanh'(sqrt(q*) z)^2]`` of a wide tanh chain at its fixed
    point ``q*`` (Gauss-Hermite quadrature): below 1 ordered, above 1 chaotic."""
    sw = real_number("weight_variance", weight_variance, low=0.0)
    sb = real_number("bias_variance", bias_variance, low=0.0)
    if sw == 0:
        raise ValueError("weight_variance must be > 0")
    q = _fixed_point(sw, sb)
    return sw * float(_W @ np.cosh(np.sqrt(q) * _Z) ** -4)


def critical_weight_variance(bias_variance: float = BIAS_VARIANCE) -> float:
    """The ``sigma_w^2`` at which ``chi_1 = 1`` (the edge of chaos), by bisection; it tends to 1
    as ``sigma_b^2 -> 0`` (where the fixed point ``q* -> 0`` is approached slowly, so the value
    found for ``sigma_b^2 = 0`` is within 1 % of 1) and grows with ``sigma_b^2``."""
    sb = real_number("bias_variance", bias_variance, low=0.0)
    low, high = 0.5, 10.0
    if chi1(high, sb) < 1:
        raise ValueError(f"bias_variance {sb} puts the edge of chaos above sigma_w^2 = {high}")
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if chi1(middle, sb) < 1 else (low, middle)
    return (low + high) / 2


def measured_edge(weight_variances, correlations, *, level: float = 0.5) -> float:
    """Where chains of one depth shatter: the ``sigma_w^2`` at which ``correlations`` (one value
    per weight variance, increasing; e.g. the mean over chains of :func:`phase_scan`'s
    ``"gradient"``) first falls below ``level``, by linear interpolation between that variance
    and the one before it. Raises a ``ValueError`` if the first value is already below ``level``
    or none is (the grid does not bracket the crossing)."""
    variances = np.array([real_number("weight_variances[i]", v, low=0.0)
                          for v in non_empty("weight_variances", weight_variances)])
    values = np.array([real_number("correlations[i]", c) for c in non_empty("correlations", correlations)])
    level = real_number("level", level)
    if len(values) != len(variances):
        raise ValueError(f"correlations must hold one value per weight variance ({len(variances)}), "
                         f"got {len(values)}")
    if np.any(np.diff(variances) <= 0):
        raise ValueError("weight_variances must increase")
    below = np.flatnonzero(values < level)
    if len(below) == 0 or below[0] == 0:
        raise ValueError(f"weight_variances must bracket the crossing: correlations must start at or "
                         f"above level {level} and fall below it, got {values.round(3).tolist()}")
    i = below[0]
    return float(np.interp(level, values[[i, i - 1]], variances[[i, i - 1]]))


class TanhChain(torch.nn.Module):
    """The plain tanh chain of the module docstring, drawn from its own seed."""

    def __init__(self, layers: int, weight_variance: float, *, bias_variance: float = BIAS_VARIANCE,
                 width: int = 200, seed: int = 0):
        super().__init__()
        layers, width = positive_int("layers", layers), positive_int("width", width)
        sw = real_number("weight_variance", weight_variance, low=0.0)
        sb = real_number("bias_variance", bias_variance, low=0.0)
        self.stem = torch.nn.Linear(1, width)
        self.hidden = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))
        self.head = torch.nn.Linear(width, 1, bias=False)
        g = generator(seed)
        with torch.no_grad():
            for layer in (self.stem, *self.hidden):
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=g) * (sw / layer.in_features) ** 0.5)
                layer.bias.copy_(torch.randn(layer.bias.shape, generator=g) * sb ** 0.5)
            self.head.weight.copy_(torch.randn(self.head.weight.shape, generator=g) * width ** -0.5)

    def last_layer(self, x: torch.Tensor) -> torch.Tensor:
        """``h_L``, the last layer's pre-activations."""
        h = self.stem(x)
        for layer in self.hidden:
            h = layer(torch.tanh(h))
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.last_layer(x)))


def tanh_chain_on_grid(layers: int, weight_variance: float, *, bias_variance: float = BIAS_VARIANCE,
                       width: int = 200, seed: int = 0) -> dict[str, float]:
    """Draw one plain tanh chain (see the module docstring) and measure it on the grid of
    :func:`~helpers.experiments.shattering.input_grid`:

    * ``"gradient"``: the neighbour correlation of ``dy/dx``
      (:func:`~helpers.measure.shattering.neighbour_correlation`);
    * ``"cosine"``: the mean cosine between the last layer's pre-activations ``h_L`` of
      neighbouring grid points (1 when the chain maps neighbours to the same direction).
    """
    net = TanhChain(layers, weight_variance, bias_variance=bias_variance, width=width, seed=seed)
    x = input_grid()
    gradient = input_gradients(net, x)
    with torch.no_grad():
        h = torch.nn.functional.normalize(net.last_layer(x), dim=1)
    return {"gradient": neighbour_correlation(gradient), "cosine": float((h[:-1] * h[1:]).sum(1).mean())}


def phase_scan(weight_variances, *, layers: int = 50, nets: int = 4, bias_variance: float = BIAS_VARIANCE,
               width: int = 200, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"gradient": rho, "cosine": c}``, each ``(len(weight_variances), nets)``: the two
    measurements of :func:`tanh_chain_on_grid` for ``nets`` chains drawn at each
    ``sigma_w^2`` (every chain with a seed of its own, :func:`~helpers.seeding.seeds_of_run`)."""
    variances = tuple(real_number("weight_variances[i]", v, low=0.0)
                      for v in non_empty("weight_variances", weight_variances))
    nets = positive_int("nets", nets)
    seeds = iter(seeds_of_run(seed, nets * len(variances)))
    out = {"gradient": np.zeros((len(variances), nets)), "cosine": np.zeros((len(variances), nets))}
    for i, sw in enumerate(variances):
        for j in range(nets):
            measured = tanh_chain_on_grid(layers, sw, bias_variance=bias_variance, width=width, seed=next(seeds))
            for key, value in measured.items():
                out[key][i, j] = value
    return out
