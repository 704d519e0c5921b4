"""How far training moved each weight layer from where it started.

For weight layer ``l`` with initial weights ``W_l(0)`` and trained weights ``W_l(T)`` the
measure is the relative change, a ratio of Frobenius norms,

    u_l = ||W_l(T) - W_l(0)|| / ||W_l(0)||.

``u_l`` near 0: the layer kept its initial weights (it "barely updated"); ``u_l`` near 1 or
above: training moved it as far as its own size. Biases and normalisation parameters are
left out.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def _weight_layers(model: nn.Module, name: str) -> list[tuple[str, nn.Linear]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    layers = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not layers:
        raise ValueError(f"{name} has no linear (weight) layer to measure")
    return layers


@torch.no_grad()
def relative_updates(initial: nn.Module, trained: nn.Module) -> np.ndarray:
    """``u_l = ||W_l(T) - W_l(0)|| / ||W_l(0)||`` for every linear layer, in forward order
    (module docstring); ``initial`` and ``trained`` are the same net before and after training."""
    before, after = _weight_layers(initial, "initial"), _weight_layers(trained, "trained")
    names = [n for n, _ in before]
    if names != [n for n, _ in after] or any(a.weight.shape != b.weight.shape
                                             for (_, a), (_, b) in zip(before, after)):
        raise ValueError("initial and trained must be the same net (the same linear layers, of the same "
                         f"shapes), got layers {names} and {[n for n, _ in after]}")
    return np.array([float((b.weight - a.weight).norm() / a.weight.norm().clamp_min(1e-12))
                     for (_, a), (_, b) in zip(before, after)])
