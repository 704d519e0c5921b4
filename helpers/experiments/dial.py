"""Chapter 1's extension: a dial from plain to residual, ``y = relu(alpha x + F(x))``.

Every block of a :class:`~helpers.models.mlp.DeepMLP` scales its skip by ``alpha``
(:func:`dialled`): 0 is the plain net, 1 the residual net, with the same weights. For each
depth and setting of the dial, :func:`dial_runs` measures the gradient's per-layer growth
at initialisation (the net's own weights, carried over to float64 for the profile, as
:func:`~helpers.experiments.gradient_flow.init_gradient_profiles` computes in float64) and
trains the net with chapter 1's recipe (:func:`helpers.training.fit`, all settings
of one depth at once), recording its final training error.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from torch.nn import functional

from .._checks import non_empty, real_number
from ..measure.gradients import GradientProfile, gradient_profile, per_layer_factor
from ..measure.lesion import error_rate
from ..models import DeepMLP
from ..seeding import isolated
from ..training import fit

YANG_RATE = math.sqrt(math.pi / (math.pi - 1))
"""Yang et al. (2019)'s gradient explosion rate of a deep BatchNorm ReLU net at
initialisation, per layer, for the gradient's norm (their pi / (pi - 1) is for its square)."""


def dialled(net: DeepMLP, alpha: float) -> DeepMLP:
    """``net`` with every block computing ``relu(alpha * x + F(x))`` (in place; returned)."""
    for block in net.blocks:
        block.skip_scale = alpha
    return net


@dataclass
class DialRun:
    """One net of the dial: its depth, its ``alpha``, its gradient profile at initialisation,
    the per-layer factor ``g`` fitted to its blocks' layers, and its training error after
    the recipe."""

    depth: int
    alpha: float
    profile: GradientProfile
    g: float
    error: float

    @property
    def growth(self) -> float:
        """``g ** (depth - 1)``, the total growth: how much larger the first layer's gradient
        is than the last's by the fitted factor (an estimate, not the measured ratio of the
        two ends)."""
        return self.g ** (self.depth - 1)


def dial_runs(data, depths=(20, 32, 56), alphas=(0.0, 0.5, 0.75, 0.9, 1.0), *, seed: int = 0,
              width: int = 32, epochs: int = 30, lr: float = 0.05, batch: int = 256) -> list[DialRun]:
    """A :class:`DialRun` for each depth and ``alpha``: the residual net drawn from ``seed``
    (He init, BatchNorm, post-activation: the recipe's), dialled. The profile uses the first
    ``batch`` training images; every ``alpha`` of a depth starts from the same weights. ``g``
    is fitted to the blocks' layers only (not the stem, which sees the raw inputs, nor the
    head, which has no normalisation)."""
    alphas = [real_number("alphas[i]", a, low=0.0, high=1.0) for a in non_empty("alphas", alphas)]
    runs = []
    for depth in non_empty("depths", depths):
        with isolated(seed):
            drawn = DeepMLP(depth, width, in_features=data.n_features, n_classes=data.n_classes)
        x, y = data.x_train[:batch].double(), data.y_train[:batch]
        # the very nets that train, their weights carried over to float64 for the profile
        profiles = [gradient_profile(dialled(copy.deepcopy(drawn).double(), a), functional.cross_entropy, x, y)
                    for a in alphas]
        nets = [dialled(copy.deepcopy(drawn), a) for a in alphas]
        fit(nets, data.x_train, data.y_train, epochs=epochs, lr=lr, seed=seed,
            description=f"{len(nets)} nets of depth {depth}")
        runs += [DialRun(depth, a, p, per_layer_factor(p.weight[1:-1]), error_rate(net, data.x_train, data.y_train))
                 for a, p, net in zip(alphas, profiles, nets)]
    return runs
