"""Amplification: how far a step of a given size in parameter space moves a net's output.

Liu et al. (2020, "Admin") argue that what makes Post-LN hard to train is not the size of its
gradients but how strongly its output depends on its parameters: the same small change of
every weight moves a Post-LN stack's output further than a Pre-LN stack's, and more so the
deeper the stack. Under Adam this is the quantity that matters, because Adam's first update
of each parameter is ``lr * m / sqrt(v) = lr * g / |g| = lr * sign(g)`` (up to its ``eps``):
every parameter moves by about ``lr``, whatever the size of its gradient.

:func:`relative_output_change` measures, for a direction ``d`` (one tensor per parameter)
and a step size ``s``::

    ||f(θ + s d) - f(θ)|| / ||f(θ)||,

the parameters restored afterwards. With ``d`` a tensor of random signs, every parameter
moves by exactly ``s``: the size of Adam's first step at learning rate ``s`` in a random
direction. With ``d = -sign(g)`` it is Adam's first step itself (:func:`sign_directions`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .._checks import real_number


def _parameters(params) -> list[torch.Tensor]:
    params = list(params)
    if not params or not all(isinstance(p, torch.Tensor) for p in params):
        raise TypeError("params must be a non-empty sequence of tensors (e.g. list(net.parameters()))")
    return params


def random_signs(params, *, generator: torch.Generator) -> list[torch.Tensor]:
    """One tensor of random signs (+1 or -1, each with probability 1/2) per parameter,
    drawn from ``generator``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return [torch.randint(0, 2, p.shape, generator=generator).to(p.dtype) * 2 - 1 for p in _parameters(params)]


def sign_directions(params) -> list[torch.Tensor]:
    """``-sign(g)`` for each parameter's gradient ``g`` (``.grad``, set by a backward pass):
    the direction of Adam's first update (module docstring). A parameter without a
    gradient gets zeros."""
    return [torch.zeros_like(p) if p.grad is None else -torch.sign(p.grad) for p in _parameters(params)]


@torch.no_grad()
def relative_output_change(f: Callable[[], torch.Tensor], params: Sequence[torch.Tensor],
                           direction: Sequence[torch.Tensor], size: float) -> float:
    """``||f(θ + size d) - f(θ)|| / ||f(θ)||`` (module docstring); ``f`` takes no argument
    and computes the output from the current ``params``, which are put back afterwards."""
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    params = _parameters(params)
    direction = list(direction)
    if len(direction) != len(params) or any(d.shape != p.shape for d, p in zip(direction, params)):
        raise ValueError("direction must hold one tensor of each parameter's shape")
    size = real_number("size", size, low=0.0, low_inclusive=False)
    before = f().detach().clone()
    norm = before.norm()
    if not torch.isfinite(norm) or norm == 0:
        raise ValueError("f's output must be finite and not zero")
    saved = [p.detach().clone() for p in params]
    try:
        for p, d in zip(params, direction):
            p.add_(size * d)
        after = f()
    finally:
        for p, s in zip(params, saved):
            p.copy_(s)
    return float((after - before).norm() / norm)
