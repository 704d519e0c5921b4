"""Train many nets of one shape at once: the same updates as :func:`helpers.training.fit`, faster.

The course's nets are tiny (width 32), so a training step costs little arithmetic and a
lot of per-operation overhead: a 56-layer net spends most of its time dispatching ~300
small operations. :func:`fit_together` stacks the parameters of ``E`` nets of the same
shape into tensors with a leading axis of size ``E`` and runs one batched operation where
:func:`~helpers.training.fit` runs ``E`` (``torch.baddbmm`` for the linear layers, one
``batch_norm`` over ``E x width`` channels). Six 56-layer nets then train in about the
time of two.

Nothing else changes. Member ``e`` sees its own mini-batches (drawn from ``seeds[e]`` as
``fit`` draws them), its own batch statistics, its own skip connections (a plain net and
its residual twin stack together) and its own learning rate. The loss is the *sum* of the
members' mean losses, so each member's gradient is exactly its own. SGD with momentum and
Adam act element by element, so stacking does not mix members either. The trained weights
and BatchNorm statistics are copied back into the original modules; a unit test checks
that the result equals ``fit`` run net by net, to float rounding.

A different learning rate per member (for a learning-rate sweep) uses SGD's linearity:
with momentum buffer ``b`` and weight decay ``λ``, PyTorch's step is
``b ← μ b + (g + λ w)``, ``w ← w − η b``. Feeding ``η_e (g + λ w)`` as the gradient to an
SGD with ``η = 1`` and no decay keeps ``η_e b`` in the buffer and takes the same step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from ._checks import choice, non_empty, positive_int, real_number
from .environment import is_static_build
from .models.mlp import DeepMLP
from .seeding import generator
from .training import History, make_optimizer, warmup_schedule


def _shape_of(model: DeepMLP) -> tuple:
    """What must match for nets to stack: everything but the skip connections and the values."""
    block = model.blocks[0] if len(model.blocks) else None
    return (model.depth, model.order, tuple((n, tuple(p.shape)) for n, p in model.named_parameters()),
            None if block is None else (block.norm, block.branch_scale))


def _check_models(models) -> list[DeepMLP]:
    models = list(non_empty("models", models))
    for i, m in enumerate(models):
        if not isinstance(m, DeepMLP):
            raise TypeError(f"models[{i}] must be a DeepMLP, got {type(m).__name__}")
        if len({b.residual for b in m.blocks}) > 1:
            raise ValueError(f"models[{i}] mixes plain and residual blocks; fit_together needs one kind per net")
        if len({(b.norm, b.branch_scale, b.order) for b in m.blocks}) > 1:
            raise ValueError(f"models[{i}] has blocks of different kinds; fit_together needs identical blocks")
    first = _shape_of(models[0])
    for i, m in enumerate(models[1:], start=1):
        if _shape_of(m) != first:
            raise ValueError(f"models[{i}] differs from models[0] in depth, width, order, norm or branch scale; "
                             "fit_together stacks nets of one shape only")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("models must be distinct modules (the same net twice would be trained twice)")
    return models


class _Stack:
    """The stacked parameters and buffers of ``E`` DeepMLPs and their batched forward pass."""

    def __init__(self, models: list[DeepMLP]):
        self.models = models
        self.template = models[0]
        self.params = {name: torch.stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_()
                       for name, _ in self.template.named_parameters()}
        self.buffers = {name: torch.stack([dict(m.named_buffers())[name] for m in models]).clone()
                        for name, _ in self.template.named_buffers()}
        residual = [bool(m.blocks[0].residual) if len(m.blocks) else False for m in models]
        self.skip = torch.tensor(residual, dtype=self.params["stem.weight"].dtype).view(-1, 1, 1)

    def _linear(self, name: str, h: torch.Tensor) -> torch.Tensor:
        weight, bias = self.params[f"{name}.weight"], self.params[f"{name}.bias"]
        return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))

    def _norm(self, name: str, module: nn.Module, h: torch.Tensor) -> torch.Tensor:
        if isinstance(module, nn.Identity):
            return h
        weight, bias = self.params[f"{name}.weight"], self.params[f"{name}.bias"]
        if isinstance(module, nn.LayerNorm):
            return F.layer_norm(h, module.normalized_shape, eps=module.eps) * weight.unsqueeze(1) + bias.unsqueeze(1)
        # BatchNorm1d of member e over its own batch: one channel per (member, feature).
        members, batch, width = h.shape
        if module.num_batches_tracked is not None:
            self.buffers[f"{name}.num_batches_tracked"] += 1
        out = F.batch_norm(h.transpose(0, 1).reshape(batch, members * width),
                           self.buffers[f"{name}.running_mean"].view(-1), self.buffers[f"{name}.running_var"].view(-1),
                           weight.reshape(-1), bias.reshape(-1), training=True,
                           momentum=module.momentum, eps=module.eps)
        return out.reshape(batch, members, width).transpose(0, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` of shape ``(E, batch, in_features)`` -> logits ``(E, batch, n_classes)``, in training mode."""
        t = self.template
        h = torch.relu(self._norm("stem_norm", t.stem_norm, self._linear("stem", x)))
        for i, block in enumerate(t.blocks):
            p = f"blocks.{i}"
            if block.order == "post":
                z = torch.relu(self._norm(f"{p}.norm1", block.norm1, self._linear(f"{p}.fc1", h)))
                z = self._norm(f"{p}.norm2", block.norm2, self._linear(f"{p}.fc2", z))
            else:
                z = self._linear(f"{p}.fc1", torch.relu(self._norm(f"{p}.norm1", block.norm1, h)))
                z = self._linear(f"{p}.fc2", torch.relu(self._norm(f"{p}.norm2", block.norm2, z)))
            if block.branch_scale != 1.0:
                z = block.branch_scale * z
            h = z + self.skip * h
            if block.order == "post":
                h = torch.relu(h)
        if t.order == "pre":
            h = torch.relu(self._norm("head_norm", t.head_norm, h))
        return self._linear("head", h)

    @torch.no_grad()
    def write_back(self) -> None:
        for e, model in enumerate(self.models):
            for name, p in model.named_parameters():
                p.copy_(self.params[name][e])
            for name, b in model.named_buffers():
                b.copy_(self.buffers[name][e])


