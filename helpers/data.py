"""Data that ships with the course: nothing here downloads anything.

* the 8x8 digits of scikit-learn (1,797 images, 10 classes), as standardised tensors (the
  default split bundled with the package);
* synthetic tasks: an identity-regression task and token sequences to reverse or sort.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ._checks import choice, positive_int, real_number
from .provenance import PACKAGE, package_file
from .seeding import generator


@dataclass(frozen=True)
class DataSplit:
    """Train and test tensors of a classification task."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def n_features(self) -> int:
        return self.x_train.shape[1]

    @property
    def n_classes(self) -> int:
        return int(torch.cat([self.y_train, self.y_test]).max()) + 1


BUNDLED_DIGITS = PACKAGE / "digits.npz"
DEFAULT_SPLIT = {"test_size": 0.25, "split_seed": 0}


def raw_digits_split(test_size: float = 0.25, split_seed: int = 0) -> dict[str, np.ndarray]:
    """scikit-learn's digits (pixel values 0-16), split stratified by class with
    ``train_test_split``: ``{"x_train", "y_train", "x_test", "y_test"}`` as uint8 arrays."""
    from sklearn.datasets import load_digits  # seconds to import: only when the bundle does not serve
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_size, random_state=split_seed, stratify=y)
    return {k: v.astype(np.uint8) for k, v in
            {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te}.items()}


def bundle_digits(path: Path = BUNDLED_DIGITS) -> None:
    """Write the default split (``test_size=0.25, split_seed=0``) of :func:`raw_digits_split` to
    ``path``, the file :func:`digits` reads (47 kB; a test checks it still matches)."""
    np.savez_compressed(path, **raw_digits_split(**DEFAULT_SPLIT))


def digits(test_size: float = 0.25, split_seed: int = 0) -> DataSplit:
    """scikit-learn's digits as float32 tensors, split stratified and standardised.

    Each of the 64 pixel features is standardised with the *training* mean and standard
    deviation (constant pixels are left at 0). ``split_seed`` fixes the split, so that
    every chapter trains on the same images whatever seed it uses for its models.

    The default split is read from a copy bundled with the package (:func:`bundle_digits`),
    which saves every notebook and worker the 1.5 s import of scikit-learn; any other
    split is made by scikit-learn (:func:`raw_digits_split`).
    """
    test_size = real_number("test_size", test_size, low=0.0, high=1.0, low_inclusive=False)
    if test_size >= 1.0:
        raise ValueError(f"test_size must be < 1, got {test_size}")
    positive_int("split_seed", split_seed, minimum=0)
    if {"test_size": test_size, "split_seed": split_seed} == DEFAULT_SPLIT:
        with np.load(package_file(BUNDLED_DIGITS.name)) as bundle:  # recorded as read (helpers.provenance)
            raw = {k: bundle[k] for k in bundle.files}
    else:
        raw = raw_digits_split(test_size, split_seed)
    x_tr = raw["x_train"].astype(np.float64)
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std[std == 0] = 1.0

    def as_tensor(a):
        return torch.as_tensor((a.astype(np.float64) - mean) / std, dtype=torch.float32)

    def labels(a):
        return torch.as_tensor(a.astype(np.int64))

    return DataSplit(as_tensor(raw["x_train"]), labels(raw["y_train"]), as_tensor(raw["x_test"]),
                     labels(raw["y_test"]))


def identity_task(n: int, dim: int, seed: int = 0, *, nonnegative: bool = False
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``x ~ N(0, I)`` of shape ``(n, dim)`` and the target ``x`` itself.

    ``nonnegative=True`` takes ``|x|`` instead: the inputs a block sees inside a ReLU net,
    where every block's input is the output of a ReLU.
    """
    n, dim = positive_int("n", n), positive_int("dim", dim)
    if not isinstance(nonnegative, bool):
        raise TypeError(f"nonnegative must be a bool, got {type(nonnegative).__name__}")
    x = torch.randn(n, dim, generator=generator(seed))
    if nonnegative:
        x = x.abs()
    return x, x.clone()


SEQUENCE_TASKS = ("reverse", "sort", "copy")
"""The tasks of :func:`sequence_task`: reverse, sort or copy a sequence of tokens."""


def sequence_targets(kind: str, tokens: torch.Tensor) -> torch.Tensor:
    """The targets of ``tokens`` (``(..., length)`` integers) for the task ``kind``:
    ``"reverse"`` (the sequence backwards), ``"sort"`` (sorted) or ``"copy"`` (itself)."""
    kind = choice("kind", kind, SEQUENCE_TASKS)
    if kind == "reverse":
        return tokens.flip(-1)
    if kind == "sort":
        return tokens.sort(dim=-1).values
    return tokens.clone()


def sequence_task(kind: str, n: int, length: int, vocab: int, seed: int = 0):
    """Random token sequences and their targets for a sequence-to-sequence task.

    ``kind`` is one of :data:`SEQUENCE_TASKS` (:func:`sequence_targets`). Tokens are
    integers in ``[0, vocab)``, uniform and independent. Returns ``(tokens, targets)``,
    both ``(n, length)`` int64 tensors.
    """
    kind = choice("kind", kind, SEQUENCE_TASKS)
    n, length = positive_int("n", n), positive_int("length", length)
    vocab = positive_int("vocab", vocab, minimum=2)
    tokens = torch.randint(0, vocab, (n, length), generator=generator(seed))
    return tokens, sequence_targets(kind, tokens)
