"""The curvature Adam sees: the Hessian through Adam's preconditioner, and Adam's stability threshold.

Plain gradient descent steps along ``-η g`` and is stable on a quadratic only while the
Hessian's largest eigenvalue stays below ``2 / η``. Adam divides every coordinate of its step
by ``√v̂ + ε`` (``v̂`` the bias-corrected running mean of the squared gradient), so the step is
``-η P⁻¹ m̂`` with the diagonal *preconditioner* ``P = diag(√v̂ + ε)``. Seen through it, the
loss bends by the eigenvalues of ``P⁻¹ H``, the same as those of the symmetric
``P^(-1/2) H P^(-1/2)``: the *preconditioned sharpness* is the largest of them. Cohen et al.
(2022, "Adaptive Gradient Methods at the Edge of Stability") show that Adam with a fixed
preconditioner is stable on a quadratic only while it stays below
``(2 + 2 β1) / ((1 - β1) η)``, ``38 / η`` for ``β1 = 0.9`` (:func:`adam_threshold`), and that
during full-batch training it rises to that value and hovers there.

The Hessian's largest eigenvalue *in parameter coordinates* grows with the size of the
gradients: multiply the loss by ``c`` and it grows ``c`` times, while Adam's steps, divided by
``√v̂``, stay the same. The preconditioned sharpness stays the same too: it measures how
sharply the loss bends along the steps Adam takes, whatever the scale of the gradients. That
matters where a design shrinks some gradients on purpose, as DeepNorm's constants do.

:func:`top_preconditioned_eigenvalue` finds it with the Lanczos method (SciPy's ``eigsh``) on
Hessian-vector products (:func:`helpers.measure.curvature.hessian_vector_product`), the
Hessian never written down.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh
from torch import nn

from .._checks import non_empty, real_number
from .curvature import hessian_vector_product

LANCZOS_VECTORS = 8
"""The Lanczos basis's size. For most nets of chapter 5 the largest eigenvalue has converged to
``tol`` after its first nine Hessian-vector products, for the others after one restart (the
same value to five digits as with 20 vectors)."""


def adam_threshold(lr: float, beta1: float = 0.9) -> float:
    """Adam's stability threshold for the preconditioned sharpness (Cohen et al. 2022):
    ``(2 + 2 beta1) / ((1 - beta1) lr)``, ``38 / lr`` for ``beta1 = 0.9``."""
    lr = real_number("lr", lr, low=0.0, low_inclusive=False)
    beta1 = real_number("beta1", beta1, low=0.0)
    if beta1 >= 1:
        raise ValueError(f"beta1 must be < 1, got {beta1}")
    return (2 + 2 * beta1) / ((1 - beta1) * lr)


def top_preconditioned_eigenvalue(model: nn.Module, loss_fn, params, preconditioner, *, tol: float = 1e-3,
                                  generator: torch.Generator | None = None) -> float:
    """The largest eigenvalue of ``P^(-1/2) H P^(-1/2)``, ``H`` the Hessian of ``loss_fn(model)``
    with respect to ``params`` (an iterable of the model's parameters) and ``P`` the diagonal
    matrix whose entries are ``preconditioner`` (one tensor of positive numbers per parameter,
    of its shape; ones give the Hessian's own largest eigenvalue).

    Lanczos iteration (``scipy.sparse.linalg.eigsh``, the largest algebraic eigenvalue, to a
    relative ``tol``, with :data:`LANCZOS_VECTORS` vectors) from a random start drawn from
    ``generator``; each iteration is one Hessian-vector product, ten to twenty in all when the
    largest eigenvalue stands apart. The model is not changed."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    params = list(non_empty("params", list(params) if not isinstance(params, torch.Tensor) else params))
    preconditioner = list(non_empty("preconditioner", list(preconditioner)
                                    if not isinstance(preconditioner, torch.Tensor) else preconditioner))
    if len(preconditioner) != len(params):
        raise ValueError(f"preconditioner must have one tensor per parameter: {len(params)} parameters, "
                         f"{len(preconditioner)} tensors")
    for i, (p, d) in enumerate(zip(params, preconditioner)):
        if not isinstance(d, torch.Tensor) or d.shape != p.shape:
            raise ValueError(f"preconditioner[{i}] must be a tensor of shape {tuple(p.shape)}, got "
                             f"{getattr(d, 'shape', type(d).__name__)}")
        if not bool(torch.all(d > 0)) or not bool(torch.all(torch.isfinite(d))):
            raise ValueError(f"preconditioner[{i}] must hold finite positive numbers")
    tol = real_number("tol", tol, low=0.0, low_inclusive=False)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    scales = [d.detach().rsqrt().to(p.dtype) for p, d in zip(params, preconditioner)]  # P^(-1/2)
    sizes = [p.numel() for p in params]

    def product(x: np.ndarray) -> np.ndarray:  # x -> P^(-1/2) H P^(-1/2) x
        chunks = torch.split(torch.as_tensor(np.ravel(x), dtype=params[0].dtype), sizes)
        vector = [s * c.reshape(p.shape) for s, c, p in zip(scales, chunks, params)]
        hv = hessian_vector_product(loss_fn, model, params, vector)
        return torch.cat([(s * h).flatten() for s, h in zip(scales, hv)]).double().numpy()

    n = sum(sizes)
    start = torch.randn(n, generator=generator, dtype=torch.float64).numpy()
    operator = LinearOperator((n, n), matvec=product, dtype=np.float64)
    [value] = eigsh(operator, k=1, which="LA", tol=tol, ncv=min(LANCZOS_VECTORS, n), v0=start,
                    return_eigenvectors=False)
    return float(value)
