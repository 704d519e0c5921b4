"""Chapter 5's extension "a DeepNorm for Adam": which power of the depth in DeepNorm's ``beta``
holds one Adam update's effect still, and what the rules do in training.

The bookkeeping of :mod:`helpers.experiments.step_sizes`: in ``x = LN(alpha x + G(x))`` every
update weight's gradient carries ``beta / alpha``; Adam's first step moves every weight by about
the rate whatever its gradient, so the output's change sums ``2N`` sublayers' shares of about
``2 beta / alpha`` each. With ``alpha = (2N)^(1/4)`` and ``beta ∝ N^(-b)`` that is
``N^(3/4 - b)``: DeepNorm's ``b = 1/4`` leaves ``sqrt(N)``, and ``b = 3/4`` (``beta / alpha ∝
1/N``) holds it still. A constant factor on ``beta`` moves every curve's level, not its slope,
so the designs differ in the power ``b`` (:func:`helpers.models.adam_scaling.beta_power_init_`).

* :func:`update_by_depth`: DeepNet's "model update" ``||ΔF|| / η`` after Adam's first step at
  initialisation (:func:`helpers.measure.output_update.output_changes`, the step and rate of
  :func:`helpers.experiments.step_sizes.model_updates`), for each power ``b`` and for T-Fixup
  (:func:`helpers.models.adam_scaling.tfixup_init_`), at several depths; once with the step on
  every parameter of the attention and FFN sublayers, as in section 5, and once on all of them
  but the biases of ``W_o`` and ``W_2`` (:func:`stream_biases`). Those two biases write straight
  into the stream, so a step on them changes the output by about the rate whatever ``beta``;
  every other parameter of a branch reaches the stream through a ``beta``-scaled matrix, which
  is what the bookkeeping counts.
* :func:`train_rules`: 24-layer stacks of each rule trained at the chapter's full Adam rate
  (``helpers.experiments.deepnorm.FULL_RATE``, 0.005), as in section 4.
* :func:`admin_profile`: Admin's profiled skip weights ``omega_i``
  (:func:`helpers.models.adam_scaling.admin_omegas`) for Post-LN stacks, beside DeepNorm's
  closed-form ``alpha``, with the branches drawn by PyTorch's defaults (as every net of the
  course) or as Admin's fairseq code draws them (:data:`INITS`).

Every net is drawn from ``NET_SEEDS + s`` for the seeds ``s`` of
:func:`helpers.seeding.seeds_of_run`, so that none is a net of another section, with an offset
per experiment (:data:`OFFSETS`), so that the three experiments draw their own nets. In
:func:`update_by_depth` the nets of one seed are the same draw for every power ``b`` (only
``beta``'s factor differs): the powers are compared on twin nets. In :func:`train_rules` net ``k``
of every rule is drawn from the same seed and trains on the same batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import gmean

from .._checks import choice, non_empty, positive_int, real_number
from ..data import sequence_task
from ..measure.output_update import output_changes
from ..models.adam_scaling import DEEPNORM_POWER, admin_profiling, beta_power_init_, fairseq_init_, tfixup_init_
from ..models.transformer import SequenceTransformer, deepnorm_constants
from ..parallel import one_thread, run_all
from ..seeding import isolated, seeds_of_run
from ..sequence_training import fit_sequences
from .deepnorm import FULL_RATE, DesignRun
from .deepnorm import make_net as deepnorm_net
from .norm_order import depth_exponent, token_loss
from .step_sizes import RATES, sublayer_parameters
from .transformer_depth import SIZE, TASK, evaluation_set

POWERS = (0.25, 0.5, 0.75, 1.0)
"""The powers ``b`` of ``beta = 8^(-1/4) N^(-b)`` that the page compares, DeepNorm's 1/4 and three
steeper ones."""
DERIVED_POWER = 0.75
"""The power ``b`` that the bookkeeping derives for Adam, the one at which ``beta / alpha`` falls like
``1/N``."""
TFIXUP = "T-Fixup"
PARTS = ("no stream biases", "all")
"""The names of the two sets of parameters that one step moves, in order. The first is every
parameter of the sublayers but the biases of ``W_o`` and ``W_2`` (:func:`stream_biases`), the
second every parameter of the sublayers."""
INITS = ("pytorch", "fairseq")
"""How :func:`admin_profile` draws the branches: PyTorch's defaults, or as Admin's fairseq code
does (:func:`helpers.models.adam_scaling.fairseq_init_`)."""
NET_SEEDS = 900_000
"""Added to every seed of this module's nets and batches (module docstring)."""
OFFSETS = {"update": 0, "train": 30_000, "admin": 60_000}
"""Added to :data:`NET_SEEDS` for the nets of :func:`update_by_depth`, :func:`train_rules` and
:func:`admin_profile`."""


def design_name(power) -> str:
    """The name of a design: ``"T-Fixup"``, or ``"b = 3/4"`` for ``beta ∝ N^(-3/4)``
    (``"b = 1/4 (DeepNorm)"`` for DeepNorm's own power)."""
    if power == TFIXUP:
        return TFIXUP
    power = real_number("power", power, low=0.0)
    quarters = {0.25: "1/4", 0.5: "1/2", 0.75: "3/4", 1.0: "1"}.get(power, f"{power:g}")
    return f"b = {quarters}" + (" (DeepNorm)" if power == DEEPNORM_POWER else "")


