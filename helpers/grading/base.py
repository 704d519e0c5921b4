"""A checker base for exercises: run a learner's function, catch its errors, say what is wrong.

A checker is a list of :class:`Case` objects. :func:`run_cases` calls the learner's
function on each case's arguments and compares the result with the expected value; the
:class:`Feedback` it returns lists, case by case, what passed and, specifically, what did
not. For every case, every checker gets these guards:

* the function receives a deep copy of the arguments, so it cannot corrupt the checker's
  data, and a copy that it changed in place is reported ("modified its argument x in
  place");
* anything it raises, ``SystemExit`` included (everything but ``KeyboardInterrupt``),
  becomes feedback that points at the learner's own line;
* a time limit (:data:`~helpers.grading.sandbox.DEFAULT_TIME_LIMIT` seconds unless the
  checker or the case sets one) stops a call that runs too long, and the remaining
  cases are skipped;
* the course's reference functions passed as ``off_limits`` raise while the learner's
  function runs, so a "solution" that calls the answer key fails;
* ``None`` returned by an untouched starter (a body of only ``pass``, ``...``,
  ``return None`` or ``raise NotImplementedError``) reads "not implemented yet", and
  the remaining cases are skipped; ``None`` from a function that does work reads "did you
  forget the `return` statement?".

Checkers never raise on a wrong answer: a student's notebook keeps running. They do
raise ``TypeError``/``ValueError`` on a checker's own mistakes (a bad :class:`Case`).
"""

from __future__ import annotations

import ast
import copy
import html
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..environment import is_site_build
from . import sandbox
from .values import WrongType, compare_numeric, modified_arguments

__all__ = ["Case", "Feedback", "compare_numeric", "none_message", "run_cases"]

LATEST: list[Feedback] = []
"""The latest :class:`Feedback` made (at most one), for :func:`helpers.grading.scoring.award`."""


@dataclass
class Case:
    """One call of the learner's function: ``args``, the ``expected`` result, a description.

    ``hint`` is added to the feedback when this case fails. ``compare`` (optional) replaces
    the default comparison: it takes ``(got, expected)`` and returns an error message or
    ``None``. ``time_limit`` (seconds, optional) replaces the check's time limit for this
    case.
    """

    description: str
    args: tuple
    expected: Any
    hint: str = ""
    compare: Callable[[Any, Any], str | None] | None = None
    kwargs: dict = field(default_factory=dict)
    time_limit: float | None = None

    def __post_init__(self):
        for name in ("description", "hint"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.args, tuple):
            raise TypeError(f"args must be a tuple of arguments, got {type(self.args).__name__}")
        if not isinstance(self.kwargs, dict) or not all(isinstance(k, str) for k in self.kwargs):
            raise TypeError(f"kwargs must be a dict with str keys, got {self.kwargs!r}")
        if self.compare is not None and not callable(self.compare):
            raise TypeError(f"compare must be a function or None, got {type(self.compare).__name__}")
        if self.time_limit is not None:
            self.time_limit = sandbox.check_seconds("time_limit", self.time_limit)


