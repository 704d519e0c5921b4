"""Chapter 5: deep Transformers trained with Post-LN, with its symptom treated (warm-up, a lower
rate) and its cause treated (DeepNorm, Pre-LN, ReZero).

Every net is a chapter-4 :class:`~helpers.models.transformer.SequenceTransformer`
(:data:`helpers.experiments.transformer_depth.SIZE`, the reversal task) of ``depth`` layers,
trained with Adam in batches of 32 (:func:`helpers.sequence_training.fit_sequences`).
The designs (:data:`DESIGNS`):

* Post-LN, ``x = LN(x + F(x))``, at the full rate, with a 200-step warm-up, and at a lower
  constant rate;
* DeepNorm (Wang et al. 2022), ``x = LN(alpha x + F(x))`` with ``alpha = (2N)^(1/4)`` and the
  update weights drawn as the paper's algorithm does, Xavier normal of gain
  ``beta = (8N)^(-1/4)``, their biases scaled by ``beta`` as the official code does
  (:func:`helpers.models.deepnorm.deepnorm_init_`);
* Pre-LN, ``x = x + F(LN(x))``;
* ReZero (Bachlechner et al. 2020), ``x = x + g F(x)`` with no LayerNorm and a learned gate
  ``g`` per sublayer that starts at 0.

:func:`early_updates` measures how much the first step changes each layer's output.

Every net and every stream of training batches is drawn from ``NET_SEEDS + s`` for the seeds
``s`` of :func:`helpers.seeding.seeds_of_run`, so that none of them is one of chapter 4's nets
(which are drawn from the small seeds themselves): the two chapters' Post-LN runs are
independent evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int
from ..models.deepnorm import deepnorm_init_
from ..models.transformer import SequenceTransformer
from ..parallel import run_all
from ..seeding import isolated, seeds_of_run
from ..sequence_training import SequenceRun, fit_sequences
from .transformer_depth import SIZE, TASK, evaluation_set

FULL_RATE, LOW_RATE, WARMUP = 5e-3, 1.5e-3, 200
DESIGNS = {
    "Post-LN": ("post", FULL_RATE, 0),
    "Post-LN, warm-up": ("post", FULL_RATE, WARMUP),
    "Post-LN, lower rate": ("post", LOW_RATE, 0),
    "DeepNorm": ("deepnorm", FULL_RATE, 0),
    "Pre-LN": ("pre", FULL_RATE, 0),
    "ReZero": ("rezero", FULL_RATE, 0),
}
"""The architecture, learning rate and warm-up steps of each design."""
STEPS = 300
NET_SEEDS = 500_000
"""Added to every seed of this module's nets and batches (module docstring)."""


def _seeds(seed: int, n: int) -> list[int]:
    """The ``n`` seeds of one run: :func:`helpers.seeding.seeds_of_run` shifted by :data:`NET_SEEDS`."""
    return [NET_SEEDS + s for s in seeds_of_run(seed, n)]


def make_net(architecture: str, depth: int, seed: int) -> SequenceTransformer:
    """A net of ``depth`` layers of ``architecture`` (``"post"``, ``"deepnorm"``, ``"pre"`` or
    ``"rezero"``), drawn from ``seed`` (the caller's random state untouched)."""
    architecture = choice("architecture", architecture, ("post", "deepnorm", "pre", "rezero"))
    depth = positive_int("depth", depth)
    with isolated(seed):
        if architecture == "rezero":
            return SequenceTransformer(n_layers=depth, norm_position="none", rezero=True, **SIZE)
        net = SequenceTransformer(n_layers=depth, norm_position="pre" if architecture == "pre" else "post", **SIZE)
        # DeepNorm: the paper's init, drawn after the net from the same seeded stream
        return deepnorm_init_(net) if architecture == "deepnorm" else net


@dataclass(frozen=True)
class DesignRun:
    """One trained net: its design's name, depth and :class:`~helpers.sequence_training.SequenceRun`."""

    design: str
    depth: int
    run: SequenceRun

    @property
    def trained(self) -> bool:
        """Whether it reverses at least 95 % of the test tokens."""
        return self.run.accuracy >= 0.95


def _train(depth: int, designs: list[str], seeds: list[int], steps: int) -> list[DesignRun]:
    nets = [make_net(DESIGNS[d][0], depth, s) for d, s in zip(designs, seeds)]
    runs = fit_sequences(nets, task=TASK, steps=steps, lr=[DESIGNS[d][1] for d in designs],
                         warmup_steps=[DESIGNS[d][2] for d in designs], seeds=seeds,
                         batch_size=32, progress=False)
    return [DesignRun(d, depth, r) for d, r in zip(designs, runs)]


