"""Singular values of a block's input-output Jacobian.

For a residual block ``H(x) = x + F(x)`` the Jacobian is ``I + dF/dx``; for a plain block
it is ``dF/dx`` alone. Singular values near 1 mean the block passes signals (and, by the
transpose, gradients) through without shrinking or stretching them.
"""

from __future__ import annotations

import torch


def jacobian_singular_values(fn, x: torch.Tensor) -> torch.Tensor:
    """Singular values (descending) of ``d fn(x) / d x`` at a single input vector ``x``."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(x, torch.Tensor) or x.ndim != 1:
        raise ValueError(f"x must be a 1-D tensor (one input vector), got {getattr(x, 'shape', x)!r}")
    jac = torch.autograd.functional.jacobian(fn, x)
    if jac.ndim != 2:
        raise ValueError(f"fn must map a vector to a vector, got a Jacobian of shape {tuple(jac.shape)}")
    return torch.linalg.svdvals(jac)
