"""Train many small Transformers of one shape at once, with Adam, each with its own settings.

Chapter 4 trains a grid of :class:`~helpers.models.transformer.SequenceTransformer` s (depth
x residual x norm position x learning rate x warm-up). A step of a 24-layer net of width 32
is a few hundred tiny operations, and their dispatch, not the arithmetic, is the time. As
:mod:`helpers.stacked` does for MLPs, :func:`fit_transformers_together` runs the ``E``
members' steps as one batched step: every weight gets a leading member axis, the linear
maps become ``torch.baddbmm`` and attention runs on ``E x batch`` sequences at once, so
twelve nets train in about the time of two.

Nothing is shared between members. Member ``e`` keeps its own weights, draws its own
batches (from ``seeds[e]``), has its skip connections on or off (``residual``), and its
own learning rate and warm-up. The loss is the *sum* of the members' mean losses, so each
member's gradient is exactly its own. All members' parameters live in one ``(E, P)``
tensor, so Adam is a handful of operations on it; it is written out below with PyTorch's
formula (``torch.optim.Adam``, no weight decay),

    m ← β1 m + (1 − β1) g,   v ← β2 v + (1 − β2) g²,
    θ ← θ − η_e(k) / (1 − β1^k) · m / (√v / √(1 − β2^k) + ε),

with ``η_e(k) = η_e min(1, k / warmup_e)`` at step ``k = 1, 2, ...`` (a linear warm-up).
A unit test checks that the result equals each net trained alone with
``torch.optim.Adam``, to float rounding. The trained weights are copied back into the
models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from ._checks import choice, non_empty, positive_int, real_number
from .data import SEQUENCE_TASKS, sequence_targets, sequence_task
from .environment import is_static_build
from .measure.sublayers import accuracy
from .models.transformer import SequenceTransformer
from .seeding import generator

BETAS, EPS = (0.9, 0.999), 1e-8
TEST_SEED = 10**6
"""The seed of the test sequences every member is scored on."""


@dataclass(frozen=True)
class SequenceRun:
    """One member's training: the loss at every step and the test accuracy at the end.

    ``losses[k]`` is the mean cross-entropy (nats per token) of step ``k + 1``'s batch,
    before that step's update; ``accuracy`` is the share of test tokens predicted
    right after training (chance is ``1 / vocab``); ``diverged`` is True when the loss
    became infinite or not a number.
    """

    losses: np.ndarray
    accuracy: float
    lr: float
    warmup: int
    residual: bool

    @property
    def diverged(self) -> bool:
        return not bool(np.isfinite(self.losses).all())

    def final_loss(self, last: int = 20) -> float:
        """Mean loss of the last ``last`` steps (inf if the run diverged)."""
        return float(np.mean(self.losses[-last:])) if not self.diverged else math.inf


def _check_models(models) -> list[SequenceTransformer]:
    models = list(non_empty("models", models))
    for i, m in enumerate(models):
        if not isinstance(m, SequenceTransformer):
            raise TypeError(f"models[{i}] must be a SequenceTransformer, got {type(m).__name__}")
        if len({(la.residual, la.alpha) for la in m.layers}) > 1:
            raise ValueError(f"models[{i}] must have one residual setting and one alpha in every layer")

    def shape(m):
        return (m.layers[0].norm_position, m.layers[0].self_attn.n_heads,
                tuple((n, tuple(p.shape)) for n, p in m.named_parameters()))

    for i, m in enumerate(models[1:], start=1):
        if shape(m) != shape(models[0]):
            raise ValueError(f"models[{i}] differs from models[0] in shape or norm_position; "
                             "fit_transformers_together stacks nets of one shape only")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("models must be distinct modules (the same net twice would be trained twice)")
    return models


def _per_member(name: str, value, n: int, check) -> list:
    values = [value] * n if not isinstance(value, (list, tuple)) else list(value)
    if len(values) != n:
        raise ValueError(f"{name} must be one value or one per model: {n} models, {len(values)} values")
    return [check(name, v) for v in values]


class _Stack:
    """The members' parameters as one ``(E, P)`` tensor, and their batched forward pass."""

    def __init__(self, models: list[SequenceTransformer]):
        self.models, self.template = models, models[0]
        self.names = [n for n, _ in self.template.named_parameters()]
        self.shapes = [p.shape for _, p in self.template.named_parameters()]
        self.flat = torch.stack([torch.cat([p.detach().reshape(-1) for p in m.parameters()])
                                 for m in models]).requires_grad_()
        # each member's skip scale: alpha (1, or DeepNorm's), or 0 for a plain net
        self.skip = torch.tensor([m.layers[0].alpha * m.layers[0].residual for m in models]).view(-1, 1, 1)
        self.rezero = models[0].layers[0].rezero_gates is not None

    def weights(self) -> dict[str, torch.Tensor]:
        """Each parameter as an ``(E, *shape)`` view of the flat tensor (one ``split``, so the
        backward pass is one concatenation)."""
        pieces = self.flat.split([math.prod(s) for s in self.shapes], dim=1)
        return {n: p.view(len(self.models), *s) for n, p, s in zip(self.names, pieces, self.shapes)}

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens`` ``(E, batch, length)`` -> logits ``(E, batch * length, vocab)``."""
        w, t = self.weights(), self.template
        members, batch, length = tokens.shape
        heads = t.layers[0].self_attn.n_heads
        norm = t.layers[0].norm_position

        def linear(name, h):
            return torch.baddbmm(w[f"{name}.bias"].unsqueeze(1), h, w[f"{name}.weight"].transpose(1, 2))

        def layer_norm(name, h):
            return (F.layer_norm(h, h.shape[-1:], eps=1e-5) * w[f"{name}.weight"].unsqueeze(1)
                    + w[f"{name}.bias"].unsqueeze(1))

        def attention(p, h):
            qkv = torch.baddbmm(w[f"{p}.in_proj_bias"].unsqueeze(1), h,
                                w[f"{p}.in_proj_weight"].transpose(1, 2))
            qkv = qkv.view(members * batch, length, 3, heads, -1).permute(2, 0, 3, 1, 4)
            out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
            return linear(f"{p}.out_proj", out.transpose(1, 2).reshape(members, batch * length, -1))

        def ffn(p, h):
            return linear(f"{p}.linear2", torch.relu(linear(f"{p}.linear1", h)))

        def add_and_norm(h, sublayer, norm_name, layer, index):  # EncoderLayer._sublayer, batched
            def branch(x):  # with ReZero, times each member's gate of this sublayer
                out = sublayer(x)
                return w[f"{layer}.rezero_gates"][:, index, None, None] * out if self.rezero else out

            if norm == "pre":
                return self.skip * h + branch(layer_norm(norm_name, h))
            out = self.skip * h + branch(h)
            return layer_norm(norm_name, out) if norm == "post" else out

        index = torch.arange(members).view(-1, 1, 1)
        h = w["embed.weight"][index, tokens] + w["position"][:, None, :length]
        h = h.reshape(members, batch * length, -1)
        for i in range(len(t.layers)):
            p = f"layers.{i}"
            h = add_and_norm(h, lambda x, p=p: attention(f"{p}.self_attn", x), f"{p}.norm1", p, 0)
            h = add_and_norm(h, lambda x, p=p: ffn(p, x), f"{p}.norm2", p, 1)
        if norm == "pre":
            h = layer_norm("final_norm", h)
        return linear("head", h)

    @torch.no_grad()
    def write_back(self) -> None:
        for e, model in enumerate(self.models):
            torch.nn.utils.vector_to_parameters(self.flat[e].clone(), model.parameters())


def fit_transformers_together(models: Sequence[SequenceTransformer], *, task: str, steps: int,
                              lr: float | Sequence[float], seeds: Sequence[int],
                              warmup_steps: int | Sequence[int] = 0, batch_size: int = 64,
                              test_size: int = 512, test_seed: int = TEST_SEED,
                              progress: bool | None = None,
                              description: str = "training") -> list[SequenceRun]:
    """Train each model on ``task`` (:func:`helpers.data.sequence_targets`) for ``steps`` Adam
    steps, all at once (module docstring); return one :class:`SequenceRun` per model.

    ``models`` are :class:`~helpers.models.transformer.SequenceTransformer` s of one shape
    and norm position (plain and residual may mix, and skip scales ``alpha``, as DeepNorm's,
    may differ between members; ReZero nets train with ReZero nets). Member ``e`` draws fresh batches of
    ``batch_size`` random sequences from ``seeds[e]``; ``lr`` and ``warmup_steps`` are one
    value or one per member. Accuracy is measured on ``test_size`` sequences drawn from
    ``test_seed``, the same for every member. The models are trained in place.
    """
    models = _check_models(models)
    n = len(models)
    task = choice("task", task, SEQUENCE_TASKS)
    steps, batch_size = positive_int("steps", steps), positive_int("batch_size", batch_size)
    test_size = positive_int("test_size", test_size)
    seeds = _per_member("seeds", list(seeds), n, lambda k, v: positive_int(k, v, minimum=0))
    lrs = _per_member("lr", lr, n, lambda k, v: real_number(k, v, low=0.0, low_inclusive=False))
    warmups = _per_member("warmup_steps", warmup_steps, n, lambda k, v: positive_int(k, v, minimum=0))
    vocab, length = models[0].embed.num_embeddings, models[0].position.shape[0]

    stack = _Stack(models)
    batches = torch.stack([torch.randint(0, vocab, (steps, batch_size, length), generator=generator(s))
                           for s in seeds])  # (E, steps, batch, length)
    targets = sequence_targets(task, batches)
    m, v = torch.zeros_like(stack.flat), torch.zeros_like(stack.flat)
    base_lr = torch.tensor(lrs).view(-1, 1)
    warm = torch.tensor([max(w, 1) for w in warmups], dtype=torch.float32).view(-1, 1)
    losses = torch.empty(n, steps)
    show = (not is_static_build()) if progress is None else bool(progress)
    for k in tqdm(range(1, steps + 1), desc=description, disable=not show, leave=False):
        logits = stack.forward(batches[:, k - 1])
        loss = F.cross_entropy(logits.flatten(0, 1), targets[:, k - 1].flatten(), reduction="none")
        loss = loss.view(n, -1).mean(dim=1)
        (grad,) = torch.autograd.grad(loss.sum(), stack.flat)
        with torch.no_grad():
            losses[:, k - 1] = loss
            m.lerp_(grad, 1 - BETAS[0])
            v.mul_(BETAS[1]).addcmul_(grad, grad, value=1 - BETAS[1])
            step = base_lr * torch.clamp(k / warm, max=1.0) / (1 - BETAS[0] ** k)
            denom = (v.sqrt() / math.sqrt(1 - BETAS[1] ** k)).add_(EPS)
            stack.flat.sub_(step * m / denom)
    stack.write_back()
    test_tokens, test_targets = sequence_task(task, test_size, length, vocab, seed=test_seed)
    return [SequenceRun(losses[e].numpy().copy(), accuracy(model, test_tokens, test_targets), lrs[e], warmups[e],
                        bool(model.layers[0].residual)) for e, model in enumerate(models)]
