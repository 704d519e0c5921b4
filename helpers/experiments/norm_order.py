"""Claim 1.7 (a teaser for chapters 3 to 5): where the LayerNorm sits changes the gradients.

Post-LN: ``x = LN(x + F(x))``; Pre-LN: ``x = x + F(LN(x))``. For a stack of
:class:`helpers.models.transformer.EncoderLayer` s at initialisation, one backward pass of
the cross-entropy on a synthetic sequence task (reverse the sequence) records the
gradient norm of each layer's last feed-forward weight, ``||dL/dW2_l||`` (the quantity of
Xiong et al. 2020, Fig. 3 and Theorem 1), averaged over a few initialisations.
:func:`norm_order_by_depth` repeats this at several depths, because Xiong et al.'s
prediction is about how the last layer's gradient changes with depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import nn

from .._checks import positive_int
from ..data import sequence_task
from ..measure.gradients import GradientProfile, gradient_profile
from ..models.transformer import SequenceTransformer
from ..seeding import isolated, seeds_of_run

ORDERS = {"post": "Post-LN", "pre": "Pre-LN"}
"""``norm_position`` of :class:`~helpers.models.transformer.EncoderLayer` -> the label used in results."""


def token_loss(logits, targets):
    """The mean cross-entropy over every token of every sequence: ``logits`` ``(batch, length,
    vocab)``, ``targets`` ``(batch, length)``."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def norm_order_profiles(n_layers: int = 24, *, d_model: int = 64, n_heads: int = 4, d_ff: int = 128,
                        vocab: int = 16, length: int = 16, batch: int = 64, seed: int = 0,
                        n_inits: int = 3) -> dict[str, GradientProfile]:
    """``{"Post-LN": profile, "Pre-LN": profile}`` at init, one entry per layer (input to output).

    Each profile is the mean over ``n_inits`` initialisations, drawn with
    :func:`helpers.seeding.seeds_of_run` (``n_inits * seed``, ...), so that one unlucky
    draw does not decide the picture and no two values of ``seed`` share a net. Both
    orders start from the same seeds and see the same batch of the reversal task.
    """
    n_layers = positive_int("n_layers", n_layers)
    n_inits = positive_int("n_inits", n_inits)
    tokens, targets = sequence_task("reverse", batch, length, vocab, seed=seed)
    out = {}
    for position, label in ORDERS.items():
        runs = []
        for init_seed in seeds_of_run(seed, n_inits):
            with isolated(init_seed):
                model = SequenceTransformer(vocab, length, d_model, n_heads, d_ff, n_layers,
                                            norm_position=position)
            layers = [(f"layer {i + 1}", layer.linear2) for i, layer in enumerate(model.layers)]
            runs.append(gradient_profile(model, token_loss, tokens, targets, layers=layers))
        out[label] = GradientProfile(runs[0].names, np.mean([r.weight for r in runs], axis=0),
                                     np.mean([r.output for r in runs], axis=0),
                                     float(np.mean([r.loss for r in runs])))
    return out


@dataclass(frozen=True)
class NormOrderByDepth:
    """The profiles of :func:`norm_order_profiles` at several depths.

    ``profiles[n]`` is ``{"Post-LN": profile, "Pre-LN": profile}`` for ``n`` layers.
    """

    depths: tuple[int, ...]
    profiles: dict[int, dict[str, GradientProfile]]

    def last(self, order: str) -> np.ndarray:
        """The last layer's gradient norm ``||dL/dW2_N||`` of ``order`` at each depth ``N``."""
        return np.array([self.profiles[n][order].weight[-1] for n in self.depths])

    def last_ratio(self) -> np.ndarray:
        """Post-LN's last-layer gradient over Pre-LN's, at each depth."""
        return self.last("Post-LN") / self.last("Pre-LN")

    def first_to_last(self, order: str) -> np.ndarray:
        """``||dL/dW2_N|| / ||dL/dW2_1||`` (last layer over first) of ``order`` at each depth:
        above 1 the profile rises towards the output, below 1 it falls."""
        return np.array([self.profiles[n][order].weight[-1] / self.profiles[n][order].weight[0]
                         for n in self.depths])


def depth_exponent(depths, values) -> float:
    """The exponent ``p`` of the least-squares fit ``values ~ C * depths ** p`` (on log-log axes).

    ``p = 0.5`` is growth like ``sqrt(N)``, ``p = 0`` no change, ``p = -0.5`` decay like ``1/sqrt(N)``.
    """
    depths, values = np.asarray(depths, dtype=float), np.asarray(values, dtype=float)
    if depths.ndim != 1 or depths.shape != values.shape or depths.size < 2:
        raise ValueError(f"depths and values must be 1-D of equal length >= 2, got {depths.shape} and {values.shape}")
    if not (np.all(depths > 0) and np.all(values > 0)):
        raise ValueError("depths and values must be positive to fit a power law")
    return float(np.polyfit(np.log(depths), np.log(values), 1)[0])


def norm_order_by_depth(depths=(6, 12, 24), *, seed: int = 0, **kwargs) -> NormOrderByDepth:
    """:func:`norm_order_profiles` at each of ``depths`` (same seed and batch at every depth).

    ``kwargs`` go to :func:`norm_order_profiles` (widths, batch, ``n_inits``).
    """
    depths = tuple(positive_int("depths[i]", n) for n in depths)
    if len(depths) < 2 or list(depths) != sorted(set(depths)):
        raise ValueError(f"depths must be at least two increasing numbers of layers, got {depths}")
    return NormOrderByDepth(depths, {n: norm_order_profiles(n, seed=seed, **kwargs) for n in depths})
