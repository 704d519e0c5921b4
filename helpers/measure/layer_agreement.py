"""Claim 4.1 (a check): the course's encoder and decoder layers compute what PyTorch's do.

PyTorch's ``nn.TransformerEncoderLayer`` or ``nn.TransformerDecoderLayer`` (``batch_first``,
dropout 0, ``norm_first`` for Pre-LN) is drawn at random, its weights are copied into ours
with ``load_state_dict``, and both run on the same input with a padding mask (the second
and third sequences end in padding) and, for the decoder, the causal mask on its
self-attention. The measurement is ``max |ours - PyTorch's|`` over the positions that are
not padding (PyTorch's fast path may leave padded positions at 0).
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import choice
from ..models.transformer import DecoderLayer, EncoderLayer, causal_mask
from ..seeding import isolated


def _padding(batch: int, length: int) -> torch.Tensor:
    """True at padding: sequence ``b`` is ``length - b`` tokens long."""
    return torch.arange(length)[None, :] >= (length - torch.arange(batch))[:, None]


def agreement_with_pytorch(kind: str, norm_position: str, dtype: torch.dtype = torch.float32, *,
                           seed: int = 0, d_model: int = 16, n_heads: int = 4, d_ff: int = 32,
                           batch: int = 3, length: int = 6) -> float:
    """``max |ours - PyTorch's|`` for one layer (module docstring); ``kind`` is ``"encoder"``
    or ``"decoder"``, ``norm_position`` ``"post"`` or ``"pre"``."""
    kind = choice("kind", kind, ("encoder", "decoder"))
    norm_position = choice("norm_position", norm_position, ("post", "pre"))
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    theirs_class, ours_class = ((nn.TransformerEncoderLayer, EncoderLayer) if kind == "encoder"
                                else (nn.TransformerDecoderLayer, DecoderLayer))
    with isolated(seed):
        theirs = theirs_class(d_model, n_heads, d_ff, dropout=0.0, batch_first=True,
                              norm_first=norm_position == "pre", dtype=dtype).eval()
        x = torch.randn(batch, length, d_model, dtype=dtype)
        memory = torch.randn(batch, length + 2, d_model, dtype=dtype)
    ours = ours_class(d_model, n_heads, d_ff, norm_position=norm_position).to(dtype).eval()
    ours.load_state_dict(theirs.state_dict())
    pad = _padding(batch, length)
    with torch.no_grad():
        if kind == "encoder":
            a, b = ours(x, key_padding_mask=pad), theirs(x, src_key_padding_mask=pad)
        else:
            causal, memory_pad = causal_mask(length), _padding(batch, length + 2)
            a = ours(x, memory, tgt_mask=causal, tgt_key_padding_mask=pad, memory_key_padding_mask=memory_pad)
            b = theirs(x, memory, tgt_mask=causal, tgt_key_padding_mask=pad,
                       memory_key_padding_mask=memory_pad, tgt_is_causal=True)
    return float((a - b)[~pad].abs().max())
