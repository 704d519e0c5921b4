"""Add vs concatenate, trained: nets of equal depth that differ in how each block joins its
branch to the stream (:class:`helpers.models.joins.JoinedMLP`).

For each join and seed, :func:`compare_joins` measures at initialisation the parameters,
the bytes autograd saves for one step (:func:`helpers.measure.cost.saved_tensor_bytes`), the
time of a step (:func:`helpers.measure.cost.seconds_per_step`) and the gradient that reaches
the stem's output relative to the one that reaches the last block's output
(:func:`helpers.measure.cost.stream_gradient_norms`), the whole of it and the part that
comes along the joins' own path (the identity for add, the projections for concat); then it
trains a copy of the net with SGD at each learning rate asked for, the copies together
(:func:`helpers.training.fit` with a list of nets), and records the training loss per epoch
and the test error.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int, real_number
from ..measure.cost import saved_tensor_bytes, seconds_per_step, stream_gradient_norms
from ..models.joins import JOINS, JoinedMLP
from ..seeding import isolated
from ..training import fit


@dataclass
class JoinRun:
    """One net of :func:`compare_joins`."""

    join: str
    seed: int
    lr: float
    blocks: int
    params: int
    saved_bytes: int
    seconds_per_step: float
    input_gradient_ratio: float  # ||dL/dh_0|| / ||dL/dh_last|| at initialisation
    skip_gradient_ratio: float  # the same along the joins' own path only (branches detached)
    losses: np.ndarray
    test_error: float


def compare_joins(data, *, joins=("add", "concat-project", "none"), blocks: int = 30, seeds=(0,), width: int = 32,
                  norm: str = "layer", epochs: int = 8, lrs=(0.005,), grow_blocks: int = 5,
                  progress: bool | None = None) -> list[JoinRun]:
    """Train one :class:`~helpers.models.joins.JoinedMLP` per (join, seed, learning rate) on
    ``data`` (a :class:`helpers.data.DataSplit`) and return a :class:`JoinRun` for each, in
    that order. The net of a (join, seed) is drawn and measured at initialisation once, then
    a copy of it is trained at each of ``lrs``. ``"concat-grow"`` doubles the width at every
    block, so it gets ``grow_blocks`` blocks instead of ``blocks``. The seed fixes a net's
    initial weights and its mini-batches; the caller's random state is left alone."""
    joins = list(non_empty("joins", joins))
    unknown = [j for j in joins if j not in JOINS]
    if unknown:
        raise ValueError(f"joins must be among {JOINS}, got {unknown}")
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in non_empty("seeds", seeds)]
    blocks, grow_blocks = positive_int("blocks", blocks), positive_int("grow_blocks", grow_blocks)
    epochs = positive_int("epochs", epochs)
    lrs = [real_number("lrs[i]", lr, low=0.0, low_inclusive=False) for lr in non_empty("lrs", lrs)]
    x_step, y_step = data.x_train[:128], data.y_train[:128]
    runs = []
    for join in joins:
        n = grow_blocks if join == "concat-grow" else blocks
        for seed in seeds:
            with isolated(seed):
                drawn = JoinedMLP(n, width, join=join, norm=norm, in_features=data.n_features,
                                  out_features=data.n_classes)
            ratio = stream_gradient_norms(drawn, data.x_train[:512], data.y_train[:512])
            skip = stream_gradient_norms(drawn, data.x_train[:512], data.y_train[:512], through_branches=False)
            saved = saved_tensor_bytes(lambda net=drawn: torch.nn.functional.cross_entropy(net(x_step), y_step))
            step = seconds_per_step(drawn, x_step, y_step)
            params = sum(p.numel() for p in drawn.parameters())
            nets = [copy.deepcopy(drawn) for _ in lrs]  # one copy per rate, trained together
            histories = fit(nets, data.x_train, data.y_train, epochs=epochs, lr=lrs, seed=[seed] * len(lrs),
                            progress=progress, description=f"{join}, seed {seed}")
            for lr, net, history in zip(lrs, nets, histories):
                net.eval()
                with torch.no_grad():
                    error = float((net(data.x_test).argmax(1) != data.y_test).float().mean())
                runs.append(JoinRun(join, seed, lr, n, params, saved, step, float(ratio[0] / ratio[-1]),
                                    float(skip[0] / skip[-1]) if skip[-1] > 0 else 0.0,
                                    np.array(history.train_loss), error))
    return runs
