"""A checker base for exercises: run a learner's function, catch its errors, say what is wrong.

A checker is a list of :class:`Case` objects. :func:`run_cases` calls the learner's
function on each case's arguments and compares the result with the expected value; the
:class:`Feedback` it returns lists, case by case, what passed and, specifically, what did
not (an exception and where, ``None`` returned, a wrong type, a wrong shape, the largest
error). Checkers never raise on a wrong answer: a student's notebook keeps running.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class Case:
    """One call of the learner's function: ``args``, the ``expected`` result, a description.

    ``hint`` is added to the feedback when this case fails. ``compare`` (optional) replaces
    the default comparison: it takes ``(got, expected)`` and returns an error message or
    ``None``.
    """

    description: str
    args: tuple
    expected: Any
    hint: str = ""
    compare: Callable[[Any, Any], str | None] | None = None
    kwargs: dict = field(default_factory=dict)


@dataclass
class Feedback:
    """The outcome of a check: passed or not, and one line per case."""

    exercise: str
    lines: list[str]
    passed: bool

    def __str__(self) -> str:
        head = f"{self.exercise}: " + ("all checks passed." if self.passed else "not yet.")
        return "\n".join([head, *self.lines])

    def _repr_html_(self) -> str:
        color = "#1b9e77" if self.passed else "#d95f02"
        items = "".join(f"<li>{_escape(line)}</li>" for line in self.lines)
        status = "all checks passed" if self.passed else "not yet"
        return (f'<div class="course-feedback" style="border-left:4px solid {color};padding-left:8px">'
                f"<strong>{_escape(self.exercise)}: {status}.</strong><ul>{items}</ul></div>")

    def __bool__(self) -> bool:
        return self.passed


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def compare_numeric(got, expected, *, rtol: float = 1e-5, atol: float = 1e-8) -> str | None:
    """``None`` if ``got`` matches ``expected`` (a number, array or tensor); else what differs."""
    if got is None:
        return "returned None: did you forget the `return` statement?"
    exp_arr = expected.detach().numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    if isinstance(expected, torch.Tensor) and not isinstance(got, torch.Tensor):
        return f"returned a {type(got).__name__}; expected a torch.Tensor"
    try:
        got_arr = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return f"returned a {type(got).__name__}, which is not a number or an array"
    if got_arr.shape != exp_arr.shape:
        return f"returned shape {tuple(got_arr.shape)}; expected shape {tuple(exp_arr.shape)}"
    if not np.all(np.isfinite(got_arr)):
        return "returned NaN or infinite values"
    if not np.allclose(got_arr, exp_arr, rtol=rtol, atol=atol):
        err = np.max(np.abs(got_arr - exp_arr))
        return f"values differ from the expected ones by up to {err:.3g}"
    return None


def run_cases(exercise: str, fn, cases: list[Case]) -> Feedback:
    """Call ``fn`` on every case; return :class:`Feedback` that names what is wrong."""
    if not callable(fn):
        return Feedback(exercise, [f"expected a function, got {type(fn).__name__}"], False)
    lines, passed = [], True
    for case in cases:
        try:
            got = fn(*case.args, **case.kwargs)
        except Exception as err:  # a learner's bug is feedback, not a crash
            where = traceback.extract_tb(err.__traceback__)[-1]
            lines.append(f"✗ {case.description}: raised {type(err).__name__}: {err} "
                         f"(line {where.lineno}: {where.line})")
            passed = False
            continue
        problem = (case.compare or compare_numeric)(got, case.expected)
        if problem is None:
            lines.append(f"✓ {case.description}")
        else:
            passed = False
            lines.append(f"✗ {case.description}: {problem}" + (f" Hint: {case.hint}" if case.hint else ""))
    return Feedback(exercise, lines, passed)
