"""What a learner's function returned, and what it did to its arguments.

* :func:`as_number` and :func:`as_numeric_array` accept numbers only: a string such as
  ``"0.5"``, a bool, text or booleans in an array, a subclass of ``torch.Tensor`` (which
  could redefine the comparisons) are each refused with a message that says so.
* :func:`compare_numeric` compares a returned number, array or tensor with the expected
  one: type, shape, finiteness, then values.
* :func:`same_value` and :func:`modified_arguments` tell whether a call changed its
  arguments in place: tensors are compared with ``torch.equal``, arrays with
  ``np.array_equal``, modules by their parameters and buffers, containers item by item.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from numbers import Real

import numpy as np
import torch
from torch import nn

from .._checks import real_number

_PLAIN_TENSORS = (torch.Tensor, nn.Parameter)


class WrongType(str):
    """A problem with the *type* of what was returned (text, a bool, a list for a tensor).

    A plain ``str`` otherwise; :func:`~helpers.grading.base.run_cases` leaves out the
    case's hint after it, since hints are about wrong values."""


def _tensor_problem(got: torch.Tensor) -> str | None:
    if type(got) not in _PLAIN_TENSORS:
        return f"returned a {type(got).__name__}, a subclass of torch.Tensor; return a plain torch.Tensor"
    if got.dtype == torch.bool or got.is_complex():
        return f"returned a tensor of dtype {got.dtype}; expected real numbers"
    return None


def as_number(got) -> tuple[float | None, str | None]:
    """``(value, None)`` if ``got`` is one finite real number; else ``(None, what is wrong)``.

    Accepted: an int or float (NumPy's too), a 0-d array or a 0-d tensor of numbers.
    Refused: ``bool``, strings, anything else, NaN and infinities."""
    if isinstance(got, (bool, np.bool_)):
        return None, WrongType(f"returned a bool ({got}); expected a number")
    if isinstance(got, (str, bytes)):
        return None, WrongType(f"returned a {type(got).__name__} ({got!r}); expected a number, not text")
    if isinstance(got, torch.Tensor):
        problem = _tensor_problem(got)
        if problem is None and got.dim() != 0:
            problem = f"returned a tensor of shape {tuple(got.shape)}; expected one number"
        if problem:
            return None, WrongType(problem)
        value = float(got.detach().cpu().item())
    elif isinstance(got, np.ndarray):
        if got.ndim != 0 or got.dtype.kind not in "iuf":
            return None, WrongType(f"returned an array of shape {got.shape} and dtype {got.dtype}; expected one number")
        value = float(got)
    elif isinstance(got, Real):
        value = float(got)
    else:
        return None, WrongType(f"returned a {type(got).__name__}; expected one number")
    if not math.isfinite(value):
        return None, f"returned {value}, which is not a finite number"
    return value, None


def as_numeric_array(got) -> tuple[np.ndarray | None, str | None]:
    """``(float array, None)`` if ``got`` is a number, sequence, array or tensor of real
    numbers; else ``(None, what is wrong)``. NaN and infinities are let through (the caller
    decides)."""
    if isinstance(got, (bool, np.bool_)):
        return None, WrongType(f"returned a bool ({got}); expected numbers")
    if isinstance(got, (str, bytes)):
        return None, WrongType(f"returned a {type(got).__name__} ({got!r}); expected numbers, not text")
    if isinstance(got, torch.Tensor):
        problem = _tensor_problem(got)
        if problem:
            return None, WrongType(problem)
        return got.detach().cpu().to(torch.float64).numpy(), None
    try:
        arr = np.asarray(got)
    except Exception:  # a ragged list, or an object whose __array__ fails
        return None, WrongType(f"returned a {type(got).__name__}, which is not a number or an array of numbers")
    if arr.dtype.kind == "O":  # e.g. Python ints too large for int64, or a mix of types
        items = arr.ravel().tolist()
        odd = [v for v in items if isinstance(v, (bool, np.bool_)) or not isinstance(v, Real)]
        if odd:
            kinds = ", ".join(sorted({type(v).__name__ for v in odd}))
            return None, WrongType(f"returned a {type(got).__name__} holding {kinds} values; expected numbers")
        return np.array([float(v) for v in items]).reshape(arr.shape), None
    if arr.dtype.kind == "b":
        return None, WrongType(f"returned a {type(got).__name__} of booleans; expected numbers")
    if arr.dtype.kind in "US":
        return None, WrongType(f"returned a {type(got).__name__} of strings; expected numbers, not text")
    if arr.dtype.kind not in "iuf":
        return None, WrongType(f"returned a {type(got).__name__} of {arr.dtype} values; expected real numbers")
    return arr.astype(np.float64), None


