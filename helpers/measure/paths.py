"""Veit et al.'s unravelled view: ``n`` residual blocks hold ``2^n`` paths.

Each block is either taken (its branch ``F``) or skipped (the identity), so a path is a
subset of blocks and its length is the number taken. The count of paths of length ``k``
is the binomial coefficient ``C(n, k)``.
"""

from __future__ import annotations

from itertools import product
from math import comb

import numpy as np

from .._checks import positive_int


def path_length_counts(n: int) -> np.ndarray:
    """``C(n, k)`` for ``k = 0..n``: the analytic number of paths of each length."""
    n = positive_int("n", n)
    return np.array([comb(n, k) for k in range(n + 1)], dtype=np.int64)


def enumerate_path_lengths(n: int) -> np.ndarray:
    """Count path lengths by listing all ``2^n`` take/skip choices (``n <= 20``)."""
    n = positive_int("n", n)
    if n > 20:
        raise ValueError(f"n must be <= 20 to enumerate 2^n paths, got {n}")
    counts = np.zeros(n + 1, dtype=np.int64)
    for taken in product((0, 1), repeat=n):
        counts[sum(taken)] += 1
    return counts
