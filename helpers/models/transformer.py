"""Transformer encoder and decoder layers written out by hand, with the residual options the book studies.

Every sublayer (self-attention, cross-attention, feed-forward) is wrapped in the same
Add & Norm step, for ``norm_position``:

* ``"post"`` (Vaswani et al. 2017):  ``x = LN(a x + Sublayer(x))``
* ``"pre"``  (Xiong et al. 2020):    ``x = a x + Sublayer(LN(x))``
* ``"none"``:                         ``x = a x + Sublayer(x)``

with skip scale ``a`` (``alpha``; 1 for the usual layer, ``(2N)^(1/4)`` for DeepNorm, see
:func:`apply_deepnorm_`) and the ``a x`` term dropped altogether when ``residual=False``.
With ``rezero=True`` (Bachlechner et al. 2020) every sublayer's output is multiplied by a
learned scalar gate that starts at 0, ``x = a x + g Sublayer(x)``, so each layer is exactly
the identity at initialisation. Parameter names and shapes
match ``torch.nn.TransformerEncoderLayer`` and ``torch.nn.TransformerDecoderLayer`` (ReLU,
``batch_first=True``), so weights can be copied between ours and PyTorch's with
``load_state_dict``; a unit test checks that the outputs agree, masks included.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import choice, positive_int, real_number
from .layers import Embedding, LayerNorm, Linear, linear, scaled

NORM_POSITIONS = ("post", "pre", "none")


def causal_mask(length: int) -> torch.Tensor:
    """``(length, length)`` bool mask, True above the diagonal: position ``i`` may not attend to ``j > i``.

    The same positions as ``nn.Transformer.generate_square_subsequent_mask`` marks with -inf.
    """
    length = positive_int("length", length)
    return torch.ones(length, length, dtype=torch.bool).triu(1)


def _additive(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """A bool mask (True = may not attend) or a float mask (added to the scores) as a float mask."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))