def compare_numeric(got, expected, *, rtol: float = 1e-5, atol: float = 1e-8) -> str | None:
    """``None`` if ``got`` matches ``expected`` (a number, array or tensor); else what differs.

    A tensor is expected where ``expected`` is one; strings and bools are never numbers."""
    rtol = real_number("rtol", rtol, low=0)
    atol = real_number("atol", atol, low=0)
    if got is None:
        return "returned None: not implemented yet, or a missing `return`?"
    if isinstance(expected, torch.Tensor) and not isinstance(got, torch.Tensor):
        return WrongType(f"returned a {type(got).__name__}; expected a torch.Tensor")
    exp_arr = (expected.detach().cpu().to(torch.float64).numpy() if isinstance(expected, torch.Tensor)
               else np.asarray(expected, dtype=np.float64))
    got_arr, problem = as_numeric_array(got)
    if problem:
        return problem
    if got_arr.shape != exp_arr.shape:
        return f"returned shape {tuple(got_arr.shape)}; expected shape {tuple(exp_arr.shape)}"
    if not np.all(np.isfinite(got_arr)):
        return f"returned NaN or infinite values ({int(np.sum(~np.isfinite(got_arr)))} of {got_arr.size})"
    if not np.allclose(got_arr, exp_arr, rtol=rtol, atol=atol):
        err = np.max(np.abs(got_arr - exp_arr))
        return f"values differ from the expected ones by up to {err:.3g}"
    return None


def float32_rounding(value: np.ndarray, expected: np.ndarray, *, what: str, reference: str, fix: str) -> str | None:
    """A message when ``value`` differs from ``expected`` only as float32 rounding would
    (``rtol = 1e-4``, ``atol = 1e-6``), naming ``what`` was compared, the ``reference`` it was
    compared with and the ``fix``; ``None`` when the difference is larger than that."""
    if not np.allclose(value, expected, rtol=1e-4, atol=1e-6):
        return None
    err = float(np.max(np.abs(value - expected)))
    return f"{what} differs from {reference}'s by up to {err:.1g}, the rounding error of float32: {fix}."


def same_value(a, b) -> bool:
    """Whether ``b`` (a learner's copy of an argument, after the call) still equals ``a``
    (an untouched copy): same type, and equal contents, NaN equal to NaN."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if torch.equal(a, b):
            return True
        return bool(a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                    and torch.equal(a.nan_to_num(), b.nan_to_num()))
    if isinstance(a, np.ndarray):
        return (a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, nn.Module):
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(same_value(sa[k], sb[k]) for k in sa)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if type(a).__eq__ is not object.__eq__:
        try:
            equal = a == b
            if isinstance(equal, (bool, np.bool_)):
                return bool(equal) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
        except Exception:  # an __eq__ that cannot compare: fall back to the attributes
            pass
    if hasattr(a, "__dict__"):
        return same_value(vars(a), vars(b))
    return True  # nothing we can compare: assume unchanged


def _argument_names(fn: Callable, n_args: int) -> list[str]:
    """The parameter name that receives each of ``n_args`` positional arguments."""
    names = [f"#{i + 1}" for i in range(n_args)]
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return names
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    for i in range(n_args):
        if i < len(positional):
            names[i] = positional[i].name
        elif star is not None:
            names[i] = f"{star.name}[{i - len(positional)}]"
    return names


def _kind(value) -> str:
    for cls, word in ((torch.Tensor, "tensor"), (np.ndarray, "array"), (list, "list"), (dict, "dict")):
        if isinstance(value, cls):
            return word
    return type(value).__name__


def modified_arguments(fn: Callable, pristine: tuple, pristine_kwargs: dict, used: tuple,
                       used_kwargs: dict) -> str | None:
    """``None`` if ``fn`` left its arguments as they were (``used`` still equals
    ``pristine``); else a message naming the first argument it changed in place."""
    if not (isinstance(pristine, tuple) and isinstance(used, tuple) and len(pristine) == len(used)):
        raise TypeError("pristine and used must be tuples of the same length")
    if not (isinstance(pristine_kwargs, dict) and isinstance(used_kwargs, dict)):
        raise TypeError("pristine_kwargs and used_kwargs must be dicts")
    changed = [(name, p) for name, p, u in zip(_argument_names(fn, len(used)), pristine, used)
               if not same_value(p, u)]
    changed += [(k, v) for k, v in pristine_kwargs.items() if not same_value(v, used_kwargs.get(k))]
    if not changed:
        return None
    name, value = changed[0]
    if isinstance(value, nn.Module):
        return (f"modified its argument {name} in place: its parameters or buffers changed (a forward "
                "pass in training mode updates batch-norm statistics; measure in eval mode)")
    return f"modified its argument {name} in place; return a new {_kind(value)} instead"
