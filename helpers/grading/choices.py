"""A checker for "predict, then measure" exercises whose answers are choices, not numbers:
several recorded predictions, each one of a few options (say 1 for "fails", 0 for "learns"),
against what the notebook has just measured.

Choices invite guessing. With ``k`` options a random guess gets ``n / k`` of ``n`` items right
on average, so the score counts only what beats that (the usual correction for guessing)::

    score = max(0, (right - n / k) / (n - n / k))

Five yes/no predictions with three right score 0.2, not 0.6; all five right score 1. A
prediction that is not one of the options (0.5 for "either") is marked wrong, never rounded,
and it is not counted as the prediction: the learner may still give an option.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import Feedback
from .predictions import each_prediction


def guessing_score(right: int, total: int, n_options: int) -> float:
    """The share of ``total`` choices answered above chance, from 0 to 1:
    ``max(0, (right - total / n_options) / (total - total / n_options))``."""
    if not isinstance(total, int) or total < 1:
        raise ValueError(f"total must be an int >= 1, got {total!r}")
    if not isinstance(right, int) or not 0 <= right <= total:
        raise ValueError(f"right must be an int from 0 to total ({total}), got {right!r}")
    if not isinstance(n_options, int) or n_options < 2:
        raise ValueError(f"n_options must be an int >= 2, got {n_options!r}")
    chance = total / n_options
    return max(0.0, (right - chance) / (total - chance))


def check_choices(exercise: str, predictions: dict, measured: dict, *, options: Sequence,
                  explain: str = "") -> Feedback:
    """Compare recorded predictions, ``{name: option}``, with the measured options of the same
    names. Each prediction must be one of ``options``; the score is corrected for guessing
    (:func:`guessing_score`), and the feedback says what guessing would have scored."""
    if not isinstance(exercise, str) or not exercise:
        raise TypeError(f"exercise must be a non-empty str, got {exercise!r}")
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence) or len(set(options)) < 2:
        raise ValueError(f"options must be a sequence of at least two different numbers, got {options!r}")
    options = list(options)
    if not isinstance(measured, dict) or not measured:
        raise TypeError(f"measured must be a non-empty dict of options, got {measured!r}")
    outside = {name: value for name, value in measured.items() if value not in options}
    if outside:
        raise ValueError(f"measured values must be among options {options}, got {outside}")
    names = list(measured)
    tests = [f"your prediction for {name}, one of {options}, against the measurement this cell makes"
             for name in names]

    def refuse(value):
        if any(np.isclose(value, option) for option in options):
            return ""
        return f"your prediction {value:g} is not one of the options {options}."

    def judge(name, value):
        if np.isclose(value, measured[name]):
            return True, f"✓ {name}: you predicted {value:g}; the measurement gives {measured[name]:g}."
        return False, f"✗ {name}: you predicted {value:g}; the measurement gives {measured[name]:g}."

    result = each_prediction(exercise, predictions, names, judge, refuse)
    if not isinstance(result, Feedback):
        lines, right = result
        score = guessing_score(right, len(names), len(options))
        lines.append(f"{right} of {len(names)} right. Guessing gets {len(names) / len(options):g} right on "
                     f"average, so the score counts what beats it: {score:.2f}.")
        passed = right == len(names)
        if not passed and explain:
            lines.append(explain)
        result = Feedback(exercise, lines, passed, score=score)
    result.tests = tests
    return result
