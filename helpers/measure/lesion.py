"""Lesion study (Veit et al. 2016): delete blocks at test time and measure the error.

Deleting block ``i`` of a :class:`~helpers.models.mlp.DeepMLP` passes its input straight
through (``model(x, skip=[i])``). For a residual net this removes one branch and leaves
the other paths intact; for a plain net it removes a link of the only path.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import positive_int
from ..seeding import generator


@torch.no_grad()
def error_rate(model, x: torch.Tensor, y: torch.Tensor, skip=()) -> float:
    """Fraction of ``x`` that ``model`` (in eval mode) misclassifies, with blocks ``skip`` deleted."""
    was_training = model.training
    model.eval()
    try:
        return float((model(x, skip=skip).argmax(dim=1) != y).float().mean())
    finally:
        model.train(was_training)


def single_block_lesions(model, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Error after deleting each block on its own: entry ``i`` deletes block ``i``."""
    return np.array([error_rate(model, x, y, skip=[i]) for i in range(len(model.blocks))])


def random_lesions(model, x, y, k: int, n_draws: int = 20, seed: int = 0) -> np.ndarray:
    """Errors after deleting ``k`` blocks chosen at random, for ``n_draws`` draws."""
    n_blocks = len(model.blocks)
    k = positive_int("k", k, minimum=0)
    if k > n_blocks:
        raise ValueError(f"k must be <= the number of blocks ({n_blocks}), got {k}")
    gen = generator(seed)
    draws = [torch.randperm(n_blocks, generator=gen)[:k].tolist() for _ in range(positive_int("n_draws", n_draws))]
    return np.array([error_rate(model, x, y, skip=d) for d in draws])
