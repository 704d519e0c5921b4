"""When the residual branch starts too large: an init-scale sweep and the remedies.

Every net is a residual :class:`~helpers.models.mlp.DeepMLP` (post-activation blocks,
``y = relu(x + F(x))``) whose branches' last layer is multiplied by ``init_scale`` after
its usual initialisation, so ``||F(x)|| / ||x||`` at initialisation grows in proportion.
Without normalisation that is the same as a branch scale; with a BatchNorm or LayerNorm
after the branch's last layer (the post-activation block has one) the norm undoes it,
which is how normalisation helps.

:func:`init_scale_sweep` trains one net per (setting, scale, seed) on the digits and
records, per net, the branch ratios (with the batch's statistics, as training sees them)
and the gradient reaching the first layer at initialisation, and the training loss per
epoch. A setting is the baseline (He initialisation, the given learning rate, no warm-up,
no normalisation) or one remedy changed from it (:data:`SETTINGS`). Nets that differ only
in their weights and learning rate train together (:func:`helpers.training.fit` with a list of nets);
warm-up and each normalisation need a run of their own.

A run's outcome, from its losses (:func:`outcome`): ``"diverged"`` (a loss became NaN or
infinite), ``"stuck"`` (the last epoch's loss is still at least ``ln 10``, the loss of a
uniform guess over the ten digits) or ``"trains"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int, real_number
from ..measure.branches import net_branch_ratios
from ..measure.gradients import gradient_profile
from ..models.mlp import DeepMLP
from ..seeding import isolated
from ..training import fit

SETTINGS = {
    "baseline": {},
    "Xavier init": {"init": "xavier"},
    "learning rate / 10": {"lr_factor": 0.1},
    "warm-up": {"warmup": True},
    "LayerNorm": {"norm": "layer"},
    "BatchNorm": {"norm": "batch"},
}
"""The baseline and the remedies, each one change from it."""

CHANCE_LOSS = math.log(10)


def outcome(losses) -> str:
    """``"diverged"``, ``"stuck"`` or ``"trains"`` for one run's per-epoch losses (see the module docstring)."""
    losses = np.asarray(losses, dtype=float)
    if losses.size == 0:
        raise ValueError("losses must hold at least one epoch")
    if not np.all(np.isfinite(losses)):
        return "diverged"
    return "stuck" if losses[-1] >= CHANCE_LOSS else "trains"


@dataclass
class ScaleRun:
    """One net of the sweep: its setting, init scale and seed; at initialisation the branch
    ratios ``||F_i|| / ||x_i||`` per block and the gradient norm of the first layer's
    weights; the training loss per epoch."""

    setting: str
    scale: float
    seed: int
    ratios: np.ndarray
    first_layer_grad: float
    losses: np.ndarray

    @property
    def outcome(self) -> str:
        return outcome(self.losses)


def _net(depth: int, width: int, scale: float, setting: str) -> DeepMLP:
    change = SETTINGS[setting]
    net = DeepMLP(depth, width, kind="residual", norm=change.get("norm", "none"), init=change.get("init", "he"))
    with torch.no_grad():
        for block in net.blocks:
            block.fc2.weight.mul_(scale)
            block.fc2.bias.mul_(scale)
    return net


@dataclass
class ScaleProfile:
    """One net of :func:`scale_profile` at initialisation: the root mean square of the
    stream entering each block and after the last (``blocks + 1`` values), each block's
    ``||F_i|| / ||x_i||``, and ``||dL/dW||`` of every weight layer, input to output."""

    stream_rms: np.ndarray
    ratios: np.ndarray
    weight_grads: np.ndarray


def _at_initialisation(net: DeepMLP, x: torch.Tensor, y: torch.Tensor) -> ScaleProfile:
    """``net`` measured on ``x``, ``y`` in training mode (a BatchNorm uses the batch's statistics)."""
    net.train()
    grads = gradient_profile(net, torch.nn.functional.cross_entropy, x, y).weight
    net.zero_grad(set_to_none=True)
    return ScaleProfile(_stream_rms(net, x), net_branch_ratios(net, x, batch_statistics=True), grads)


@torch.no_grad()
def _stream_rms(net: DeepMLP, x: torch.Tensor) -> np.ndarray:
    h = net.stem_output(x)
    values = [float(h.pow(2).mean().sqrt())]
    for block in net.blocks:
        h = block(h)
        values.append(float(h.pow(2).mean().sqrt()))
    return np.array(values)


def init_scale_sweep(x: torch.Tensor, y: torch.Tensor, *, scales, settings=("baseline",), seeds=(0,),
                     depth: int = 14, width: int = 32, epochs: int = 5, lr: float = 0.05,
                     warmup_steps: int = 50, progress: bool | None = None) -> list[ScaleRun]:
    """Train one net per (setting, scale, seed) (see the module docstring) and return a
    :class:`ScaleRun` for each, in that order. ``warmup_steps`` is the warm-up's length for
    the ``"warm-up"`` setting; the seed fixes a net's initial weights and its mini-batches."""
    scales = [real_number("scales[i]", s, low=0.0, low_inclusive=False) for s in non_empty("scales", scales)]
    settings = list(non_empty("settings", settings))
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise ValueError(f"settings must be among {tuple(SETTINGS)}, got {unknown}")
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    depth, width, epochs = positive_int("depth", depth), positive_int("width", width), positive_int("epochs", epochs)
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    warmup_steps = positive_int("warmup_steps", warmup_steps)
    # one training group per (normalisation, warm-up): its members differ in weights and rate only
    groups: dict[tuple[str, bool], list[str]] = {}
    for setting in settings:
        change = SETTINGS[setting]
        groups.setdefault((change.get("norm", "none"), bool(change.get("warmup"))), []).append(setting)
    probe_x, probe_y = x[:256], y[:256]
    runs: dict[tuple, ScaleRun] = {}
    for (_, warm), members in groups.items():
        group, nets = [], []
        for setting in members:
            for scale in scales:
                for seed in seeds:
                    with isolated(seed):
                        net = _net(depth, width, scale, setting)
                    start = _at_initialisation(net, probe_x, probe_y)
                    group.append(ScaleRun(setting, scale, seed, start.ratios, float(start.weight_grads[0]),
                                          np.array([])))
                    nets.append(net)
        histories = fit(nets, x, y, epochs=epochs, seed=[run.seed for run in group],
                        lr=[lr * SETTINGS[run.setting].get("lr_factor", 1.0) for run in group],
                        warmup_steps=warmup_steps if warm else 0, progress=progress,
                        description="branch-scale sweep")
        for run, history in zip(group, histories):
            run.losses = np.array(history.train_loss)
            runs[run.setting, run.scale, run.seed] = run
    return [runs[(setting, scale, seed)] for setting in settings for scale in scales for seed in seeds]


def scale_profile(x: torch.Tensor, y: torch.Tensor, *, scale: float, depth: int = 14, width: int = 32,
                  setting: str = "baseline", seed: int = 0) -> ScaleProfile:
    """The net :func:`init_scale_sweep` would train for (``setting``, ``scale``, ``seed``),
    measured at initialisation on ``x``, ``y`` in training mode (a BatchNorm uses the batch's
    statistics): see :class:`ScaleProfile`. Nothing is trained."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {tuple(SETTINGS)}, got {setting!r}")
    scale = real_number("scale", scale, low=0.0, low_inclusive=False)
    with isolated(positive_int("seed", seed, minimum=0)):
        net = _net(positive_int("depth", depth), positive_int("width", width), scale, setting)
    return _at_initialisation(net, x, y)
