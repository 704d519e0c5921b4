"""Is the identity always good? Which blocks of a trained residual net have switched off.

A residual net of ``depth`` weight layers (pre-activation blocks, ``y = x + F(x)``, with
BatchNorm) is trained on the digits with a given weight decay. For each block ``i`` of the
trained net two measures say how much it does:

* its correction, ``r_i = ||F_i(h_i)|| / ||h_i||`` (:func:`helpers.measure.branches.net_branch_ratios`);
* its lesion: ``d_i = L(net without block i) - L(net)``, the rise of the test
  cross-entropy when the block is deleted at test time (its input passed straight through).
  The loss, not the error rate, because on 450 test digits one digit is 0.2 points of error
  and most single deletions change only a digit or two.

A block is *cheap* when deleting it alone costs almost nothing: ``d_i < threshold``
(default 0.02 nats). A cheap block may still share work with others, so
:func:`effective_depth` also deletes all the cheap blocks at once and measures what that
costs (``joint_cost``, in test error): small if they have really *switched off* (then the
*effective depth* is the number of blocks that are not cheap), large if they were only
redundant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import spearmanr
from torch.nn import functional as F

from .._checks import non_empty, positive_int, real_number
from ..measure.branches import net_branch_ratios
from ..measure.lesion import error_rate
from ..models.mlp import DeepMLP
from ..seeding import isolated
from ..training import fit


@dataclass
class SwitchedOff:
    """One trained net of :func:`effective_depth`."""

    seed: int
    weight_decay: float
    model: DeepMLP
    ratios: np.ndarray  # ||F_i|| / ||h_i|| per block, after training
    initial_ratios: np.ndarray  # the same at initialisation (with the batch's statistics)
    lesion: np.ndarray  # rise of the test loss when block i alone is deleted
    threshold: float
    test_error: float
    joint_error: float  # test error with every cheap block deleted at once

    @property
    def cheap(self) -> list[int]:
        """The blocks whose deletion alone raises the test loss by less than ``threshold``."""
        return [int(i) for i in np.flatnonzero(self.lesion < self.threshold)]

    @property
    def effective_depth(self) -> int:
        """The number of blocks that are not cheap (an effective depth if the cheap ones have
        switched off, which a small ``joint_cost`` says)."""
        return len(self.ratios) - len(self.cheap)

    @property
    def joint_cost(self) -> float:
        """Rise of the test error (a fraction) when every cheap block is deleted at once."""
        return self.joint_error - self.test_error


@torch.no_grad()
def _test_loss(model: DeepMLP, x: torch.Tensor, y: torch.Tensor, skip=()) -> float:
    model.eval()
    return float(F.cross_entropy(model(x, skip=skip), y))


def effective_depth(data, *, weight_decay: float, seeds=(0,), depth: int = 42, width: int = 32,
                    epochs: int = 30, lr: float = 0.05, threshold: float = 0.02,
                    progress: bool | None = None) -> list[SwitchedOff]:
    """Train one residual :class:`~helpers.models.mlp.DeepMLP` per seed (pre-activation
    blocks, BatchNorm, He init; SGD with momentum 0.9, ``lr`` and ``weight_decay``, all nets
    together by :func:`helpers.training.fit`) and measure every block (see the
    module docstring). The seed fixes a net's initial weights and its mini-batches; the
    caller's random state is left alone."""
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    weight_decay = real_number("weight_decay", weight_decay, low=0.0)
    threshold = real_number("threshold", threshold, low=0.0, low_inclusive=False)
    models, initial = [], []
    for seed in seeds:
        with isolated(seed):
            model = DeepMLP(depth, positive_int("width", width), kind="residual", norm="batch", order="pre",
                            in_features=data.n_features, n_classes=data.n_classes)
        initial.append(net_branch_ratios(model, data.x_test, batch_statistics=True))
        models.append(model)
    fit(models, data.x_train, data.y_train, epochs=positive_int("epochs", epochs), lr=lr, seed=seeds,
        weight_decay=weight_decay, progress=progress,
        description=f"{len(models)} nets, weight decay {weight_decay:g}")
    x, y = data.x_test, data.y_test
    runs = []
    for seed, model, start in zip(seeds, models, initial):
        loss = _test_loss(model, x, y)
        lesion = np.array([_test_loss(model, x, y, skip=[i]) - loss for i in range(len(model.blocks))])
        run = SwitchedOff(seed, weight_decay, model, net_branch_ratios(model, x), start, lesion, threshold,
                          error_rate(model, x, y), float("nan"))
        run.joint_error = error_rate(model, x, y, skip=run.cheap)
        runs.append(run)
    return runs


def rank_agreement(a, b) -> float:
    """Spearman's rank correlation of two equally long sequences (``scipy.stats.spearmanr``):
    the correlation of their ranks, 1 when they order the items the same way."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a and b must be 1-D and of the same length (at least 2), got shapes {a.shape} and {b.shape}")
    return float(spearmanr(a, b).statistic)
