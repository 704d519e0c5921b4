"""Checkers for "predict, then measure" exercises: a recorded prediction against a measurement.

The learner writes a prediction into a variable *before* the measuring cell runs; the
checker compares it with the measurement the notebook has just made and says how far off
it was. A prediction is not code, so none of the guards of :mod:`helpers.grading.base` is
needed; what is checked is that a prediction was made, and that it is a number (or one of
the listed options).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import Feedback
from .values import as_number


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
        return Feedback(exercise, ["no prediction yet: write yours in the cell above before you look at the "
                                   "measurement, then run this cell again."], False)
    value, problem = as_number(prediction)
    if problem:
        return Feedback(exercise, [f"your prediction {problem.removeprefix('returned ')}"], False)
    if options is not None:
        if not any(np.isclose(value, o) for o in options):
            return Feedback(exercise, [f"your prediction {value:g} is not one of the options {list(options)}."], False)
        if np.isclose(value, measured):
            return Feedback(exercise, [f"your prediction, {value:g}, is what the measurement gives."], True)
        return Feedback(exercise, [f"you predicted {value:g}; the measurement gives {measured:g}. {explain}".strip()],
                        False)
    rtol = float(rtol)
    off = abs(value - measured) / abs(measured)
    if off <= rtol:
        return Feedback(exercise, [f"your prediction, {value:.3g}, is within {100 * off:.0f} % of the measured "
                                   f"{measured:.3g}."], True)
    return Feedback(exercise, [f"you predicted {value:.3g}; the measurement gives {measured:.3g} ({100 * off:.0f} % "
                               f"off, more than the {100 * rtol:.0f} % allowed). {explain}".strip()], False)
