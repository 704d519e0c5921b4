"""Add vs concatenate, trained: nets of equal depth that differ in how each block joins its
branch to the stream (:class:`helpers.models.joins.JoinedMLP`).

For each join and seed, :func:`compare_joins` measures at initialisation the parameters,
the bytes autograd saves for one step (:func:`helpers.measure.cost.saved_tensor_bytes`), the
time of a step (:func:`helpers.measure.cost.seconds_per_step`) and the gradient that reaches
the stem's output relative to the one that reaches the last block's output
(:func:`helpers.measure.cost.stream_gradient_norms`), the whole of it and the part that
comes along the joins' own path (the identity for add, the projections' first halves for
concat-project); then it trains a copy of the net with SGD at each learning rate asked for,
the copies together (:func:`helpers.training.fit` with a list of nets), and records the
training loss per epoch and the test error. Concat-project's projections ``P`` can start
random, as ``[I, I]`` (the add net at initialisation) or as ``[I, 0]`` (the identity on the
stream, the branch ignored): nets that differ only in that train together.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int, real_number
from ..measure.cost import saved_tensor_bytes, seconds_per_step, stream_gradient_norms
from ..models.joins import JOINS, PROJECT_INITS, JoinedMLP
from ..seeding import isolated
from ..training import fit

PROJECT_LABELS = {"random": "random", "sum": "[I, I]", "skip": "[I, 0]"}


def run_name(join: str, project_init: str = "random") -> str:
    """The name of a net of :func:`compare_joins`: the join, and for concat-project how its
    projection started: ``"add"``, ``"concat-project"`` (random ``P``),
    ``"concat-project [I, I]"``, ``"concat-project [I, 0]"``."""
    if join != "concat-project" or project_init == "random":
        return join
    return f"concat-project {PROJECT_LABELS[project_init]}"


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
    project_init: str = "random"  # how concat-project's P started (helpers.models.joins.PROJECT_INITS)

    @property
    def name(self) -> str:
        """The net's name, :func:`run_name` of its join and projection start."""
        return run_name(self.join, self.project_init)


def compare_joins(data, *, joins=("add", "concat-project", "none"), blocks: int = 30, seeds=(0,), width: int = 32,
                  norm: str = "layer", epochs: int = 8, lrs=(0.005,), grow_blocks: int = 5,
                  project_inits=("random",), progress: bool | None = None) -> list[JoinRun]:
    """Train one :class:`~helpers.models.joins.JoinedMLP` per (join, seed, learning rate) on
    ``data`` (a :class:`helpers.data.DataSplit`) and return a :class:`JoinRun` for each, in
    that order. The net of a (join, seed) is drawn and measured at initialisation once, then
    a copy of it is trained at each of ``lrs``: one list of rates for every net, or a dict
    that gives each net, by its :func:`run_name`, its own list (a grid around its best).
    ``"concat-grow"`` doubles the width at every block, so it gets ``grow_blocks`` blocks
    instead of ``blocks``.

    ``"concat-project"`` gets one net per start of its projections in ``project_inits``
    (``"random"``, ``"sum"`` = ``[I, I]``, ``"skip"`` = ``[I, 0]``;
    :mod:`helpers.models.joins`): a seed's runs come start by start, each at each of its
    rates. Drawn from the same seed, they share their stem, branches and head, whatever the
    start of ``P`` (a ``"sum"`` net computes what the add net of its seed computes), and all
    their copies train together. The other joins ignore ``project_inits``. The seed fixes a
    net's initial weights and its mini-batches; the caller's random state is left alone."""
    joins = list(non_empty("joins", joins))
    unknown = [j for j in joins if j not in JOINS]
    if unknown:
        raise ValueError(f"joins must be among {JOINS}, got {unknown}")
    seeds = non_empty("seeds", seeds)  # each seed checked where it is used (isolated, fit)
    blocks, grow_blocks = positive_int("blocks", blocks), positive_int("grow_blocks", grow_blocks)
    epochs = positive_int("epochs", epochs)
    inits = [choice("project_inits[i]", p, PROJECT_INITS) for p in non_empty("project_inits", project_inits)]
    if len(set(inits)) != len(inits):
        raise ValueError(f"project_inits must not repeat a start, got {inits}")
    wanted = [run_name(j, start) for j in joins for start in (inits if j == "concat-project" else ["random"])]
    if isinstance(lrs, dict):
        missing = [name for name in wanted if name not in lrs]
        if missing:
            raise ValueError(f"lrs must give rates for every net it trains, missing {missing}")
        grids = {name: _rates(f"lrs[{name!r}]", lrs[name]) for name in wanted}
    else:
        grids = dict.fromkeys(wanted, _rates("lrs", lrs))
    x_step, y_step = data.x_train[:128], data.y_train[:128]
    runs = []
    for join in joins:
        n = grow_blocks if join == "concat-grow" else blocks
        starts = inits if join == "concat-project" else ["random"]
        for seed in seeds:
            measured, nets, rates = [], [], []
            for start in starts:
                with isolated(seed):
                    drawn = JoinedMLP(n, width, join=join, norm=norm, in_features=data.n_features,
                                      out_features=data.n_classes, project_init=start)
                ratio = stream_gradient_norms(drawn, data.x_train[:512], data.y_train[:512])
                skip = stream_gradient_norms(drawn, data.x_train[:512], data.y_train[:512], through_branches=False)
                saved = saved_tensor_bytes(lambda net=drawn: torch.nn.functional.cross_entropy(net(x_step), y_step))
                step = seconds_per_step(drawn, x_step, y_step)
                params = sum(p.numel() for p in drawn.parameters())
                grid = grids[run_name(join, start)]
                measured += [(start, params, saved, step, float(ratio[0] / ratio[-1]),
                              float(skip[0] / skip[-1]) if skip[-1] > 0 else 0.0)] * len(grid)
                nets += [copy.deepcopy(drawn) for _ in grid]  # one copy per rate
                rates += grid
            # every start's copies at each of its rates, trained together
            histories = fit(nets, data.x_train, data.y_train, epochs=epochs, lr=rates,
                            seed=[seed] * len(nets), progress=progress, description=f"{join}, seed {seed}")
            for lr, net, history, record in zip(rates, nets, histories, measured):
                start, params, saved, step, whole, along = record
                net.eval()
                with torch.no_grad():
                    error = float((net(data.x_test).argmax(1) != data.y_test).float().mean())
                runs.append(JoinRun(join, seed, lr, n, params, saved, step, whole, along,
                                    np.array(history.train_loss), error, start))
    return runs


def _rates(name: str, values) -> list[float]:
    """``values`` as a list of positive learning rates; raise naming ``name``."""
    return [real_number(f"{name}[i]", lr, low=0.0, low_inclusive=False) for lr in non_empty(name, values)]
