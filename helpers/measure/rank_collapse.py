"""Rank collapse: how far the tokens of a sequence are from being one and the same vector.

Dong et al. (2021) measure how close the representations ``X`` (``length x width``) of one
sequence are to a matrix of rank one whose rows are all equal, ``1 x^T``, by the residual
``res(X) = X - 1 x^T`` for the best such ``x``; in the Frobenius norm the best ``x`` is the
mean of the rows, ``x̄``. :func:`token_spread` is that residual relative to ``X``::

    spread(X) = ||X - 1 x̄^T||_F / ||X||_F,

averaged over the sequences of a batch. It is 0 when every position holds the same vector
(complete rank collapse: the next layer cannot tell the positions apart) and close to
``sqrt(1 - 1/length)`` for independent random tokens. A stack of attention layers without
skips drives it towards 0 doubly exponentially with depth (Dong et al. 2021; Noci et al.
2022); the skips keep it up.
"""

from __future__ import annotations

import torch


def token_spread(h: torch.Tensor) -> float:
    """``mean over sequences of ||X - 1 x̄^T||_F / ||X||_F`` for ``h`` of shape
    ``(..., length, width)`` (``x̄``: the mean over positions; see the module docstring).

    Computed in float64 from whatever precision ``h`` holds, so that a float32 net's
    rounding, about ``1e-7`` of the vectors' size, is the smallest spread one can see.
    """
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"h must be a torch.Tensor, got {type(h).__name__}")
    if h.ndim < 2 or h.shape[-2] < 2 or h.shape[-1] < 1:
        raise ValueError(f"h must have shape (..., length >= 2, width >= 1), got {tuple(h.shape)}")
    h = h.detach().double()
    if not torch.isfinite(h).all():
        raise ValueError("h holds NaN or infinite values")
    size = h.flatten(-2).norm(dim=-1)
    if (size == 0).any():
        raise ValueError("h holds a sequence whose representations are all zero: its spread is undefined")
    spread = (h - h.mean(dim=-2, keepdim=True)).flatten(-2).norm(dim=-1) / size
    return float(spread.mean())
