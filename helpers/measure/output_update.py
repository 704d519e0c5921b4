"""How far one training step moves a model's output: DeepNet's "model update" ``||ΔF||``.

Wang et al. (2022) bound the change of a Transformer's output after one update,
``ΔF = F(x; θ + Δθ) - F(x; θ)``, and choose DeepNorm's constants so that the bound does not
grow with the depth. :func:`output_change` measures it for one step on a chosen set of
parameters, plain SGD (``Δθ = -η g``) or Adam's first step (``Δθ = -η g / (|g| + ε_Adam)``,
about ``-η sign(g)``; :mod:`helpers.measure.increments`), and reports it per unit of learning
rate, so that steps small enough to be first-order compare across rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._checks import non_empty, real_number
from .increments import ADAM_EPS, OPTIMIZERS


@dataclass(frozen=True)
class OutputChange:
    """One step's effect on a model's output.

    ``change`` is the root mean square of ``ΔF`` over every output entry, divided by the
    learning rate; ``output`` the root mean square of ``F`` before the step; ``grad_rms`` the
    root mean square of the gradient over the stepped parameters (before the step)."""

    optimizer: str
    lr: float
    change: float
    output: float
    grad_rms: float


def output_changes(model: nn.Module, loss_fn, output_fn, params, rates: dict) -> dict[str, OutputChange]:
    """For each ``optimizer: lr`` in ``rates``, take one step of that optimiser on ``params`` (an
    iterable of the model's parameters; the others stay fixed), measure how far
    ``output_fn(model)`` moves (:class:`OutputChange`: ``rms(F(θ + Δθ) - F(θ)) / lr``) and put
    the parameters back, so every step starts from the same ``θ`` and the same gradient.

    ``loss_fn(model)`` returns the scalar loss whose gradient ``g`` sets the steps;
    ``"sgd"`` steps by ``Δθ = -lr g``, ``"adam"`` takes Adam's first step from fresh moments,
    ``Δθ = -lr g / (|g| + 1e-8)``, as ``torch.optim.Adam`` takes it. The model ends as it began.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn) or not callable(output_fn):
        raise TypeError("loss_fn and output_fn must be callable")
    params = list(non_empty("params", list(params) if not isinstance(params, torch.Tensor) else params))
    if not isinstance(rates, dict) or not rates:
        raise TypeError(f"rates must be a non-empty dict {{optimizer: lr}}, got {rates!r}")
    for optimizer, lr in rates.items():
        if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
        real_number(f"rates[{optimizer!r}]", lr, low=0.0, low_inclusive=False)
    with torch.no_grad():
        before = output_fn(model).detach().double()
    loss = loss_fn(model)
    if loss.dim() != 0:
        raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
    grads = torch.autograd.grad(loss, params)
    count = sum(g.numel() for g in grads)
    grad_rms = (sum(float((g.double() ** 2).sum()) for g in grads) / count) ** 0.5
    out = {}
    with torch.no_grad():
        start = [p.detach().clone() for p in params]
        for optimizer, lr in rates.items():
            for p, g in zip(params, grads):
                p.sub_(lr * (g if optimizer == "sgd" else g / (g.abs() + ADAM_EPS)))
            after = output_fn(model).detach().double()
            for p, p0 in zip(params, start):
                p.copy_(p0)
            change = float((after - before).pow(2).mean().sqrt()) / lr
            out[optimizer] = OutputChange(optimizer, float(lr), change, float(before.pow(2).mean().sqrt()), grad_rms)
    return out


def output_change(model: nn.Module, loss_fn, output_fn, params, lr: float, optimizer: str = "sgd") -> OutputChange:
    """One optimiser's step: :func:`output_changes` with ``rates = {optimizer: lr}``."""
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    return output_changes(model, loss_fn, output_fn, params, {optimizer: lr})[optimizer]
