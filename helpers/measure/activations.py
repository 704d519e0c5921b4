"""Per-layer activation statistics from one forward pass (forward hooks).

For each watched module the output ``h`` gives ``mean``, ``std`` (He et al. 2015 Fig. 7
plots this "layer response") and ``dead``: the fraction of entries that are exactly 0.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


@torch.no_grad()
def activation_stats(model: nn.Module, x: torch.Tensor, modules) -> dict[str, np.ndarray]:
    """Return ``{"mean", "std", "dead"}`` arrays, one entry per module of ``modules``, in order."""
    modules = list(modules)
    if not modules:
        raise ValueError("modules must list at least one module to watch")
    outputs: list[torch.Tensor] = [None] * len(modules)
    handles = [
        m.register_forward_hook(lambda _m, _i, out, i=i: outputs.__setitem__(i, out.detach()))
        for i, m in enumerate(modules)
    ]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    if any(o is None for o in outputs):
        raise ValueError("some modules were never called by model(x)")
    return {
        "mean": np.array([float(o.mean()) for o in outputs]),
        "std": np.array([float(o.std()) for o in outputs]),
        "dead": np.array([float((o == 0).float().mean()) for o in outputs]),
    }
