"""How sharply a loss bends around the current parameters: the Hessian's top eigenvalue.

The article calls a net whose loss changes a lot for a small change of its parameters one
with an "extremely unsmooth landscape". One number for that is the largest eigenvalue of the
Hessian ``H = ∇²L``: to second order, a step ``Δθ`` of a given length raises the loss by at
most ``½ λ_max ||Δθ||²`` beyond its first-order change, and plain gradient descent is stable
only for rates below ``2 / λ_max``. :func:`top_hessian_eigenvalue` finds it by power
iteration on Hessian-vector products (two backward passes each, the Hessian never written
down).
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import non_empty, positive_int


def hessian_vector_product(loss_fn, model: nn.Module, params: list[torch.Tensor],
                           vector: list[torch.Tensor]) -> list[torch.Tensor]:
    """``H v`` for the Hessian of ``loss_fn(model)`` with respect to ``params``, by
    differentiating ``<∇L, v>`` a second time (Pearlmutter's trick)."""
    loss = loss_fn(model)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vector))
    return [h.detach() for h in torch.autograd.grad(dot, params)]


def top_hessian_eigenvalue(model: nn.Module, loss_fn, params, *, iters: int = 20,
                           generator: torch.Generator | None = None) -> float:
    """The eigenvalue of largest magnitude of the Hessian of ``loss_fn(model)`` with respect
    to ``params`` (an iterable of the model's parameters), by ``iters`` steps of power
    iteration from a random start drawn from ``generator``: ``v <- H v / ||H v||``, and the
    Rayleigh quotient ``v·Hv`` at the end. The model is not changed."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    params = list(non_empty("params", list(params) if not isinstance(params, torch.Tensor) else params))
    iters = positive_int("iters", iters)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    vector = [torch.randn(p.shape, generator=generator, dtype=p.dtype) for p in params]
    eigenvalue = 0.0
    for _ in range(iters):
        norm = torch.sqrt(sum((v * v).sum() for v in vector))
        vector = [v / norm for v in vector]
        product = hessian_vector_product(loss_fn, model, params, vector)
        eigenvalue = float(sum((v * h).sum() for v, h in zip(vector, product)))
        vector = product
    return eigenvalue
