"""How much each residual branch adds to the stream it joins.

For block ``i`` with input ``h_i`` (the stream) and branch output ``F_i(h_i)`` the
measure is the ratio of Frobenius norms over a batch,

    r_i = ||F_i(h_i)|| / ||h_i||.

``r_i`` near 0: the block is close to the identity (it barely changes its input);
``r_i`` near 1 or above: the branch is as large as the stream.
"""

from __future__ import annotations

import copy

import numpy as np
import torch


@torch.no_grad()
def branch_ratios(blocks, x: torch.Tensor) -> np.ndarray:
    """``||F_i(h_i)|| / ||h_i||`` for each block of ``blocks`` (each with a ``branch`` method), fed ``x``."""
    blocks = list(blocks)
    if not blocks:
        raise ValueError("blocks must list at least one block")
    missing = [type(b).__name__ for b in blocks if not callable(getattr(b, "branch", None))]
    if missing:
        raise TypeError(f"every block needs a branch(x) method, got {missing}")
    ratios, h = [], x
    for block in blocks:
        ratios.append(float(block.branch(h).norm() / h.norm().clamp_min(1e-12)))
        h = block(h)
    return np.array(ratios)


@torch.no_grad()
def net_branch_ratios(model, x: torch.Tensor, *, batch_statistics: bool = False) -> np.ndarray:
    """:func:`branch_ratios` of every block of a :class:`~helpers.models.mlp.DeepMLP`, with the
    blocks fed as in ``model(x)`` (the stem's output first), in evaluation mode; with
    ``batch_statistics`` in training mode instead, on a copy (so a BatchNorm normalises with
    the batch's own statistics, as during training, and the model's running statistics are
    left alone). At initialisation the two differ: a fresh BatchNorm's running statistics
    (mean 0, variance 1) make it the identity in evaluation mode."""
    if batch_statistics:
        model = copy.deepcopy(model).train()
        return branch_ratios(model.blocks, model.stem_output(x))
    was_training = model.training
    model.eval()
    try:
        return branch_ratios(model.blocks, model.stem_output(x))
    finally:
        model.train(was_training)
