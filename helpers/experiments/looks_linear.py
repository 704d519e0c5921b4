"""Chapter 2's extension: take shattering away without a skip, and see whether the net trains.

Balduzzi et al. (2017) propose the *looks-linear* initialisation
(:mod:`helpers.models.looks_linear`): a plain chain with a concatenated ReLU whose weights
start mirrored, so that the whole net is linear at initialisation and its gradient cannot
shatter. This module sets it beside chapter 2's plain and residual twins
(:class:`helpers.models.chain.LayerChain`, BatchNorm before every non-linearity) at equal
depth, and beside its own unmirrored twin (the same net, the right halves drawn
independently), which differs from it in the initialisation only:

* :func:`gradients_on_line`: ``dy/dx`` of the four kinds of scalar net on chapter 2's grid
  of 256 inputs (:func:`helpers.experiments.shattering.gradients_on_grid`);
* :func:`agreement_at_init`: the cosine between two mini-batches' gradients on the digits
  (:func:`helpers.measure.shattering.minibatch_gradient_cosine`), the same pairs for all four;
* :func:`agreement_toward_mirror`: the same cosine for nets between the unmirrored and the
  mirrored start;
* :func:`first_steps_compared`: the first steps of plain SGD at a grid of learning rates, the
  loop of :func:`helpers.experiments.shattering.first_steps` with each net's copies for the
  rates run side by side (:func:`first_steps_of`), on the same mini-batches for all four.

The twins are drawn from the first of :func:`helpers.seeding.seeds_of_run` ``(seed, 3)``
(their mini-batches from the second, as ``first_steps`` does), the CReLU nets from the third.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._checks import non_empty, positive_int
from ..data import DataSplit
from ..measure.shattering import input_gradients, minibatch_gradient_cosine
from ..models.chain import LayerChain
from ..models.layers import Linear
from ..models.looks_linear import CReLUChain, matched_width
from ..seeding import generator, isolated, seeds_of_run
from ..stack import Stack
from .shattering import input_grid, scalar_twins

KINDS = ("plain", "residual", "CReLU", "looks-linear")
"""The four nets, in the order figures and results give them."""

RATES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
"""Chapter 2's grid of learning rates for plain SGD (section 4)."""


def run_seeds(seed: int) -> dict[str, int]:
    """The seeds of one run: ``{"twins": ..., "batches": ..., "crelu": ...}`` (module docstring)."""
    twins, batches, crelu = seeds_of_run(seed, 3)
    return {"twins": twins, "batches": batches, "crelu": crelu}


def crelu_twins(layers: int, width: int, *, in_features: int = 64, out_features: int = 10,
                norm: str = "batch", seed: int = 0) -> dict[str, CReLUChain]:
    """``{"CReLU": net, "looks-linear": net}``: a CReLU chain drawn with independent halves,
    and its looks-linear copy (the same left halves, the right halves mirrored)."""
    with isolated(seed):
        crelu = CReLUChain(layers, width, in_features=in_features, out_features=out_features, norm=norm,
                           mirrored=False)
    return {"CReLU": crelu, "looks-linear": crelu.mirror()}


def digit_nets(data: DataSplit, *, layers: int = 50, width: int = 64, seed: int = 0) -> dict[str, nn.Module]:
    """The four nets of one run on the digits, with BatchNorm: chapter 2's twins of ``width``
    units and the CReLU twins of :func:`~helpers.models.looks_linear.matched_width` units
    (about the twins' parameter count), ``{kind: net}`` in :data:`KINDS` order."""
    seeds = run_seeds(seed)
    with isolated(seeds["twins"]):  # as helpers.experiments.shattering.first_steps draws them
        residual = LayerChain(layers, width, kind="residual", in_features=data.n_features,
                              out_features=data.n_classes, norm="batch")
    crelu = crelu_twins(layers, matched_width(width, layers, in_features=data.n_features,
                                              out_features=data.n_classes),
                        in_features=data.n_features, out_features=data.n_classes, seed=seeds["crelu"])
    return {"plain": residual.twin(), "residual": residual, **crelu}


