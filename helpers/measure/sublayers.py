"""Claim 4.5: zero one sublayer's output at test time and measure what the net still gets right.

A Transformer layer has two sublayers, self-attention and the feed-forward net (FFN). A
*lesion* replaces one sublayer's output by zeros, for every position of every sequence,
and leaves the rest of the trained net as it is: in a residual layer the stream then
passes the sublayer unchanged (``x + 0``, or ``LN(x + 0)`` in Post-LN); in a plain layer
nothing passes (``0``, or ``LN(0)``, a constant). The measurement is the share of target
tokens the lesioned net predicts right.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

SUBLAYERS = ("attention", "FFN")


def _module(layer: nn.Module, sublayer: str) -> nn.Module:
    """The module whose output is the sublayer's output (the FFN's is its second linear map)."""
    return layer.self_attn if sublayer == "attention" else layer.linear2


@contextmanager
def zeroed(model: nn.Module, lesions) -> None:
    """Inside the block, the sublayers ``lesions`` (pairs ``(sublayer, layer index)``) of
    ``model`` (a :class:`~helpers.models.transformer.SequenceTransformer`) output zeros."""
    hooks = []
    for sublayer, index in lesions:
        if sublayer not in SUBLAYERS:
            raise ValueError(f"sublayer must be one of {SUBLAYERS}, got {sublayer!r}")
        if not 0 <= int(index) < len(model.layers):
            raise ValueError(f"layer index must be in [0, {len(model.layers)}), got {index}")
        module = _module(model.layers[int(index)], sublayer)
        hooks.append(module.register_forward_hook(lambda mod, args, out: torch.zeros_like(out)))
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


@torch.no_grad()
def accuracy(model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor, lesions=()) -> float:
    """Share of the target tokens ``model`` predicts right, with the sublayers ``lesions`` zeroed."""
    return float(position_accuracy(model, tokens, targets, lesions).mean())


def sublayer_lesions(model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """Accuracy with one sublayer zeroed, for each: an array ``(2, n_layers)``, row 0 for
    attention, row 1 for the FFN, column ``l`` for layer ``l + 1``."""
    return np.array([[accuracy(model, tokens, targets, [(s, i)]) for i in range(len(model.layers))]
                     for s in SUBLAYERS])


@torch.no_grad()
def position_accuracy(model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor, lesions=()) -> np.ndarray:
    """Share of the target tokens predicted right at each output position, with ``lesions`` zeroed."""
    with zeroed(model, lesions):
        return (model(tokens).argmax(dim=-1) == targets).float().mean(dim=0).numpy()