def _seeds(seed: int, n: int, experiment: str = "update") -> list[int]:
    return [NET_SEEDS + OFFSETS[experiment] + s for s in seeds_of_run(seed, n)]


def make_net(design, depth: int, seed: int) -> SequenceTransformer:
    """A net of ``depth`` layers drawn from ``seed`` (the caller's random state untouched):
    ``design`` a power ``b`` (a Post-LN stack with DeepNorm's ``alpha`` and ``beta = 8^(-1/4)
    N^(-b)``) or ``"T-Fixup"`` (a stack without LayerNorm, T-Fixup's initialisation)."""
    depth = positive_int("depth", depth)
    with isolated(seed):
        if design == TFIXUP:
            return tfixup_init_(SequenceTransformer(n_layers=depth, norm_position="none", **SIZE))
        power = real_number("design", design, low=0.0)
        return beta_power_init_(SequenceTransformer(n_layers=depth, norm_position="post", **SIZE), power)


def stream_biases(net: SequenceTransformer) -> list[torch.Tensor]:
    """The biases through which each sublayer adds straight into the stream: those of the
    attention's output projection ``W_o`` and of the FFN's ``W_2``, two per layer."""
    if not isinstance(net, SequenceTransformer):
        raise TypeError(f"net must be a SequenceTransformer, got {type(net).__name__}")
    return [b for layer in net.layers for b in (layer.self_attn.out_proj.bias, layer.linear2.bias)]


def stepped_parameters(net: SequenceTransformer, part: str) -> list[torch.Tensor]:
    """The parameters one step moves (:data:`PARTS`): ``"all"``, every parameter of the
    sublayers (:func:`~helpers.experiments.step_sizes.sublayer_parameters`), or ``"no stream
    biases"``, all of them but :func:`stream_biases`."""
    part = choice("part", part, PARTS)
    params = sublayer_parameters(net)
    if part == "all":
        return params
    skip = {id(b) for b in stream_biases(net)}
    return [p for p in params if id(p) not in skip]


@dataclass(frozen=True)
class DepthUpdate:
    """Adam's first step on one design at one depth, over several nets: ``changes[k]`` is net
    ``k``'s ``rms(ΔF) / η`` (:func:`helpers.measure.output_update.output_changes`) for the
    step on ``part`` (:data:`PARTS`) of its sublayers."""

    design: str
    power: float | None
    depth: int
    part: str
    changes: np.ndarray

    @property
    def change(self) -> float:
        """The geometric mean of ``changes`` over the nets."""
        return float(gmean(self.changes))


def _update_job(design, depths: list[int], seed: int, n_nets: int, batch: int) -> list[DepthUpdate]:
    tokens, targets = sequence_task(TASK, batch, SIZE["length"], SIZE["vocab"], seed=seed)
    test_tokens, _ = evaluation_set(32)
    rate = {"adam": RATES["adam"]}
    name, power = design_name(design), None if design == TFIXUP else float(design)
    out = []
    for depth in depths:
        changes = {part: [] for part in PARTS}
        for s in _seeds(seed, n_nets):
            net = make_net(design, depth, s)
            for part in PARTS:
                r = output_changes(net, lambda m: token_loss(m(tokens), targets), lambda m: m(test_tokens),
                                   stepped_parameters(net, part), rate)["adam"]
                changes[part].append(r.change)
        out += [DepthUpdate(name, power, depth, part, np.array(changes[part])) for part in PARTS]
    return out


def update_by_depth(depths=(6, 12, 24, 48), powers=POWERS, *, tfixup: bool = True, seed: int = 0,
                    n_nets: int = 2, batch: int = 32) -> list[DepthUpdate]:
    """:class:`DepthUpdate` for every power in ``powers`` (and T-Fixup with ``tfixup``), depth
    and part (module docstring): ``n_nets`` nets per depth (the same seeds at every depth and
    for every design), one gradient of the cross-entropy on ``batch`` random reversal
    sequences drawn from ``seed``, Adam's first step at
    :data:`helpers.experiments.step_sizes.RATES` ``["adam"]`` on every sublayer parameter but
    the stream biases and on every sublayer parameter, ``ΔF`` measured on the logits of 32 fixed test sequences. One
    job per design, side by side on the available cores."""
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    designs = [real_number("powers[i]", p, low=0.0) for p in non_empty("powers", powers)]
    if not isinstance(tfixup, bool):
        raise TypeError(f"tfixup must be a bool, got {type(tfixup).__name__}")
    designs += [TFIXUP] if tfixup else []
    jobs = [dict(design=d, depths=depths, seed=seed, n_nets=positive_int("n_nets", n_nets),
                 batch=positive_int("batch", batch)) for d in designs]
    return [row for rows in run_all(_update_job, jobs, description="designs") for row in rows]


