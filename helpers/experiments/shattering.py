"""Claims 2.4 and 2.5: shattered gradients, and what they do to the first steps of training.

2.4 follows Balduzzi et al. (2017): scalar-to-scalar nets of 200 units a layer with He
initialisation and BatchNorm, on 256 inputs evenly spaced over [-2, 2]. For each net the
gradient ``dy/dx`` at every input (:func:`helpers.measure.shattering.input_gradients`) and
the correlation of the gradients at neighbouring inputs
(:func:`helpers.measure.shattering.neighbour_correlation`), for plain chains and their
residual twins (:class:`helpers.models.chain.LayerChain`) of several depths.

2.5 measures, on the digits at initialisation, the cosine between the gradients of two
different mini-batches (:func:`helpers.measure.shattering.minibatch_gradient_cosine`), and
then trains the twins for a few dozen steps.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int
from ..data import DataSplit
from ..measure.shattering import input_gradients, minibatch_gradient_cosine_by_layer, neighbour_correlation
from ..models.chain import KINDS, LayerChain
from ..seeding import generator, isolated, seeds_of_run

GRID_POINTS = 256
"""Inputs on the grid over [-2, 2], as in Balduzzi et al.'s figures."""


def input_grid(points: int = GRID_POINTS) -> torch.Tensor:
    """``points`` inputs evenly spaced over [-2, 2], as a column ``(points, 1)``."""
    return torch.linspace(-2.0, 2.0, positive_int("points", points, minimum=3)).unsqueeze(1)


SETUPS = ("Balduzzi", "no norm", "UDL")
"""How the scalar nets are set up:

* ``"Balduzzi"``: Balduzzi et al.'s setting: BatchNorm before each ReLU, He initialisation
  (Var W = 2/fan_in), zero biases;
* ``"no norm"``: the same without BatchNorm;
* ``"UDL"``: the setting of the *Understanding Deep Learning* notebook 11.1: no
  normalisation, every weight and bias drawn with variance 1/width.
"""


def scalar_twins(layers: int, *, setup: str = "Balduzzi", width: int = 200, seed: int = 0) -> dict[str, LayerChain]:
    """``{"plain": net, "residual": net}``: twin chains with one input and one output, set up
    as ``setup`` says (:data:`SETUPS`)."""
    choice("setup", setup, SETUPS)
    with isolated(seed):
        residual = LayerChain(layers, width, kind="residual", in_features=1, out_features=1,
                              norm="batch" if setup == "Balduzzi" else "none")
        if setup == "UDL":
            with torch.no_grad():
                for p in residual.parameters():
                    p.normal_(0.0, width ** -0.5)
    return {"plain": residual.twin(), "residual": residual}


