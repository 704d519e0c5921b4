"""What one step of gradient descent does to the loss: the "incremental explosion" of the DeepNet view.

For a loss ``L(θ)`` and one plain SGD step ``θ -> θ - η g`` with ``g = ∇_θ L``, a first-order
Taylor expansion gives

    ΔL = L(θ - η g) - L(θ) ≈ <g, -η g> = -η ||g||².

Adam's first step is another matter. Its moment estimates, bias-corrected, are ``g`` and ``g²``
after one step, so it moves every parameter by ``-η g / (|g| + ε_Adam)``, about ``-η sign(g)``
whatever the size of the gradient, and to first order::

    ΔL ≈ -η Σ g² / (|g| + ε_Adam) ≈ -η ||g||_1.

If each of ``N`` layers of ``K`` parameters has gradients of size ``ε`` (the branch scale),
``||g||² ~ N K ε²`` but ``||g||_1 ~ N K ε``: under SGD ``ε = 1/sqrt(N)`` holds the step still,
under Adam it takes ``ε ~ 1/N``.

:func:`one_step_change` measures both sides: the loss change that the step actually makes and
the first-order prediction ``-η ||g||²``, for the parameters one chooses (e.g. only a net's
residual blocks). If each of ``N`` layers of ``K`` parameters contributes an ``O(1)`` gradient,
``||g||² = O(NK)`` and the change of one step grows in proportion to the depth ``N``.

:func:`probe_loss` is the loss the chapter measures with: ``L = mean_i <u_i, f(x_i)>`` with
fixed random ``u_i``. Its gradient at the output is ``u_i / batch`` whatever the net computes,
so every difference between nets comes from how the net carries that gradient back, not from
how wrong the net's output happens to be at initialisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._checks import non_empty, real_number

OPTIMIZERS = ("sgd", "adam")
ADAM_EPS = 1e-8
"""Adam's ``ε`` (PyTorch's default), in the denominator of its first step."""


@dataclass(frozen=True)
class StepChange:
    """One step: ``loss`` before it, the measured ``change`` ``L(θ + Δθ) - L(θ)``, the
    ``first_order`` prediction ``<g, Δθ>`` (SGD: ``-η ||g||²``; Adam's first step: about
    ``-η ||g||_1``), and ``grad_sq`` ``= ||g||²`` with one entry per parameter group
    (``per_group``, e.g. one per block) as well as the total; ``grad_l1 = ||g||_1`` and the
    ``optimizer`` that took the step."""

    loss: float
    change: float
    first_order: float
    grad_sq: float
    per_group: np.ndarray
    grad_l1: float = float("nan")
    optimizer: str = "sgd"


def probe_loss(outputs: torch.Tensor, directions: torch.Tensor) -> torch.Tensor:
    """``mean_i <u_i, f(x_i)>``: outputs ``(batch, d)`` projected on fixed directions ``u`` ``(batch, d)``."""
    if outputs.shape != directions.shape:
        raise ValueError(f"outputs and directions must have one shape, got {tuple(outputs.shape)} "
                         f"and {tuple(directions.shape)}")
    return (outputs * directions).sum(dim=1).mean()


def one_step_change(model: nn.Module, loss_fn, groups, lr: float, optimizer: str = "sgd") -> StepChange:
    """Take one step of size ``lr`` on the parameters in ``groups`` (a list of lists of
    parameters; the rest stay fixed) and measure the loss before and after it.

    ``optimizer`` ``"sgd"`` steps by ``-lr g``; ``"adam"`` takes Adam's first step from fresh
    moments, ``-lr g / (|g| + 1e-8)``, what ``torch.optim.Adam`` does on its first call (module
    docstring). ``loss_fn(model)`` returns the scalar loss. The model is changed in place (the
    step is taken); measure a copy if the original is still needed.
    """
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    groups = [list(non_empty("groups[i]", g)) for g in non_empty("groups", groups)]
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    params = [p for g in groups for p in g]
    loss = loss_fn(model)
    if loss.dim() != 0:
        raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
    grads = torch.autograd.grad(loss, params)
    sizes = [len(g) for g in groups]
    squares = torch.stack([(g.double() ** 2).sum() for g in grads])
    per_group = np.array([float(s.sum()) for s in squares.split(sizes)])
    steps = [g if optimizer == "sgd" else g / (g.abs() + ADAM_EPS) for g in grads]
    first_order = -lr * sum(float((g.double() * s.double()).sum()) for g, s in zip(grads, steps))
    with torch.no_grad():
        for p, s in zip(params, steps):
            p.sub_(lr * s)
        after = float(loss_fn(model))
    total = float(per_group.sum())
    l1 = sum(float(g.double().abs().sum()) for g in grads)
    return StepChange(float(loss.detach()), after - float(loss.detach()), first_order, total, per_group, l1,
                      optimizer)
