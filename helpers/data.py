"""Data that ships with the course: nothing here downloads anything.

* the 8x8 digits of scikit-learn (1,797 images, 10 classes), as standardised tensors;
* synthetic tasks that the later chapters need: scalar inputs on an interval, an
  identity-regression task, token sequences to reverse or sort, and padded batches of
  variable-length sequences.
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


def scalar_inputs(n: int = 256, low: float = -2.0, high: float = 2.0) -> torch.Tensor:
    """``n`` evenly spaced scalars on ``[low, high]``, shaped ``(n, 1)`` (Balduzzi et al.'s setup)."""
    n = positive_int("n", n, minimum=2)
    low, high = real_number("low", low), real_number("high", high)
    if high <= low:
        raise ValueError(f"high must be > low, got low={low}, high={high}")
    return torch.linspace(low, high, n).unsqueeze(1)


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


def padded_batch(lengths, dim: int, seed: int = 0, pad_value: float = 0.0):
    """A batch of sequences of the given ``lengths``, right-padded to the longest.

    Returns ``(x, mask)``: ``x`` is ``(len(lengths), max_len, dim)`` with ``N(0, 1)``
    entries and ``pad_value`` in the padding; ``mask`` is True at real (unpadded) positions.
    """
    lengths = [positive_int("lengths[i]", n) for n in lengths]
    if not lengths:
        raise ValueError("lengths must not be empty")
    dim = positive_int("dim", dim)
    longest = max(lengths)
    x = torch.randn(len(lengths), longest, dim, generator=generator(seed))
    mask = torch.arange(longest).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    x = x.masked_fill(~mask.unsqueeze(-1), pad_value)
    return x, mask