class Attention(nn.Module):
    """Multi-head scaled dot-product attention, ``softmax(Q K^T / sqrt(d_head) + mask) V``.

    Queries come from ``x``, keys and values from ``memory`` (``x`` itself for
    self-attention). ``attn_mask`` is ``(query length, key length)``, bool (True: may not
    attend) or float (added to the scores); ``key_padding_mask`` is ``(batch, key length)``,
    True at padding, as in PyTorch.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        d_model, n_heads = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got {d_model} and {n_heads}")
        self.n_heads = n_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = Linear(d_model, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, *,
                attn_mask: torch.Tensor | None = None,
                key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        d_model = x.shape[-1]  # x is (batch, length, d_model), or (members, batch, ...) in a stack
        if memory is None:  # self-attention: queries, keys and values from one product
            q, k, v = linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        else:
            w_q, w_kv = self.in_proj_weight.split([d_model, 2 * d_model], dim=-2)
            b_q, b_kv = self.in_proj_bias.split([d_model, 2 * d_model], dim=-1)
            q = linear(x, w_q, b_q)
            k, v = linear(memory, w_kv, b_kv).chunk(2, dim=-1)

        def heads(t):  # (..., length, d_model) -> (sequences, heads, length, d_head)
            return t.unflatten(-1, (self.n_heads, -1)).transpose(-3, -2).flatten(0, -4)

        mask = None  # added to the scores: -inf where a query may not attend
        if attn_mask is not None:
            mask = _additive(attn_mask, x.dtype)
        if key_padding_mask is not None:
            padding = _additive(key_padding_mask, x.dtype)[:, None, None, :]
            mask = padding if mask is None else mask + padding
        # softmax(Q K^T / sqrt(d_head) + mask) V, as one fused PyTorch operation
        out = nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
        return self.out_proj(out.transpose(-3, -2).reshape(x.shape))


class _Layer(nn.Module):
    """What encoder and decoder layers share: the options, the FFN and the Add & Norm step."""

    def __init__(self, d_model: int, d_ff: int, norm_position: str, residual: bool, alpha: float,
                 rezero: bool, n_sublayers: int):
        super().__init__()
        self.norm_position = choice("norm_position", norm_position, NORM_POSITIONS)
        if not isinstance(residual, bool):
            raise TypeError(f"residual must be a bool, got {type(residual).__name__}")
        self.residual = residual
        self.alpha = real_number("alpha", alpha, low=0.0)
        self.linear1 = Linear(d_model, positive_int("d_ff", d_ff))
        self.linear2 = Linear(d_ff, d_model)
        if not isinstance(rezero, bool):
            raise TypeError(f"rezero must be a bool, got {type(rezero).__name__}")
        # ReZero's gates, one per sublayer, start at 0 (a parameter only when asked for, so
        # that the state dict still matches PyTorch's layers otherwise)
        self.rezero_gates = nn.Parameter(torch.zeros(n_sublayers)) if rezero else None

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        """The position-wise feed-forward net, ``W2 relu(W1 x + b1) + b2``."""
        return self.linear2(torch.relu(self.linear1(x)))

    def _sublayer(self, x, fn, norm, index: int):
        """Sublayer number ``index`` of the layer, ``fn``, wrapped in Add & Norm (see the module docstring)."""
        skip = scaled(self.alpha, x) if self.residual else 0.0  # alpha * x (x itself when alpha is 1)
        # (a stack of nets gives each member its own gate: hence the trailing axes)
        gate = 1.0 if self.rezero_gates is None else self.rezero_gates[..., index, None, None, None]
        if self.norm_position == "pre":
            return skip + scaled(gate, fn(norm(x)))
        out = skip + scaled(gate, fn(x))
        return norm(out) if self.norm_position == "post" else out

    def stack_settings(self) -> dict:
        """The attributes :class:`helpers.stack.Stack` gives one forward pass of a stack of
        nets, with each member's value: the skip on, scaled by ``alpha`` (0 for a plain layer)."""
        return {"residual": True, "alpha": self.alpha if self.residual else 0.0}

    stack_activation_dims = 3  # (batch, length, d_model): in a stack the settings are (members, 1, 1, 1)


class EncoderLayer(_Layer):
    """Self-attention, then the FFN, each wrapped in Add & Norm (module docstring)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, norm_position: str = "post",
                 residual: bool = True, alpha: float = 1.0, rezero: bool = False, eps: float = 1e-5):
        super().__init__(d_model, d_ff, norm_position, residual, alpha, rezero, 2)
        self.self_attn = Attention(d_model, n_heads)
        self.norm1 = LayerNorm(d_model, eps=eps)
        self.norm2 = LayerNorm(d_model, eps=eps)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend(h):
            return self.self_attn(h, attn_mask=attn_mask, key_padding_mask=key_padding_mask)

        x = self._sublayer(x, attend, self.norm1, 0)
        return self._sublayer(x, self.ffn, self.norm2, 1)


class DecoderLayer(_Layer):
    """Masked self-attention, cross-attention to the encoder's output, then the FFN: three
    Add & Norm steps (module docstring)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, norm_position: str = "post",
                 residual: bool = True, alpha: float = 1.0, rezero: bool = False, eps: float = 1e-5):
        super().__init__(d_model, d_ff, norm_position, residual, alpha, rezero, 3)
        self.self_attn = Attention(d_model, n_heads)
        self.multihead_attn = Attention(d_model, n_heads)
        self.norm1 = LayerNorm(d_model, eps=eps)
        self.norm2 = LayerNorm(d_model, eps=eps)
        self.norm3 = LayerNorm(d_model, eps=eps)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, *,
                tgt_mask: torch.Tensor | None = None,
                tgt_key_padding_mask: torch.Tensor | None = None,
                memory_key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend_to_self(h):  # the causal mask keeps position i from seeing j > i
            return self.self_attn(h, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask)

        def attend_to_memory(h):  # queries from the decoder, keys and values from the encoder
            return self.multihead_attn(h, memory, key_padding_mask=memory_key_padding_mask)

        x = self._sublayer(x, attend_to_self, self.norm1, 0)
        x = self._sublayer(x, attend_to_memory, self.norm2, 1)
        return self._sublayer(x, self.ffn, self.norm3, 2)


