"""Many nets of one shape run as one: each net's own ``forward``, on stacked parameters.

The course's nets are tiny (width 16 to 32), so a training step costs little arithmetic and
a lot of per-operation overhead: a 56-layer net spends most of its time dispatching a few
hundred small operations. A :class:`Stack` of ``E`` nets runs them as one net whose every
parameter has a leading *member* axis: ``torch.func.stack_module_state`` stacks the
members' parameters and buffers, and a copy of the first member, the *template*, holds the
stacked tensors in place of its own. So the code that runs is the model's own ``forward``;
its layers (:mod:`helpers.models.layers`) run a member axis as well as none. Twelve nets
then train in about the time of two. A stack of one runs its net without the member axis.

Nothing is shared between members: member ``e``'s outputs depend on its own parameters,
buffers (BatchNorm's running statistics) and inputs only. Settings that are plain attributes
of a module rather than tensors (whether a block's skip is on, DeepNorm's skip scale
``alpha``) may differ between members: a module that has them names them in
``stack_settings()``, and the template carries them as ``(E, 1, ..., 1)`` tensors, one value
per member (e.g. a plain member's skip scale is 0, so its block computes
``0 * x + F(x) = F(x)`` exactly).

All members' parameters live in one ``(P,)`` tensor, ``Stack.flat`` (the template's
parameters and their gradients are views of it and of its gradient), so that an optimiser
step is a handful of operations on it; :meth:`Stack.write_back` copies the trained values
into the members' modules.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import stack_module_state

from ._checks import non_empty


def _structure(model: nn.Module) -> tuple:
    """What must match for nets to stack: the modules' types and options, every tensor's name
    and shape; not the values, and not the settings a stack lets differ."""
    def options(m):
        settings = set(m.stack_settings()) if hasattr(m, "stack_settings") else set()
        settings |= set(getattr(m, "stack_labels", ()))
        return tuple(sorted((k, repr(v)) for k, v in vars(m).items()
                            if not k.startswith("_") and k not in settings and k != "training"))

    return (tuple((name, type(m).__name__, options(m)) for name, m in model.named_modules()),
            tuple((n, tuple(t.shape), t.dtype) for n, t in model.state_dict(keep_vars=True).items()))


def check_stackable(models, kind: type = nn.Module) -> list[nn.Module]:
    """``models`` as a list, after checking that they are distinct ``kind`` modules of one
    structure (:class:`Stack`); raises ``TypeError``/``ValueError`` naming the first that is not."""
    models = list(non_empty("models", models))
    for i, m in enumerate(models):
        if not isinstance(m, kind):
            raise TypeError(f"models[{i}] must be a {kind.__name__}, got {type(m).__name__}")
    first = _structure(models[0])
    for i, m in enumerate(models[1:], start=1):
        if _structure(m) != first:
            raise ValueError(f"models[{i}] differs from models[0] in its layers, their options or their "
                             "shapes; a stack holds nets of one structure only (the skip connections and "
                             "their scale may differ)")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("models must be distinct modules (the same net twice would be trained twice)")
    return models


class Stack:
    """``E`` nets of one structure, run as one (module docstring).

    ``stack(*inputs)`` takes inputs with a leading member axis (member ``e``'s are
    ``inputs[e]``) and returns the outputs with one, computed by the template's ``forward``.
    """

    def __init__(self, models: Sequence[nn.Module]):
        self.models = check_stackable(models)
        params, self.buffers = stack_module_state(self.models)
        # A stack of one runs its net as it is, without the member axis (same values, fewer
        # operations); its inputs and outputs still carry the axis.
        self.alone = len(self.models) == 1
        # the template: a copy of the first net holding every member's values
        self.net = copy.deepcopy(self.models[0])
        # One (P,) tensor holds every stacked parameter and one its gradient; the template's
        # parameters (and their .grad) are views of them, so an optimiser steps all at once.
        self.flat = torch.cat([v.detach().reshape(-1) for v in params.values()]).requires_grad_()
        self.flat.grad = torch.zeros_like(self.flat)
        self.stacked: dict[str, torch.Tensor] = {}
        """Each parameter, ``(E, *shape)``, a view of ``flat``."""
        members, offset = [], 0
        for name, value in params.items():
            piece = slice(offset, offset + value.numel())
            self.stacked[name] = self.flat.detach()[piece].view(value.shape)
            grad = self.flat.grad[piece].view(value.shape)
            module, leaf = self._owner(name)
            module._parameters[leaf] = nn.Parameter(self.stacked[name][0] if self.alone else self.stacked[name])
            module._parameters[leaf].grad = grad[0] if self.alone else grad
            members.append(torch.arange(len(self.models)).repeat_interleave(value[0].numel()))
            offset += value.numel()
        self.member_of = torch.cat(members)
        """The member each entry of ``flat`` belongs to."""
        for name, value in self.buffers.items():
            module, leaf = self._owner(name)
            module._buffers[leaf] = value[0] if self.alone else value
        for name, module in self.net.named_modules():
            if hasattr(module, "stack_settings") and not self.alone:
                for key, value in self._setting(name, module.stack_activation_dims).items():
                    setattr(module, key, value)

    def __len__(self) -> int:
        return len(self.models)

    def _owner(self, name: str) -> tuple[nn.Module, str]:
        path, _, leaf = name.rpartition(".")
        return self.net.get_submodule(path), leaf

    def _setting(self, name: str, dims: int) -> dict:
        """Module ``name``'s ``stack_settings`` for the stack: each value one number if all
        members agree, else an ``(E, 1, ..., 1)`` tensor with ``dims`` ones."""
        per_member = [m.get_submodule(name).stack_settings() for m in self.models]
        values = {}
        for key in per_member[0]:
            column = [s[key] for s in per_member]
            if all(v == column[0] for v in column):
                values[key] = column[0]
            else:
                shape = (len(column),) + (1,) * dims
                values[key] = torch.tensor([float(v) for v in column]).view(shape)
        return values

    def zero_grad(self) -> None:
        """Set every gradient to zero (in place: the parameters' ``.grad`` are views of one tensor)."""
        self.flat.grad.zero_()

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        if self.alone:
            return self.net(*(x[0] for x in inputs)).unsqueeze(0)
        return self.net(*inputs)

    def train(self, mode: bool = True) -> Stack:
        """Training or evaluation mode for the stack's calls."""
        self.net.train(mode)
        return self

    @torch.no_grad()
    def write_back(self) -> None:
        """Copy the trained parameters and buffers into the members' modules."""
        for e, model in enumerate(self.models):
            for name, p in model.named_parameters():
                p.copy_(self.stacked[name][e])
            for name, b in model.named_buffers():
                b.copy_(self.buffers[name][e])
