"""A small, readable training loop that records a history.

One epoch visits the training set once in shuffled mini-batches. For each epoch the
history records the mean mini-batch loss and the mean mini-batch *training error*
(the fraction misclassified, measured in training mode as the batches go by, as in
He et al.'s training curves). A progress bar shows in JupyterLab; none is drawn when
the notebook is executed for the site (:func:`helpers.environment.is_static_build`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ._checks import choice, positive_int, real_number
from .environment import is_static_build
from .seeding import generator


@dataclass
class History:
    """Per-epoch training loss and training error (fractions in [0, 1])."""

    train_loss: list[float] = field(default_factory=list)
    train_error: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.train_loss)


def make_optimizer(model, name: str, lr: float, momentum: float,
                   weight_decay: float) -> torch.optim.Optimizer:
    """``"sgd"`` (with momentum, He et al.'s choice) or ``"adam"``, for the parameters of
    ``model`` (a module, or the tensors themselves).

    ``foreach=True`` updates all parameters with a few batched operations instead of a
    loop over ~100 small tensors, which saves a sizeable part of a step's time for the
    course's small nets (PyTorch uses it by default only on GPUs)."""
    choice("optimizer", name, ("sgd", "adam"))
    params = model.parameters() if isinstance(model, nn.Module) else model
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, foreach=True)
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, foreach=True)


def warmup_schedule(opt: torch.optim.Optimizer, warmup_steps: int):
    """Linear warm-up of ``opt``'s learning rate: step ``k`` (counting from 0) uses
    ``lr * min(1, (k + 1) / warmup_steps)``, so the rate climbs from ``lr / warmup_steps`` to
    ``lr`` over the first ``warmup_steps`` steps and stays there. A
    ``torch.optim.lr_scheduler.LambdaLR`` to step after each optimiser step; ``None`` when
    ``warmup_steps`` is 0 (no warm-up)."""
    warmup_steps = positive_int("warmup_steps", warmup_steps, minimum=0)
    if warmup_steps == 0:
        return None
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / warmup_steps))


def fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int,
        lr: float, batch_size: int = 128, momentum: float = 0.9,
        weight_decay: float = 1e-4, optimizer: str = "sgd", seed: int = 0,
        warmup_steps: int = 0, progress: bool | None = None, description: str = "training") -> History:
    """Train ``model`` to classify ``x`` as ``y`` with cross-entropy; return
    its :class:`History`.

    ``seed`` fixes the order of the mini-batches (the model's init is the
    caller's). ``warmup_steps`` > 0 ramps the learning rate up linearly over the first
    steps (:func:`warmup_schedule`). ``progress=None`` shows a bar unless this is a
    static build.
    """
    epochs = positive_int("epochs", epochs)
    batch_size = positive_int("batch_size", batch_size)
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, "
                         f"got {len(x)} and {len(y)}")
    momentum = real_number("momentum", momentum, low=0.0)
    weight_decay = real_number("weight_decay", weight_decay, low=0.0)
    opt = make_optimizer(model, optimizer, lr, momentum, weight_decay)
    schedule = warmup_schedule(opt, warmup_steps)
    gen = generator(seed)
    show = (not is_static_build()) if progress is None else bool(progress)
    history = History()
    model.train()
    for _ in tqdm(range(epochs), desc=description, disable=not show,
                  leave=False):
        losses, errors, sizes = [], [], []
        for idx in torch.randperm(len(x), generator=gen).split(batch_size):
            logits = model(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if schedule is not None:
                schedule.step()
            losses.append(loss.item())
            wrong = logits.argmax(dim=1) != y[idx]
            errors.append(float(wrong.float().mean()))
            sizes.append(len(idx))
        history.train_loss.append(float(np.average(losses, weights=sizes)))
        history.train_error.append(float(np.average(errors, weights=sizes)))
    return history
