"""Claim 1.2: gradient norms at initialisation, layer by layer, in a plain net and its twin.

One forward and backward pass of the cross-entropy on one batch of digits, with every
weight layer's gradient norm recorded (:func:`helpers.measure.gradients.gradient_profile`). The
per-layer factor (:func:`helpers.measure.gradients.per_layer_factor`) summarises each profile by
one number: how much a gradient norm changes per layer on its way back to the input.
"""

from __future__ import annotations

from torch.nn import functional

from ..measure.gradients import GradientProfile, gradient_profile
from ..models import DeepMLP
from ..seeding import seed_everything


def init_gradient_profiles(data, depth: int, *, norm: str = "none", init: str = "pytorch",
                           width: int = 32, seed: int = 0, batch: int = 256) -> dict[str, GradientProfile]:
    """``{"plain": profile, "residual": profile}`` of twins with identical initial weights."""
    seed_everything(seed)
    residual = DeepMLP(depth, width, kind="residual", norm=norm, init=init,
                       in_features=data.n_features, n_classes=data.n_classes)
    x, y = data.x_train[:batch], data.y_train[:batch]
    return {m.kind: gradient_profile(m, functional.cross_entropy, x, y) for m in (residual.twin(), residual)}

