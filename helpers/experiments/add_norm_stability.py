"""Does the real Add & Norm tame a branch that starts too large? A stability map.

Chapter 3's branch-scale sweep (:mod:`helpers.experiments.branch_scale`) puts its norm
*inside* the branch, right after the layer whose weights the init scale multiplies, so the
norm undoes the scale by construction. Here the norm sits where a Transformer puts it. A
net is a stem, ``blocks`` residual sublayers and a head (the sizes of the sweep's nets);
every sublayer's branch is a Transformer feed-forward net ``F(x) = W2 relu(W1 x)`` whose
last layer (``W2`` and its bias) is multiplied by the **initial branch scale** ``s`` after
He initialisation, and the sublayer is one of (:data:`ARCHITECTURES`):

* ``"Post-LN"``: ``x <- LN(x + F(x))``, the original Transformer's Add & Norm. The norm
  follows the sum, so it does not undo ``s``: at initialisation the input's share of the
  sum's second moment is about ``1 / (1 + r^2)``, with ``r = ||F(x)|| / ||x||`` the branch's
  starting size relative to its input (larger than ``s`` itself, since the branch's He-initialised
  layers have a gain of their own);
* ``"Pre-LN"``: ``x <- x + F(LN(x))``, with a final LayerNorm before the head. The norm
  feeds the branch; the branch's output is ``s`` times its usual size whatever the stream;
* ``"no norm"``: ``x <- x + F(x)``, the Add alone;
* ``"ReZero"``: ``x <- x + alpha F(x)`` with one learned scalar ``alpha`` per sublayer that
  starts at 0 (Bachlechner et al. 2020; SkipInit, De and Smith 2020, puts the same gate at
  the end of the branch), no norm: every sublayer starts as the identity.

:func:`stability_map` trains one net per (architecture, scale, learning rate, seed) on the
digits and records each run's per-epoch training loss; :func:`outcome` labels a run
(``"diverged"``, ``"stuck"`` or ``"trains"``, as in the sweep). Nets of one architecture
train together as a stack (:func:`helpers.training.fit`), each with its own rate. A map may
add *warm-up columns*: the same nets trained at a given rate after a linear warm-up over
its first steps, the article's remedy for a learning rate that is too large.

:func:`sublayer_gradients` looks at the same nets at initialisation, before any step: one
backward pass of the cross-entropy gives the gradient that reaches each sublayer's sum
``S_l = x + F(x)`` (for Post-LN the ``g' = J_LN^T g`` of chapter 3's first section), and
:func:`helpers.measure.skip_gradient.skip_path_gradients` the part of it that the skips
alone would deliver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._checks import choice, non_empty, positive_int, real_number
from ..measure.skip_gradient import skip_path_gradients
from ..models.layers import LayerNorm, Linear
from ..models.mlp import init_linear_
from ..seeding import isolated
from ..training import OPTIMIZERS, fit
from .branch_scale import outcome

ARCHITECTURES = ("Post-LN", "Pre-LN", "no norm", "ReZero")
"""Where the norm sits (module docstring)."""

__all__ = ["ARCHITECTURES", "AddNormMLP", "MapRun", "StabilityMap", "Sublayer", "SublayerGradients", "outcome",
           "stability_map", "sublayer_gradients"]


class Sublayer(nn.Module):
    """One residual sublayer with a feed-forward branch ``W2 relu(W1 x)`` (module docstring)."""

    def __init__(self, width: int, hidden: int, architecture: str):
        super().__init__()
        self.architecture = architecture
        self.fc1, self.fc2 = Linear(width, hidden), Linear(hidden, width)
        if architecture in ("Post-LN", "Pre-LN"):
            self.norm = LayerNorm(width)
        if architecture == "ReZero":
            # (1, 1): one number that broadcasts over (batch, width), and over
            # (members, batch, width) once a stack gives it a member axis
            self.alpha = nn.Parameter(torch.zeros(1, 1))

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.architecture == "Post-LN":
            return self.norm(x + self.branch(x))  # Add, then Norm
        if self.architecture == "Pre-LN":
            return x + self.branch(self.norm(x))  # Norm inside the branch, then Add
        if self.architecture == "ReZero":
            return x + self.alpha * self.branch(x)  # a gate that starts closed
        return x + self.branch(x)


class AddNormMLP(nn.Module):
    """Stem ``relu(W x)``, ``blocks`` sublayers (:class:`Sublayer`), (Pre-LN: a final LayerNorm), head.

    ``scale`` multiplies every branch's last layer, weights and bias, after He
    initialisation (the head is Xavier-initialised, as in :class:`~helpers.models.mlp.DeepMLP`).
    """

    def __init__(self, architecture: str, *, blocks: int = 6, width: int = 32, hidden: int | None = None,
                 scale: float = 1.0, in_features: int = 64, n_classes: int = 10):
        super().__init__()
        self.architecture = choice("architecture", architecture, ARCHITECTURES)
        width = positive_int("width", width)
        hidden = width if hidden is None else positive_int("hidden", hidden)
        scale = real_number("scale", scale, low=0.0, low_inclusive=False)
        self.stem = Linear(positive_int("in_features", in_features), width)
        self.blocks = nn.ModuleList(Sublayer(width, hidden, self.architecture)
                                    for _ in range(positive_int("blocks", blocks)))
        self.final_norm = LayerNorm(width) if self.architecture == "Pre-LN" else nn.Identity()
        self.head = Linear(width, positive_int("n_classes", n_classes, minimum=2))
        init_linear_(self.stem, "he")
        for block in self.blocks:
            init_linear_(block.fc1, "he")
            init_linear_(block.fc2, "he")
            with torch.no_grad():
                block.fc2.weight.mul_(scale)
                block.fc2.bias.mul_(scale)
        init_linear_(self.head, "xavier")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return self.head(self.final_norm(h))

    @torch.no_grad()
    def branch_ratios(self, x: torch.Tensor) -> np.ndarray:
        """Each sublayer's ``||F|| / ||x||`` on the batch ``x`` (Frobenius norms; ``F`` as it
        is added, ReZero's gate included): the size of the correction against the stream it
        is added to."""
        h = torch.relu(self.stem(x))
        ratios = []
        for block in self.blocks:
            a = block.architecture
            branch = block.branch(block.norm(h) if a == "Pre-LN" else h)
            if a == "ReZero":
                branch = block.alpha * branch
            ratios.append(float(branch.norm() / h.norm()))
            total = h + branch
            h = block.norm(total) if a == "Post-LN" else total
        return np.array(ratios)

    def recorded_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """``forward``, keeping what :func:`sublayer_gradients` needs: the logits, each
        sublayer's sum ``S_l`` (the tensor that its branch's output is added into) and the
        last sublayer's output ``x_L``, all with ``retain_grad``."""
        h = torch.relu(self.stem(x))
        sums = []
        for block in self.blocks:
            a = block.architecture
            branch = block.branch(block.norm(h) if a == "Pre-LN" else h)
            total = h + (block.alpha * branch if a == "ReZero" else branch)
            total.retain_grad()
            sums.append(total)
            h = block.norm(total) if a == "Post-LN" else total
        h.retain_grad()
        return self.head(self.final_norm(h)), sums, h


