"""Comparing nets at their best setting: the remedy for a confounder such as one learning rate."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def best_setting(errors_by_setting: Mapping) -> object:
    """The setting (e.g. a learning rate) whose runs have the lowest *mean* error.

    ``errors_by_setting`` maps each setting to the final errors of its runs, one per seed.
    The mean over seeds is compared, not the best single seed, which would reward luck;
    a tie goes to the setting listed first.
    """
    if not isinstance(errors_by_setting, Mapping):
        raise TypeError(f"errors_by_setting must map settings to errors, got {type(errors_by_setting).__name__}")
    if not errors_by_setting:
        raise ValueError("errors_by_setting must hold at least one setting")
    means = {}
    for setting, errors in errors_by_setting.items():
        values = np.asarray(errors, dtype=float).ravel()
        if values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError(f"errors_by_setting[{setting!r}] must be finite errors, one per run, got {errors!r}")
        means[setting] = values.mean()
    return min(means, key=means.get)
