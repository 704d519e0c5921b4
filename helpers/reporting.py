"""Glue measured numbers into the prose: the only way a number reaches the text.

:func:`glue` wraps myst-nb's ``glue`` so that every notebook glues the same way: the
value is converted to a plain Python number (myst-nb cannot format NumPy or PyTorch
scalars), must be finite, and is stored without being displayed in the cell.

myst-nb is the book's builder, not a dependency of ``helpers``: where it is not installed
(the student edition, whose prose already shows the numbers), :func:`glue` still checks
the value and stores nothing.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

try:
    from myst_nb import glue as _myst_glue
except ImportError:  # the student edition: nothing builds a site from these notebooks
    _myst_glue = None


def as_number(name: str, value) -> int | float:
    """``value`` as a Python ``int`` or ``float``; raise naming ``name`` if it is not one finite number."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a single number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"{name} must be a single number, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if isinstance(value, Integral):
        return int(value)
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite to appear in the text, got {value}")
    return value


def glue(*name_and_value, **values) -> None:
    """Store each value for the prose: ``glue("name", value)`` or, for several at once,
    ``glue(name=value, other=value)``; the text shows them with ``{glue:text}`name:.2f```.

    Returns nothing, so that a ``glue`` call at the end of a cell prints nothing."""
    if name_and_value:
        if len(name_and_value) != 2:
            raise TypeError("glue takes a name and a value, or name=value pairs")
        name, value = name_and_value
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be an identifier-like string, got {name!r}")
        if name in values:
            raise ValueError(f"{name!r} is given twice")
        values = {name: value, **values}
    if not values:
        raise TypeError("glue needs a name and a value, or name=value pairs")
    numbers = {name: as_number(name, value) for name, value in values.items()}
    if _myst_glue is not None:
        for name, number in numbers.items():
            _myst_glue(name, number, display=False)