def fit_together(models: Sequence[DeepMLP], x: torch.Tensor, y: torch.Tensor, *, epochs: int,
                 lr: float | Sequence[float], seeds: Sequence[int], batch_size: int = 128,
                 momentum: float = 0.9, weight_decay: float = 1e-4, optimizer: str = "sgd",
                 warmup_steps: int = 0, progress: bool | None = None,
                 description: str = "training") -> list[History]:
    """Train every net of ``models`` as :func:`helpers.training.fit` would, all at once.

    ``models`` are :class:`~helpers.models.mlp.DeepMLP` s of one shape (plain and residual
    may mix); ``seeds[e]`` orders member ``e``'s mini-batches; ``lr`` is one learning rate
    or one per member (SGD only), and ``warmup_steps`` ramps every member's rate up alike
    (:func:`helpers.training.warmup_schedule`). The models are trained in place; returns one
    :class:`~helpers.training.History` per model.
    """
    models = _check_models(models)
    seeds = [positive_int("seeds[i]", s, minimum=0) for s in seeds]
    if len(seeds) != len(models):
        raise ValueError(f"seeds must give one seed per model: {len(models)} models, {len(seeds)} seeds")
    epochs, batch_size = positive_int("epochs", epochs), positive_int("batch_size", batch_size)
    optimizer = choice("optimizer", optimizer, ("sgd", "adam"))
    momentum = real_number("momentum", momentum, low=0.0)
    weight_decay = real_number("weight_decay", weight_decay, low=0.0)
    lrs = [lr] * len(models) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else list(lr)
    if len(lrs) != len(models):
        raise ValueError(f"lr must be one number or one per model: {len(models)} models, {len(lrs)} rates")
    lrs = [real_number("lr", v, low=0.0, low_inclusive=False) for v in lrs]
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")

    stack = _Stack(models)
    params = list(stack.params.values())
    per_member = len(set(lrs)) > 1
    if per_member and optimizer != "sgd":
        raise ValueError("a learning rate per model needs optimizer='sgd' (Adam's step does not scale with it)")
    if per_member:  # the step of the module docstring: gradient scaled by η_e, decay folded in
        opt = make_optimizer(params, "sgd", 1.0, momentum, 0.0)
        scale = torch.tensor(lrs, dtype=params[0].dtype)
    else:
        opt = make_optimizer(params, optimizer, lrs[0], momentum, weight_decay)
    schedule = warmup_schedule(opt, warmup_steps)  # scales η = 1 in the per-member case, so η_e alike

    gens = [generator(s) for s in seeds]
    histories = [History() for _ in models]
    show = (not is_static_build()) if progress is None else bool(progress)
    for _ in tqdm(range(epochs), desc=description, disable=not show, leave=False):
        # Each member's batch order, drawn exactly as fit draws it.
        order = torch.stack([torch.randperm(len(x), generator=g) for g in gens])
        losses, errors, sizes = [], [], []
        for start in range(0, len(x), batch_size):
            idx = order[:, start:start + batch_size]
            logits = stack.forward(x[idx])
            targets = y[idx]
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(idx.shape)
            opt.zero_grad(set_to_none=True)
            loss.mean(dim=1).sum().backward()
            if per_member:
                with torch.no_grad():
                    for p in params:
                        p.grad.add_(p, alpha=weight_decay).mul_(scale.view(-1, *([1] * (p.dim() - 1))))
            opt.step()
            if schedule is not None:
                schedule.step()
            losses.append(loss.detach().mean(dim=1))
            errors.append((logits.detach().argmax(dim=2) != targets).float().mean(dim=1))
            sizes.append(idx.shape[1])
        losses, errors = torch.stack(losses).numpy(), torch.stack(errors).numpy()
        for e, hist in enumerate(histories):
            hist.train_loss.append(float(np.average(losses[:, e], weights=sizes)))
            hist.train_error.append(float(np.average(errors[:, e], weights=sizes)))
    stack.write_back()
    for m in models:
        m.train()
    return histories