class SequenceTransformer(nn.Module):
    """Token embedding + learned positions, ``n_layers`` :class:`EncoderLayer`, a per-token head.

    Pre-LN stacks end with a final LayerNorm, as usual; ``rezero`` gates every sublayer
    (module docstring). Token embeddings start as
    ``N(0, 1)`` (PyTorch's default) and positions as ``N(0, position_std^2)``.
    """

    def __init__(self, vocab: int, length: int, d_model: int = 32, n_heads: int = 4,
                 d_ff: int = 64, n_layers: int = 2, *, norm_position: str = "pre",
                 residual: bool = True, rezero: bool = False, position_std: float = 0.02):
        super().__init__()
        n_layers = positive_int("n_layers", n_layers)
        position_std = real_number("position_std", position_std, low=0.0)
        self.embed = Embedding(positive_int("vocab", vocab, minimum=2), d_model)
        self.position = nn.Parameter(position_std * torch.randn(positive_int("length", length), d_model))
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, norm_position=norm_position,
                         residual=residual, rezero=rezero)
            for _ in range(n_layers)
        )
        self.final_norm = LayerNorm(d_model) if norm_position == "pre" else nn.Identity()
        self.head = Linear(d_model, vocab)

    def embedding(self, tokens: torch.Tensor) -> torch.Tensor:
        """The stream entering the first layer: token embedding plus position."""
        length = tokens.shape[-1]
        if length > self.position.shape[-2]:
            raise ValueError(f"tokens are longer ({length}) than length={self.position.shape[-2]}")
        # positions (length, d_model), or (members, length, d_model) in a stack, meet every sequence
        return self.embed(tokens) + self.position[..., :length, :].unsqueeze(-3)

    def forward(self, tokens: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, length, vocab)``; ``h`` replaces the embedding (to measure its gradient)."""
        h = self.embedding(tokens) if h is None else h
        for layer in self.layers:
            h = layer(h)
        return self.head(self.final_norm(h))


def deepnorm_constants(n_layers: int) -> tuple[float, float]:
    """DeepNorm's ``(alpha, beta)`` for an encoder of ``n_layers`` layers (Wang et al. 2022):
    ``alpha = (2N)^(1/4)`` scales the skip, ``beta = (8N)^(-1/4)`` the initial weights."""
    n = positive_int("n_layers", n_layers)
    return (2 * n) ** 0.25, (8 * n) ** -0.25


@torch.no_grad()
def apply_deepnorm_(model: SequenceTransformer) -> SequenceTransformer:
    """Turn a Post-LN :class:`SequenceTransformer` into a DeepNorm one, in place.

    Every layer becomes ``x = LN(alpha x + Sublayer(x))`` with ``alpha = (2N)^(1/4)``, and
    the weights that write into the residual stream's update, the attention's value and
    output projections and both FFN layers, are multiplied by ``beta = (8N)^(-1/4)``
    (:func:`deepnorm_constants`). Queries, keys, biases and LayerNorms are left alone: the
    queries and keys only set where attention looks, not how large its output is.
    """
    if not isinstance(model, SequenceTransformer):
        raise TypeError(f"model must be a SequenceTransformer, got {type(model).__name__}")
    if model.layers[0].norm_position != "post":
        raise ValueError(f"DeepNorm is a Post-LN scheme; the model's norm_position is "
                         f"{model.layers[0].norm_position!r}")
    alpha, beta = deepnorm_constants(len(model.layers))
    for layer in model.layers:
        layer.alpha = alpha
        d_model = layer.linear2.out_features
        layer.self_attn.in_proj_weight[2 * d_model:].mul_(beta)  # W_v; W_q and W_k unscaled
        for writer in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
            writer.weight.mul_(beta)
    return model
