"""A chain of one-layer blocks, plain or residual: the nets chapter 2 sends signals through.

A :class:`LayerChain` of ``layers`` = L has a stem, L hidden layers and a head::

    h_0 = W_0 x
    h_l = W_l relu(N_l(h_{l-1}))              (plain)
    h_l = h_{l-1} + W_l relu(N_l(h_{l-1}))    (residual)
    y   = W_out relu(N_out(h_L))

with ``N`` a BatchNorm, a LayerNorm or nothing. Each hidden layer is one weight matrix, so
"depth L" counts exactly the matrices a signal passes through, and the plain chain is the
textbook stack Linear -> (Norm) -> ReLU -> Linear ... of mean-field theory and of Balduzzi
et al.'s shattered-gradient experiments. As in chapter 1, the plain chain is the residual
one with its skips switched off (:meth:`LayerChain.twin`): both have the same weights.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .._checks import choice, positive_int
from .mlp import INITS, NORMS, _norm, init_linear_

KINDS = ("plain", "residual")


class LayerChain(nn.Module):
    """Stem, ``layers`` one-layer blocks (plain or residual), head (see the module docstring).

    ``init`` is ``"he"`` (the default: Var W = 2/fan_in, zero biases, which keeps a plain
    ReLU chain's signal at a constant size), ``"xavier"`` or ``"pytorch"``.
    """

    def __init__(self, layers: int, width: int = 64, *, kind: str = "residual", in_features: int = 64,
                 out_features: int = 10, norm: str = "none", init: str = "he"):
        super().__init__()
        self.layers = positive_int("layers", layers)
        self.width = positive_int("width", width)
        self.kind = choice("kind", kind, KINDS)
        self.norm = choice("norm", norm, NORMS)
        choice("init", init, INITS)
        self.stem = nn.Linear(positive_int("in_features", in_features), width)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))
        self.norms = nn.ModuleList(_norm(norm, width) for _ in range(layers))
        self.head_norm = _norm(norm, width)
        self.head = nn.Linear(width, positive_int("out_features", out_features))
        for layer in (self.stem, *self.hidden, self.head):
            init_linear_(layer, init)

    def representations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``[h_0, h_1, ..., h_L]``: the stem's output and each hidden layer's."""
        h = self.stem(x)
        out = [h]
        for norm, layer in zip(self.norms, self.hidden):
            update = layer(torch.relu(norm(h)))
            h = h + update if self.kind == "residual" else update
            out.append(h)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.head_norm(self.representations(x)[-1])))

    def twin(self) -> LayerChain:
        """A copy with the same parameters and the other kind (plain <-> residual)."""
        other = copy.deepcopy(self)
        other.kind = "plain" if self.kind == "residual" else "residual"
        return other

    def extra_repr(self) -> str:
        return f"layers={self.layers}, width={self.width}, kind={self.kind!r}, norm={self.norm!r}"
