"""Train small Transformers on the book's sequence tasks, one or many at once, with Adam.

Chapters 4 and 5 train grids of :class:`~helpers.models.transformer.SequenceTransformer` s
(depth x residual x norm position x learning rate x warm-up). :func:`fit_sequences` feeds
them to the course's one training loop, :func:`helpers.training.train_steps`, which runs
the nets of one shape as one :class:`~helpers.stack.Stack`: twelve nets train in about the
time of two. Member ``e`` keeps its own weights, draws its own batches of fresh random
sequences (from ``seeds[e]``), has its skip connections on or off (``residual``), its own
skip scale ``alpha`` (DeepNorm's), learning rate and warm-up; the loop's unit test checks
each member against its net trained alone with ``torch.optim.Adam``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ._checks import choice, positive_int, real_number
from .data import SEQUENCE_TASKS, sequence_targets, sequence_task
from .measure.sublayers import accuracy
from .models.transformer import SequenceTransformer
from .seeding import generator
from .stack import check_stackable
from .training import per_member, train_steps

TEST_SEED = 10**6
"""The seed of the test sequences every member is scored on."""


@dataclass(frozen=True)
class SequenceRun:
    """One member's training: the loss at every step and the test accuracy at the end.

    ``losses[k]`` is the mean cross-entropy (nats per token) of step ``k + 1``'s batch,
    before that step's update; ``accuracy`` is the share of test tokens predicted
    right after training (chance is ``1 / vocab``); ``diverged`` is True when the loss
    became infinite or not a number.
    """

    losses: np.ndarray
    accuracy: float
    lr: float
    warmup: int
    residual: bool

    @property
    def diverged(self) -> bool:
        return not bool(np.isfinite(self.losses).all())

    def final_loss(self, last: int = 20) -> float:
        """Mean loss of the last ``last`` steps (inf if the run diverged)."""
        return float(np.mean(self.losses[-last:])) if not self.diverged else math.inf


def fit_sequences(models: Sequence[SequenceTransformer], *, task: str, steps: int,
                  lr: float | Sequence[float], seeds: Sequence[int],
                  warmup_steps: int | Sequence[int] = 0, batch_size: int = 64,
                  test_size: int = 512, test_seed: int = TEST_SEED, progress: bool | None = None,
                  description: str = "training") -> list[SequenceRun]:
    """Train each model on ``task`` (:func:`helpers.data.sequence_targets`) for ``steps`` Adam
    steps, all at once (module docstring); return one :class:`SequenceRun` per model.

    ``models`` are :class:`~helpers.models.transformer.SequenceTransformer` s of one
    structure (plain and residual may mix, and skip scales ``alpha``, as DeepNorm's; ReZero
    nets train with ReZero nets). Member ``e`` draws fresh batches of ``batch_size`` random
    sequences from ``seeds[e]``; ``lr`` and ``warmup_steps`` are one value or one per
    member. Accuracy is measured on ``test_size`` sequences drawn from ``test_seed``, the
    same for every member. The models are trained in place.
    """
    models = check_stackable(models, SequenceTransformer)
    n = len(models)
    task = choice("task", task, SEQUENCE_TASKS)
    steps, batch_size = positive_int("steps", steps), positive_int("batch_size", batch_size)
    test_size = positive_int("test_size", test_size)
    seeds = per_member("seeds", list(seeds), n, lambda k, v: positive_int(k, v, minimum=0))
    lrs = per_member("lr", lr, n, lambda k, v: real_number(k, v, low=0.0, low_inclusive=False))
    warmups = per_member("warmup_steps", warmup_steps, n, lambda k, v: positive_int(k, v, minimum=0))
    vocab, length = models[0].embed.num_embeddings, models[0].position.shape[0]

    tokens = torch.stack([torch.randint(0, vocab, (steps, batch_size, length), generator=generator(s))
                          for s in seeds])  # (E, steps, batch, length)
    targets = sequence_targets(task, tokens)
    batches = ((tokens[:, k], targets[:, k]) for k in range(steps))
    losses, _ = train_steps(models, batches, steps=steps, lrs=lrs, warmups=warmups, optimizer="adam",
                            progress=progress, description=description)
    test_tokens, test_targets = sequence_task(task, test_size, length, vocab, seed=test_seed)
    return [SequenceRun(losses[:, e].copy(), accuracy(model, test_tokens, test_targets), lrs[e], warmups[e],
                        bool(model.layers[0].residual)) for e, model in enumerate(models)]
