"""Claim 1.9: the ensemble view (Veit et al. 2016) tested by deleting blocks at test time.

Deleting block ``i`` passes its input straight through (:mod:`helpers.measure.lesion`).
A residual net's output is a sum over ``2^n`` paths, and one deletion removes only the
paths through that block's branch; a plain net has one path, and a deletion cuts it.
"""

from __future__ import annotations

import numpy as np

from .._checks import non_empty, positive_int
from ..measure.lesion import random_lesions


def errors_by_count(model, x, y, ks, *, n_draws: int = 20, seed: int = 0) -> np.ndarray:
    """Test error after deleting ``k`` random blocks, shape ``(len(ks), n_draws)``."""
    ks = non_empty("ks", ks)
    return np.array([random_lesions(model, x, y, k, n_draws=n_draws, seed=seed + k) for k in ks])


def lesion_choices(n_blocks: int) -> dict[str, tuple[int, ...]]:
    """The explorer's options: no deletion, each single block, and runs of 2 and 3 blocks.

    Labels count blocks from 1 (next to the input); the tuples are 0-based indices for
    ``model(x, skip=...)``.
    """
    n_blocks = positive_int("n_blocks", n_blocks)
    choices = {"none": ()}
    choices.update({str(i + 1): (i,) for i in range(n_blocks)})
    for run in (2, 3):
        for start in range(0, n_blocks - run + 1, run):
            choices[f"{start + 1}-{start + run}"] = tuple(range(start, start + run))
    return choices

