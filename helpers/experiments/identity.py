"""Claim 1.4: the identity map is easy for a residual block and hard for a plain one.

A stack of ``n`` blocks (:func:`helpers.models.mlp.stack_twins`; post-activation, no
normalisation, PyTorch's default init) is trained to output its own input, on
non-negative inputs like those a block sees inside a ReLU net. The plain stack must
*build* the identity from its weights; the residual stack only has to make each branch
``F`` small. The loss is the mean squared error divided by the target's variance, so 1
is as bad as predicting the mean and the threshold reads as a fraction of that.

The second experiment trains the residual stack with and without (decoupled) weight
decay and measures each branch's size relative to the stream,
:func:`helpers.measure.branches.branch_ratios`: weight decay pulls ``F`` towards 0, and
so the block towards the identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._checks import non_empty, positive_int, real_number
from ..data import identity_task
from ..measure.branches import branch_ratios
from ..models.mlp import stack_twins
from ..seeding import seed_everything

STACK_OPTIONS = {"norm": "none", "order": "post", "init": "pytorch"}


def _train_identity(model, x, steps: int, lr: float, weight_decay: float = 0.0) -> np.ndarray:
    """Full-batch AdamW on ``||model(x) - x||^2 / Var(x)``; the relative loss before each step."""
    var = float(x.var(dim=0, unbiased=False).mean())
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    losses = np.empty(steps)
    for step in range(steps):
        loss = nn.functional.mse_loss(model(x), x) / var
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses[step] = loss.item()
    return losses


def steps_to(losses, threshold: float) -> int | None:
    """First step (1-based) at which ``losses`` is below ``threshold``; ``None`` if never."""
    below = np.flatnonzero(np.asarray(losses) < threshold)
    return int(below[0]) + 1 if below.size else None


@dataclass
class IdentityRace:
    """Relative-loss curves ``losses[kind, n_blocks]`` and the threshold of the race."""

    blocks: tuple[int, ...]
    threshold: float
    losses: dict

    def steps(self, kind: str, n_blocks: int) -> int | None:
        """Steps the stack needed to go below the threshold (``None``: not within the budget)."""
        return steps_to(self.losses[kind, n_blocks], self.threshold)

    def final(self, kind: str, n_blocks: int) -> float:
        """Relative loss after the last step."""
        return float(self.losses[kind, n_blocks][-1])


def identity_race(blocks=(1, 3, 9), *, width: int = 32, n: int = 512, steps: int = 500,
                  lr: float = 3e-3, threshold: float = 0.01, seed: int = 0) -> IdentityRace:
    """Train a plain stack and its residual twin to fit the identity, for each number of blocks."""
    blocks = tuple(positive_int("blocks[i]", b) for b in non_empty("blocks", blocks))
    threshold = real_number("threshold", threshold, low=0.0, low_inclusive=False)
    x, _ = identity_task(n, width, seed=seed, nonnegative=True)
    losses = {}
    for n_blocks in blocks:
        seed_everything(seed)
        for model in stack_twins(n_blocks, width, **STACK_OPTIONS):
            kind = "residual" if model[0].residual else "plain"
            losses[kind, n_blocks] = _train_identity(model, x, positive_int("steps", steps), lr)
    return IdentityRace(blocks, threshold, losses)


def weight_decay_branches(weight_decays=(0.0, 1.0), *, n_blocks: int = 9, width: int = 32,
                          n: int = 512, steps: int = 600, lr: float = 3e-3, seed: int = 0) -> dict:
    """Branch ratios of a residual stack fitted to the identity, per weight decay.

    Returns ``{weight_decay: {"init": ratios, "trained": ratios, "loss": final relative loss}}``;
    every run starts from the same weights.
    """
    x, _ = identity_task(n, width, seed=seed, nonnegative=True)
    out = {}
    for wd in non_empty("weight_decays", weight_decays):
        wd = real_number("weight_decay", wd, low=0.0)
        seed_everything(seed)
        _, residual = stack_twins(n_blocks, width, **STACK_OPTIONS)
        before = branch_ratios(residual, x)
        losses = _train_identity(residual, x, positive_int("steps", steps), lr, weight_decay=wd)
        out[wd] = {"init": before, "trained": branch_ratios(residual, x), "loss": float(losses[-1])}
    return out
