"""Chapter 5, section 5: how sharp the loss is as Adam sees it, Post-LN against DeepNorm.

The article calls a net whose loss changes a lot for a small step one with an "extremely
unsmooth" landscape. For plain gradient descent the yardstick is the Hessian's largest
eigenvalue against ``2 / η``. These Transformers learn with Adam, which divides every
coordinate of its step by ``√v̂ + ε``: what bounds its rate is the largest eigenvalue of the
Hessian seen through that preconditioner against ``38 / η``
(:mod:`helpers.measure.adam_curvature`, after Cohen et al. 2022).

:func:`adam_sharpness` measures it for the 24-layer nets of
:func:`helpers.experiments.step_sizes.model_updates` (Post-LN, and DeepNorm with the paper's
initialisation), in the setting of Cohen et al.'s threshold: full-batch Adam
(``torch.optim.Adam``'s defaults, ``β1 = 0.9``, ``β2 = 0.999``, ``ε = 1e-8``) on a fixed batch of
reversal sequences, every parameter trained. Each net takes the first ``steps`` steps of
the warm-up of :mod:`helpers.experiments.deepnorm` (its full rate ``FULL_RATE`` reached over
``WARMUP`` steps), so that the parameters stay near their initialisation. The preconditioner
is the one Adam's next step divides by, ``v̂`` including the gradient at the current
parameters, and the Hessian is taken there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import gmean
from torch.nn.attention import SDPBackend, sdpa_kernel

from .._checks import choice, non_empty, positive_int, real_number
from ..data import sequence_task
from ..measure.adam_curvature import adam_threshold, top_preconditioned_eigenvalue
from ..parallel import run_all
from ..seeding import generator, seeds_of_run
from .deepnorm import FULL_RATE, WARMUP, make_net
from .norm_order import token_loss
from .step_sizes import ARCHITECTURES, NET_SEEDS
from .transformer_depth import SIZE, TASK

STEPS = 10
"""How many warm-up steps Adam takes before its preconditioner is read."""
BETAS = (0.9, 0.999)
"""``torch.optim.Adam``'s default ``betas``, those of every Transformer the book trains."""
EPS = 1e-8
"""``torch.optim.Adam``'s default ``eps``."""


def adam_preconditioner(model: torch.nn.Module, loss_fn, steps: int, lr: float,
                        warmup: int = 0) -> list[torch.Tensor]:
    """Train every parameter of ``model`` in place for ``steps`` steps of ``torch.optim.Adam``
    (:data:`BETAS`, :data:`EPS`) on the loss ``loss_fn(model)``, at the rate
    ``lr · min(1, k / warmup)`` at step ``k`` (``lr`` throughout when ``warmup`` is 0), then
    return the preconditioner of the next step, ``√v̂ + ε`` per parameter: ``v̂`` is the
    bias-corrected running mean of the squared gradient *including* the gradient at the
    current parameters, as Adam's next step would compute it (``|g| + ε`` for ``steps = 0``)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    steps = positive_int("steps", steps, minimum=0)
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    warmup = positive_int("warmup", warmup, minimum=0)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, betas=BETAS, eps=EPS)
    for k in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, k / warmup) if warmup else lr
        opt.zero_grad()
        loss_fn(model).backward()
        opt.step()
    grads = torch.autograd.grad(loss_fn(model), params)
    beta2 = BETAS[1]
    out = []
    for p, g in zip(params, grads):
        v = opt.state[p]["exp_avg_sq"] if steps else torch.zeros_like(p)
        v_next = beta2 * v + (1 - beta2) * g.detach() ** 2
        out.append((v_next / (1 - beta2 ** (steps + 1))).sqrt() + EPS)
    return out


@dataclass(frozen=True)
class AdamSharpness:
    """One architecture's preconditioned sharpness after ``steps`` warm-up steps, one entry
    per net in ``values``; ``losses`` the training loss where it was measured."""

    architecture: str
    depth: int
    steps: int
    lr: float
    warmup: int
    values: np.ndarray
    losses: np.ndarray

    @property
    def label(self) -> str:
        return ARCHITECTURES[self.architecture]

    @property
    def typical(self) -> float:
        """The geometric mean of ``values`` over the nets."""
        return float(gmean(self.values))

    @property
    def threshold(self) -> float:
        """Adam's stability threshold at the full rate, ``38 / lr``."""
        return adam_threshold(self.lr, BETAS[0])

    @property
    def warmup_threshold(self) -> float:
        """Adam's stability threshold at the rate of the warm-up's next step, the one the
        measured preconditioner belongs to."""
        rate = self.lr * min(1.0, (self.steps + 1) / self.warmup) if self.warmup else self.lr
        return adam_threshold(rate, BETAS[0])


def _measure(architecture: str, depth: int, net_seed: int, tokens: torch.Tensor, targets: torch.Tensor,
             steps: int, lr: float, warmup: int) -> tuple[float, float]:
    net = make_net(architecture, depth, net_seed)

    def loss_fn(m):
        return token_loss(m(tokens), targets)

    with sdpa_kernel(SDPBackend.MATH):  # the attention kernel with second derivatives
        preconditioner = adam_preconditioner(net, loss_fn, steps, lr, warmup)
        value = top_preconditioned_eigenvalue(net, loss_fn, list(net.parameters()), preconditioner,
                                              generator=generator(net_seed))
        with torch.no_grad():
            loss = float(loss_fn(net))
    return value, loss


def adam_sharpness(depth: int = 24, architectures=tuple(ARCHITECTURES), *, seed: int = 0, n_nets: int = 3,
                   steps: int = STEPS, lr: float = FULL_RATE, warmup: int = WARMUP,
                   batch: int = 32) -> list[AdamSharpness]:
    """The preconditioned sharpness (module docstring) of ``n_nets`` nets of each architecture
    at ``depth`` layers (seeds ``NET_SEEDS + seeds_of_run(seed, n_nets)``, the nets of
    :func:`helpers.experiments.step_sizes.model_updates`), each after ``steps`` full-batch Adam
    steps of a warm-up to ``lr`` over ``warmup`` steps, on ``batch`` random reversal sequences
    drawn from ``seed``; the nets side by side on the available cores. Returned in the order of
    ``architectures``."""
    depth, n_nets = positive_int("depth", depth), positive_int("n_nets", n_nets)
    architectures = [choice("architectures[i]", a, ARCHITECTURES) for a in non_empty("architectures", architectures)]
    steps = positive_int("steps", steps, minimum=0)
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    warmup = positive_int("warmup", warmup, minimum=0)
    tokens, targets = sequence_task(TASK, positive_int("batch", batch), SIZE["length"], SIZE["vocab"], seed=seed)
    nets = [NET_SEEDS + s for s in seeds_of_run(seed, n_nets)]
    jobs = [dict(architecture=a, depth=depth, net_seed=s, tokens=tokens, targets=targets, steps=steps, lr=lr,
                 warmup=warmup) for a in architectures for s in nets]
    results = run_all(_measure, jobs, description="nets")
    out = []
    for i, a in enumerate(architectures):
        mine = results[i * n_nets:(i + 1) * n_nets]
        out.append(AdamSharpness(a, depth, steps, lr, warmup, np.array([v for v, _ in mine]),
                                 np.array([loss for _, loss in mine])))
    return out
