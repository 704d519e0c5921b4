"""The course's one training loop: one net, or a stack of nets trained at once.

:func:`train_steps` is the loop every trained net of the book goes through. It runs the
nets as one :class:`~helpers.stack.Stack` (each net's own ``forward``, on stacked
parameters; one net is a stack of one) and takes, at every step ``k = 1, 2, ...``:

* the loss of member ``e``: the mean cross-entropy over its own batch (every token of it,
  for sequences), before the step's update; the stack minimises the *sum* of the members'
  losses, so each member's gradient is exactly its own;
* one step of ``torch.optim.SGD`` (with momentum) or ``torch.optim.Adam`` with learning rate
  1, giving each member its update ``Δ_e``, then ``θ_e ← θ_e + η_e(k) Δ_e`` with member
  ``e``'s own rate and linear warm-up, ``η_e(k) = η_e min(1, k / warmup_e)``.

Both optimisers' updates are proportional to the learning rate (SGD's momentum buffer and
weight decay, Adam's moments do not depend on it), so scaling the update by ``η_e(k)`` is
the step ``torch.optim`` would take with learning rate ``η_e(k)``: a unit test checks each
member against its net trained alone with ``torch.optim`` and a warm-up scheduler, to float
rounding.

:func:`fit` trains classifiers for a number of epochs over a data set (He et al.'s setting:
mini-batches in a fresh shuffled order each epoch, the training error measured as the
batches go by); :func:`helpers.sequence_training.fit_sequences` trains Transformers on
fresh random sequences. Both feed this loop. A progress bar shows in JupyterLab; none is
drawn when the notebook is executed for the site (:func:`helpers.environment.is_static_build`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from ._checks import choice, positive_int, real_number
from .environment import show_progress
from .stack import Stack

OPTIMIZERS = ("sgd", "adam")


@dataclass
class History:
    """Per-epoch training loss and training error (fractions in [0, 1])."""

    train_loss: list[float] = field(default_factory=list)
    train_error: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.train_loss)


def make_optimizer(params, name: str, momentum: float = 0.9, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """``torch.optim.SGD`` with momentum (He et al.'s choice) or ``torch.optim.Adam`` over
    ``params``, with learning rate 1: :func:`train_steps` scales each net's update by its rate.

    ``foreach=True`` updates all parameters with a few batched operations (PyTorch uses it
    by default only on GPUs)."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=1.0, momentum=momentum, weight_decay=weight_decay, foreach=True)
    return torch.optim.Adam(params, lr=1.0, weight_decay=weight_decay, foreach=True)


def per_member(name: str, value, n: int, check) -> list:
    """``value`` for each of ``n`` nets: one value for all, or a list or tuple of ``n``, each
    passed through ``check(name, v)``."""
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(values) != n:
        raise ValueError(f"{name} must be one value or one per net: {n} nets, {len(values)} values")
    return [check(name, v) for v in values]


def rates(lrs: Sequence[float], warmups: Sequence[int], k: int) -> torch.Tensor:
    """Every member's learning rate at step ``k`` (from 1): ``η_e min(1, k / warmup_e)``, a
    linear warm-up from ``η_e / warmup_e`` to ``η_e`` over the first ``warmup_e`` steps
    (none when ``warmup_e`` is 0). Shape ``(E,)``."""
    return torch.tensor([lr * min(1.0, k / w) if w else lr for lr, w in zip(lrs, warmups)])


def train_steps(models: Sequence[nn.Module], batches: Iterable[tuple[torch.Tensor, torch.Tensor]], *,
                steps: int, lrs: Sequence[float], warmups: Sequence[int], optimizer: str = "sgd",
                momentum: float = 0.9, weight_decay: float | Sequence[float] = 0.0, progress: bool | None = None,
                description: str = "training") -> tuple[np.ndarray, np.ndarray]:
    """Train ``models`` (one structure) for ``steps`` steps, in place (module docstring).

    ``batches`` yields ``(inputs, targets)`` with a leading member axis: member ``e``
    classifies ``inputs[e]`` as ``targets[e]``. ``weight_decay`` is one value for all
    members, or one per member: member ``e`` then adds ``weight_decay[e] * θ_e`` to its
    gradient before the optimiser's step, as ``torch.optim``'s ``weight_decay`` does.
    Returns ``(losses, errors)``, each of shape ``(steps, E)``: member ``e``'s mean
    cross-entropy (nats) and share misclassified on step ``k``'s batch, before step ``k``'s
    update. The arguments are the caller's, checked (:func:`fit`,
    :func:`helpers.sequence_training.fit_sequences`).
    """
    stack = Stack(models).train()
    decays = None
    if isinstance(weight_decay, (list, tuple)):  # each member its own: added to the gradient below
        decays, weight_decay = torch.tensor(weight_decay, dtype=stack.flat.dtype)[stack.member_of], 0.0
    opt = make_optimizer([stack.flat], optimizer, momentum, weight_decay)
    losses, errors = torch.empty(steps, len(stack)), torch.empty(steps, len(stack))
    bar = tqdm(batches, total=steps, desc=description, disable=not show_progress(progress), leave=False)
    for k, (inputs, targets) in enumerate(bar, start=1):
        logits = stack(inputs).flatten(1, -2)  # (E, examples or tokens, classes)
        targets = targets.flatten(1)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(targets.shape)
        loss = loss.mean(dim=1)
        stack.zero_grad()
        loss.sum().backward()
        if decays is not None:
            with torch.no_grad():
                stack.flat.grad.add_(stack.flat * decays)
        before = stack.flat.detach().clone()
        opt.step()
        with torch.no_grad():  # θ ← θ_before + η_e(k) Δ_e, Δ_e the step at learning rate 1
            stack.flat.sub_(before).mul_(rates(lrs, warmups, k)[stack.member_of]).add_(before)
            losses[k - 1] = loss
            errors[k - 1] = (logits.argmax(dim=2) != targets).float().mean(dim=1)
    stack.write_back()
    for m in stack.models:
        m.train()
    return losses.numpy(), errors.numpy()


def fit(model: nn.Module | Sequence[nn.Module], x: torch.Tensor, y: torch.Tensor, *, epochs: int,
        lr: float | Sequence[float], batch_size: int = 128, momentum: float = 0.9,
        weight_decay: float | Sequence[float] = 1e-4, optimizer: str = "sgd", seed: int | Sequence[int] = 0,
        warmup_steps: int | Sequence[int] = 0, progress: bool | None = None,
        description: str = "training") -> History | list[History]:
    """Train ``model`` (one net, or a list of nets of one structure trained at once) to
    classify ``x`` as ``y`` with cross-entropy for ``epochs`` epochs; return its
    :class:`History` (a list of them for a list of nets). The nets are trained in place.

    Each epoch visits the training set once in mini-batches of ``batch_size``, in an order
    drawn afresh from ``seed`` (the nets' initialisation is the caller's). ``lr``, ``seed``,
    ``weight_decay`` and ``warmup_steps`` are one value or one per net; ``warmup_steps`` > 0 ramps the
    learning rate up linearly over the first steps (:func:`rates`). ``progress=None``
    shows a bar unless this is a static build.
    """
    models = [model] if isinstance(model, nn.Module) else list(model)
    n = len(models)
    epochs, batch_size = positive_int("epochs", epochs), positive_int("batch_size", batch_size)
    lrs = per_member("lr", lr, n, lambda k, v: real_number(k, v, low=0.0, low_inclusive=False))
    seeds = per_member("seed", seed, n, lambda k, v: positive_int(k, v, minimum=0))
    warmups = per_member("warmup_steps", warmup_steps, n, lambda k, v: positive_int(k, v, minimum=0))
    optimizer = choice("optimizer", optimizer, OPTIMIZERS)
    momentum = real_number("momentum", momentum, low=0.0)
    if isinstance(weight_decay, (list, tuple)):
        weight_decay = per_member("weight_decay", weight_decay, n, lambda k, v: real_number(k, v, low=0.0))
    else:
        weight_decay = real_number("weight_decay", weight_decay, low=0.0)
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")

    gens = [torch.Generator().manual_seed(s) for s in seeds]  # the seeds checked above
    sizes = [len(c) for c in torch.arange(len(x)).split(batch_size)]

    def batches():
        for _ in range(epochs):  # each member's order, drawn exactly as for a net alone
            order = torch.stack([torch.randperm(len(x), generator=g) for g in gens])
            for idx in order.split(batch_size, dim=1):
                yield x[idx], y[idx]

    losses, errors = train_steps(models, batches(), steps=epochs * len(sizes), lrs=lrs, warmups=warmups,
                                 optimizer=optimizer, momentum=momentum, weight_decay=weight_decay,
                                 progress=progress, description=description)
    histories = []
    for e in range(n):
        per_epoch = zip(losses[:, e].reshape(epochs, -1), errors[:, e].reshape(epochs, -1))
        history = History()
        for loss, error in per_epoch:
            history.train_loss.append(float(np.average(loss, weights=sizes)))
            history.train_error.append(float(np.average(error, weights=sizes)))
        histories.append(history)
    return histories[0] if isinstance(model, nn.Module) else histories