@dataclass
class MapRun:
    """One net of the map: its architecture, initial branch scale, learning rate and seed,
    its training loss per epoch, and the length of its warm-up in steps (0: none)."""

    architecture: str
    scale: float
    lr: float
    seed: int
    losses: np.ndarray
    warmup: int = 0

    @property
    def outcome(self) -> str:
        return outcome(self.losses)


@dataclass
class StabilityMap:
    """The runs of :func:`stability_map` and the settings they were trained with: the
    columns are the rates ``lrs``, then the rates ``warmup_lrs`` reached after a warm-up of
    ``warmup_steps`` steps."""

    runs: list[MapRun]
    rows: list[tuple[str, float]]
    lrs: tuple[float, ...]
    optimizer: str
    epochs: int
    warmup_lrs: tuple[float, ...] = ()
    warmup_steps: int = 0

    def columns(self) -> list[tuple[float, bool]]:
        """``(learning rate, warmed up)`` of each column, in order."""
        return [(lr, False) for lr in self.lrs] + [(lr, True) for lr in self.warmup_lrs]

    def of(self, architecture: str, scale: float, lr: float, warmup: bool = False) -> list[MapRun]:
        """The runs (one per seed) of one cell, a warm-up column's if ``warmup``; ``ValueError``
        for a cell the map does not hold."""
        if (architecture, scale) not in self.rows or (lr, bool(warmup)) not in self.columns():
            raise ValueError(f"no cell ({architecture!r}, scale {scale}, lr {lr}, warm-up {bool(warmup)}) in this "
                             f"map: its rows are {self.rows}, its learning rates {self.lrs} and those reached "
                             f"after a warm-up {self.warmup_lrs}")
        return [r for r in self.runs if r.architecture == architecture and r.scale == scale and r.lr == lr
                and (r.warmup > 0) == bool(warmup)]

    def final(self, architecture: str, scale: float, lr: float, warmup: bool = False) -> np.ndarray:
        """The last epoch's training loss of each run of one cell (NaN or inf if it diverged)."""
        return np.array([r.losses[-1] for r in self.of(architecture, scale, lr, warmup)])

    def worst(self, architecture: str, scale: float, lr: float, warmup: bool = False) -> float:
        """The highest final loss of one cell's runs, ``inf`` if any of them diverged."""
        final = self.final(architecture, scale, lr, warmup)
        return float(np.max(np.where(np.isfinite(final), final, np.inf)))

    def grid(self) -> np.ndarray:
        """``(rows, columns)``: each cell's mean final loss, NaN where any run diverged."""
        columns = self.columns()
        out = np.full((len(self.rows), len(columns)), np.nan)
        for i, (architecture, scale) in enumerate(self.rows):
            for j, (lr, warm) in enumerate(columns):
                final = self.final(architecture, scale, lr, warm)
                if np.all(np.isfinite(final)):
                    out[i, j] = final.mean()
        return out


