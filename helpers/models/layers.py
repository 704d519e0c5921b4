"""PyTorch's layers, able to run a stack of nets as well as one net.

:class:`helpers.stack.Stack` trains ``E`` nets of one shape at once by calling the model's
own ``forward`` with every parameter stacked along a new leading *member* axis
(``torch.func.stack_module_state``): a linear weight of shape
``(out, in)`` becomes ``(E, out, in)`` and the activations ``(batch, features)`` become
``(E, batch, features)``. Element-wise operations (ReLU, the skip's addition) broadcast over
that axis by themselves; the four layers below are the ones whose parameters meet the
activations in a way that does not. Each is PyTorch's own layer, with the same parameters
and state dict, and falls back to PyTorch's ``forward`` for one net, so a net built from them
computes exactly what it would with ``torch.nn``. With a member axis, member ``e``'s output
depends on member ``e``'s parameters and inputs only:

* :class:`Linear`: ``x_e W_e^T + b_e``, one batched matrix product (``torch.baddbmm``);
* :class:`BatchNorm1d`: each member normalises over its own batch and keeps its own
  running statistics (one ``batch_norm`` over ``E x features`` channels);
* :class:`LayerNorm`: normalise each vector, then each member's own gain and bias;
* :class:`Embedding`: each member looks tokens up in its own table.

``torch.func.vmap`` over ``torch.func.functional_call`` would batch PyTorch's layers with no
such help; on a CPU, at this course's sizes, it makes a training step 1.3 to 2 times slower
(measured in ``tests/test_stack.py``'s module docstring), so the course uses these instead.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def scaled(scale: float | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``scale * x``, or ``x`` itself when ``scale`` is the number 1 (one operation less, the
    same value): a net alone has a skip scale of 1, a stack of nets one per member."""
    return x if isinstance(scale, (int, float)) and scale == 1 else scale * x


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x W^T + b``, as ``F.linear``; with a member axis (``weight`` of shape ``(E, out, in)``,
    ``x`` of shape ``(E, ..., in)``) each member's own map."""
    if weight.dim() == 2:
        return F.linear(x, weight, bias)
    members = weight.shape[0]
    flat = x.reshape(members, -1, x.shape[-1])
    if bias is None:
        out = torch.bmm(flat, weight.transpose(1, 2))
    else:
        out = torch.baddbmm(bias.unsqueeze(1), flat, weight.transpose(1, 2))
    return out.view(*x.shape[:-1], weight.shape[1])


class Linear(nn.Linear):
    """``torch.nn.Linear`` that also runs a stack of nets (module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


class BatchNorm1d(nn.BatchNorm1d):
    """``torch.nn.BatchNorm1d`` (inputs ``(batch, features)``) that also runs a stack of nets.

    With a member axis the ``E`` members' features are laid side by side as ``E x features``
    channels of one ``batch_norm``, so member ``e`` is normalised over its own batch and
    updates its own running statistics, exactly as it would alone."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None or self.weight.dim() == 1:
            return super().forward(x)
        members, batch, width = x.shape
        if self.training and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        out = F.batch_norm(x.transpose(0, 1).reshape(batch, members * width),
                           self.running_mean.view(-1), self.running_var.view(-1),
                           self.weight.reshape(-1), self.bias.reshape(-1), training=self.training,
                           momentum=self.momentum, eps=self.eps)
        return out.view(batch, members, width).transpose(0, 1)


class LayerNorm(nn.LayerNorm):
    """``torch.nn.LayerNorm`` (over the last axis) that also runs a stack of nets."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None or self.weight.dim() == 1:
            return super().forward(x)
        shape = (self.weight.shape[0],) + (1,) * (x.dim() - 2) + (self.weight.shape[1],)
        return F.layer_norm(x, self.normalized_shape, eps=self.eps) * self.weight.view(shape) + self.bias.view(shape)


class Embedding(nn.Embedding):
    """``torch.nn.Embedding`` that also runs a stack of nets: member ``e`` looks its tokens
    (``tokens[e]``) up in its own table."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.weight.dim() == 2:
            return super().forward(tokens)
        members = torch.arange(self.weight.shape[0]).view(-1, *([1] * (tokens.dim() - 1)))
        return self.weight[members, tokens]