def gradients_on_grid(layers: int, *, setup: str = "Balduzzi", width: int = 200,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """``{"plain": dy/dx, "residual": dy/dx}`` on :func:`input_grid` for one pair of twins."""
    x = input_grid()
    twins = scalar_twins(layers, setup=setup, width=width, seed=seed)
    return {kind: input_gradients(net, x) for kind, net in twins.items()}


def shattering_by_depth(depths, *, setups=("Balduzzi",), nets: int = 8, width: int = 200,
                        seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    """``{(setup, kind): correlations}`` with ``correlations[i, j]`` the neighbour correlation of
    the gradient of net ``j`` of depth ``depths[i]``. Each depth and setup draws ``nets``
    pairs of twins of its own (:func:`helpers.seeding.seeds_of_run`)."""
    depths = tuple(positive_int("depth", d) for d in non_empty("depths", depths))
    setups = tuple(choice("setup", s, SETUPS) for s in non_empty("setups", setups))
    nets = positive_int("nets", nets)
    seeds = iter(seeds_of_run(seed, nets * len(depths) * len(setups)))
    out = {(setup, kind): np.zeros((len(depths), nets)) for setup in setups for kind in KINDS}
    for setup in setups:
        for i, depth in enumerate(depths):
            for j in range(nets):
                grads = gradients_on_grid(depth, setup=setup, width=width, seed=next(seeds))
                for kind, g in grads.items():
                    out[(setup, kind)][i, j] = neighbour_correlation(g)
    return out


def noise_references(points: int = GRID_POINTS, *, seed: int = 0) -> dict[str, np.ndarray]:
    """White noise (independent values) and brown noise (their running sum, a random walk)."""
    white = np.random.default_rng(seed).normal(size=positive_int("points", points, minimum=3))
    return {"brown noise": np.cumsum(white), "white noise": white}


def decay_fits(depths, correlations: np.ndarray, *, floor: float = 0.1) -> dict[str, float]:
    """Fit the decay of the mean correlation with depth two ways, on the depths where it is
    above ``floor`` (below it the estimate is mostly noise):

    * ``"per_layer"``: the factor ``r`` of an exponential ``rho ~ r**L`` (slope of log rho on L);
    * ``"power"``: the exponent ``p`` of a power law ``rho ~ L**-p`` (slope of log rho on log L).
    """
    depths = np.asarray(depths, dtype=float)
    mean = np.asarray(correlations, dtype=float).mean(axis=1)
    keep = mean > floor
    if keep.sum() < 2:
        raise ValueError(f"need at least two depths with a mean correlation above {floor}, got {mean}")
    per_layer = np.exp(np.polyfit(depths[keep], np.log(mean[keep]), 1)[0])
    power = -np.polyfit(np.log(depths[keep]), np.log(mean[keep]), 1)[0]
    return {"per_layer": float(per_layer), "power": float(power)}


def agreement_by_layer(data: DataSplit, depths, *, norm: str = "batch", width: int = 64, pairs: int = 8,
                       seed: int = 0) -> dict[str, dict]:
    """Two mini-batches' agreement at initialisation, whole and layer by layer, for the twins of
    each depth (:func:`helpers.measure.shattering.minibatch_gradient_cosine_by_layer`).

    Returns ``{"whole": {kind: cosines}, "by_layer": {kind: [per_layer, ...]}}``: ``cosines[i, j]``
    for depth ``depths[i]`` and pair ``j``, and ``per_layer`` (one array per depth, ``depth + 2``
    values: stem, hidden layers, head) the mean over the pairs of each weight layer's cosine."""
    depths = tuple(positive_int("depth", d) for d in non_empty("depths", depths))
    whole = {kind: np.zeros((len(depths), positive_int("pairs", pairs))) for kind in KINDS}
    by_layer: dict[str, list] = {kind: [] for kind in KINDS}
    for i, (depth, net_seed) in enumerate(zip(depths, seeds_of_run(seed, len(depths)))):
        with isolated(net_seed):
            residual = LayerChain(depth, width, kind="residual", in_features=data.n_features,
                                  out_features=data.n_classes, norm=norm)
        for net in (residual.twin(), residual):
            cosines, layers = minibatch_gradient_cosine_by_layer(net, data.x_train, data.y_train, pairs=pairs,
                                                                 generator=generator(net_seed))
            whole[net.kind][i] = cosines
            by_layer[net.kind].append(layers.mean(axis=0))
    return {"whole": whole, "by_layer": by_layer}


def minibatch_agreement(data: DataSplit, depths, *, norm: str = "batch", width: int = 64, pairs: int = 8,
                        seed: int = 0) -> dict[str, np.ndarray]:
    """``{kind: cosines}`` with ``cosines[i, j]`` the cosine between two mini-batches'
    gradients (pair ``j``) for the twins of depth ``depths[i]`` at initialisation
    (the ``"whole"`` part of :func:`agreement_by_layer`)."""
    return agreement_by_layer(data, depths, norm=norm, width=width, pairs=pairs, seed=seed)["whole"]


def first_steps(data: DataSplit, *, layers: int = 50, learning_rates=(0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
                steps: int = 30, norm: str = "batch", width: int = 64, batch_size: int = 64,
                eval_size: int = 256, seed: int = 0) -> dict:
    """Train twins of ``layers`` layers for ``steps`` steps of plain SGD at each learning rate
    (same start, same mini-batches). Returns ``{kind: {lr: losses}}``: the cross-entropy on a
    fixed sample of ``eval_size`` training images (in training mode, as the steps see it)
    before each step and after the last one (``steps + 1`` values)."""
    learning_rates = tuple(non_empty("learning_rates", learning_rates))
    steps = positive_int("steps", steps)
    with isolated(seed):
        start = LayerChain(layers, width, kind="residual", in_features=data.n_features,
                           out_features=data.n_classes, norm=norm)
    sample = torch.randperm(len(data.x_train), generator=generator(seed))[:positive_int("eval_size", eval_size)]
    x_eval, y_eval = data.x_train[sample], data.y_train[sample]
    loss = torch.nn.functional.cross_entropy
    out = {kind: {} for kind in KINDS}
    for lr in learning_rates:
        for net in (start.twin(), start.twin().twin()):
            opt = torch.optim.SGD(net.parameters(), lr=lr)
            batches = generator(seed + 1)
            losses = []
            net.train()
            for step in range(steps + 1):
                with torch.no_grad():
                    losses.append(float(loss(net(x_eval), y_eval)))
                if step == steps:
                    break
                idx = torch.randint(0, len(data.x_train), (batch_size,), generator=batches)
                opt.zero_grad()
                loss(net(data.x_train[idx]), data.y_train[idx]).backward()
                opt.step()
            out[net.kind][lr] = np.array(losses)
    return out