def stackable(net: nn.Module) -> nn.Module:
    """A copy of ``net`` whose ``torch.nn.Linear`` layers are the course's
    :class:`helpers.models.layers.Linear` (the same class with the same parameters, able to run
    in a :class:`helpers.stack.Stack`): for chapter 2's
    :class:`~helpers.models.chain.LayerChain`, which is built from PyTorch's own layers."""
    net = copy.deepcopy(net)
    for module in net.modules():
        if type(module) is nn.Linear:
            module.__class__ = Linear
    return net


def parameter_counts(nets: dict[str, nn.Module]) -> dict[str, int]:
    """``{kind: number of parameters}``."""
    return {kind: sum(p.numel() for p in net.parameters()) for kind, net in nets.items()}


def gradients_on_line(layers: int = 50, *, width: int = 200, seed: int = 0) -> dict[str, np.ndarray]:
    """``{kind: dy/dx}`` on chapter 2's grid of 256 inputs over [-2, 2] for scalar nets of
    ``layers`` layers with BatchNorm: the twins of ``width`` units (Balduzzi et al.'s setup,
    :func:`helpers.experiments.shattering.scalar_twins`) and the CReLU twins of about the
    same parameter count."""
    layers = positive_int("layers", layers)
    seeds = run_seeds(seed)
    x = input_grid()
    nets = {**scalar_twins(layers, width=width, seed=seeds["twins"]),
            **crelu_twins(layers, matched_width(width, layers, in_features=1, out_features=1),
                          in_features=1, out_features=1, seed=seeds["crelu"])}
    return {kind: input_gradients(net, x) for kind, net in nets.items()}


