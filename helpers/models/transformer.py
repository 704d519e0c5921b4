"""A Transformer encoder layer written out by hand, with the residual options the book studies.

One layer, for ``norm_position``:

* ``"post"`` (Vaswani et al. 2017):  ``x = LN(a x + Attn(x));  x = LN(a x + FFN(x))``
* ``"pre"``  (Xiong et al. 2020):    ``x = a x + Attn(LN(x));  x = a x + FFN(LN(x))``
* ``"none"``:                         ``x = a x + Attn(x);      x = a x + FFN(x)``

with skip scale ``a`` (``alpha``; 1 for the usual layer, ``(2N)^(1/4)`` for DeepNorm) and
the ``a x`` term dropped altogether when ``residual=False``. Parameter names and shapes
match ``torch.nn.TransformerEncoderLayer`` (ReLU, ``batch_first=True``), so weights can
be copied between the two.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._checks import choice, positive_int, real_number

NORM_POSITIONS = ("post", "pre", "none")


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention, ``softmax(Q K^T / sqrt(d_head)) V``."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        d_model, n_heads = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got {d_model} and {n_heads}")
        self.n_heads = n_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, length, d_model = x.shape
        q, k, v = nn.functional.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)

        def heads(t):
            return t.view(batch, length, self.n_heads, -1).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if key_padding_mask is not None:  # True marks padding, as in PyTorch
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(batch, length, d_model))


class EncoderLayer(nn.Module):
    """Self-attention and feed-forward sublayers, each wrapped in Add & Norm (module docstring)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, norm_position: str = "post",
                 residual: bool = True, alpha: float = 1.0, eps: float = 1e-5):
        super().__init__()
        self.norm_position = choice("norm_position", norm_position, NORM_POSITIONS)
        if not isinstance(residual, bool):
            raise TypeError(f"residual must be a bool, got {type(residual).__name__}")
        self.residual = residual
        self.alpha = real_number("alpha", alpha, low=0.0)
        self.self_attn = SelfAttention(d_model, n_heads)
        self.linear1 = nn.Linear(d_model, positive_int("d_ff", d_ff))
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(torch.relu(self.linear1(x)))

    def _sublayer(self, x, fn, norm):
        skip = self.alpha * x if self.residual else 0.0
        if self.norm_position == "pre":
            return skip + fn(norm(x))
        out = skip + fn(x)
        return norm(out) if self.norm_position == "post" else out

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self._sublayer(x, lambda h: self.self_attn(h, key_padding_mask), self.norm1)
        return self._sublayer(x, self.ffn, self.norm2)


class SequenceTransformer(nn.Module):
    """Token embedding + learned positions, ``n_layers`` :class:`EncoderLayer`, a per-token head.

    Pre-LN stacks end with a final LayerNorm, as usual.
    """

    def __init__(self, vocab: int, length: int, d_model: int = 32, n_heads: int = 4,
                 d_ff: int = 64, n_layers: int = 2, *, norm_position: str = "pre",
                 residual: bool = True):
        super().__init__()
        n_layers = positive_int("n_layers", n_layers)
        self.embed = nn.Embedding(positive_int("vocab", vocab, minimum=2), d_model)
        self.position = nn.Parameter(0.02 * torch.randn(positive_int("length", length), d_model))
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, norm_position=norm_position,
                         residual=residual)
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_position == "pre" else nn.Identity()
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.shape[1] > self.position.shape[0]:
            raise ValueError(f"tokens are longer ({tokens.shape[1]}) than length={self.position.shape[0]}")
        h = self.embed(tokens) + self.position[: tokens.shape[1]]
        for layer in self.layers:
            h = layer(h)
        return self.head(self.final_norm(h))