def _stacks(designs: list[str]) -> list[list[str]]:
    """The designs grouped by the stacks that can train together (one norm position each)."""
    groups: dict[str, list[str]] = {}
    for d in designs:
        architecture = DESIGNS[d][0]
        groups.setdefault("post" if architecture == "deepnorm" else architecture, []).append(d)
    return sorted(groups.values(), key=len, reverse=True)


def train_designs(depth: int = 24, designs=tuple(DESIGNS), *, seed: int = 0, steps: int = STEPS) -> list[DesignRun]:
    """Train one net of each design at ``depth`` layers for ``steps`` steps, each from its own
    seed (``_seeds``); the designs that share a norm position train
    as one stack, the stacks side by side on the available cores. Returns them in the order
    of ``designs``."""
    designs = [choice("designs[i]", d, DESIGNS) for d in non_empty("designs", designs)]
    if len(set(designs)) != len(designs):
        raise ValueError(f"designs must not repeat, got {designs}")
    seeds = dict(zip(designs, _seeds(seed, len(designs))))
    jobs = [dict(depth=positive_int("depth", depth), designs=group, seeds=[seeds[d] for d in group],
                 steps=positive_int("steps", steps)) for group in _stacks(designs)]
    runs = {r.design: r for stack in run_all(_train, jobs, description="designs") for r in stack}
    return [runs[d] for d in designs]


@dataclass(frozen=True)
class EarlyUpdate:
    """How far the first ``steps`` steps moved each layer's output, for one design.

    ``layers[l]`` is ``||h_l(θ_t) - h_l(θ_0)|| / ||h_l(θ_0)||`` for the output ``h_l`` of layer
    ``l + 1`` on the test sequences (mean over nets); ``output`` the same for the logits. With
    ``normalised`` (the default of :func:`early_updates`) each ``h_l`` is first passed through a
    LayerNorm without gain or bias, so that every design is compared on vectors of one size:
    Post-LN's and DeepNorm's layer outputs already are LayerNorm outputs, Pre-LN's and
    ReZero's are the raw stream, whose size grows with the depth.
    """

    design: str
    steps: int
    layers: np.ndarray
    output: float
    normalised: bool = True


@torch.no_grad()
def _outputs(net: SequenceTransformer, tokens: torch.Tensor, normalised: bool = True) -> list[torch.Tensor]:
    h, out = net.embedding(tokens), []
    for layer in net.layers:
        h = layer(h)
        out.append(torch.nn.functional.layer_norm(h, h.shape[-1:]) if normalised else h)
    out.append(net(tokens))
    return out


def _relative_change(before: list[torch.Tensor], after: list[torch.Tensor]) -> np.ndarray:
    return np.array([float((a - b).norm() / b.norm()) for b, a in zip(before, after)])


def early_updates(depth: int = 24, designs=("Post-LN", "DeepNorm", "Pre-LN", "ReZero"), *, seed: int = 0,
                  steps: int = 1, n_nets: int = 3, normalised: bool = True) -> list[EarlyUpdate]:
    """Train ``n_nets`` nets of each design for ``steps`` steps (by default one) at its own
    rate (no warm-up unless the design has one) and measure how much each layer's output
    moved (:class:`EarlyUpdate`; ``normalised``: each layer's output through a LayerNorm
    first): DeepNet's "model update", layer by layer."""
    if not isinstance(normalised, bool):
        raise TypeError(f"normalised must be a bool, got {type(normalised).__name__}")
    designs = [choice("designs[i]", d, DESIGNS) for d in non_empty("designs", designs)]
    n_nets, steps = positive_int("n_nets", n_nets), positive_int("steps", steps)
    tokens, _ = evaluation_set(256)
    seeds = _seeds(seed, len(designs) * n_nets)
    out = []
    for i, design in enumerate(designs):
        architecture, lr, warmup = DESIGNS[design]
        mine = list(seeds[i * n_nets:(i + 1) * n_nets])
        nets = [make_net(architecture, depth, s) for s in mine]
        before = [_outputs(n, tokens, normalised) for n in nets]  # a forward pass changes nothing
        fit_sequences(nets, task=TASK, steps=steps, lr=lr, warmup_steps=warmup, seeds=mine,
                      batch_size=32, progress=False)
        changes = np.mean([_relative_change(b, _outputs(n, tokens, normalised)) for b, n in zip(before, nets)],
                          axis=0)
        out.append(EarlyUpdate(design, steps, changes[:-1], float(changes[-1]), normalised))
    return out
