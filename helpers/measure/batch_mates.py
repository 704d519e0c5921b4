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

:func:`drift_by_batch_size` asks how that dependence scales with the batch. It fills batches
of a given number of real tokens with *natural* mates (:func:`natural_mates`: sequences of
random lengths from the target's own distribution, or from a shifted one as a separate
case) and measures the spread of the target's output over many such batches. For a batch of
``N`` real tokens BatchNorm's mean and variance are estimates from ``N`` draws, so the
spread should fall about as ``1 / sqrt(N)``; a shift of the mates' source moves the output
by an amount that does not fall with ``N``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .._checks import choice, non_empty, positive_int, real_number

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


def natural_mates(tokens: int, target_length: int, features: int, *, max_length: int = 8, shift: float = 0.0,
                  generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Batch mates for a target of ``target_length`` tokens, so that the batch holds
    ``tokens`` real tokens in all: standard-normal sequences (plus ``shift``) whose lengths are
    drawn uniformly from 1 to ``max_length``, the last one cut to fit. No mate at all when
    ``tokens == target_length``."""
    tokens, target_length = positive_int("tokens", tokens), positive_int("target_length", target_length)
    if tokens < target_length:
        raise ValueError(f"tokens must be >= target_length ({target_length}), got {tokens}")
    max_length, features = positive_int("max_length", max_length), positive_int("features", features)
    shift = real_number("shift", shift)
    left = tokens - target_length
    if not left:
        return []
    lengths = torch.randint(1, max_length + 1, (left,), generator=generator)  # more than enough
    ends = lengths.cumsum(0)
    count = int(torch.searchsorted(ends, left)) + 1  # the first `count` mates reach `left` tokens
    lengths = lengths[:count].clone()
    lengths[-1] -= int(ends[count - 1]) - left
    return list(torch.randn(left, features, generator=generator, dtype=torch.float64).add_(shift)
                .split(lengths.tolist()))


def _outputs(target: torch.Tensor, n: int, norm: str, *, draws: int, max_length: int, shift: float,
             generator: torch.Generator | None) -> torch.Tensor:
    """The target's output in ``draws`` batches of ``n`` real tokens, ``(draws, *target.shape)``:
    :func:`target_output` among :func:`natural_mates`, all draws at once. The padding's zeros
    add nothing to the sums, so BatchNorm's mean and variance over ``batch x longest``
    positions are the real tokens' sums divided by that count. With ``draws=1`` it draws what
    :func:`natural_mates` draws (a unit test checks the two agree)."""
    if norm == "layer":
        return F.layer_norm(target, (target.shape[-1],), eps=EPS).expand(draws, *target.shape)
    length, features = target.shape
    left = n - length
    if left < 0:
        raise ValueError(f"tokens_per_batch must be >= the target's length ({length}), got {n}")
    if not left:
        alone = _output_with(target, target.sum(0), target.pow(2).sum(0), torch.tensor(float(length)), norm)
        return alone.expand(draws, *target.shape)
    lengths = torch.randint(1, max_length + 1, (draws, left), generator=generator)
    ends = lengths.cumsum(1)
    count = torch.searchsorted(ends, torch.full((draws, 1), left)).squeeze(1) + 1  # mates per batch
    used = torch.arange(left) < count[:, None]
    last = lengths.gather(1, (count - 1)[:, None]).squeeze(1) - (ends.gather(1, (count - 1)[:, None]).squeeze(1) - left)
    longest = torch.where(used, lengths, 0).scatter(1, (count - 1)[:, None], 0).max(1).values.maximum(last)
    mates = torch.randn(draws, left, features, generator=generator, dtype=torch.float64).add_(shift)
    if norm == "batch-masked":
        total = torch.full((draws,), float(n))
    else:
        total = ((1 + count) * longest.clamp_min(length)).double()
    return _output_with(target, target.sum(0) + mates.sum(1), target.pow(2).sum(0) + mates.pow(2).sum(1), total,
                        norm)


def _output_with(target, first, second, total, norm) -> torch.Tensor:
    """BatchNorm's output for ``target`` given the batch's sums of entries and of squares per
    feature (``(draws, features)`` or ``(features,)``) and its count of positions."""
    total = total.reshape(-1, 1) if total.ndim else total
    mean = first / total
    var = second / total - mean.pow(2)
    features = target.shape[-1]
    return (target - mean.reshape(-1, 1, features)) / torch.sqrt(var.reshape(-1, 1, features) + EPS)


def _sizes_and_target(target, tokens_per_batch, norm) -> list[int]:
    choice("norm", norm, BATCH_NORMS)
    if not isinstance(target, torch.Tensor) or target.ndim != 2 or not len(target):
        raise ValueError("target must be a (length, features) tensor with at least one token")
    return [positive_int("tokens_per_batch[i]", n) for n in non_empty("tokens_per_batch", tokens_per_batch)]


def drift_by_batch_size(target: torch.Tensor, tokens_per_batch: Sequence[int], norm: str, *, draws: int = 32,
                        max_length: int = 8, shift: float = 0.0,
                        generator: torch.Generator | None = None) -> np.ndarray:
    """How much ``target``'s normalised output depends on its batch, for batches of each size
    in ``tokens_per_batch`` (real tokens, the target's included).

    For each size ``N`` the target is normalised in ``draws`` batches of fresh
    :func:`natural_mates` (mate lengths 1 to ``max_length``, source shifted by ``shift``);
    the result is the standard deviation of each output entry over the draws, root mean
    squared over the target's entries: ``sqrt(mean_entries(Var_draws(output)))``, in units
    of the output's own scale (about 1). 0 up to rounding for LayerNorm; for BatchNorm on
    natural mates about ``sqrt(1.5 / N)`` for large ``N`` (the error of a mean and a
    variance estimated from ``N`` tokens), less while the target is a large share of the
    batch, and a little more when the padding counts."""
    sizes = _sizes_and_target(target, tokens_per_batch, norm)
    draws = positive_int("draws", draws, minimum=2)
    options = dict(draws=draws, max_length=positive_int("max_length", max_length),
                   shift=real_number("shift", shift), generator=generator)
    return np.array([float(_outputs(target, n, norm, **options).var(0).mean().sqrt()) for n in sizes])


def source_shift(target: torch.Tensor, tokens_per_batch: Sequence[int], norm: str, *, shift: float = 1.0,
                 draws: int = 32, max_length: int = 8, generator: torch.Generator | None = None) -> np.ndarray:
    """How far ``target``'s normalised output moves, on average, when its mates come from a
    source shifted by ``shift`` instead of its own: for each batch size in
    ``tokens_per_batch``, the root mean square over the target's entries of the difference
    between its mean output over ``draws`` batches of shifted mates and over ``draws``
    batches of unshifted ones (:func:`natural_mates`). Sampling noise averages out over the
    draws; what is left is the systematic move, which grows towards ``shift`` as the mates
    outnumber the target."""
    sizes = _sizes_and_target(target, tokens_per_batch, norm)
    options = dict(draws=positive_int("draws", draws), max_length=positive_int("max_length", max_length),
                   generator=generator)
    shift = real_number("shift", shift)
    return np.array([float((_outputs(target, n, norm, shift=shift, **options).mean(0)
                            - _outputs(target, n, norm, shift=0.0, **options).mean(0)).pow(2).mean().sqrt())
                     for n in sizes])


__all__ = ["BATCH_NORMS", "pad_batch", "normalise", "target_output", "batch_mate_drift", "drift_table",
           "random_sequences", "natural_mates", "drift_by_batch_size", "source_shift"]
