"""What one training step costs: the activations autograd keeps, the time, the gradient at
each point of the stream.

* :func:`saved_tensor_bytes`: the bytes of the distinct tensors autograd saves for the
  backward pass during a forward pass (``torch.autograd.graph.saved_tensors_hooks`` sees
  each one). It is the memory a step needs beyond the parameters, and it does not depend
  on the device or the allocator, so it is the same on a laptop and in CI.
* :func:`seconds_per_step`: the median wall time of a forward and backward pass.
* :func:`stream_gradient_norms`: ``||dL/dh_i||`` for every state ``h_i`` of the stream
  (a model with a ``representations(x)`` method and a ``head``): how much gradient reaches
  each depth, the input's end included.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from torch.autograd.graph import saved_tensors_hooks

from .._checks import positive_int


def saved_tensor_bytes(loss_fn: Callable[[], torch.Tensor]) -> int:
    """Bytes of the distinct tensors saved for backward while ``loss_fn()`` runs (a tensor
    saved twice, or a view of the same memory, counts once)."""
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function of no arguments, got {type(loss_fn).__name__}")
    seen: dict[tuple, int] = {}

    def pack(t: torch.Tensor):
        if t.layout == torch.strided:
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.dtype)
            seen[key] = t.numel() * t.element_size()
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn()
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("loss_fn must return a scalar tensor")
    return int(sum(seen.values()))


def seconds_per_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, repeats: int = 5,
                     loss=torch.nn.functional.cross_entropy) -> float:
    """The median over ``repeats`` of the wall time of ``loss(model(x), y).backward()``
    (after one untimed warm-up step); gradients are cleared after each step."""
    repeats = positive_int("repeats", repeats)
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        loss(model(x), y).backward()
        if i:
            times.append(time.perf_counter() - start)
        model.zero_grad(set_to_none=True)
    return statistics.median(times)


def stream_gradient_norms(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *,
                          loss=torch.nn.functional.cross_entropy, through_branches: bool = True) -> np.ndarray:
    """``||dL/dh_i||`` (Frobenius, over the batch) for each ``h_i`` of ``model.representations(x)``,
    with ``L = loss(model.head(h_last), y)``; index 0 is the stem's output. With
    ``through_branches=False`` (a :class:`~helpers.models.joins.JoinedMLP`) only the joins'
    own path carries the gradient down: for add it arrives unchanged, ``||dL/dh_0|| =
    ||dL/dh_last||``; for concat-project it is multiplied by each projection's first half."""
    if not callable(getattr(model, "representations", None)) or not callable(getattr(model, "head", None)):
        raise TypeError(f"model needs representations(x) and head, got {type(model).__name__}")
    with torch.enable_grad():
        states = model.representations(x) if through_branches else \
            model.representations(x, through_branches=False)
        for h in states:
            if h.requires_grad:  # a detached branch (a plain net's) leaves its state without one
                h.retain_grad()
        loss(model.head(states[-1]), y).backward()
    norms = np.array([0.0 if h.grad is None else float(h.grad.norm()) for h in states])
    model.zero_grad(set_to_none=True)
    return norms
