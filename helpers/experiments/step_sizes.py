"""Chapter 5, section 5: what one step does under SGD and under Adam, against depth.

Two measurements, both at initialisation:

* the loss change of one step on the residual MLPs of section 1, under Adam's first step as
  well as SGD: :func:`helpers.experiments.increments.incremental_explosion` with
  ``optimizer="adam"``;
* DeepNet's "model update" (Wang et al. 2022, their figure of ``||ΔF||`` against depth):
  :func:`model_updates` takes one step on the sublayers' parameters of Post-LN and DeepNorm
  Transformers of chapter 4's size (:func:`helpers.experiments.deepnorm.make_net`, DeepNorm
  with the paper's initialisation) from 6 to 96 layers, plain SGD or Adam's first step from
  the same gradient, and measures how far the logits on fixed test sequences move
  (:func:`helpers.measure.output_update.output_change`).

DeepNet's argument, in the terms of this chapter: DeepNorm's ``LN(alpha x + G(x))`` divides
what ``G`` adds by about ``alpha``, and ``G``'s update weights start ``beta`` times smaller, so
the gradient of every update weight carries ``beta / alpha = 1 / (2 sqrt(N))``: the article's
``eps = 1 / sqrt(N)``, up to the 2. Under SGD a weight moves in proportion to its gradient and
its move reaches the output through the same factor again: each of the ``2N`` sublayers (two
``beta``-scaled matrices each) contributes about ``2 beta² / alpha²`` and the total,
``2N · 2 beta² / alpha² = 1``, does not depend on the depth. Under Adam every weight moves by
about the learning rate whatever its gradient, only one factor ``beta / alpha`` is left, and
the total ``2N · 2 beta / alpha = 2 sqrt(N)`` grows with the depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import gmean

from .._checks import choice, non_empty, positive_int
from ..data import sequence_task
from ..measure.increments import OPTIMIZERS
from ..measure.output_update import output_changes
from ..models.transformer import SequenceTransformer
from ..parallel import one_thread
from ..seeding import seeds_of_run
from .deepnorm import make_net
from .norm_order import token_loss
from .transformer_depth import SIZE, TASK, evaluation_set

ARCHITECTURES = {"post": "Post-LN", "deepnorm": "DeepNorm"}
"""The architectures of :func:`model_updates`, and their labels."""
RATES = {"sgd": 1e-3, "adam": 1e-5}
"""The learning rate of each optimiser's step, small enough that the change is first-order
(halving it halves ``ΔF`` to within a few per cent), so ``||ΔF|| / lr`` does not depend on it."""
NET_SEEDS = 600_000
"""Added to the seeds of :func:`model_updates`' nets, so that none is a net of another section."""


def sublayer_parameters(net: SequenceTransformer) -> list[torch.Tensor]:
    """The parameters of every layer's attention and FFN, weights and biases: those of DeepNet's
    bound (the LayerNorms, the embeddings and the head are left out)."""
    if not isinstance(net, SequenceTransformer):
        raise TypeError(f"net must be a SequenceTransformer, got {type(net).__name__}")
    return [p for layer in net.layers for name, p in layer.named_parameters()
            if name.startswith(("self_attn.", "linear1.", "linear2."))]


@dataclass(frozen=True)
class ModelUpdate:
    """One architecture at one depth under one optimiser, over several nets.

    ``changes[k]`` is net ``k``'s ``rms(ΔF) / lr`` (the logits' change per unit of learning
    rate), ``grad_rms[k]`` the root mean square of its gradient over the sublayers' parameters.
    """

    architecture: str
    depth: int
    optimizer: str
    lr: float
    changes: np.ndarray
    grad_rms: np.ndarray

    @property
    def label(self) -> str:
        return ARCHITECTURES[self.architecture]

    @property
    def change(self) -> float:
        """The geometric mean of ``changes`` over the nets."""
        return float(gmean(self.changes))

    @property
    def gradient(self) -> float:
        """The geometric mean of ``grad_rms`` over the nets."""
        return float(gmean(self.grad_rms))


def model_updates(depths=(6, 12, 24, 48, 96), architectures=tuple(ARCHITECTURES), optimizers=OPTIMIZERS, *,
                  seed: int = 0, n_nets: int = 2, batch: int = 32) -> list[ModelUpdate]:
    """DeepNet's model update against depth (module docstring): for each depth and
    architecture, ``n_nets`` nets (seeds ``NET_SEEDS + seeds_of_run(seed, n_nets)``, the same
    seeds at every depth and for both architectures); for each net one step of each optimiser
    at :data:`RATES`, each from the net at initialisation and from the same gradient, of the
    cross-entropy on ``batch`` random reversal sequences drawn from ``seed``. ``ΔF`` is
    measured on the logits of 32 fixed test sequences. Returned in the order depth,
    architecture, optimiser."""
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    architectures = [choice("architectures[i]", a, ARCHITECTURES) for a in non_empty("architectures", architectures)]
    optimizers = [choice("optimizers[i]", o, OPTIMIZERS) for o in non_empty("optimizers", optimizers)]
    n_nets, batch = positive_int("n_nets", n_nets), positive_int("batch", batch)
    tokens, targets = sequence_task(TASK, batch, SIZE["length"], SIZE["vocab"], seed=seed)
    test_tokens, _ = evaluation_set(32)
    nets = [NET_SEEDS + s for s in seeds_of_run(seed, n_nets)]
    rates = {o: RATES[o] for o in optimizers}
    out = []
    with one_thread():  # the numbers of one thread, as in every worker
        for depth in depths:
            for architecture in architectures:
                measured = []
                for s in nets:
                    net = make_net(architecture, depth, s)
                    measured.append(output_changes(net, lambda m: token_loss(m(tokens), targets),
                                                   lambda m: m(test_tokens), sublayer_parameters(net), rates))
                for optimizer in optimizers:
                    rows = [m[optimizer] for m in measured]
                    out.append(ModelUpdate(architecture, depth, optimizer, rates[optimizer],
                                           np.array([r.change for r in rows]), np.array([r.grad_rms for r in rows])))
    return out


def depth_slope(updates: list[ModelUpdate], architecture: str, optimizer: str, what: str = "change") -> float:
    """The fitted exponent ``p`` of ``what ~ N^p`` (``"change"``: ``||ΔF|| / lr``;
    ``"gradient"``: the gradient's root mean square) over the depths of ``updates`` for one
    architecture and optimiser (least squares on log-log axes, geometric means over nets)."""
    what = choice("what", what, ("change", "gradient"))
    rows = [u for u in updates if u.architecture == architecture and u.optimizer == optimizer]
    if len(rows) < 2:
        raise ValueError(f"need at least two depths of {architecture!r} under {optimizer!r}, got {len(rows)}")
    depths = np.log([u.depth for u in rows])
    values = np.log([getattr(u, what) for u in rows])
    return float(np.polyfit(depths, values, 1)[0])
