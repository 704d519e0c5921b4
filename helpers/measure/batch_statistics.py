"""BatchNorm statistics after a change to the net.

A trained net in eval mode normalises with the running statistics it gathered while it
trained. Deleting a block at test time (:mod:`helpers.measure.lesion`) changes what every
later BatchNorm receives, while those statistics are still the intact net's; the lesion then
charges the block for the mismatch as well as for its work. :func:`recomputed_statistics`
re-estimates them for the changed net, without touching a weight.
"""

from __future__ import annotations

import copy

import torch

from .shattering import freeze_batch_statistics


def recomputed_statistics(model, x: torch.Tensor, skip=()):
    """A copy of ``model`` (in eval mode) whose BatchNorm layers normalise with the
    statistics of ``x`` passed through it with blocks ``skip`` deleted: each layer's mean
    and (unbiased) variance of what it receives in that pass. ``model`` is left as it was."""
    return freeze_batch_statistics(copy.deepcopy(model), x, skip=skip)
