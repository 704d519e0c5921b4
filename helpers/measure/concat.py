"""What joining a sublayer's output to its input costs, by add or by concatenation.

For a stream of width ``d`` and a stack of ``N`` sublayers, each sublayer maps its input
width ``w`` to ``w`` (a feed-forward sublayer ``w -> ratio * w -> w``, as in a Transformer,
or one linear layer ``w -> w``), and the join is

* add:     ``x <- x + F(x)``        the width stays ``d`` at every layer;
* concat:  ``x <- [x, F(x)]``       the width doubles: layer ``n`` reads ``d 2^(n-1)`` features
  and writes ``d 2^n``.

:func:`join_costs` counts, for layers ``1..N``, the widths, each layer's parameters (weights
and biases), the running total and the floating-point operations per token of each layer's
matrix products (``2 * inputs * outputs`` for each weight matrix, as
``torch.utils.flop_counter`` counts them): a feed-forward sublayer of width ``w`` has
``2 ratio w^2 + (ratio + 1) w`` parameters and ``4 ratio w^2`` FLOPs per token, so a
concatenating stack pays four times more at each layer than the one before.
:func:`measured_costs` counts the same for real ``torch.nn`` modules, for a check.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from .._checks import choice, positive_int

JOINS = ("add", "concat")
SUBLAYERS = ("ffn", "linear")


def sublayer(width: int, kind: str = "ffn", ratio: int = 4) -> nn.Module:
    """A sublayer that maps ``width`` features to ``width``: ``"ffn"`` is
    Linear(w, ratio w) -> ReLU -> Linear(ratio w, w); ``"linear"`` one Linear(w, w)."""
    width, ratio = positive_int("width", width), positive_int("ratio", ratio)
    choice("kind", kind, SUBLAYERS)
    if kind == "linear":
        return nn.Linear(width, width)
    return nn.Sequential(nn.Linear(width, ratio * width), nn.ReLU(), nn.Linear(ratio * width, width))


def _layer_costs(width: int, kind: str, ratio: int) -> tuple[int, int]:
    """``(parameters, FLOPs per token)`` of one sublayer of ``width``."""
    if kind == "linear":
        return width * width + width, 2 * width * width
    return 2 * ratio * width * width + (ratio + 1) * width, 4 * ratio * width * width


def join_costs(d_model: int, layers: int, *, join: str = "concat", kind: str = "ffn",
               ratio: int = 4) -> list[dict[str, int]]:
    """One row per layer ``n = 1..layers``: ``layer``, ``width_in``, ``width_out``,
    ``params`` (this layer's), ``total_params`` (layers 1..n) and ``flops_per_token``, for a
    stack that joins by ``join`` (see the module docstring). Exact integers."""
    d_model, layers = positive_int("d_model", d_model), positive_int("layers", layers)
    choice("join", join, JOINS)
    choice("kind", kind, SUBLAYERS)
    ratio = positive_int("ratio", ratio)
    rows, total = [], 0
    for n in range(1, layers + 1):
        width = d_model if join == "add" else d_model * 2 ** (n - 1)
        params, flops = _layer_costs(width, kind, ratio)
        total += params
        rows.append({"layer": n, "width_in": width, "width_out": width if join == "add" else 2 * width,
                     "params": params, "total_params": total, "flops_per_token": flops})
    return rows


class _Joined(nn.Module):
    """A stack of sublayers joined by add or concat, for :func:`measured_costs`."""

    def __init__(self, d_model: int, layers: int, join: str, kind: str, ratio: int):
        super().__init__()
        self.join = join
        widths = [d_model if join == "add" else d_model * 2 ** n for n in range(layers)]
        self.sublayers = nn.ModuleList(sublayer(w, kind, ratio) for w in widths)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for f in self.sublayers:
            x = x + f(x) if self.join == "add" else torch.cat([x, f(x)], dim=-1)
        return x


def measured_costs(d_model: int, layers: int, *, join: str = "concat", kind: str = "ffn", ratio: int = 4,
                   tokens: int = 3) -> dict[str, int]:
    """Build the stack as ``torch.nn`` modules and count what :func:`join_costs` predicts:
    ``params`` (``numel`` of every parameter), ``flops_per_token`` (PyTorch's
    ``FlopCounterMode`` on ``tokens`` tokens, divided by ``tokens``) and ``width_out`` (the
    output's last dimension)."""
    choice("join", join, JOINS)
    model = _Joined(positive_int("d_model", d_model), positive_int("layers", layers), join, kind,
                    positive_int("ratio", ratio))
    x = torch.zeros(positive_int("tokens", tokens), d_model)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        out = model(x)
    return {"params": sum(p.numel() for p in model.parameters()),
            "flops_per_token": counter.get_total_flops() // tokens, "width_out": out.shape[-1]}
