"""Is the identity always good? Which blocks of a trained residual net have switched off.

A residual net of ``depth`` weight layers (pre-activation blocks, ``y = x + F(x)``, with
BatchNorm) is trained on the digits with a given weight decay. The training images are
split first (:func:`carve_validation`): the net trains on most of them, and a held-out
*validation* split of the rest chooses which blocks look idle, so that the test images only
score the choice. For each block ``i`` of the trained net two measures say how much it does:

* its correction, ``r_i = ||F_i(h_i)|| / ||h_i||`` over the test images
  (:func:`helpers.measure.branches.net_branch_ratios`);
* its lesion: ``d_i = L_val(net without block i) - L_val(net)``, the rise of the
  validation cross-entropy when the block is deleted at test time (its input passed
  straight through). The loss, not the error rate, because on a few hundred images one
  image is a fraction of a point of error and most single deletions change only one or two.

A block is *cheap* when deleting it alone costs almost nothing: ``d_i < threshold``
(default 0.02 nats). A cheap block may still share work with others, so
:func:`effective_depth` also deletes all the cheap blocks at once and measures what that
costs on the *test* images (``joint_cost``, in test error): small if they have really
*switched off* (then the *effective depth* is the number of blocks that are not cheap),
large if they were only redundant. :func:`decay_sweep` does the same for several weight
decays at once, every decay starting from the same weights and seeing the same
mini-batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import spearmanr
from torch.nn import functional as F

from .._checks import non_empty, positive_int, real_number
from ..data import DataSplit
from ..measure.branches import net_branch_ratios
from ..measure.lesion import error_rate
from ..models.mlp import DeepMLP
from ..seeding import generator, isolated
from ..training import fit


@dataclass
class SwitchedOff:
    """One trained net of :func:`effective_depth`."""

    seed: int
    weight_decay: float
    model: DeepMLP
    ratios: np.ndarray  # ||F_i|| / ||h_i|| per block on the test images, after training
    initial_ratios: np.ndarray  # the same at initialisation (with the batch's statistics)
    lesion: np.ndarray  # rise of the validation loss when block i alone is deleted
    threshold: float
    test_error: float
    joint_error: float  # test error with every cheap block deleted at once

    @property
    def cheap(self) -> list[int]:
        """The blocks whose deletion alone raises the validation loss by less than ``threshold``."""
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


def carve_validation(data: DataSplit, fraction: float = 0.2, seed: int = 0):
    """``(train, x_val, y_val)``: ``data`` with a share ``fraction`` of its training images
    held out, class by class (``round(fraction * n_c)`` of the ``n_c`` images of class
    ``c``, chosen by a permutation drawn from ``seed``). ``train`` is a
    :class:`~helpers.data.DataSplit` with the remaining training images and the same test
    images; the held-out ones are the validation split."""
    if not isinstance(data, DataSplit):
        raise TypeError(f"data must be a helpers.data.DataSplit, got {type(data).__name__}")
    fraction = real_number("fraction", fraction, low=0.0, high=1.0, low_inclusive=False)
    if fraction >= 1.0:
        raise ValueError(f"fraction must be < 1, got {fraction}")
    gen = generator(seed)
    held = []
    for c in torch.unique(data.y_train):
        members = torch.nonzero(data.y_train == c).flatten()
        held.append(members[torch.randperm(len(members), generator=gen)[:round(fraction * len(members))]])
    held = torch.cat(held).sort().values
    keep = torch.ones(len(data.y_train), dtype=torch.bool)
    keep[held] = False
    if not held.numel() or not keep.any():
        raise ValueError(f"fraction {fraction} leaves no images on one side of the split")
    train = DataSplit(data.x_train[keep], data.y_train[keep], data.x_test, data.y_test)
    return train, data.x_train[held], data.y_train[held]


@torch.no_grad()
def _loss(model: DeepMLP, x: torch.Tensor, y: torch.Tensor, skip=()) -> float:
    model.eval()
    return float(F.cross_entropy(model(x, skip=skip), y))


def decay_sweep(data, *, weight_decays, seeds=(0,), depth: int = 42, width: int = 32, epochs: int = 30,
                lr: float = 0.05, threshold: float = 0.02, validation: float = 0.2,
                progress: bool | None = None) -> dict[float, list[SwitchedOff]]:
    """Train one residual :class:`~helpers.models.mlp.DeepMLP` per seed and weight decay
    (pre-activation blocks, BatchNorm, He init; SGD with momentum 0.9 at rate ``lr``, all
    nets together by :func:`helpers.training.fit`, each with its own weight decay) on the
    training images less a validation share ``validation`` (:func:`carve_validation`), and measure every block (module
    docstring): ``{weight decay: [one SwitchedOff per seed]}``. The seed fixes a net's
    initial weights and its mini-batches, so the nets of one seed differ only in their weight
    decay; the caller's random state is left alone. ``progress=None`` shows a bar unless this
    is a static build."""
    decays = [real_number("weight_decays[i]", d, low=0.0) for d in non_empty("weight_decays", weight_decays)]
    if len(set(decays)) != len(decays):
        raise ValueError(f"weight_decays must not repeat a value, got {decays}")
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    threshold = real_number("threshold", threshold, low=0.0, low_inclusive=False)
    train, x_val, y_val = carve_validation(data, validation)
    members = [(d, s) for d in decays for s in seeds]
    models, initial = [], []
    for _, seed in members:
        with isolated(seed):
            model = DeepMLP(depth, positive_int("width", width), kind="residual", norm="batch", order="pre",
                            in_features=data.n_features, n_classes=data.n_classes)
        initial.append(net_branch_ratios(model, data.x_test, batch_statistics=True))
        models.append(model)
    fit(models, train.x_train, train.y_train, epochs=epochs, lr=lr, weight_decay=[d for d, _ in members],
        seed=[s for _, s in members], progress=progress, description=f"{len(models)} nets")
    x, y = data.x_test, data.y_test
    runs = {d: [] for d in decays}
    for (decay, seed), model, start in zip(members, models, initial):
        loss = _loss(model, x_val, y_val)
        lesion = np.array([_loss(model, x_val, y_val, skip=[i]) - loss for i in range(len(model.blocks))])
        run = SwitchedOff(seed, decay, model, net_branch_ratios(model, x), start, lesion, threshold,
                          error_rate(model, x, y), float("nan"))
        run.joint_error = error_rate(model, x, y, skip=run.cheap)
        runs[decay].append(run)
    return runs


def effective_depth(data, *, weight_decay: float, seeds=(0,), **options) -> list[SwitchedOff]:
    """:func:`decay_sweep` for one weight decay: one :class:`SwitchedOff` per seed (the
    same ``depth``, ``width``, ``epochs``, ``lr``, ``threshold`` and ``validation``
    options)."""
    weight_decay = real_number("weight_decay", weight_decay, low=0.0)
    return decay_sweep(data, weight_decays=[weight_decay], seeds=seeds, **options)[weight_decay]


def rank_agreement(a, b) -> float:
    """Spearman's rank correlation of two equally long sequences (``scipy.stats.spearmanr``):
    the correlation of their ranks, 1 when they order the items the same way."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a and b must be 1-D and of the same length (at least 2), got shapes {a.shape} and {b.shape}")
    return float(spearmanr(a, b).statistic)
