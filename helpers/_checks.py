"""Argument checks shared by every helper: each raises a clear error naming the argument."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real


def positive_int(name: str, value, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an int >= ``minimum``; raise TypeError/ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def real_number(name: str, value, *, low: float | None = None, high: float | None = None,
                low_inclusive: bool = True) -> float:
    """Return ``value`` as a float if it is a real number in range; raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if value != value:
        raise ValueError(f"{name} must not be NaN")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        bound = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {bound} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def choice(name: str, value, options: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``options``; raise naming ``name`` and the options."""
    options = tuple(options)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {options}, got {type(value).__name__} {value!r}")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def non_empty(name: str, values) -> tuple:
    """Return ``values`` as a tuple if it is a non-empty sequence; raise naming ``name``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence, got {type(values).__name__} {values!r}")
    values = tuple(values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    return values