def stability_map(x: torch.Tensor, y: torch.Tensor, *, rows, lrs, seeds=(0,), blocks: int = 6,
                  width: int = 32, epochs: int = 10, optimizer: str = "sgd", warmup_lrs=(),
                  warmup_steps: int = 0, progress: bool | None = None) -> StabilityMap:
    """Train one :class:`AddNormMLP` per (row, column, seed) to classify ``x`` as ``y`` and
    return the :class:`StabilityMap`.

    ``rows`` are ``(architecture, scale)`` pairs; ``lrs`` the learning rates, each used as
    is with ``optimizer`` (``"sgd"``: momentum 0.9; ``"adam"``), weight decay ``1e-4``, no
    warm-up, mini-batches of 128. Each rate of ``warmup_lrs`` adds a column of nets trained
    the same way at that rate after a linear warm-up over the first ``warmup_steps`` steps
    (:func:`helpers.training.fit`). The seed fixes a net's initial weights and its
    mini-batches, so the nets of one seed start alike in every column.
    """
    rows = [(choice("rows[i][0]", a, ARCHITECTURES), real_number("rows[i][1]", s, low=0.0, low_inclusive=False))
            for a, s in non_empty("rows", rows)]
    lrs = tuple(real_number("lrs[i]", lr, low=0.0, low_inclusive=False) for lr in non_empty("lrs", lrs))
    if isinstance(warmup_lrs, (str, bytes)) or not hasattr(warmup_lrs, "__iter__"):
        raise TypeError(f"warmup_lrs must be a sequence of learning rates, got {type(warmup_lrs).__name__}")
    warmup_lrs = tuple(real_number("warmup_lrs[i]", lr, low=0.0, low_inclusive=False) for lr in warmup_lrs)
    warmup_steps = positive_int("warmup_steps", warmup_steps, minimum=1 if warmup_lrs else 0)
    seeds = non_empty("seeds", seeds)  # each seed checked where it is used (isolated, fit)
    optimizer = choice("optimizer", optimizer, OPTIMIZERS)
    epochs = positive_int("epochs", epochs)
    columns = [(lr, 0) for lr in lrs] + [(lr, warmup_steps) for lr in warmup_lrs]
    runs = []
    for architecture in dict.fromkeys(a for a, _ in rows):  # one stack per architecture
        group, nets = [], []
        for _, scale in (r for r in rows if r[0] == architecture):
            for seed in seeds:
                for lr, warmup in columns:
                    with isolated(seed):
                        nets.append(AddNormMLP(architecture, blocks=blocks, width=width, scale=scale))
                    group.append(MapRun(architecture, scale, lr, seed, np.array([]), warmup))
        histories = fit(nets, x, y, epochs=epochs, lr=[r.lr for r in group], seed=[r.seed for r in group],
                        warmup_steps=[r.warmup for r in group], optimizer=optimizer, progress=progress,
                        description=f"{architecture} map")
        for run, history in zip(group, histories):
            run.losses = np.array(history.train_loss)
        runs.extend(group)
    return StabilityMap(runs, rows, lrs, optimizer, epochs, warmup_lrs, warmup_steps if warmup_lrs else 0)


