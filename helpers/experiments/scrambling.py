"""Claim 2.3: what a random deep chain does to its input, layer by layer, at initialisation.

Twin chains (:class:`helpers.models.chain.LayerChain`, He initialisation, the plain one the
residual one without its skips) read the digits. At every layer, for pairs of images of
different classes, the cosine similarity of their representations
(:func:`helpers.measure.scrambling.pair_cosines`), and the accuracy of a linear probe of
the class trained on that layer's representations
(:func:`helpers.measure.scrambling.probe_accuracy`). Without normalisation the measured
cosines are compared with the mean-field prediction
(:func:`helpers.measure.scrambling.mean_field_cosines`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._checks import choice, non_empty, positive_int
from ..data import DataSplit
from ..measure.scrambling import different_class_pairs, mean_field_cosines, pair_cosines, probe_accuracy
from ..models.chain import LayerChain
from ..models.mlp import NORMS
from ..seeding import generator, isolated


@dataclass
class SignalThroughDepth:
    """Per layer ``0..L`` and per ``(norm, kind)``: mean cosine of pairs and probe accuracy."""

    layers: int
    cosine: dict = field(default_factory=dict)
    probe: dict = field(default_factory=dict)
    theory: dict = field(default_factory=dict)  # kind -> mean-field mean cosine per layer (no normalisation)
    input_probe: float = float("nan")  # the probe on the raw pixels

    def at(self, what: str, norm: str, kind: str, layer: int) -> float:
        """``what`` ("cosine" or "probe") of ``(norm, kind)`` at ``layer``."""
        table = getattr(self, choice("what", what, ("cosine", "probe")))
        return float(table[(norm, kind)][layer])


def digit_twins(data: DataSplit, *, layers: int = 50, width: int = 128, norm: str = "none",
                seed: int = 0) -> dict[str, LayerChain]:
    """``{"plain": net, "residual": net}``: twin chains that read the digits, in training mode
    (BatchNorm, if any, normalises with the statistics of the batch it is given)."""
    with isolated(seed):
        residual = LayerChain(layers, width, kind="residual", in_features=data.n_features,
                              out_features=data.n_classes, norm=norm).train()
    return {"plain": residual.twin(), "residual": residual}


def signal_through_depth(data: DataSplit, *, layers: int = 50, width: int = 128, norms=("none", "batch"),
                         n_pairs: int = 1000, seed: int = 0) -> SignalThroughDepth:
    """Send all of ``data`` (train and test images, one batch) through twin chains of
    ``layers`` layers, one pair of twins per normalisation; measure every layer.

    The probe is fitted on the training images' representations and scored on the test
    images'. BatchNorm normalises with the statistics of the whole batch."""
    layers, width = positive_int("layers", layers), positive_int("width", width)
    norms = tuple(choice("norm", n, NORMS) for n in non_empty("norms", norms))
    x, y = torch.cat([data.x_train, data.x_test]), torch.cat([data.y_train, data.y_test])
    n_train = len(data.x_train)
    pairs = different_class_pairs(y, n_pairs, generator=generator(seed))
    out = SignalThroughDepth(layers, input_probe=probe_accuracy(data.x_train, data.y_train, data.x_test,
                                                                data.y_test))
    for i, norm in enumerate(norms):
        twins = digit_twins(data, layers=layers, width=width, norm=norm, seed=len(norms) * seed + i)
        for net in twins.values():
            with torch.no_grad():
                reps = net.representations(x)
            out.cosine[(norm, net.kind)] = np.array([pair_cosines(h, pairs).mean() for h in reps])
            out.probe[(norm, net.kind)] = np.array([
                probe_accuracy(h[:n_train], y[:n_train], h[n_train:], y[n_train:]) for h in reps])
            if norm == "none":
                c0 = pair_cosines(reps[0], pairs)
                out.theory[net.kind] = mean_field_cosines(c0, layers, residual=net.kind == "residual").mean(1)
    return out
