"""One call that seeds Python, NumPy and PyTorch, so that a notebook's run is repeatable.

The default seed comes from the ``COURSE_SEED`` environment variable (0 when unset). The
site and ``make test`` run every notebook with seed 0; ``make sweep`` re-runs them with
``COURSE_SEED`` set to 1, ..., 9 to check that each asserted claim is robust rather than
lucky. A notebook that trains several nets draws their seeds with :func:`seeds_of_run`, so
no two notebook seeds share a net.

Only a notebook's first cell touches global state (:func:`seed_everything`). Inside
``helpers`` an experiment seeds locally: :func:`isolated` around what draws from PyTorch's
global generator (a net's initial weights), :func:`generator` where a draw takes one (an
order, a sample); neither changes the notebook's own random sequence.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from ._checks import positive_int

SEED_VARIABLE = "COURSE_SEED"


def default_seed() -> int:
    """The seed named by ``$COURSE_SEED``, or 0."""
    raw = os.environ.get(SEED_VARIABLE, "0")
    try:
        return positive_int(SEED_VARIABLE, int(raw), minimum=0)
    except ValueError as err:
        raise ValueError(f"${SEED_VARIABLE} must be a non-negative integer, got {raw!r}") from err


def seed_everything(seed: int | None = None, *, threads: int | None = 1) -> int:
    """Seed ``random``, NumPy and PyTorch with ``seed`` (default: :func:`default_seed`): a
    notebook's first cell, never a helper (module docstring).

    Unless ``threads`` is None, also sets PyTorch's number of CPU threads (default 1).
    The course's nets are tiny (a batch of 128 rows of width 32), and for them one thread
    is faster than several: the time goes into per-operation overhead, not arithmetic.
    One thread also fixes the order of every sum, so two runs with one seed give the same
    numbers however many cores the machine has. Where a GPU is present, PyTorch is also
    asked for deterministic algorithms (without the costly filling of new tensors); on
    the CPU the request would change nothing the course runs and costs a 1.5 s import of
    PyTorch's compiler settings in every notebook and worker. Returns the seed.
    """
    seed = default_seed() if seed is None else positive_int("seed", seed, minimum=0)
    if threads is not None:
        torch.set_num_threads(positive_int("threads", threads))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.use_deterministic_algorithms(True, warn_only=True)
        # Deterministic mode also fills every new tensor with NaN to expose reads of
        # uninitialised memory, a measurable cost for nets this small; no course code needs it.
        torch.utils.deterministic.fill_uninitialized_memory = False
    return seed


def seeds_of_run(seed: int, n: int) -> tuple[int, ...]:
    """The ``n`` seeds of the nets one run of a notebook trains: ``n*seed, ..., n*seed + n - 1``.

    Runs with different notebook seeds never share a net (seed 1 of a three-net run trains
    3, 4, 5; seed 2 trains 6, 7, 8), so a sweep over ten notebook seeds is ten independent
    checks. Seed 0 trains 0, 1, ..., n - 1.
    """
    seed = positive_int("seed", seed, minimum=0)
    n = positive_int("n", n)
    return tuple(n * seed + i for i in range(n))


def generator(seed: int) -> torch.Generator:
    """A private ``torch.Generator`` seeded with ``seed`` (for shuffling, directions...)."""
    return torch.Generator().manual_seed(positive_int("seed", seed, minimum=0))


@contextmanager
def isolated(seed: int) -> Iterator[None]:
    """Draw from PyTorch's global generator seeded with ``seed``, and put the caller's random
    state back afterwards: ``with isolated(3): net = DeepMLP(...)`` draws the same net
    whatever ran before, and leaves the notebook's own random sequence untouched."""
    seed = positive_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):  # the CPU generator, where the course's nets are drawn
        torch.default_generator.manual_seed(seed)
        yield
