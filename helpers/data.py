"""Data that ships with the course: nothing here downloads anything.

* the 8x8 digits of scikit-learn (1,797 images, 10 classes), as standardised tensors;
* synthetic tasks: an identity-regression task and token sequences to reverse or sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import choice, positive_int, real_number
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


def digits(test_size: float = 0.25, split_seed: int = 0) -> DataSplit:
    """scikit-learn's digits as float32 tensors, split stratified and standardised.

    Each of the 64 pixel features is standardised with the *training* mean and standard
    deviation (constant pixels are left at 0). ``split_seed`` fixes the split, so that
    every chapter trains on the same images whatever seed it uses for its models.
    """
    test_size = real_number("test_size", test_size, low=0.0, high=1.0, low_inclusive=False)
    if test_size >= 1.0:
        raise ValueError(f"test_size must be < 1, got {test_size}")
    positive_int("split_seed", split_seed, minimum=0)
    # Imported here: scikit-learn takes seconds to import, and worker processes
    # (helpers.parallel) receive the tensors ready-made.
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_size, random_state=split_seed, stratify=y
    )
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std[std == 0] = 1.0

    def as_tensor(a):
        return torch.as_tensor((a - mean) / std, dtype=torch.float32)

    return DataSplit(as_tensor(x_tr), torch.as_tensor(y_tr), as_tensor(x_te), torch.as_tensor(y_te))


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


def sequence_task(kind: str, n: int, length: int, vocab: int, seed: int = 0):
    """Random token sequences and their targets for a sequence-to-sequence task.

    ``kind`` is ``"reverse"`` (target is the sequence backwards), ``"sort"`` (target is
    the sorted sequence) or ``"copy"``. Tokens are integers in ``[0, vocab)``. Returns
    ``(tokens, targets)``, both ``(n, length)`` int64 tensors.
    """
    kind = choice("kind", kind, ("reverse", "sort", "copy"))
    n, length = positive_int("n", n), positive_int("length", length)
    vocab = positive_int("vocab", vocab, minimum=2)
    tokens = torch.randint(0, vocab, (n, length), generator=generator(seed))
    if kind == "reverse":
        return tokens, tokens.flip(1)
    if kind == "sort":
        return tokens, tokens.sort(dim=1).values
    return tokens, tokens.clone()
