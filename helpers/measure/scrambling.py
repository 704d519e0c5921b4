"""How much of the input a layer's representation keeps: similarity of two inputs, a linear
probe, and the mean-field prediction for a random ReLU chain.

* :func:`pair_cosines`: the cosine similarity ``<h(a), h(b)> / (||h(a)|| ||h(b)||)`` between
  the representations of pairs of different inputs. 1 means the layer sees them as the same.
* :func:`probe_accuracy`: the test accuracy of a linear read-out (ridge regression onto
  one-hot labels, on standardised features) trained on one layer's representations: how
  much of the class is still linearly recoverable there.
* :func:`relu_cosine_map` and :func:`mean_field_cosines`: the infinite-width prediction.
  For ``h' = W relu(h)`` with Gaussian ``W`` of variance ``2/n`` the cosine ``c`` of two
  inputs' pre-activations maps to (Cho and Saul's arc-cosine kernel, normalised)::

      f(c) = (sqrt(1 - c^2) + (pi - arccos c) c) / pi,

  whose only fixed point is ``c = 1``: a deep plain ReLU chain makes any two inputs alike. In
  the residual chain ``h' = h + W relu(h)`` each branch is as large as the stream, so the
  stream's variance doubles and the cosine becomes ``(c + f(c)) / 2``: the same drift,
  half as fast.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import positive_int, real_number


def different_class_pairs(labels: torch.Tensor, n_pairs: int, *, generator: torch.Generator) -> torch.Tensor:
    """``(n_pairs, 2)`` indices of random pairs of examples with different labels."""
    n_pairs = positive_int("n_pairs", n_pairs)
    if labels.ndim != 1 or len(labels) < 2:
        raise ValueError(f"labels must be a 1-D tensor of at least 2 labels, got shape {tuple(labels.shape)}")
    if len(torch.unique(labels)) < 2:
        raise ValueError("labels must hold at least two classes to draw pairs of different classes")
    pairs = torch.empty(0, 2, dtype=torch.long)
    while len(pairs) < n_pairs:
        draw = torch.randint(0, len(labels), (2 * n_pairs, 2), generator=generator)
        pairs = torch.cat([pairs, draw[labels[draw[:, 0]] != labels[draw[:, 1]]]])
    return pairs[:n_pairs]


def pair_cosines(h: torch.Tensor, pairs: torch.Tensor) -> np.ndarray:
    """The cosine similarity of the rows ``h[i]`` and ``h[j]`` for each pair ``(i, j)``."""
    if h.ndim != 2:
        raise ValueError(f"h must be a batch of representations (n, width), got shape {tuple(h.shape)}")
    h = h.double()
    return torch.nn.functional.cosine_similarity(h[pairs[:, 0]], h[pairs[:, 1]], dim=1).numpy()


def probe_accuracy(h_train: torch.Tensor, y_train: torch.Tensor, h_test: torch.Tensor, y_test: torch.Tensor,
                   *, ridge: float = 1e-3) -> float:
    """Test accuracy of a linear probe: ridge regression of one-hot labels on the features,
    each standardised with the training set's mean and standard deviation, with penalty
    ``ridge`` times the number of training examples. Predicts the class with the largest
    output. Chance is ``1 / classes``."""
    ridge = real_number("ridge", ridge, low=0.0, low_inclusive=False)
    h_train, h_test = h_train.double(), h_test.double()
    mean, std = h_train.mean(0), h_train.std(0)
    std = torch.where(std > 0, std, torch.ones_like(std))
    h_train, h_test = (h_train - mean) / std, (h_test - mean) / std
    classes = int(max(y_train.max(), y_test.max())) + 1
    targets = torch.nn.functional.one_hot(y_train, classes).double()
    gram = h_train.T @ h_train + ridge * len(h_train) * torch.eye(h_train.shape[1], dtype=torch.float64)
    weights = torch.linalg.solve(gram, h_train.T @ targets)
    return float((h_test @ weights).argmax(1).eq(y_test).double().mean())


def relu_cosine_map(c) -> np.ndarray:
    """``f(c) = (sqrt(1 - c^2) + (pi - arccos c) c) / pi``: the cosine of ``W relu(u)`` and
    ``W relu(v)`` for wide random ``W`` when ``u`` and ``v`` have cosine ``c``."""
    c = np.clip(np.asarray(c, dtype=float), -1.0, 1.0)
    return (np.sqrt(1.0 - c ** 2) + (np.pi - np.arccos(c)) * c) / np.pi


def mean_field_cosines(c0, layers: int, *, residual: bool = False) -> np.ndarray:
    """The infinite-width cosine of two inputs after ``0, 1, ..., layers`` layers of a chain
    with He initialisation and no normalisation, starting from cosine(s) ``c0``.

    Plain: ``c <- f(c)``; residual: ``c <- (c + f(c)) / 2`` (see the module docstring).
    Returns an array of shape ``(layers + 1, *shape of c0)``."""
    layers = positive_int("layers", layers, minimum=0)
    c = np.asarray(c0, dtype=float)
    out = [c]
    for _ in range(layers):
        c = (c + relu_cosine_map(c)) / 2 if residual else relu_cosine_map(c)
        out.append(c)
    return np.stack(out)
