"""Chapter 4: residual connections through the depth of a small Transformer.

All nets are :class:`~helpers.models.transformer.SequenceTransformer` s of :data:`SIZE`
(width 16, 2 heads, FFN width 32) on the reversal task of :func:`helpers.data.sequence_task`
(8 tokens from a vocabulary of 8; chance is 1/8 of the tokens).

* :func:`gradients_at_init` (claim 4.3): one backward pass of the cross-entropy at
  initialisation; the gradient norm that reaches the embeddings, ``||dL/dh_0||`` (``h_0``
  the stream entering the first layer, token embedding plus position, for the whole
  batch), and the gradient norm of each layer's parameters, ``||dL/dθ_l||``.
* :func:`train_grid` (claim 4.4): the grid of depth x residual x norm position x
  learning rate x warm-up, trained with :func:`helpers.sequence_training.fit_sequences`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int
from ..data import sequence_task
from ..models.transformer import SequenceTransformer
from ..parallel import run_all
from ..seeding import isolated, seeds_of_run
from ..sequence_training import TEST_SEED, SequenceRun, fit_sequences
from .norm_order import token_loss

SIZE = dict(vocab=8, length=8, d_model=16, n_heads=2, d_ff=32, position_std=1.0)
"""The size of every net of chapter 4 (keyword arguments of SequenceTransformer)."""
TASK = "reverse"
NORMS = {"post": "Post-LN", "pre": "Pre-LN"}
"""``norm_position`` -> its label."""


def make_net(n_layers: int, norm_position: str, residual: bool, seed: int) -> SequenceTransformer:
    """A chapter-4 net of ``n_layers`` layers, drawn from ``seed`` (the caller's random state untouched)."""
    with isolated(seed):
        return SequenceTransformer(n_layers=n_layers, norm_position=norm_position, residual=residual, **SIZE)


@dataclass(frozen=True)
class InitGradients:
    """Gradients at initialisation of one setting, averaged over initialisations.

    ``embedding`` is the geometric mean of ``||dL/dh_0||``; ``layers[l]`` the geometric mean
    of ``||dL/dθ_l||``, the norm over all parameters of layer ``l + 1`` (input to output).
    Geometric, because a plain stack's gradients spread over orders of magnitude from one
    initialisation to the next, and one draw would dominate an arithmetic mean.
    """

    norm: str
    residual: bool
    depth: int
    embedding: float
    layers: np.ndarray


def gradients_at_init(depths=(6, 12, 24), *, seed: int = 0, n_inits: int = 5,
                      batch: int = 64) -> list[InitGradients]:
    """:class:`InitGradients` for every depth x {Post-LN, Pre-LN} x {residual, plain}.

    Each setting is measured on ``n_inits`` nets drawn from :func:`helpers.seeding.seeds_of_run`
    (``seed``, ``n_inits``), residual and plain twins from the same draw (the plain net is the
    residual net with the skips switched off), on one batch of the reversal task.
    """
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    n_inits = positive_int("n_inits", n_inits)
    tokens, targets = sequence_task(TASK, positive_int("batch", batch), SIZE["length"], SIZE["vocab"], seed=seed)
    out = []
    for depth in depths:
        for norm in NORMS:
            for residual in (True, False):
                emb, layers = [], []
                for init in seeds_of_run(seed, n_inits):
                    net = make_net(depth, norm, True, init)
                    for layer in net.layers:
                        layer.residual = residual
                    h = net.embedding(tokens).detach().requires_grad_()
                    token_loss(net(tokens, h), targets).backward()
                    emb.append(float(h.grad.norm()))
                    layers.append([float(torch.cat([p.grad.reshape(-1) for p in la.parameters()]).norm())
                                   for la in net.layers])
                out.append(InitGradients(NORMS[norm], residual, depth, float(np.exp(np.mean(np.log(emb)))),
                                         np.exp(np.mean(np.log(layers), axis=0))))
    return out


@dataclass(frozen=True)
class GridRun:
    """One trained net of :func:`train_grid`: its setting and its
    :class:`~helpers.sequence_training.SequenceRun`."""

    depth: int
    norm: str
    residual: bool
    lr: float
    warmup: int
    run: SequenceRun

    @property
    def label(self) -> str:
        kind = "residual" if self.residual else "plain"
        return f"{kind} {self.norm}" + (", warm-up" if self.warmup else "")


GRID = {
    "post": [(True, 5e-3, 0), (True, 5e-3, 200), (False, 1e-3, 0), (False, 3e-3, 0), (False, 1e-2, 0)],
    "pre": [(True, 5e-3, 0), (False, 1e-3, 0), (False, 3e-3, 0), (False, 1e-2, 0)],
}
"""Per norm position, the members ``(residual, learning rate, warm-up steps)`` trained at each depth."""
STEPS = 300


def _train_stack(depth: int, norm: str, members: list, seeds: list[int], steps: int) -> list[GridRun]:
    nets = [make_net(depth, norm, residual, s) for (residual, _, _), s in zip(members, seeds)]
    runs = fit_sequences(nets, task=TASK, steps=steps, lr=[m[1] for m in members],
                         warmup_steps=[m[2] for m in members], seeds=seeds, batch_size=32,
                         progress=False)
    return [GridRun(depth, NORMS[norm], r, lr, w, run) for (r, lr, w), run in zip(members, runs)]


def train_grid(depths=(2, 6, 12), *, seed: int = 0, grid: dict | None = None,
               steps: int = STEPS) -> list[GridRun]:
    """Train every member of ``grid`` (default :data:`GRID`) at every depth: Adam, batches
    of 32, ``steps`` steps, a linear warm-up where a member has one.

    Each (depth, norm position) is one stack of nets trained together, the stacks side by
    side on the available cores. Every net is drawn from its own seed (``seeds_of_run``), so
    no two nets, and no two values of ``seed``, share an initialisation; a plain net and
    the residual net with the same learning rate differ in their draw too.
    """
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    grid = GRID if grid is None else grid
    if not isinstance(grid, dict) or not grid or set(grid) - set(NORMS):
        raise ValueError(f"grid must be a dict whose keys are among {list(NORMS)}, got {grid!r}")
    for norm, members in grid.items():
        if not members or not all(isinstance(m, tuple) and len(m) == 3 for m in members):
            raise ValueError(f"grid[{norm!r}] must be a non-empty list of (residual, lr, warm-up steps), "
                             f"got {members!r}")
    jobs, start = [], 0
    size = sum(len(m) for m in grid.values()) * len(depths)
    seeds = seeds_of_run(seed, size)
    for depth in sorted(depths, reverse=True):  # the longest jobs first
        for norm, members in grid.items():
            jobs.append(dict(depth=depth, norm=norm, members=list(members),
                             seeds=list(seeds[start:start + len(members)]), steps=steps))
            start += len(members)
    return [run for stack in run_all(_train_stack, jobs, description="stacks") for run in stack]


def best(runs: list[GridRun], **setting) -> GridRun:
    """The run of lowest final loss among those matching ``setting`` (e.g. depth=24, residual=False)."""
    chosen = [r for r in runs if all(getattr(r, k) == v for k, v in setting.items())]
    if not chosen:
        raise ValueError(f"no run matches {setting}")
    return min(chosen, key=lambda r: r.run.final_loss())


def evaluation_set(size: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """The chapter's test sequences and their targets (the same ones :func:`train_grid` scores)."""
    return sequence_task(TASK, positive_int("size", size), SIZE["length"], SIZE["vocab"], seed=TEST_SEED)


def nets_for_lesions(*, seed: int = 0, steps: int = STEPS) -> dict[str, SequenceTransformer]:
    """Trained Post-LN nets for claim 4.5: ``{"residual, 6 layers", "plain, 2 layers",
    "residual, 2 layers"}``, trained as the grid trains them (no warm-up): the residual nets
    at a learning rate of 0.003, the middle of the plain nets' rates, so that both kinds are
    trained alike; the plain net at 0.001, 0.003 and 0.01, of which the one with the lowest
    final training loss is kept (the lesion is only worth measuring on a plain net that
    learned). Each net from its own seed."""
    s = seeds_of_run(seed, 5)
    deep = make_net(6, "post", True, s[0])
    shallow = [make_net(2, "post", False, s[i]) for i in (1, 2, 3)] + [make_net(2, "post", True, s[4])]
    fit_sequences([deep], task=TASK, steps=steps, lr=3e-3, seeds=[s[0]], batch_size=32,
                  progress=False)
    runs = fit_sequences(shallow, task=TASK, steps=steps, lr=[1e-3, 3e-3, 1e-2, 3e-3],
                         seeds=list(s[1:]), batch_size=32, progress=False)
    plain = min(range(3), key=lambda i: runs[i].final_loss())
    return {"residual, 6 layers": deep, "plain, 2 layers": shallow[plain], "residual, 2 layers": shallow[3]}
