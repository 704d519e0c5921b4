"""Claim 1.2: gradient norms at initialisation, layer by layer, in a plain net and its twin.

One forward and backward pass of the cross-entropy on one batch of digits, with every
weight layer's gradient norm recorded (:func:`helpers.measure.gradients.gradient_profile`). The
per-layer factor (:func:`helpers.measure.gradients.per_layer_factor`) summarises each profile by
one number: how much a gradient norm changes per layer on its way back to the input.

The nets are drawn and run in float64. A deep plain net with BatchNorm is chaotic at
initialisation: in float32, two processors' kernels (PyTorch's AVX2 ones and its portable ones)
give its 56-layer profile norms that differ by up to half. In float64 the weights are drawn
alike on both and the rounding that remains is far too small to be amplified that much, so a
learner's machine measures the profile that the book shows.
"""

from __future__ import annotations

import torch
from torch.nn import functional

from ..measure.gradients import GradientProfile, gradient_profile
from ..models import DeepMLP
from ..seeding import isolated


def init_gradient_profiles(data, depth: int, *, norm: str = "none", init: str = "pytorch",
                           width: int = 32, seed: int = 0, batch: int = 256) -> dict[str, GradientProfile]:
    """``{"plain": profile, "residual": profile}`` of twins with identical initial weights."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # drawn in float64 (module docstring)
    try:
        with isolated(seed):
            residual = DeepMLP(depth, width, kind="residual", norm=norm, init=init,
                               in_features=data.n_features, n_classes=data.n_classes)
    finally:
        torch.set_default_dtype(previous)
    x, y = data.x_train[:batch].double(), data.y_train[:batch]
    return {m.kind: gradient_profile(m, functional.cross_entropy, x, y) for m in (residual.twin(), residual)}

