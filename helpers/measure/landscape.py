"""Loss-landscape slices with filter-normalised random directions (Li et al. 2018).

Around trained parameters ``theta*`` the loss is evaluated along random directions,

* 1-D: ``f(a) = L(theta* + a d)``,
* 2-D: ``f(a, b) = L(theta* + a d + b e)``.

Each direction is drawn from a standard normal and *filter-normalised*: for every weight
matrix, each row (the weights into one unit: a "filter" of a fully connected layer) is
rescaled to the norm of the matching row of ``theta*``. Directions for biases and
normalisation parameters (every parameter with fewer than two dimensions) are zero. This
makes a step of ``a = 1`` as large, for every unit, as the unit's own weights, so nets of
different scales can be compared. The loss is evaluated in evaluation mode (BatchNorm
uses its running statistics), without changing the model.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call

from .._checks import non_empty
from ..seeding import generator


def filter_normalised_direction(model: torch.nn.Module,
                                seed: int = 0) -> dict[str, torch.Tensor]:
    """A random direction, one tensor per parameter name, filter-normalised
    to ``model``."""
    gen = generator(seed)
    direction = {}
    for name, p in model.named_parameters():
        if p.dim() < 2:
            direction[name] = torch.zeros_like(p)
            continue
        d = torch.randn(p.shape, generator=gen, dtype=p.dtype)
        rows_d = d.reshape(len(d), -1).norm(dim=1)
        rows_p = p.detach().reshape(len(p), -1).norm(dim=1)
        scale = rows_p / rows_d.clamp_min(1e-12)
        scale = scale.reshape(-1, *([1] * (p.dim() - 1)))
        direction[name] = d * scale
    return direction


@torch.no_grad()
def _losses(model, loss_fn, x, y, directions, coefficients) -> list[float]:
    """``loss_at(model, loss_fn, x, y, list(zip(row, directions)))`` for each ``row`` of
    ``coefficients``, with the model switched to evaluation mode once for all of them."""
    base = {name: p.detach() for name, p in model.named_parameters()}
    # Only parameters that some direction moves need a sum: for the others (biases,
    # normalisation) every term is zero and the sum would change no value.
    moving = [name for name in base if any(bool(d[name].any()) for d in directions)]
    was_training = model.training
    model.eval()
    try:
        losses = []
        for row in coefficients:
            params = dict(base)
            for name in moving:
                params[name] = base[name] + sum(c * d[name] for c, d in zip(row, directions))
            losses.append(float(loss_fn(functional_call(model, params, (x,)), y)))
        return losses
    finally:
        model.train(was_training)


def loss_at(model, loss_fn, x, y, steps) -> float:
    """``loss_fn(model_theta(x), y)`` at ``theta = theta* + sum_i c_i d_i`` for ``steps = [(c_i, d_i), ...]``."""
    return _losses(model, loss_fn, x, y, [d for _, d in steps], [[c for c, _ in steps]])[0]


def loss_slice_1d(model, loss_fn, x, y, alphas, *, seed: int = 0) -> np.ndarray:
    """``L(theta* + a d)`` for each ``a`` in ``alphas``, along one filter-normalised direction."""
    alphas = non_empty("alphas", alphas)
    d = filter_normalised_direction(model, seed)
    return np.array(_losses(model, loss_fn, x, y, [d], [[float(a)] for a in alphas]))


def loss_surface_2d(model, loss_fn, x, y, alphas, betas=None, *, seed: int = 0) -> np.ndarray:
    """``L(theta* + a d + b e)`` on the grid ``betas x alphas`` (rows: ``b``), two directions."""
    alphas = non_empty("alphas", alphas)
    betas = alphas if betas is None else non_empty("betas", betas)
    d = filter_normalised_direction(model, seed)
    e = filter_normalised_direction(model, seed + 1)
    losses = _losses(model, loss_fn, x, y, [d, e], [[float(a), float(b)] for b in betas for a in alphas])
    return np.array(losses).reshape(len(betas), len(alphas))


def sharpness(alphas, losses, radius: float = 0.25) -> float:
    """Mean rise of a 1-D slice at distance ``radius`` on both sides of ``a = 0``:

        ( f(-radius) + f(radius) ) / 2 - f(0),

    with ``f`` linearly interpolated between the measured ``alphas``. Larger = sharper.
    """
    alphas, losses = np.asarray(alphas, dtype=float), np.asarray(losses, dtype=float)
    if alphas.shape != losses.shape or alphas.ndim != 1:
        raise ValueError(f"alphas and losses must be 1-D of equal length, got {alphas.shape} and {losses.shape}")
    if not np.all(np.diff(alphas) > 0):
        raise ValueError("alphas must be increasing")
    if not (alphas[0] <= -radius and radius <= alphas[-1] and radius > 0):
        raise ValueError(f"radius must be > 0 and inside [{alphas[0]}, {alphas[-1]}], got {radius}")
    at = np.interp([-radius, 0.0, radius], alphas, losses)
    return float((at[0] + at[2]) / 2 - at[1])
