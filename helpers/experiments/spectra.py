"""Claim 1.5: the Jacobian of a residual block is ``I + dF/dx``; its singular values sit near 1.

For a stack of ``n`` pre-activation blocks without normalisation (so the plain block is
exactly ``F`` and the residual block exactly ``x + F(x)``), the singular values of the
input-output Jacobian are pooled over a few non-negative inputs
(:func:`helpers.measure.jacobian.jacobian_singular_values`). A singular value of 1
passes its direction through unchanged; near 0 it is lost, and so is the gradient
flowing back along it (the backward pass multiplies by the transpose, with the same
singular values).
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import positive_int
from ..data import identity_task
from ..measure.jacobian import jacobian_singular_values
from ..models.mlp import stack_twins
from ..seeding import seed_everything


def block_spectra(n_blocks: int = 1, *, init: str = "pytorch", branch_scale: float = 1.0,
                  width: int = 32, n_inputs: int = 16, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"plain": singular values, "residual": singular values}`` of twin stacks at init."""
    seed_everything(seed)
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