@dataclass
class SublayerGradients:
    """:func:`sublayer_gradients` for one architecture: per net (rows) and sublayer (columns,
    input to output), ``arriving`` is ``||dL/dS_l||``, the gradient that reaches sublayer
    ``l``'s sum, and ``skip_only`` the norm of the part the skip connections alone deliver
    there (:func:`~helpers.measure.skip_gradient.skip_path_gradients`). Both equal at the
    last sublayer."""

    architecture: str
    arriving: np.ndarray
    skip_only: np.ndarray

    def relative(self) -> np.ndarray:
        """Each sublayer's ``||dL/dS_l||`` over the last sublayer's, the mean over the nets."""
        return (self.arriving / self.arriving[:, -1:]).mean(axis=0)

    def skip_share(self) -> np.ndarray:
        """``skip_only / arriving`` per sublayer, the mean over the nets: how much of what
        arrives the skips alone would bring: 1 at the last sublayer (nothing lies between it and
        the loss but the head); where no norm sits on the skips (Pre-LN), ``1 / relative()``,
        since the skips then carry the loss's gradient unchanged."""
        return (self.skip_only / self.arriving).mean(axis=0)


def sublayer_gradients(x: torch.Tensor, y: torch.Tensor, *, architecture: str, blocks: int = 12,
                       width: int = 64, hidden: int = 256, scale: float = 1.0, seeds=(0,)) -> SublayerGradients:
    """At initialisation, one :class:`AddNormMLP` per seed (``blocks`` sublayers of
    ``width`` features, branches ``hidden`` wide): one backward pass of the mean
    cross-entropy of ``net(x)`` against ``y`` (no step is taken) and the gradient at each
    sublayer's sum, whole and along the skips alone (:class:`SublayerGradients`). Norms are
    Frobenius norms over the batch."""
    architecture = choice("architecture", architecture, ARCHITECTURES)
    seeds = non_empty("seeds", seeds)  # each seed checked where it is used (isolated)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or len(x) != len(y):
        raise ValueError("x must be a (batch, features) tensor with one label in y per row")
    arriving, skip_only = [], []
    for seed in seeds:
        with isolated(seed):
            net = AddNormMLP(architecture, blocks=blocks, width=width, hidden=hidden, scale=scale,
                             in_features=x.shape[1])
        logits, sums, top = net.recorded_forward(x)
        torch.nn.functional.cross_entropy(logits, y).backward()
        norms = [b.norm if architecture == "Post-LN" else None for b in net.blocks]
        along_skips = skip_path_gradients(norms, sums, top.grad)
        arriving.append([float(s.grad.double().norm()) for s in sums])
        skip_only.append([float(g.double().norm()) for g in along_skips])
    return SublayerGradients(architecture, np.array(arriving), np.array(skip_only))
