"""Does one sequence's normalised output depend on the other sequences in its batch?

Sequences of different lengths are padded with zeros to the batch's longest and normalised
three ways (no scale or shift, which do not change the answer):

* ``"layer"``: LayerNorm, each token over its own features, ``(x - mean_d) / sqrt(var_d + eps)``;
* ``"batch"``: BatchNorm in training mode as ``torch.nn.BatchNorm1d`` computes it on a
  ``(batch, features, time)`` tensor: each feature over every position of every sequence,
  padding included;
* ``"batch-masked"``: BatchNorm with its statistics over the real tokens only (padding
  left out), the careful version.

:func:`batch_mate_drift` puts one target sequence in batches with different mates (and so
different padding) and measures how much the target's own output moves: the largest
absolute change of any of its entries, against the first batch. LayerNorm's is 0 up to
rounding by construction; BatchNorm's is not, with padding or without.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .._checks import choice, positive_int

BATCH_NORMS = ("layer", "batch", "batch-masked")
EPS = 1e-5


def pad_batch(sequences: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, mask)``: ``sequences`` (each ``(length, features)``) padded with zeros to
    ``(batch, longest, features)``, and ``mask`` ``(batch, longest)``, True at real tokens."""
    sequences = list(sequences)
    if not sequences:
        raise ValueError("sequences must hold at least one sequence")
    widths = {s.shape[-1] if s.ndim == 2 else None for s in sequences}
    if None in widths or len(widths) != 1:
        raise ValueError(f"sequences must be (length, features) tensors of one width, got shapes "
                         f"{[tuple(s.shape) for s in sequences]}")
    if any(len(s) == 0 for s in sequences):
        raise ValueError("every sequence needs at least one token")
    longest = max(len(s) for s in sequences)
    x = torch.zeros(len(sequences), longest, widths.pop(), dtype=sequences[0].dtype)
    mask = torch.zeros(len(sequences), longest, dtype=torch.bool)
    for i, s in enumerate(sequences):
        x[i, :len(s)], mask[i, :len(s)] = s, True
    return x, mask


def normalise(x: torch.Tensor, mask: torch.Tensor, norm: str) -> torch.Tensor:
    """``x`` ``(batch, time, features)`` normalised by ``norm`` (see the module docstring)."""
    choice("norm", norm, BATCH_NORMS)
    if x.ndim != 3 or mask.shape != x.shape[:2]:
        raise ValueError(f"x must be (batch, time, features) and mask (batch, time), got shapes "
                         f"{tuple(x.shape)} and {tuple(mask.shape)}")
    if norm == "layer":
        return F.layer_norm(x, (x.shape[-1],), eps=EPS)
    if norm == "batch":
        return F.batch_norm(x.transpose(1, 2), None, None, training=True, eps=EPS).transpose(1, 2)
    real = x[mask]  # (tokens, features)
    mean, var = real.mean(0), real.var(0, unbiased=False)
    return (x - mean) / torch.sqrt(var + EPS)


def target_output(target: torch.Tensor, mates: Sequence[torch.Tensor], norm: str) -> torch.Tensor:
    """The normalised output of ``target``'s real tokens, ``(length, features)``, in a batch of
    ``target`` (first) and ``mates``, padded and normalised by ``norm``."""
    x, mask = pad_batch([target, *mates])
    return normalise(x, mask, norm)[0, :len(target)]


def batch_mate_drift(target: torch.Tensor, batches: Sequence[Sequence[torch.Tensor]], norm: str) -> float:
    """The largest absolute change of the target's normalised output (its real tokens) across
    batches made of ``target`` and each list of mates in ``batches``, against the first."""
    choice("norm", norm, BATCH_NORMS)
    batches = list(batches)
    if len(batches) < 2:
        raise ValueError(f"batches must give at least two sets of mates to compare, got {len(batches)}")
    outputs = [target_output(target, mates, norm) for mates in batches]
    return float(max((o - outputs[0]).abs().max() for o in outputs[1:]))


def drift_table(target: torch.Tensor, batches: Sequence[Sequence[torch.Tensor]]) -> dict[str, float]:
    """:func:`batch_mate_drift` for each of the three normalisations, ``BATCH_NORMS``."""
    return {norm: batch_mate_drift(target, batches, norm) for norm in BATCH_NORMS}


def random_sequences(lengths: Sequence[int], features: int, *, shift: float = 0.0,
                     generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Standard-normal sequences of the given ``lengths`` and ``features``, plus ``shift``
    (a batch of sequences from a different source has a different mean)."""
    lengths = [positive_int("lengths[i]", n) for n in lengths]
    if not lengths:
        raise ValueError("lengths must name at least one sequence length")
    features = positive_int("features", features)
    return [torch.randn(n, features, generator=generator, dtype=torch.float64) + shift for n in lengths]


__all__ = ["BATCH_NORMS", "pad_batch", "normalise", "target_output", "batch_mate_drift", "drift_table",
           "random_sequences"]
