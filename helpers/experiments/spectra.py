"""Claim 1.5: the Jacobian of a residual block is ``I + dF/dx``; its singular values sit near 1.

For a stack of ``n`` pre-activation blocks without normalisation (so the plain block is
exactly ``F`` and the residual block exactly ``x + F(x)``), the singular values of the
input-output Jacobian are pooled over a few non-negative inputs
(:func:`helpers.measure.jacobian.jacobian_singular_values`). A singular value of 1
passes its direction through unchanged; near 0 it is lost, and so is the gradient
flowing back along it (the backward pass multiplies by the transpose, with the same
singular values).

A direction can be lost in two ways, and :func:`lost_share` and :func:`surviving` tell them
apart. A ReLU zeroes every unit whose input is negative, so a plain block's Jacobian
``W2 D2 W1 D1`` (``D`` the 0/1 masks) has rank at most the number of active units: about
half of its singular values are exactly 0, by the masks alone, whatever the weights' scale.
The directions that survive the masks can still be shrunk by the weights; their median
says how much.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import positive_int, real_number
from ..data import identity_task
from ..measure.jacobian import jacobian_singular_values
from ..models.mlp import stack_twins
from ..seeding import isolated


def block_spectra(n_blocks: int = 1, *, init: str = "pytorch", branch_scale: float = 1.0,
                  width: int = 32, n_inputs: int = 16, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"plain": singular values, "residual": singular values}`` of twin stacks at init."""
    with isolated(seed):
        stacks = stack_twins(n_blocks, width, norm="none", order="pre", init=init, branch_scale=branch_scale)
    x, _ = identity_task(positive_int("n_inputs", n_inputs), width, seed=seed, nonnegative=True)
    out = {}
    for stack in stacks:
        kind = "residual" if stack[0].residual else "plain"
        out[kind] = torch.cat([jacobian_singular_values(stack, xi) for xi in x]).numpy()
    return out


def share_near_one(values, low: float = 0.5, high: float = 2.0) -> float:
    """Fraction of ``values`` in ``[low, high]``: how many directions pass within a factor of 2."""
    values = np.asarray(values, dtype=float)
    return float(np.mean((values >= low) & (values <= high)))


ZERO_RTOL = 1e-5
"""A singular value at most this times the largest of its set counts as lost (zero to float
precision, or as good as zero)."""


def _spectrum(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0 or np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("values must be a non-empty 1-D array of finite singular values (>= 0)")
    return values


def lost_share(values, rtol: float = ZERO_RTOL) -> float:
    """Fraction of the singular values ``values`` that are at most ``rtol`` times the largest:
    the directions lost outright (for a plain ReLU block, mostly to its masks); the rest are
    :func:`surviving`."""
    return 1.0 - len(surviving(values, rtol)) / len(_spectrum(values))


def surviving(values, rtol: float = ZERO_RTOL) -> np.ndarray:
    """The singular values ``values`` above ``rtol`` times the largest: the directions that
    are not lost, whose size says how much the block shrinks or stretches them."""
    values = _spectrum(values)
    rtol = real_number("rtol", rtol, low=0.0, high=1.0, low_inclusive=False)
    return values[values > rtol * values.max()]
