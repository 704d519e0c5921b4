"""Per-layer gradient norms from one backward pass.

For every weight layer ``l`` (by default every ``torch.nn.Linear``, in forward order)
one backward pass of the loss records

* ``weight``: the Frobenius norm ``||dL/dW_l||_F`` of the weight gradient, and
* ``output``: the norm ``||dL/dh_l||`` of the gradient reaching the layer's output
  ``h_l``, caught by a tensor hook registered during the forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class GradientProfile:
    """Gradient norms of each weight layer, listed from input to output."""

    names: tuple[str, ...]
    weight: np.ndarray
    output: np.ndarray
    loss: float

    def __len__(self) -> int:
        return len(self.names)

    @property
    def first_to_last(self) -> float:
        """``||dL/dW_first|| / ||dL/dW_last||``: below 1 the gradient shrinks on its way back."""
        return float(self.weight[0] / self.weight[-1])


def _default_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    layers = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not layers:
        raise ValueError("model has no nn.Linear layers; pass layers=[(name, module), ...]")
    return layers


def gradient_profile(model: nn.Module, loss_fn, x: torch.Tensor,
                     y: torch.Tensor, layers=None) -> GradientProfile:
    """Run ``loss_fn(model(x), y)`` forward and backward once and return a
    :class:`GradientProfile`.

    ``layers`` is a list of ``(name, module)`` pairs with a ``weight``
    parameter; default: every ``nn.Linear`` of ``model``. Existing ``.grad``
    values are cleared first.
    """
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, "
                        f"got {type(loss_fn).__name__}")
    layers = list(layers) if layers is not None else _default_layers(model)
    captured: dict[str, float] = {}
    handles = []

    def watch(name):
        def record(grad):
            captured[name] = float(grad.double().norm())

        def forward_hook(_module, _inputs, output):
            output.register_hook(record)
        return forward_hook

    for name, module in layers:
        if not isinstance(getattr(module, "weight", None), torch.Tensor):
            raise TypeError(f"layer {name!r} has no weight tensor")
        handles.append(module.register_forward_hook(watch(name)))
    try:
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    names = tuple(n for n, _ in layers)
    weight = np.array([float(m.weight.grad.double().norm()) for _, m in layers])
    output = np.array([captured.get(n, np.nan) for n in names])
    return GradientProfile(names, weight, output, loss.item())


def per_layer_factor(norms) -> float:
    """The geometric factor ``g`` that best fits ``norms[l] ~ C * g ** (L - 1 - l)``.

    ``norms`` are listed from the input layer to the output layer, so ``g`` is the factor
    by which a gradient norm changes per layer on its way *back* towards the input
    (``g < 1``: vanishing). Fitted by least squares on ``log(norms)``.
    """
    norms = np.asarray(norms, dtype=float)
    if norms.ndim != 1 or norms.size < 2:
        raise ValueError(f"norms must be a 1-D sequence of at least 2 values, got shape {norms.shape}")
    if not np.all(norms > 0):
        raise ValueError("norms must all be positive to fit a geometric factor")
    slope = np.polyfit(np.arange(norms.size), np.log(norms), 1)[0]
    return float(np.exp(-slope))
