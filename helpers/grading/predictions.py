"""Checkers for "predict, then measure" exercises: a recorded prediction against a measurement.

The learner writes a prediction into a variable *before* the measuring cell runs; the
checker compares it with the measurement the notebook has just made and says how far off
it was. A prediction is not code, so none of the guards of :mod:`helpers.grading.base` is
needed; what is checked is that a prediction was made, and that it is a number (or one of
the listed options).

A prediction counts once. The first number judged for an exercise (for each name, where
there are several) is the one every later check of that exercise in the same kernel judges:
a wrong answer's feedback shows the measurement, and resubmitting it would otherwise pass.
A changed prediction is named in the feedback, and not credited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .base import Feedback
from .values import as_number

COUNTED: dict[tuple, float] = {}
"""The prediction that counts, by ``(exercise,)`` or ``(exercise, name)``: the first one judged here."""

NO_PREDICTION = ("no prediction yet: write yours in the cell above before you look at the measurement, then run "
                 "this cell again.")


def counted(key: tuple, value: float) -> tuple[float, str]:
    """The prediction to judge for ``key`` (the first one judged, see the module's docstring)
    and a note, empty unless ``value`` differs from it by more than a float32's rounding."""
    first = COUNTED.setdefault(key, value)
    if math.isclose(first, value, rel_tol=1e-6):
        return first, ""
    return first, (f"you changed it to {value:g} after it had been judged; a prediction counts once, so your "
                   f"first, {first:g}, is judged")


def _aside(note: str) -> str:
    return f" ({note})" if note else ""


def each_prediction(exercise: str, predictions, names: list, judge,
                    refuse: Callable[[float], str] | None = None) -> Feedback | tuple[list[str], int]:
    """Several recorded predictions, ``{name: value}``, judged one by one: the feedback when
    there is nothing to judge (no prediction yet, or not a dict with the keys ``names``), else
    ``(lines, right)`` with one line per name, from ``judge(name, number) -> (right?, line)``
    for each prediction that is a number. ``refuse(number)``, if given, says what is wrong with
    a number that cannot be an answer (empty if nothing): such a number is marked wrong and,
    like text, is not counted as the prediction, so that a typo does not fix the answer."""
    if predictions is None or (isinstance(predictions, dict) and all(v is None for v in predictions.values())):
        return Feedback(exercise, [NO_PREDICTION], False)
    if not isinstance(predictions, dict) or set(predictions) != set(names):
        return Feedback(exercise, [f"your prediction must be a dict with the keys {names}, got {predictions!r}"],
                        False)
    lines, right = [], 0
    for name in names:
        value, problem = as_number(predictions[name])
        if problem:
            lines.append(f"✗ {name}: your prediction is {problem.removeprefix('returned ')}")
            continue
        problem = refuse(value) if refuse else ""
        if problem:
            lines.append(f"✗ {name}: {problem}")
            continue
        value, note = counted((exercise, name), value)
        ok, line = judge(name, value)
        right += ok
        lines.append(f"{line} {note.capitalize()}." if note else line)
    return lines, right


def check_prediction(exercise: str, prediction, measured, *, rtol: float | None = None,
                     options: Sequence | None = None, explain: str = "") -> Feedback:
    """Compare ``prediction`` with ``measured``: one number within relative tolerance ``rtol``,
    or one of ``options`` that must equal ``measured``. ``explain`` is added when it was off."""
    if not isinstance(exercise, str) or not exercise:
        raise TypeError(f"exercise must be a non-empty str, got {exercise!r}")
    if (rtol is None) == (options is None):
        raise ValueError("give exactly one of rtol (a number to predict) or options (a choice to predict)")
    tests = [f"your prediction against the measurement this cell makes (within {100 * float(rtol):.0f} %)"
             if options is None else f"your prediction, one of {list(options)}, against the measurement this "
             "cell makes"]
    result = _check(exercise, prediction, measured, rtol, options, explain)
    result.tests = tests
    return result


def _check(exercise: str, prediction, measured, rtol, options, explain) -> Feedback:
    if prediction is None:
        return Feedback(exercise, [NO_PREDICTION], False)
    value, problem = as_number(prediction)
    if problem:
        return Feedback(exercise, [f"your prediction {problem.removeprefix('returned ')}"], False)
    if options is not None:
        if not any(np.isclose(value, o) for o in options):
            return Feedback(exercise, [f"your prediction {value:g} is not one of the options {list(options)}."], False)
        value, note = counted((exercise,), value)
        note = _aside(note)
        if np.isclose(value, measured):
            return Feedback(exercise, [f"your prediction, {value:g}, is what the measurement gives{note}."], True)
        return Feedback(exercise, [f"you predicted {value:g}{note}; the measurement gives {measured:g}. "
                                   f"{explain}".strip()], False)
    value, note = counted((exercise,), value)
    note = _aside(note)
    rtol = float(rtol)
    off = abs(value - measured) / abs(measured)
    if off <= rtol:
        return Feedback(exercise, [f"your prediction, {value:.3g}, is within {100 * off:.0f} % of the measured "
                                   f"{measured:.3g}{note}."], True)
    return Feedback(exercise, [f"you predicted {value:.3g}{note}; the measurement gives {measured:.3g} "
                               f"({100 * off:.0f} % off, more than the {100 * rtol:.0f} % allowed). "
                               f"{explain}".strip()], False)


def check_predictions(exercise: str, predictions: dict, measured: dict, *, atol: float,
                      explain: str = "") -> Feedback:
    """Compare several recorded predictions, ``{name: number}``, with the measurements of the
    same names, each within the absolute tolerance ``atol`` (for quantities such as
    correlations, where a relative tolerance means nothing near 0)."""
    if not isinstance(exercise, str) or not exercise:
        raise TypeError(f"exercise must be a non-empty str, got {exercise!r}")
    if not isinstance(measured, dict) or not measured:
        raise TypeError(f"measured must be a non-empty dict of numbers, got {measured!r}")
    atol = float(atol)
    if not atol > 0:
        raise ValueError(f"atol must be > 0, got {atol}")
    names = list(measured)
    tests = [f"your prediction for {name} against the measurement this cell makes (within ±{atol:g})"
             for name in names]

    def judge(name, value):
        if abs(value - measured[name]) <= atol:
            return True, f"✓ {name}: you predicted {value:.2f}; the measurement gives {measured[name]:.2f}."
        return False, (f"✗ {name}: you predicted {value:.2f}; the measurement gives {measured[name]:.2f}, "
                       f"more than {atol:g} away.")

    result = each_prediction(exercise, predictions, names, judge)
    if not isinstance(result, Feedback):
        lines, right = result
        passed = right == len(names)
        if not passed and explain:
            lines.append(explain)
        result = Feedback(exercise, lines, passed, score=right / len(names))
    result.tests = tests
    return result