@dataclass
class Feedback:
    """The outcome of a check: passed or not, one line per case, and ``score``, the share of
    cases passed (0 to 1; by default 1 when passed, else 0), from which a grader gives
    partial credit (:func:`helpers.grading.scoring.award`).

    ``tests`` says what the checker tried, one line per case; on the site
    (:func:`helpers.environment.is_site_build`) the feedback shows only that, since there
    the hidden solution is what was checked. Its outcome stays in the page's markup
    (``data-passed``), where the tests read it.

    The latest feedback made is kept, for :func:`helpers.grading.scoring.award`."""

    exercise: str
    lines: list[str]
    passed: bool
    score: float | None = None
    tests: list[str] = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.exercise, str):
            raise TypeError(f"exercise must be a str, got {type(self.exercise).__name__}")
        for name in ("lines", "tests"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
                raise TypeError(f"{name} must be a list of str, got {value!r}")
        if not isinstance(self.passed, bool):
            raise TypeError(f"passed must be a bool, got {type(self.passed).__name__}")
        if self.score is None:
            self.score = float(self.passed)
        if isinstance(self.score, bool) or not isinstance(self.score, (int, float)) or not 0 <= self.score <= 1:
            raise ValueError(f"score must be a number from 0 to 1, got {self.score!r}")
        if self.passed and self.score != 1:
            raise ValueError(f"a passed check has score 1, got {self.score!r}")
        LATEST[:] = [self]

    def __str__(self) -> str:
        head = f"{self.exercise}: " + ("all checks passed." if self.passed else "not yet.")
        return "\n".join([head, *self.lines])

    def _repr_html_(self) -> str:
        if is_site_build():
            color, head, lines = "#7570b3", "what the checker tests", self.tests or ["the answer you record"]
            tail = ("<em>Run this notebook to check your own answer: on this page the checker ran the "
                    "hidden solution.</em>")
        else:
            color, lines, tail = ("#1b9e77" if self.passed else "#d95f02"), self.lines, ""
            head = "all checks passed." if self.passed else "not yet."
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        return (f'<div class="course-feedback" data-passed="{str(self.passed).lower()}" '
                f'style="border-left:4px solid {color};padding-left:8px">'
                f"<strong>{html.escape(self.exercise)}: {head}</strong><ul>{items}</ul>{tail}</div>")

    def __bool__(self) -> bool:
        return self.passed


def _is_placeholder_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value is Ellipsis or isinstance(node.value.value, str)
    if isinstance(node, ast.Return):
        return node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def is_placeholder(fn: Callable) -> bool | None:
    """Whether ``fn``'s body is only a placeholder (``pass``, ``...``, a docstring,
    ``return None``, ``raise NotImplementedError``); ``None`` where its source is unknown."""
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    name = getattr(fn, "__name__", None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    if name == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if len(lambdas) != 1:
            return None
        body = lambdas[0].body
        return isinstance(body, ast.Constant) and (body.value is None or body.value is Ellipsis)
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)
    return None if node is None else all(_is_placeholder_statement(s) for s in node.body)


def none_message(fn: Callable) -> tuple[str, bool]:
    """What ``None`` returned by ``fn`` means, and whether ``fn`` is an untouched placeholder."""
    placeholder = is_placeholder(fn)
    if placeholder:
        return ("returned None: not implemented yet (the function's body is still a placeholder); "
                "write your code and `return` the answer.", True)
    if placeholder is False:
        return "returned None: did you forget the `return` statement?", False
    return "returned None: not implemented yet, or a missing `return`?", False


@dataclass
class _Outcome:
    problem: str | None  # None: the case passed
    hint: str = ""
    stop: bool = False  # skip the remaining cases (timed out, or not implemented yet)

    def line(self, description: str, previous: str | None) -> str:
        if self.problem is None:
            return f"✓ {description}"
        if self.problem == previous:
            return f"✗ {description}: the same problem as above."
        return f"✗ {description}: {self.problem}" + (f" Hint: {self.hint}" if self.hint else "")


def _copy_arguments(case: Case) -> tuple[tuple, dict]:
    try:
        return copy.deepcopy((case.args, case.kwargs))
    except Exception as err:
        raise TypeError(f"the arguments of case {case.description!r} cannot be deep-copied "
                        f"({type(err).__name__}: {err}); a checker must give copyable arguments") from err


def _run_case(fn: Callable, case: Case, limit: sandbox.time_limit) -> _Outcome:
    """Call ``fn`` on a copy of ``case``'s arguments under ``limit``; judge what it did."""
    args, kwargs = _copy_arguments(case)

    def fail(problem: str, hint: bool = True, stop: bool = False) -> _Outcome:
        return _Outcome(problem, case.hint if hint else "", stop)

    got = None
    try:
        with limit:
            try:
                got = fn(*args, **kwargs)
            except (KeyboardInterrupt, sandbox.CaseTimeout):
                raise
            except BaseException as err:  # a learner's bug, even SystemExit, is feedback, not a crash
                return fail(sandbox.describe_exception(err), hint=False,
                            stop=isinstance(err, NotImplementedError))
            changed = modified_arguments(fn, case.args, case.kwargs, args, kwargs)
            if got is None and case.expected is not None:
                message, placeholder = none_message(fn)
                return fail(message, hint=False, stop=placeholder)
            problem = (case.compare or compare_numeric)(got, case.expected)
    except sandbox.CaseTimeout as err:
        return fail(f"took longer than {err.seconds:g} s{sandbox.where(err)}, so it was stopped",
                    hint=False, stop=True)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # e.g. a returned object whose conversion to a number fails
        return fail(f"returned a {type(got).__name__} that could not be checked "
                    f"({type(err).__name__}: {err})", hint=False)
    if changed:
        return fail(changed + (f". Also: {problem}" if problem else ""), hint=False)
    if problem is None:
        return _Outcome(None)
    return fail(problem, hint=not isinstance(problem, WrongType))


def _is_reference(fn: Callable, references: tuple) -> bool:
    return any(fn is ref or getattr(fn, "__wrapped__", None) is ref for ref in references)


def run_cases(exercise: str, fn, cases: list[Case], *, time_limit: float | None = None,
              off_limits: tuple[Callable, ...] = ()) -> Feedback:
    """Call ``fn`` on every case; return :class:`Feedback` that names what is wrong.

    ``time_limit``: seconds per case (``None``: :data:`~helpers.grading.sandbox.DEFAULT_TIME_LIMIT`;
    ``math.inf``: none); a case's own ``time_limit`` wins. ``off_limits``: the course's
    reference functions, which raise while ``fn`` runs (see :class:`~helpers.grading.sandbox.off_limits`).
    """
    if not isinstance(exercise, str):
        raise TypeError(f"exercise must be a str, got {type(exercise).__name__}")
    if not isinstance(cases, (list, tuple)):
        raise TypeError(f"cases must be a list of Case, got {type(cases).__name__}")
    if not cases:
        raise ValueError("cases must not be empty")
    for i, case in enumerate(cases):
        if not isinstance(case, Case):
            raise TypeError(f"cases[{i}] must be a Case, got {type(case).__name__}")
    default = sandbox.DEFAULT_TIME_LIMIT if time_limit is None else sandbox.check_seconds("time_limit", time_limit)
    if isinstance(off_limits, (str, bytes)) or not isinstance(off_limits, (list, tuple)):
        raise TypeError(f"off_limits must be a tuple of functions, got {type(off_limits).__name__}")
    for i, ref in enumerate(off_limits):
        if not callable(ref) or not isinstance(getattr(ref, "__name__", None), str):
            raise TypeError(f"off_limits[{i}] must be a named function, got {type(ref).__name__} {ref!r}")
    namespace = getattr(fn, "__globals__", None)  # where a notebook's function looks up names
    guard = sandbox.off_limits(off_limits, namespaces=[namespace if isinstance(namespace, dict) else None])
    if not callable(fn):
        return Feedback(exercise, [f"expected a function, got {type(fn).__name__}"], False)
    if _is_reference(fn, guard.functions):
        return Feedback(exercise, ["✗ this is the course's own reference function; write your own."], False)
    lines, passed, unavailable, previous, n_passed = [], True, None, None, 0
    with guard:
        for i, case in enumerate(cases):
            limit = sandbox.time_limit(case.time_limit or default)
            outcome = _run_case(fn, case, limit)
            unavailable = unavailable or limit.unavailable
            lines.append(outcome.line(case.description, previous))
            passed, previous = passed and outcome.problem is None, outcome.problem
            n_passed += outcome.problem is None
            if outcome.stop and i + 1 < len(cases):
                left = len(cases) - i - 1
                lines.append("(the other case was not run)" if left == 1 else f"(the other {left} cases were not run)")
                break
    if unavailable:
        lines.append(f"Note: no time limit could be set ({unavailable}); a function that never "
                     "returns would block this cell.")
    return Feedback(exercise, lines, passed, score=n_passed / len(cases), tests=[c.description for c in cases])
