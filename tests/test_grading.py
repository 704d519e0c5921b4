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


# --- chapter 1: residual block forward pass -------------------------------------------------

def _block(x, w1, b1, w2, b2):
    return x + torch.relu(x @ w1.T + b1) @ w2.T + b2


def test_residual_forward_checker_accepts_the_block():
    from helpers.grading import check_residual_forward

    feedback = check_residual_forward(_block)
    assert feedback.passed, str(feedback)


def test_residual_forward_checker_recognises_each_mistake():
    from helpers.grading import check_residual_forward

    mistakes = {
        "skip": (lambda x, w1, b1, w2, b2: torch.relu(x @ w1.T + b1) @ w2.T + b2, "skip connection"),
        "final relu": (lambda x, w1, b1, w2, b2: torch.relu(_block(x, w1, b1, w2, b2)), "post-activation"),
        "no relu": (lambda x, w1, b1, w2, b2: x + (x @ w1.T + b1) @ w2.T + b2, "ReLU between"),
        "no b2": (lambda x, w1, b1, w2, b2: x + torch.relu(x @ w1.T + b1) @ w2.T, "b2"),
        "transpose": (lambda x, w1, b1, w2, b2: x + torch.relu(x @ w1 + b1) @ w2 + b2, "x @ w.T"),
        "none": (lambda *args: None, "return"),
    }
    for name, (fn, needle) in mistakes.items():
        feedback = check_residual_forward(fn)
        assert not feedback.passed, name
        assert needle in str(feedback), (name, str(feedback))


# --- chapter 1: paths of each length ------------------------------------------------------

def test_path_counts_checker():
    from math import comb

    from helpers.grading import check_path_counts

    assert check_path_counts(lambda n: [comb(n, k) for k in range(n + 1)]).passed
    cases = {
        "missing k=0": (lambda n: [comb(n, k) for k in range(1, n + 1)], "k = 0"),
        "wrong total": (lambda n: [1] * (n + 1), "2^"),
        "wrong entry": (lambda n: [comb(n, k) + (k == 1) - (k == 2) for k in range(n + 1)], "k = 1"),
        "crash": (lambda n: 1 / 0, "ZeroDivisionError"),
    }
    for name, (fn, needle) in cases.items():
        feedback = check_path_counts(fn)
        assert not feedback.passed, name
        assert needle in str(feedback), (name, str(feedback))


# --- chapter 1: most harmful block --------------------------------------------------------

def _trained_tiny_net():
    from helpers.data import digits
    from helpers.experiments import train_twins

    data = digits()
    model = train_twins(data, 8, seed=0, epochs=3)["residual"][0]
    return model, data.x_test, data.y_test


def test_most_harmful_block_checker():
    from helpers.grading import check_most_harmful_block
    from helpers.measure import single_block_lesions

    model, x, y = _trained_tiny_net()
    worst = int(np.argmax(single_block_lesions(model, x, y)))
    other = (worst + 2) % len(model.blocks)  # neither the answer nor an off-by-one
    good = check_most_harmful_block(lambda m, x_, y_: worst, model, x, y, prediction=worst)
    assert good.passed and "was right" in str(good), str(good)
    wrong = check_most_harmful_block(lambda m, x_, y_: other, model, x, y, prediction=other)
    assert not wrong.passed and f"deleting block {worst}" in str(wrong)
    assert "measurement says" in str(wrong)
    if worst + 1 < len(model.blocks):
        off = check_most_harmful_block(lambda m, x_, y_: worst + 1, model, x, y)
        assert "0-based" in str(off) or f"deleting block {worst}" in str(off)
    assert "expected a block index" in str(check_most_harmful_block(lambda m, x_, y_: "1", model, x, y))
    assert "blocks 0 to" in str(check_most_harmful_block(lambda m, x_, y_: 99, model, x, y))
