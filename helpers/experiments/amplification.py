"""Chapter 4, warm-up under Adam: how far one step moves a stack's output, against depth.

Every net is a chapter-4 :class:`~helpers.models.transformer.SequenceTransformer`
(:data:`helpers.experiments.transformer_depth.SIZE`, the reversal task), Post-LN, Pre-LN or
DeepNorm as chapter 5 builds them (:func:`helpers.experiments.deepnorm.make_net`), drawn from
seeds of its own (``AMPLIFICATION_SEEDS + s``, ``s`` from :func:`helpers.seeding.seeds_of_run`),
so that no net is one that another section trains.

:func:`amplification_by_depth` moves every parameter of the layers (not the embeddings or
the read-out) by ``step``, in two directions, and measures the relative change of the
stack's output, the vector the read-out sees (after Pre-LN's final LayerNorm; Post-LN's and
DeepNorm's last layer ends in one), with
:func:`helpers.measure.amplification.relative_output_change`:

* ``random``: random signs, every parameter moved by exactly ``step``: the size of Adam's
  first step at learning rate ``step``, in a direction that knows nothing of the loss;
* ``adam``: ``-step * sign(g)`` with ``g`` the gradient of the cross-entropy on a batch of 32
  sequences, Adam's first update itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int, real_number
from ..data import sequence_task
from ..measure.amplification import random_signs, relative_output_change, sign_directions
from ..models.transformer import SequenceTransformer
from ..seeding import generator, seeds_of_run
from .deepnorm import make_net
from .norm_order import token_loss
from .transformer_depth import SIZE, TASK

AMPLIFICATION_SEEDS = 800_000
"""Added to every seed of this module's nets (module docstring)."""
ARCHITECTURES = {"Post-LN": "post", "Pre-LN": "pre", "DeepNorm": "deepnorm"}
"""Each design's ``architecture`` for :func:`helpers.experiments.deepnorm.make_net`."""


def stack_output(net: SequenceTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """The vector the read-out sees at every position: the last layer's output, through the
    final LayerNorm for Pre-LN (an identity for Post-LN and DeepNorm)."""
    h = net.embedding(tokens)
    for layer in net.layers:
        h = layer(h)
    return net.final_norm(h)


@dataclass(frozen=True)
class Amplification:
    """One design: ``random[i]`` and ``adam[i]``, the relative output change at ``depths[i]``
    for a random-sign step and for Adam's first step, each the mean over the nets."""

    design: str
    depths: tuple[int, ...]
    step: float
    random: np.ndarray
    adam: np.ndarray


def amplification_by_depth(depths=(6, 12, 24, 48), designs=tuple(ARCHITECTURES), *, seed: int = 0,
                           n_nets: int = 3, step: float = 5e-3, batch: int = 32) -> list[Amplification]:
    """:class:`Amplification` of each design at each depth (module docstring), ``n_nets``
    nets per design and depth; every net gets its own seed, and all see the same batch."""
    depths = tuple(positive_int("depths[i]", d) for d in non_empty("depths", depths))
    designs = [choice("designs[i]", d, tuple(ARCHITECTURES)) for d in non_empty("designs", designs)]
    n_nets = positive_int("n_nets", n_nets)
    step = real_number("step", step, low=0.0, low_inclusive=False)
    tokens, targets = sequence_task(TASK, positive_int("batch", batch), SIZE["length"], SIZE["vocab"], seed=seed)
    seeds = iter(seeds_of_run(seed, len(designs) * len(depths) * n_nets))
    out = []
    for design in designs:
        random, adam = [], []
        for depth in depths:
            r, a = [], []
            for _ in range(n_nets):
                s = AMPLIFICATION_SEEDS + next(seeds)
                net = make_net(ARCHITECTURES[design], depth, s)
                params = [p for layer in net.layers for p in layer.parameters()]
                net.zero_grad()
                token_loss(net(tokens), targets).backward()

                def f(net=net):
                    return stack_output(net, tokens)

                r.append(relative_output_change(f, params, random_signs(params, generator=generator(s)), step))
                a.append(relative_output_change(f, params, sign_directions(params), step))
            random.append(np.mean(r))
            adam.append(np.mean(a))
        out.append(Amplification(design, depths, step, np.array(random), np.array(adam)))
    return out
