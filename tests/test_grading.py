import math

import numpy as np
import torch

from helpers.grading import Case, check_per_layer_factor, run_cases


def _right(norms):
    slope = np.polyfit(np.arange(len(norms)), np.log(norms), 1)[0]
    return math.exp(-slope)


def test_checker_passes_a_correct_answer():
    feedback = check_per_layer_factor(_right)
    assert feedback.passed, str(feedback)
    assert "all checks passed" in str(feedback) and "all checks passed" in feedback._repr_html_()


def test_checker_names_the_specific_mistake():
    cases = {
        "forgot return": (lambda norms: None, "forget the `return`"),
        "reciprocal": (lambda norms: 1 / _right(norms), "reciprocal"),
        "endpoints only": (lambda norms: (norms[0] / norms[-1]) ** (1 / (len(norms) - 1)), "noisy"),
        "crash": (lambda norms: norms.nonexistent, "AttributeError"),
        "not a number": (lambda norms: "0.5", "expected"),
    }
    for name, (fn, needle) in cases.items():
        feedback = check_per_layer_factor(fn)
        assert not feedback.passed, name
        assert needle in str(feedback), (name, str(feedback))


def test_run_cases_compares_tensors_by_shape_and_value():
    cases = [Case("double", (torch.ones(2),), torch.full((2,), 2.0))]
    assert run_cases("double", lambda x: 2 * x, cases).passed
    assert "shape" in str(run_cases("double", lambda x: torch.ones(3), cases))
    assert "differ" in str(run_cases("double", lambda x: 3 * x, cases))
    assert "torch.Tensor" in str(run_cases("double", lambda x: [2.0, 2.0], cases))
    assert "expected a function" in str(run_cases("double", 42, cases))
