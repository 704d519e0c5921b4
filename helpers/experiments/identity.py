"""Claim 1.4: the identity map is easy for a residual block and hard for a plain one.

A stack of ``n`` blocks (:func:`helpers.models.mlp.stack_twins`; post-activation, no
normalisation, PyTorch's default init) is trained to output its own input, on
non-negative inputs like those a block sees inside a ReLU net. The plain stack must
*build* the identity from its weights; the residual stack only has to make each branch
``F`` small. The loss is the mean squared error divided by the target's variance, so 1
is as bad as predicting the mean and the threshold reads as a fraction of that.

The race is run for PyTorch's default init, whose branches start small, and as controls
for He init, whose branches start as large as the stream they are added to, and for plain
blocks twice as wide inside (``hidden``), to rule out that the plain block is too narrow.

The second experiment trains the residual stack with and without (decoupled) weight
decay and measures each branch's size relative to the stream,
:func:`helpers.measure.branches.branch_ratios`: weight decay pulls ``F`` towards 0, and
so the block towards the identity. As a control, the plain twin is trained the same way:
decay shrinks every weight, and the question is whether it shrinks the residual branches
more than it can shrink weights that the plain stack needs.

Every stack trains in a job of its own, side by side on the available cores
(:func:`helpers.parallel.run_all`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._checks import choice, non_empty, positive_int, real_number
from ..data import identity_task
from ..measure.branches import branch_ratios
from ..models.mlp import INITS, stack_twins
from ..parallel import run_all
from ..seeding import isolated

STACK_OPTIONS = {"norm": "none", "order": "post"}


def fit_identity(model, x, steps: int, lr: float,
                 weight_decay: float = 0.0) -> np.ndarray:
    """Full-batch AdamW on ``||model(x) - x||^2 / Var(x)``; the relative loss
    before each step."""
    var = float(x.var(dim=0, unbiased=False).mean())
    opt = torch.optim.AdamW(model.parameters(), lr=lr,
                            weight_decay=weight_decay, foreach=True)
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

    def took(self, kind: str, n_blocks: int) -> str:
        """``"37 steps"`` to the threshold, or ``"never"``."""
        steps = self.steps(kind, n_blocks)
        return "never" if steps is None else f"{steps} steps"

    def report(self, kind: str, n_blocks: int) -> str:
        """One line of a printout: the steps to the threshold and the final loss."""
        return (f"{kind:>8}, {n_blocks} block(s): {self.took(kind, n_blocks):>9}"
                f"   final loss {self.final(kind, n_blocks):.4f}")


def race_stack(kind: str, n_blocks: int, *, init: str = "pytorch", width: int = 32, n: int = 512,
               seed: int = 0, hidden: int | None = None):
    """``(stack, x)``: the ``kind`` stack of ``n_blocks`` blocks and the inputs of
    :func:`identity_races` for these arguments, as the race draws them from ``seed`` (train
    it with :func:`fit_identity` to redo one of the race's runs)."""
    kind = choice("kind", kind, ("plain", "residual"))
    x, _ = identity_task(n, width, seed=seed, nonnegative=True)
    with isolated(seed):
        plain, residual = stack_twins(n_blocks, width, init=init, hidden=hidden, **STACK_OPTIONS)
    return (residual if kind == "residual" else plain), x


def _train_stack(kind: str, n_blocks: int, *, init: str, width: int, n: int, steps: int, lr: float,
                 weight_decay: float = 0.0, seed: int = 0, hidden: int | None = None) -> dict:
    """One stack of the twins drawn from ``seed``, fitted to the identity: its loss curve, and
    its branch ratios and block weight norms before and after."""
    model, x = race_stack(kind, n_blocks, init=init, width=width, n=n, seed=seed, hidden=hidden)
    before = {"ratios": branch_ratios(model, x), "weights": block_weight_norms(model)}
    losses = fit_identity(model, x, steps, lr, weight_decay=weight_decay)
    return {"losses": losses, "init": before,
            "trained": {"ratios": branch_ratios(model, x), "weights": block_weight_norms(model)}}


def block_weight_norms(stack) -> np.ndarray:
    """Per block, the Frobenius norm of all its weight matrices, ``sqrt(||W1||^2 + ||W2||^2)``."""
    return np.array([float(torch.sqrt(sum((p.detach() ** 2).sum() for name, p in block.named_parameters()
                                            if name.endswith("weight")))) for block in stack])


def identity_races(blocks_by_init: dict, *, width: int = 32, n: int = 512, steps: int = 500,
                   lr: float = 3e-3, threshold: float = 0.01, seed: int = 0, hidden: int | None = None,
                   kinds=("plain", "residual"), workers: int | None = None) -> dict[str, IdentityRace]:
    """:func:`identity_race` for each init of ``blocks_by_init`` (``{"pytorch": (1, 3, 9), "he": (1, 9)}``),
    every stack a job of its own in one pool; returns ``{init: IdentityRace}``.

    ``hidden`` is the width between a block's two layers (default ``width``); ``kinds``
    the stacks to train (a control may need only the plain ones)."""
    if not isinstance(blocks_by_init, dict) or not blocks_by_init:
        raise TypeError(f"blocks_by_init must be a non-empty dict of init -> numbers of blocks, got {blocks_by_init!r}")
    plan = {choice("init", init, INITS): tuple(positive_int("blocks[i]", b) for b in non_empty("blocks", blocks))
            for init, blocks in blocks_by_init.items()}
    kinds = tuple(choice("kinds[i]", k, ("plain", "residual")) for k in non_empty("kinds", kinds))
    threshold = real_number("threshold", threshold, low=0.0, low_inclusive=False)
    common = dict(width=width, n=n, steps=positive_int("steps", steps), lr=lr, seed=seed, hidden=hidden)
    keys = sorted(((init, kind, b) for init, blocks in plan.items() for b in blocks for kind in kinds),
                  key=lambda k: -k[2])  # the deepest first, so that the cores finish together
    runs = run_all(_train_stack, [dict(kind=k, n_blocks=b, init=i, **common) for i, k, b in keys],
                   workers=workers, progress=False, description="stacks")
    losses = {key: run["losses"] for key, run in zip(keys, runs)}
    return {init: IdentityRace(blocks, threshold, {(k, b): losses[init, k, b] for b in blocks for k in kinds})
            for init, blocks in plan.items()}


def identity_race(blocks=(1, 3, 9), *, init: str = "pytorch", width: int = 32, n: int = 512, steps: int = 500,
                  lr: float = 3e-3, threshold: float = 0.01, seed: int = 0, workers: int | None = None) -> IdentityRace:
    """Train a plain stack and its residual twin to fit the identity, for each number of blocks."""
    return identity_races({init: blocks}, width=width, n=n, steps=steps, lr=lr, threshold=threshold,
                          seed=seed, workers=workers)[init]


def weight_decay_branches(weight_decays=(0.0, 1.0), *, n_blocks: int = 9, width: int = 32, n: int = 512,
                          steps: int = 600, lr: float = 3e-3, seed: int = 0, kinds=("residual",),
                          workers: int | None = None) -> dict:
    """Branch ratios and block weight norms of a stack fitted to the identity, per kind and weight decay.

    Returns ``{(kind, weight_decay): {"init": {...}, "trained": {...}, "loss": final relative loss}}``
    where ``{...}`` is ``{"ratios": branch ratios, "weights": block weight norms}``
    (:func:`block_weight_norms`). Every run starts from the same weights (the plain stack is the
    residual stack's twin).
    """
    decays = [real_number("weight_decay", wd, low=0.0) for wd in non_empty("weight_decays", weight_decays)]
    kinds = [choice("kinds[i]", k, ("plain", "residual")) for k in non_empty("kinds", kinds)]
    keys = [(k, wd) for k in kinds for wd in decays]
    runs = run_all(_train_stack, [dict(kind=k, n_blocks=positive_int("n_blocks", n_blocks), init="pytorch",
                                       width=width, n=n, steps=positive_int("steps", steps), lr=lr,
                                       weight_decay=wd, seed=seed) for k, wd in keys],
                   workers=workers, progress=False, description="stacks")
    return {key: {"init": run["init"], "trained": run["trained"], "loss": float(run["losses"][-1])}
            for key, run in zip(keys, runs)}
