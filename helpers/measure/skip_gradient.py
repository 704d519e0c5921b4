"""The gradient through a skip connection, split into its two paths.

For a residual sublayer ``H(x) = x + F(x)`` and an upstream gradient ``g = dL/dH``, the chain
rule gives (Jacobians written as matrices ``J``)::

    dL/dx = (I + J_F(x))^T g = g + J_F(x)^T g        "dL/dH (1 + dF/dx)"

the first term untouched by the sublayer (the skip's path), the second through it (the
branch's). With Add & Norm after it, ``H(x) = LN(x + F(x))``, the same split holds for
``g' = J_LN^T g``, the gradient that reaches the sum: ``dL/dx = g' + J_F^T g'``.

:func:`skip_gradient_parts` computes both paths with vector-Jacobian products
(``torch.autograd.functional.vjp``) and the whole gradient with autograd through ``H``, so
the split can be checked to rounding error.

Through a stack, the skip's path is the identity only if nothing sits on it. In a Post-LN
stack, ``x_l = LN_l(S_l)`` with the sum ``S_l = x_{l-1} + F_l(x_{l-1})``, the path that
avoids every branch still passes through every norm: the part of the gradient at the top
that reaches ``S_l`` along the skips alone is
``J_{LN_l}^T J_{LN_{l+1}}^T ... J_{LN_L}^T g``. :func:`skip_path_gradients` computes it
sum by sum; in a Pre-LN stack (no norm after the sums) it is ``g`` itself at every sum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.autograd.functional import vjp


@dataclass
class SkipGradient:
    """``dL/dx`` by autograd through the whole sublayer, and its two paths."""

    autograd: torch.Tensor
    skip_path: torch.Tensor  # g (or J_LN^T g after a norm): what reaches x without entering F
    branch_path: torch.Tensor  # J_F^T of the same

    @property
    def max_error(self) -> float:
        """The largest ``|autograd - (skip_path + branch_path)|``."""
        return float((self.autograd - self.skip_path - self.branch_path).abs().max())

    @property
    def branch_share(self) -> float:
        """``||branch_path|| / ||skip_path||``: how much the branch adds to the skip's gradient."""
        return float(self.branch_path.norm() / self.skip_path.norm().clamp_min(1e-300))


def skip_gradient_parts(branch: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, upstream: torch.Tensor,
                        *, norm: Callable[[torch.Tensor], torch.Tensor] | None = None) -> SkipGradient:
    """``dL/dx`` for ``H(x) = x + branch(x)`` (or ``norm(x + branch(x))``) with ``dL/dH = upstream``,
    by autograd and as its skip and branch paths (see the module docstring)."""
    if not callable(branch) or (norm is not None and not callable(norm)):
        raise TypeError("branch and norm must be functions of a tensor")
    if not isinstance(x, torch.Tensor) or not isinstance(upstream, torch.Tensor):
        raise TypeError(f"x and upstream must be tensors, got {type(x).__name__} and {type(upstream).__name__}")
    x = x.detach()
    out = branch(x)
    if out.shape != x.shape:
        raise ValueError(f"branch must keep x's shape {tuple(x.shape)} to be added to it, got {tuple(out.shape)}")
    if upstream.shape != x.shape:
        raise ValueError(f"upstream must have x's shape {tuple(x.shape)}, got {tuple(upstream.shape)}")

    def whole(t):
        s = t + branch(t)
        return s if norm is None else norm(s)

    _, autograd = vjp(whole, x, upstream)
    at_sum = upstream if norm is None else vjp(norm, (x + out).detach(), upstream)[1]
    _, through_branch = vjp(branch, x, at_sum)
    return SkipGradient(autograd, at_sum, through_branch)


def skip_path_gradients(norms: Sequence[Callable[[torch.Tensor], torch.Tensor] | None],
                        sums: Sequence[torch.Tensor], upstream: torch.Tensor) -> list[torch.Tensor]:
    """The gradient that reaches each sum of a residual stack along the skip connections alone.

    The stack is ``x_l = N_l(S_l)`` with ``S_l = x_{l-1} + F_l(x_{l-1})``, ``l = 1 .. L``
    (``N_l`` the norm after the sum, or ``None`` where there is none, as in Pre-LN), and
    ``upstream`` is ``dL/dx_L``, the gradient at the top. Leaving out every branch's
    Jacobian, the gradient at ``S_l`` is ``J_{N_l}^T ... J_{N_L}^T upstream``, each
    ``J_{N_k}`` taken at ``sums[k]`` (vector-Jacobian products,
    ``torch.autograd.functional.vjp``); a missing norm contributes the identity. Returns one
    tensor per sum, input to output, each of ``upstream``'s shape.
    """
    norms, sums = list(norms), list(sums)
    if not sums or len(norms) != len(sums):
        raise ValueError(f"norms and sums must be non-empty and of equal length, got {len(norms)} and {len(sums)}")
    if any(n is not None and not callable(n) for n in norms):
        raise TypeError("norms must be functions of a tensor, or None where a sum has no norm after it")
    if not isinstance(upstream, torch.Tensor) or not all(isinstance(s, torch.Tensor) for s in sums):
        raise TypeError("sums and upstream must be tensors")
    bad = [i for i, s in enumerate(sums) if s.shape != upstream.shape]
    if bad:
        raise ValueError(f"every sum must have upstream's shape {tuple(upstream.shape)}; sums{bad} do not")
    out, g = [], upstream.detach()
    for norm, total in zip(reversed(norms), reversed(sums)):
        if norm is not None:
            g = vjp(norm, total.detach(), g)[1]
        out.append(g)
    return out[::-1]