def agreement_at_init(data: DataSplit, *, layers: int = 50, width: int = 64, pairs: int = 8,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """``{kind: cosines}``: for each net of :func:`digit_nets`, the cosine between the
    gradients of ``pairs`` pairs of disjoint mini-batches of 64 digits at initialisation; every
    net sees the same pairs."""
    nets = digit_nets(data, layers=layers, width=width, seed=seed)
    pair_seed = run_seeds(seed)["batches"]
    return {kind: minibatch_gradient_cosine(net, data.x_train, data.y_train, pairs=pairs,
                                            generator=generator(pair_seed))
            for kind, net in nets.items()}


def agreement_toward_mirror(data: DataSplit, gaps, *, layers: int = 50, width: int = 64, pairs: int = 8,
                            seed: int = 0) -> dict[float, np.ndarray]:
    """``{gap: cosines}``: the run's unmirrored CReLU net (:func:`digit_nets`) moved part of the
    way to its mirror (:meth:`~helpers.models.looks_linear.CReLUChain.toward_mirror`), to each
    ``gap`` from it (0: the looks-linear net; ``sqrt(2)``: the CReLU net itself), and for each
    the cosine between two mini-batches' gradients at initialisation, on the same pairs as
    :func:`agreement_at_init`."""
    gaps = tuple(non_empty("gaps", gaps))
    crelu = digit_nets(data, layers=layers, width=width, seed=seed)["CReLU"]
    pair_seed = run_seeds(seed)["batches"]
    return {gap: minibatch_gradient_cosine(crelu.toward_mirror(gap), data.x_train, data.y_train, pairs=pairs,
                                           generator=generator(pair_seed))
            for gap in gaps}


def first_steps_of(start: nn.Module, data: DataSplit, *, learning_rates=RATES, steps: int = 30,
                   batch_size: int = 64, eval_size: int = 256, sample_seed: int = 0,
                   batch_seed: int = 1) -> tuple[dict[float, np.ndarray], dict[float, nn.Module]]:
    """Train a copy of ``start`` for ``steps`` steps of plain SGD (no momentum) at each
    learning rate: the loop of :func:`helpers.experiments.shattering.first_steps`, with the
    copies run side by side as one :class:`helpers.stack.Stack` (each copy its own rate, its
    own BatchNorm statistics; ``start`` must be built from :mod:`helpers.models.layers`).
    Before each step and after the last, the cross-entropy on a fixed sample of
    ``eval_size`` training images (drawn with ``sample_seed``; in training mode, as the steps
    see it); the mini-batches drawn with ``batch_seed``, the same at every rate.
    ``tests/test_looks_linear.py`` checks it against that loop run on each copy alone.
    Returns ``({lr: losses}, {lr: trained net})``."""
    learning_rates = tuple(non_empty("learning_rates", learning_rates))
    steps, batch_size = positive_int("steps", steps), positive_int("batch_size", batch_size)
    sample = torch.randperm(len(data.x_train), generator=generator(sample_seed))[:positive_int("eval_size", eval_size)]
    members = len(learning_rates)
    x_eval, y_eval = data.x_train[sample].expand(members, -1, -1), data.y_train[sample]
    nets = [copy.deepcopy(start) for _ in learning_rates]
    stack = Stack(nets).train()
    rates = torch.tensor(learning_rates, dtype=stack.flat.dtype)[stack.member_of]
    batches = generator(batch_seed)
    losses = []
    for step in range(steps + 1):
        with torch.no_grad():
            losses.append([float(F.cross_entropy(out, y_eval)) for out in stack(x_eval)])
        if step == steps:
            break
        idx = torch.randint(0, len(data.x_train), (batch_size,), generator=batches)
        out = stack(data.x_train[idx].expand(members, -1, -1))
        stack.zero_grad()
        # the sum of the members' losses: each member's gradient is its own
        sum(F.cross_entropy(o, data.y_train[idx]) for o in out).backward()
        with torch.no_grad():
            stack.flat.sub_(rates * stack.flat.grad)  # theta_e <- theta_e - lr_e * grad_e
    stack.write_back()
    losses = np.array(losses)
    return ({lr: losses[:, e] for e, lr in enumerate(learning_rates)},
            {lr: net.train() for lr, net in zip(learning_rates, nets)})


def first_steps_compared(data: DataSplit, *, layers: int = 50, width: int = 64, learning_rates=RATES,
                         steps: int = 30, seed: int = 0) -> dict:
    """Train the four nets of :func:`digit_nets` for ``steps`` steps of plain SGD at each
    learning rate (:func:`first_steps_of`), from the same start at every rate and on the same
    mini-batches and evaluation sample as :func:`helpers.experiments.shattering.first_steps`
    draws for the twins. Returns ``{"losses": {kind: {lr: losses}}, "mirror_gap": {lr: gap}}``:
    the losses as ``first_steps`` records them (``steps + 1`` values), and how far each
    looks-linear net has moved from mirrored weights by the end
    (:meth:`~helpers.models.looks_linear.CReLUChain.mirror_gap`)."""
    learning_rates = tuple(non_empty("learning_rates", learning_rates))
    seeds = run_seeds(seed)
    nets = digit_nets(data, layers=layers, width=width, seed=seed)
    losses, gap = {}, {}
    for kind, net in nets.items():
        losses[kind], trained = first_steps_of(stackable(net), data, learning_rates=learning_rates, steps=steps,
                                               sample_seed=seeds["twins"], batch_seed=seeds["batches"])
        if kind == "looks-linear":
            gap = {lr: trained[lr].mirror_gap() for lr in learning_rates}
    return {"losses": losses, "mirror_gap": gap}


def kept_share(losses: dict[float, np.ndarray]) -> dict[float, float]:
    """``{lr: final loss / initial loss}`` for one net's ``{lr: losses}``."""
    return {lr: float(v[-1] / v[0]) for lr, v in losses.items()}


def best_rate(losses: dict[float, np.ndarray]) -> float:
    """The learning rate with the lowest final loss."""
    return min(losses, key=lambda lr: losses[lr][-1])
