"""A plain chain with a concatenated ReLU, and Balduzzi et al.'s *looks-linear* initialisation.

The concatenated ReLU (CReLU) of Shang et al. keeps both halves of a signal,
``crelu(h) = [relu(h), relu(-h)]``, so each layer's input is twice as wide as the signal.
A :class:`CReLUChain` of ``layers`` = L is chapter 2's plain chain
(:class:`helpers.models.chain.LayerChain`) with that non-linearity::

    h_0 = W_0 x
    h_l = W_l crelu(N_l(h_{l-1}))       W_l: width x (2 width)
    y   = W_out crelu(N_out(h_L))

with ``N`` a BatchNorm, a LayerNorm or nothing. There is no skip connection.

Balduzzi et al. (2017) initialise such a net *looks-linear*: each weight matrix that reads a
CReLU is drawn as ``[A, -A]``, the right half the mirror image of the left, so that
``[A, -A] crelu(h) = A relu(h) - A relu(-h) = A h``. Every layer is then linear, and so is
the whole net: its gradient with respect to the input is the same at every input, and
cannot shatter. Training moves the two halves apart and the net becomes non-linear.

Here, as in Balduzzi et al., the left half ``A`` of each such matrix is drawn orthogonal
(``torch.nn.init.orthogonal_``, gain 1: orthonormal rows), with zero biases. A row of
``[A, -A]`` then has squared norm 2, what He initialisation gives on average to a row of a
layer with ``2 width`` inputs (``2 width`` weights of variance ``1 / width``). The unmirrored
net keeps the same ``A`` and draws its right half ``B`` as an independent orthogonal matrix
(rows of squared norm 2 again), so that a mirrored net (:meth:`CReLUChain.mirror`) and the net
it came from differ in the right halves only. A product of 50 Gaussian matrices is badly
conditioned; a product of orthogonal ones is not. The stem reads no CReLU and keeps He
initialisation. A hidden layer has ``2 width^2``
weights against a ReLU chain's ``width^2``: at ``width`` = 46 a CReLU chain has about as
many parameters as a ReLU chain of 64 units (:func:`matched_width`).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from .._checks import choice, positive_int, real_number
from .layers import Linear
from .mlp import NORMS, _norm


def crelu(h: torch.Tensor) -> torch.Tensor:
    """The concatenated ReLU: ``[relu(h), relu(-h)]`` along the last axis (twice as wide)."""
    return torch.cat([torch.relu(h), torch.relu(-h)], dim=-1)


def matched_width(width: int, layers: int, *, in_features: int = 64, out_features: int = 10) -> int:
    """The width of a :class:`CReLUChain` whose parameter count is closest to that of a
    ReLU :class:`~helpers.models.chain.LayerChain` of ``width`` units (with the same
    normalisation's parameters, two per unit per normalised layer)."""
    width, layers = positive_int("width", width), positive_int("layers", layers)

    def count(w: int, fan: int) -> int:  # stem, hidden layers, head, norms (batch or layer)
        return (in_features + 1) * w + layers * (fan * w + w) + (fan + 1) * out_features + 2 * w * (layers + 1)

    return min(range(1, width + 1), key=lambda w: abs(count(w, 2 * w) - count(width, width)))


class CReLUChain(nn.Module):
    """Stem, ``layers`` CReLU layers, head, without skips (see the module docstring).

    ``mirrored=True`` (the default) gives Balduzzi et al.'s looks-linear initialisation;
    ``mirrored=False`` draws both halves of every weight matrix that reads a CReLU as
    independent orthogonal matrices, a net that is non-linear from the start.
    """

    def __init__(self, layers: int, width: int = 64, *, in_features: int = 64, out_features: int = 10,
                 norm: str = "none", mirrored: bool = True):
        super().__init__()
        self.layers = positive_int("layers", layers)
        self.width = positive_int("width", width)
        self.norm = choice("norm", norm, NORMS)
        if not isinstance(mirrored, bool):
            raise TypeError(f"mirrored must be a bool, got {type(mirrored).__name__} {mirrored!r}")
        self.stem = Linear(positive_int("in_features", in_features), width)
        self.hidden = nn.ModuleList(Linear(2 * width, width) for _ in range(layers))
        self.norms = nn.ModuleList(_norm(norm, width) for _ in range(layers))
        self.head_norm = _norm(norm, width)
        self.head = Linear(2 * width, positive_int("out_features", out_features))
        nn.init.kaiming_normal_(self.stem.weight, nonlinearity="relu")  # Var W = 2 / fan_in
        with torch.no_grad():
            for layer in (*self.hidden, self.head):  # [A, B], A and B orthogonal (module docstring)
                for half in (slice(None, width), slice(width, None)):
                    layer.weight[:, half] = nn.init.orthogonal_(torch.empty(layer.out_features, width))
        for layer in (self.stem, *self.hidden, self.head):
            nn.init.zeros_(layer.bias)
        self.mirrored = False
        if mirrored:
            self.mirror_()

    @property
    def kind(self) -> str:
        """How figures and results name the net, ``"looks-linear"`` or ``"CReLU"``."""
        return "looks-linear" if self.mirrored else "CReLU"

    def mirror_(self) -> CReLUChain:
        """Overwrite the right half of every matrix that reads a CReLU with minus its left
        half (the looks-linear initialisation), in place; returns the net."""
        with torch.no_grad():
            for layer in (*self.hidden, self.head):
                left = layer.weight[..., : self.width]
                layer.weight[..., self.width:] = -left
        self.mirrored = True
        return self

    def mirror(self) -> CReLUChain:
        """A copy with the looks-linear initialisation: the same left halves, the right halves
        their mirror image (:meth:`mirror_`)."""
        return copy.deepcopy(self).mirror_()

    def toward_mirror(self, gap: float) -> CReLUChain:
        """A copy of this unmirrored net part of the way to its looks-linear copy: each right
        half ``B`` replaced by ``-cos(t) A + sin(t) B`` (``A`` the left half), with ``t`` set so
        that two independent halves of equal size sit ``gap`` from the mirror
        (``gap = 2 sin(t / 2)``: 0 is the mirror, ``sqrt(2)`` this net). The weights keep
        their variance all the way; :meth:`mirror_gap` measures the copy's actual gap."""
        if self.mirrored:
            raise ValueError("toward_mirror starts from an unmirrored net (mirrored=False)")
        gap = real_number("gap", gap, low=0.0, high=math.sqrt(2))
        turn = 2 * math.asin(gap / 2)
        other = copy.deepcopy(self)
        with torch.no_grad():
            for layer in (*other.hidden, other.head):
                left, right = layer.weight[..., : self.width], layer.weight[..., self.width:]
                layer.weight[..., self.width:] = -math.cos(turn) * left + math.sin(turn) * right
        other.mirrored = gap == 0
        return other

    def representations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``[h_0, h_1, ..., h_L]``: the stem's output and each hidden layer's."""
        h = self.stem(x)
        out = [h]
        for norm, layer in zip(self.norms, self.hidden):
            h = layer(crelu(norm(h)))
            out.append(h)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(crelu(self.head_norm(self.representations(x)[-1])))

    def mirror_gap(self) -> float:
        """How far training has moved the net from looking linear: ``||W_right + W_left||``
        over ``||W_left||``, summed over every matrix that reads a CReLU (0 when mirrored)."""
        with torch.no_grad():
            weights = [m.weight for m in (*self.hidden, self.head)]
            gap = sum(float((w[..., self.width:] + w[..., : self.width]).pow(2).sum()) for w in weights)
            size = sum(float(w[..., : self.width].pow(2).sum()) for w in weights)
        return math.sqrt(gap / size)

    def extra_repr(self) -> str:
        return f"layers={self.layers}, width={self.width}, norm={self.norm!r}, kind={self.kind!r}"