def exponent(updates: list[DepthUpdate], design: str, part: str = "all") -> float:
    """The fitted power ``p`` of ``||ΔF|| ~ N^p`` for one design and part over the depths of
    ``updates`` (:func:`helpers.experiments.norm_order.depth_exponent` on the geometric means)."""
    rows = sorted((u for u in updates if u.design == design and u.part == part), key=lambda u: u.depth)
    if len(rows) < 2:
        raise ValueError(f"need at least two depths of {design!r} ({part}), got {len(rows)}")
    return depth_exponent([u.depth for u in rows], [u.change for u in rows])


def _train(depth: int, designs: list, seeds: list[int], steps: int) -> list[DesignRun]:
    nets = [make_net(d, depth, s) for d, s in zip(designs, seeds)]
    runs = fit_sequences(nets, task=TASK, steps=steps, lr=FULL_RATE, seeds=seeds, batch_size=32, progress=False)
    return [DesignRun(design_name(d), depth, r) for d, r in zip(designs, runs)]


def train_rules(depth: int = 24, powers=(DEEPNORM_POWER, DERIVED_POWER), *, tfixup: bool = True, seed: int = 0,
                steps: int = 120, n_nets: int = 1) -> list[DesignRun]:
    """Train ``n_nets`` nets of each power in ``powers`` (and of T-Fixup with ``tfixup``) at
    ``depth`` layers for ``steps`` Adam steps at the full rate, batches of 32 reversal
    sequences, no warm-up, net ``k`` of every rule drawn from the same seed and trained on the
    same batches (paired): the Post-LN nets as one stack, T-Fixup's beside it on another core. Returns
    :class:`~helpers.experiments.deepnorm.DesignRun` s named by :func:`design_name`, the nets
    of each design together, in the order of ``powers`` then T-Fixup."""
    designs = [real_number("powers[i]", p, low=0.0) for p in non_empty("powers", powers)]
    if len(set(designs)) != len(designs):
        raise ValueError(f"powers must not repeat, got {designs}")
    if not isinstance(tfixup, bool):
        raise TypeError(f"tfixup must be a bool, got {type(tfixup).__name__}")
    depth, steps, n_nets = positive_int("depth", depth), positive_int("steps", steps), positive_int("n_nets", n_nets)
    seeds = _seeds(seed, n_nets, "train")
    post = [d for d in designs for _ in range(n_nets)]
    jobs = [dict(depth=depth, designs=post, seeds=seeds * len(designs), steps=steps)]
    jobs += [dict(depth=depth, designs=[TFIXUP] * n_nets, seeds=seeds, steps=steps)] if tfixup else []
    return [r for stack in run_all(_train, jobs, description="rules") for r in stack]


@dataclass(frozen=True)
class AdminProfile:
    """Admin's skip weights for Post-LN stacks of ``depth`` layers, one row per net:
    ``omegas[k, i]`` is ``omega_(i+1)`` of net ``k`` (sublayer ``i + 1``, counted from the
    embeddings); ``branch_var[k, i]`` the variance of that sublayer's branch output in the
    profiling pass; ``input_var[k]`` the variance of the input (embedding plus position).
    ``alpha`` is DeepNorm's ``(2N)^(1/4)`` for the same depth; ``init`` how the branches were
    drawn (:data:`INITS`)."""

    depth: int
    init: str
    omegas: np.ndarray
    branch_var: np.ndarray
    input_var: np.ndarray

    @property
    def alpha(self) -> float:
        return deepnorm_constants(self.depth)[0]

    @property
    def omega(self) -> np.ndarray:
        """The mean over the nets of each sublayer's ``omega``."""
        return self.omegas.mean(axis=0)


def admin_profile(depth: int = 24, *, init: str = "pytorch", seed: int = 0, n_nets: int = 2,
                  batch: int = 32) -> AdminProfile:
    """Admin's ``omega`` for ``n_nets`` Post-LN stacks of ``depth`` layers at initialisation
    (:func:`helpers.experiments.deepnorm.make_net`'s Post-LN nets, drawn from this module's
    seeds, the same nets for either ``init``; with ``init="fairseq"`` their sublayers redrawn by
    :func:`helpers.models.adam_scaling.fairseq_init_`), profiled on ``batch`` random reversal
    sequences drawn from ``seed`` (:func:`helpers.models.adam_scaling.admin_profiling`), with
    each branch's variance."""
    depth, n_nets, init = positive_int("depth", depth), positive_int("n_nets", n_nets), choice("init", init, INITS)
    tokens, _ = sequence_task(TASK, positive_int("batch", batch), SIZE["length"], SIZE["vocab"], seed=seed)
    omegas, branch_var, input_var = [], [], []
    with one_thread(), torch.no_grad():
        for s in _seeds(seed, n_nets, "admin"):
            net = deepnorm_net("post", depth, s)
            if init == "fairseq":
                with isolated(s):
                    fairseq_init_(net)
            w, variances = admin_profiling(net, tokens)
            omegas.append(w)
            branch_var.append(variances)
            input_var.append(float(net.embedding(tokens).double().var()))
    return AdminProfile(depth, init, np.array(omegas), np.array(branch_var), np.array(input_var))
