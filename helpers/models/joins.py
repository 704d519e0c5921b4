"""MLPs whose blocks join a branch to the stream by add or by concatenation.

Each of ``blocks`` blocks has a branch ``F(h) = W2 relu(W1 N(h))`` (``N`` a LayerNorm or
nothing) that keeps its input's width, and joins it to the stream ``h`` by ``join``:

* ``"add"``:            ``h <- h + F(h)``                 width stays ``width``;
* ``"concat-project"``: ``h <- P [h, F(h)]``              ``P`` a linear layer ``2 width -> width``
  (the fair comparison: the same width everywhere, the parameters of ``P`` extra);
* ``"concat-grow"``:    ``h <- [h, F(h)]``                width doubles at every block;
* ``"none"``:           ``h <- F(h)``                     a plain stack, for reference.

A stem maps the input to ``width`` features and a head maps the last stream to the classes.
Weights get He initialisation (:func:`helpers.models.mlp.init_linear_`), the head Xavier's.
The projections are drawn after everything else, so nets drawn from one seed share their
stem, branches and head whatever their join, where their widths agree (every join but
``"concat-grow"``, whose stream and so its branches and head widen block by block). ``P``
starts as ``project_init`` says (bias 0 in each case; the architecture is the same):

* ``"random"``: Xavier's initialisation, which keeps the size of ``[h, F(h)]`` (twice the
  features) at the size of ``h``. The skip path is then ``P_1 h`` with ``P_1`` a random
  matrix, whose gradient ``P_1^T g`` shrinks by about ``sqrt(2/3)`` per block;
* ``"sum"``: ``P = [I, I]``, so ``P [h, F(h)] = h + F(h)``: at initialisation the net *is*
  the add net, and only training can make it different;
* ``"skip"``: ``P = [I, 0]``, so ``P [h, F(h)] = h``: the skip path is the identity and the
  branch is ignored until training grows ``P_2``.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import choice, positive_int
from .layers import LayerNorm, Linear
from .mlp import INITS, init_linear_

JOINS = ("add", "concat-project", "concat-grow", "none")
JOIN_NORMS = ("none", "layer")
PROJECT_INITS = ("random", "sum", "skip")


def init_projection_(layer: nn.Linear, how: str, init: str = "he") -> None:
    """Initialise a projection ``P = [P_1, P_2]`` (``2 w -> w``, ``P_1`` reading the stream
    ``h`` and ``P_2`` the branch ``F(h)``) in place: ``"random"`` (Xavier's, or PyTorch's
    default when ``init`` is ``"pytorch"``), ``"sum"`` (``[I, I]``) or ``"skip"``
    (``[I, 0]``); bias 0 (see the module docstring)."""
    how = choice("project_init", how, PROJECT_INITS)
    w = layer.out_features
    if layer.in_features != 2 * w:
        raise ValueError(f"layer must map 2 w -> w features, got {layer.in_features} -> {w}")
    if how == "random":
        init_linear_(layer, "xavier" if init != "pytorch" else "pytorch")
        return
    eye = torch.eye(w)
    with torch.no_grad():
        layer.weight.copy_(torch.cat([eye, eye if how == "sum" else torch.zeros(w, w)], dim=1))
        layer.bias.zero_()


class JoinedMLP(nn.Module):
    """Stem, ``blocks`` blocks joined by ``join``, head (see the module docstring)."""

    # how P started changes no layer, so nets that differ only in it train as one stack
    stack_labels = ("project_init",)

    def __init__(self, blocks: int, width: int = 32, *, join: str = "add", norm: str = "none",
                 in_features: int = 64, out_features: int = 10, init: str = "he",
                 project_init: str = "random"):
        super().__init__()
        self.blocks, self.width = positive_int("blocks", blocks), positive_int("width", width)
        self.join, self.norm = choice("join", join, JOINS), choice("norm", norm, JOIN_NORMS)
        choice("init", init, INITS)
        self.project_init = choice("project_init", project_init, PROJECT_INITS)
        widths = [width * 2 ** i if join == "concat-grow" else width for i in range(blocks)]
        self.stem = Linear(positive_int("in_features", in_features), width)
        self.norms = nn.ModuleList(LayerNorm(w) if norm == "layer" else nn.Identity() for w in widths)
        self.fc1 = nn.ModuleList(Linear(w, w) for w in widths)
        self.fc2 = nn.ModuleList(Linear(w, w) for w in widths)
        self.project = nn.ModuleList() if join == "concat-project" else None  # filled below
        final = 2 * widths[-1] if join == "concat-grow" else width
        self.head = Linear(final, positive_int("out_features", out_features))
        for layer in (self.stem, *self.fc1, *self.fc2):
            init_linear_(layer, init)
        init_linear_(self.head, "xavier" if init != "pytorch" else "pytorch")
        # The projections are made and drawn last, so that nets of one seed share their stem,
        # branches and head whatever their join, where the widths agree (not concat-grow's);
        # twins: P = [I, I] computes what add does.
        if self.project is not None:
            self.project.extend(Linear(2 * w, w) for w in widths)
            for layer in self.project:
                init_projection_(layer, project_init, init)

    def branch(self, i: int, h: torch.Tensor) -> torch.Tensor:
        """Block ``i``'s branch ``F(h)``."""
        return self.fc2[i](torch.relu(self.fc1[i](self.norms[i](h))))

    def representations(self, x: torch.Tensor, *, through_branches: bool = True) -> list[torch.Tensor]:
        """``[h_0, ..., h_blocks]``: the stem's output and the stream after each block. With
        ``through_branches=False`` the branches' outputs are detached, so a backward pass
        follows only the join's own path from block to block: the identity for add,
        the projection's first half for concat-project."""
        h = self.stem(x)
        out = [h]
        for i in range(self.blocks):
            f = self.branch(i, h)
            if not through_branches:
                f = f.detach()
            if self.join == "add":
                h = h + f
            elif self.join == "none":
                h = f
            else:
                h = torch.cat([h, f], dim=-1)
                if self.project is not None:
                    h = self.project[i](h)
            out.append(h)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.representations(x)[-1])

    def extra_repr(self) -> str:
        extra = f", project_init={self.project_init!r}" if self.project is not None else ""
        return f"blocks={self.blocks}, width={self.width}, join={self.join!r}, norm={self.norm!r}{extra}"
