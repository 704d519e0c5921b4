"""How sharply a loss bends around the current parameters: the Hessian's top eigenvalue.

The article calls a net whose loss changes a lot for a small change of its parameters one
with an "extremely unsmooth landscape". One number for that is the largest eigenvalue of the
Hessian ``H = ∇²L``: to second order, a step ``Δθ`` of a given length raises the loss by at
most ``½ λ_max ||Δθ||²`` beyond its first-order change, and plain gradient descent is stable
only for rates below ``2 / λ_max``. An eigensolver finds it from Hessian-vector products
(:func:`hessian_vector_product`, two backward passes each, the Hessian never written down);
:mod:`helpers.measure.adam_curvature` does so through Adam's preconditioner.
"""

from __future__ import annotations

import torch
from torch import nn


def hessian_vector_product(loss_fn, model: nn.Module, params: list[torch.Tensor],
                           vector: list[torch.Tensor]) -> list[torch.Tensor]:
    """``H v`` for the Hessian of ``loss_fn(model)`` with respect to ``params``, by
    differentiating ``<∇L, v>`` a second time (Pearlmutter's trick)."""
    loss = loss_fn(model)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vector))
    return [h.detach() for h in torch.autograd.grad(dot, params)]
