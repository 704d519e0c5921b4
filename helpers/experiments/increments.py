"""Chapter 5: incremental explosion, the size of one SGD step's loss change against depth.

Nets of ``N`` pre-activation blocks without normalisation (:class:`~helpers.models.mlp.DeepMLP`,
He init, width 256), each block ``y = x + eps * W2 relu(W1 relu(x))``, for a *rule* that
sets the branch scale ``eps`` from the depth:

* ``"plain"``: no skip, ``y = W2 relu(W1 relu(x))``. He init keeps the second moment of the
  activations and of the gradients the same from layer to layer: forward-stable;
* ``"1"``: ``y = x + f(x)``;
* ``"1/sqrt(N)"``: ``y = x + f(x) / sqrt(N)``;
* ``"1/N"``: ``y = x + f(x) / N``.

:func:`incremental_explosion` measures, at initialisation, one step on the blocks' parameters
(:func:`helpers.measure.increments.one_step_change`, with the probe loss of that module), plain
SGD or Adam's first step, and the size of the stream after every block.

The first-order size of an SGD step is ``η ||g||²``, a sum over the blocks of
``ε² (size of the block's input)² (size of the gradient at its output)²``. At initialisation
the stream's squared size grows by about ``1 + ε²`` per block and so does the gradient's on its
way back, so block ``l``'s input has passed ``l`` blocks and the gradient at its output the
``N - 1 - l`` above it: every block carries ``(1 + ε²)^(N - 1)``, and

    η ||g||² ∝ N ε² (1 + ε²)^(N - 1)                         (:func:`sgd_step_theory`)

up to a factor that does not depend on ``N``: ``(1 + 1/N)^(N - 1)`` for ``ε = 1/sqrt(N)``
(1.33 times larger at 32 blocks than at 4) and ``N 2^(N - 1)`` for ``ε = 1``. Adam's first
step changes the loss by about ``η ||g||_1``, a sum of ``N K`` gradients of size ``ε``: about
``N ε`` times a factor of the stream's growth (:func:`adam_step_theory`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int, real_number
from ..measure.increments import OPTIMIZERS, StepChange, one_step_change, probe_loss
from ..models.mlp import DeepMLP
from ..parallel import run_all
from ..seeding import generator, isolated, seeds_of_run
from .branch_scale import _stream_rms

RULES = {"plain": "plain, y = f(x)", "1": "y = x + f(x)", "1/sqrt(N)": "y = x + f(x)/√N",
         "1/N": "y = x + f(x)/N"}
"""Each rule for the branch scale, and its label in figures."""
IN_FEATURES, OUTPUTS = 32, 4


def branch_scale(rule: str, depth: int) -> float:
    """``eps`` of ``rule`` (see :data:`RULES`) for ``depth`` blocks (1 for ``"plain"``, which has no skip)."""
    rule, depth = choice("rule", rule, RULES), positive_int("depth", depth)
    return {"plain": 1.0, "1": 1.0, "1/sqrt(N)": depth ** -0.5, "1/N": 1.0 / depth}[rule]


def sgd_step_theory(rule: str, depth: int) -> float:
    """``N ε² (1 + ε²)^(N - 1)``, the first-order size of an SGD step up to a factor that does not
    depend on ``N`` (module docstring); ``N`` for ``"plain"``, whose blocks each add the same."""
    eps = branch_scale(rule, depth)
    return float(depth) if rule == "plain" else depth * eps ** 2 * (1 + eps ** 2) ** (depth - 1)


def adam_step_theory(rule: str, depth: int) -> float:
    """``N ε (1 + ε²)^((N - 1) / 2)``, the first-order size of Adam's first step, ``η ||g||_1``,
    up to a factor that does not depend on ``N`` (module docstring); ``N`` for ``"plain"``."""
    eps = branch_scale(rule, depth)
    return float(depth) if rule == "plain" else depth * eps * (1 + eps ** 2) ** ((depth - 1) / 2)


def make_net(rule: str, depth: int, width: int, seed: int) -> DeepMLP:
    """The net of ``depth`` blocks for ``rule``, drawn from ``seed`` (the caller's random state untouched)."""
    with isolated(seed):
        return DeepMLP(2 * depth + 2, width, kind="plain" if rule == "plain" else "residual",
                       in_features=IN_FEATURES, n_classes=OUTPUTS, norm="none", order="pre", init="he",
                       branch_scale=branch_scale(rule, depth))


@dataclass(frozen=True)
class IncrementRun:
    """One rule at one depth, over several initialisations.

    ``steps`` holds one :class:`~helpers.measure.increments.StepChange` per initialisation;
    ``stream[l]`` is the root-mean-square of the stream after block ``l`` (0: the stem's
    output), averaged over initialisations.
    """

    rule: str
    depth: int
    eps: float
    lr: float
    steps: tuple[StepChange, ...]
    stream: np.ndarray
    optimizer: str = "sgd"

    @property
    def label(self) -> str:
        return RULES[self.rule]

    @property
    def change(self) -> float:
        """The size of the step's loss change, ``|ΔL|``, mean over initialisations (inf if a step
        made the loss infinite or not a number)."""
        changes = np.array([abs(s.change) for s in self.steps])
        return float(np.mean(changes)) if np.all(np.isfinite(changes)) else math.inf

    @property
    def first_order(self) -> float:
        """The first-order size of the change, mean over initialisations; ``η ||g||²`` for SGD,
        about ``η ||g||_1`` for Adam's first step."""
        return float(np.mean([-s.first_order for s in self.steps]))

    @property
    def theory(self) -> float:
        """The first-order size the theory gives, up to a factor that does not depend on the
        depth (:func:`sgd_step_theory`, :func:`adam_step_theory`)."""
        return (sgd_step_theory if self.optimizer == "sgd" else adam_step_theory)(self.rule, self.depth)

    @property
    def stream_growth(self) -> float:
        """How much the squared size of the stream grew through the blocks (mean over
        initialisations): ``(stream[-1] / stream[0])²``, ``(1 + ε²)^N`` in theory."""
        return float((self.stream[-1] / self.stream[0]) ** 2)

    @property
    def grad_sq(self) -> float:
        """``||g||²`` over the blocks' parameters, mean over initialisations."""
        return float(np.mean([s.grad_sq for s in self.steps]))

    @property
    def decreased(self) -> bool:
        """Whether the step lowered the loss for every initialisation (it should, if it is small)."""
        return all(s.change < 0 for s in self.steps)

    @property
    def per_block(self) -> np.ndarray:
        """Each block's share ``||g_l||²``, mean over initialisations."""
        return np.mean([s.per_group for s in self.steps], axis=0)


def _measure(rule: str, depth: int, width: int, x: torch.Tensor, u: torch.Tensor, lr: float,
             inits: tuple[int, ...], optimizer: str = "sgd") -> IncrementRun:
    steps, streams = [], []
    for init in inits:
        net = make_net(rule, depth, width, init)
        with torch.no_grad():
            streams.append(_stream_rms(net, x))
        groups = [list(block.parameters()) for block in net.blocks]
        steps.append(one_step_change(net, lambda m: probe_loss(m(x), u), groups, lr, optimizer))
    return IncrementRun(rule, depth, branch_scale(rule, depth), lr, tuple(steps), np.mean(streams, axis=0),
                        optimizer)


def incremental_explosion(depths=(4, 8, 16, 32), rules=("plain", "1", "1/sqrt(N)"), *, seed: int = 0,
                          n_inits: int = 8, width: int = 256, batch: int = 128,
                          lr: float = 1e-5, optimizer: str = "sgd") -> list[IncrementRun]:
    """One step of size ``lr`` at initialisation for each rule and depth (module docstring),
    the (rule, depth) pairs side by side on the available cores: plain SGD (``optimizer =
    "sgd"``) or Adam's first step (``"adam"``, about ``-lr sign(g)`` on every parameter).

    The inputs ``x`` ``(batch, 32)`` and the probe directions ``u`` ``(batch, 4)`` are standard
    normal, drawn from ``seed``; the ``n_inits`` nets of each (rule, depth) come from
    :func:`helpers.seeding.seeds_of_run`, so no two values of ``seed`` share a net. The step
    moves the blocks' parameters only (stem and read-out stay fixed), so ``||g||²`` counts
    exactly the ``N`` blocks whose number the argument is about.
    """
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    rules = [choice("rules[i]", r, RULES) for r in non_empty("rules", rules)]
    n_inits, width = positive_int("n_inits", n_inits), positive_int("width", width)
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    optimizer = choice("optimizer", optimizer, OPTIMIZERS)
    g = generator(seed)
    x = torch.randn(positive_int("batch", batch), IN_FEATURES, generator=g)
    u = torch.randn(batch, OUTPUTS, generator=g)
    inits = seeds_of_run(seed, n_inits)
    jobs = [dict(rule=rule, depth=depth, width=width, x=x, u=u, lr=lr, inits=inits, optimizer=optimizer)
            for depth in sorted(depths, reverse=True) for rule in rules]  # the longest jobs first
    runs = run_all(_measure, jobs, description="depths")
    return sorted(runs, key=lambda r: (rules.index(r.rule), depths.index(r.depth)))
