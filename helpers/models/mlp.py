"""Plain and residual multilayer perceptrons that differ only in the skip connection.

A *block* holds two linear layers. With ``residual=True`` it computes

* post-activation (He et al. 2015):  ``y = relu(x + s * N2(W2 relu(N1(W1 x))))``
* pre-activation (He et al. 2016):   ``y = x + s * W2 relu(N2(W1 relu(N1(x))))``

where ``N`` is the chosen normalisation and ``s`` the branch scale. With
``residual=False`` the ``x +`` is dropped and nothing else changes, so a plain net and
its residual twin have exactly the same parameters.

A :class:`DeepMLP` of depth ``L`` has a stem layer, ``(L - 2) / 2`` blocks and a head
layer: ``L`` weight layers in all, the MLP analogue of He et al.'s ``6n + 2`` recipe.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .._checks import choice, positive_int, real_number
from .layers import BatchNorm1d, LayerNorm, Linear, scaled

NORMS = ("none", "batch", "layer")
ORDERS = ("post", "pre")
INITS = ("he", "xavier", "pytorch")
# How figures and explorers name them.
INIT_NAMES = {"he": "He init", "xavier": "Xavier init", "pytorch": "PyTorch's default init"}


def _norm(kind: str, width: int) -> nn.Module:
    if kind == "batch":
        return BatchNorm1d(width)
    if kind == "layer":
        return LayerNorm(width)
    return nn.Identity()


def init_linear_(layer: nn.Linear, init: str) -> None:
    """Initialise ``layer`` in place: ``"he"`` (Var W = 2/fan_in), ``"xavier"``
    (Var W = 2/(fan_in + fan_out)) or ``"pytorch"`` (PyTorch's default, Var W = 1/(3 fan_in)).
    Biases start at 0 for He and Xavier."""
    choice("init", init, INITS)
    if init == "pytorch":
        layer.reset_parameters()
        return
    if init == "he":
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    else:
        nn.init.xavier_normal_(layer.weight)
    nn.init.zeros_(layer.bias)


class Block(nn.Module):
    """Two linear layers with an optional identity skip around them (see module docstring)."""

    def __init__(self, width: int, *, residual: bool = True, norm: str = "batch",
                 order: str = "post", branch_scale: float = 1.0, init: str = "he",
                 zero_init_branch: bool = False, hidden: int | None = None):
        super().__init__()
        self.width = positive_int("width", width)
        # The width between the two layers (default: ``width``). With ``2 * width`` a plain
        # post-activation branch can return any input unchanged: x = relu(x) - relu(-x).
        self.hidden = self.width if hidden is None else positive_int("hidden", hidden)
        if not isinstance(residual, bool):
            raise TypeError(f"residual must be a bool, got {type(residual).__name__}")
        self.residual = residual
        self.norm = choice("norm", norm, NORMS)
        self.order = choice("order", order, ORDERS)
        self.branch_scale = real_number("branch_scale", branch_scale)
        self.fc1, self.fc2 = Linear(width, self.hidden), Linear(self.hidden, width)
        # The skip's factor: 1 for a net on its own, unless dialled (helpers.experiments.dial).
        # In a stack of nets that mixes plain and residual members (helpers.stack), a plain
        # member's is 0.
        self.skip_scale = 1.0
        # post: N1 follows fc1 (hidden units), N2 follows fc2; pre: N1 acts on the input, N2 on fc1's output
        if self.order == "post":
            self.norm1, self.norm2 = _norm(norm, self.hidden), _norm(norm, width)
        else:
            self.norm1, self.norm2 = _norm(norm, width), _norm(norm, self.hidden)
        for layer in (self.fc1, self.fc2):
            init_linear_(layer, init)
        if zero_init_branch:
            nn.init.zeros_(self.fc2.weight)
            nn.init.zeros_(self.fc2.bias)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        """The residual branch ``F(x)`` (already multiplied by the branch scale)."""
        if self.order == "post":
            h = self.norm2(self.fc2(torch.relu(self.norm1(self.fc1(x)))))
        else:
            h = torch.relu(self.norm1(x))
            h = self.fc2(torch.relu(self.norm2(self.fc1(h))))
        # A scale of exactly 1 is skipped: the same product, one operation less.
        return h if self.branch_scale == 1.0 else self.branch_scale * h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.branch(x)
        if self.residual:
            h = scaled(self.skip_scale, x) + h
        return torch.relu(h) if self.order == "post" else h

    def stack_settings(self) -> dict:
        """The attributes :class:`helpers.stack.Stack` gives one forward pass of a stack of
        nets, with each member's value: the skip on, scaled by 1 (residual) or 0 (plain)."""
        return {"residual": True, "skip_scale": self.skip_scale if self.residual else 0.0}

    stack_activation_dims = 2  # (batch, width): the settings' shape in a stack is (members, 1, 1)

    def extra_repr(self) -> str:
        return (f"width={self.width}, hidden={self.hidden}, residual={self.residual}, norm={self.norm!r}, "
                f"order={self.order!r}, branch_scale={self.branch_scale}")


def blocks_for_depth(depth: int) -> int:
    """Number of two-layer blocks in a net of ``depth`` weight layers: ``(depth - 2) / 2``."""
    depth = positive_int("depth", depth, minimum=4)
    if depth % 2:
        raise ValueError(f"depth must be even (stem + 2 layers per block + head), got {depth}")
    return (depth - 2) // 2


class DeepMLP(nn.Module):
    """Stem, ``(depth - 2) / 2`` blocks, head: ``depth`` weight layers in all.

    ``kind`` is ``"plain"`` or ``"residual"``; every other option is passed to each
    :class:`Block`. ``forward(x, skip=...)`` deletes the listed blocks at test time
    (their input passes straight through), as in Veit et al.'s lesion study.
    """

    def __init__(self, depth: int, width: int = 32, *, kind: str = "residual",
                 in_features: int = 64, n_classes: int = 10, norm: str = "batch",
                 order: str = "post", branch_scale: float = 1.0, init: str = "he",
                 zero_init_branch: bool = False):
        super().__init__()
        n_blocks = blocks_for_depth(depth)
        self.depth, self.kind = depth, choice("kind", kind, ("plain", "residual"))
        width = positive_int("width", width)
        self.order = choice("order", order, ORDERS)
        self.stem = Linear(positive_int("in_features", in_features), width)
        init_linear_(self.stem, init)
        self.stem_norm = _norm(choice("norm", norm, NORMS), width)
        self.blocks = nn.ModuleList(
            Block(width, residual=kind == "residual", norm=norm, order=order,
                  branch_scale=branch_scale, init=init, zero_init_branch=zero_init_branch)
            for _ in range(n_blocks)
        )
        # Pre-activation nets end with a final normalisation and ReLU before the head.
        self.head_norm = _norm(norm, width) if order == "pre" else nn.Identity()
        self.head = Linear(width, positive_int("n_classes", n_classes, minimum=2))
        init_linear_(self.head, "xavier" if init != "pytorch" else "pytorch")

    stack_labels = ("kind",)  # describes the net, does not enter forward: a stack may mix kinds

    def stem_output(self, x: torch.Tensor) -> torch.Tensor:
        """The input of the first block: ``relu(N(W_stem x))``."""
        return torch.relu(self.stem_norm(self.stem(x)))

    def features(self, x: torch.Tensor, skip=()) -> torch.Tensor:
        skip = set(skip)
        bad = [i for i in skip if not (isinstance(i, int) and 0 <= i < len(self.blocks))]
        if bad:
            raise ValueError(f"skip must list block indices in [0, {len(self.blocks)}), got {bad}")
        h = self.stem_output(x)
        for i, block in enumerate(self.blocks):
            if i not in skip:
                h = block(h)
        if self.order == "pre":
            h = torch.relu(self.head_norm(h))
        return h

    def forward(self, x: torch.Tensor, skip=()) -> torch.Tensor:
        return self.head(self.features(x, skip))

    def linear_layers(self) -> list[tuple[str, nn.Linear]]:
        """Every weight layer with its name, in forward order (stem, blocks..., head)."""
        return [(n, m) for n, m in self.named_modules() if isinstance(m, nn.Linear)]

    def twin(self) -> DeepMLP:
        """A copy with the same parameters and the skip connections switched
        (plain <-> residual)."""
        other = copy.deepcopy(self)
        other.kind = "plain" if self.kind == "residual" else "residual"
        for block in other.blocks:
            block.residual = other.kind == "residual"
        return other


def stack_twins(n_blocks: int, width: int = 32, **block_options) -> tuple[nn.Sequential, nn.Sequential]:
    """A stack of ``n_blocks`` plain :class:`Block` s and its residual twin, with identical parameters.

    ``block_options`` (``norm``, ``order``, ``init``, ``branch_scale``, ...) go to every
    block. Returns ``(plain, residual)``; the residual stack is drawn first, as in
    :meth:`DeepMLP.twin`.
    """
    n_blocks = positive_int("n_blocks", n_blocks)
    if "residual" in block_options:
        raise TypeError("stack_twins builds both kinds; do not pass residual=")
    residual = nn.Sequential(*(Block(width, residual=True, **block_options) for _ in range(n_blocks)))
    plain = copy.deepcopy(residual)
    for block in plain:
        block.residual = False
    return plain, residual
