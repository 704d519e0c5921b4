"""The checkers of chapter 2: the backward pass of a two-layer net and of a residual block."""

from functools import partial

import numpy as np
import pytest
import torch

from helpers.grading import chapter2, check_residual_backprop, check_two_layer_backprop


def _backward(x, y, W1, b1, W2, b2, activation, residual=False, slip=None):
    """A learner's backward pass for one example, right or with one usual ``slip``."""
    z1 = W1 @ x + b1
    if activation == "relu":
        a1, slope = np.maximum(z1, 0.0), (z1 > 0).astype(float)
    else:
        a1 = 1.0 / (1.0 + np.exp(-z1))
        slope = a1 if slip == "sigmoid as its slope" else a1 * (1.0 - a1)
    slope = np.ones_like(slope) if slip == "no slope" else slope
    z = W2 @ a1 + b2 + (x if residual and slip != "no skip in forward" else 0.0)
    delta = y - z if slip == "sign" else z - y
    delta1 = (W2.T @ delta) * slope
    grads = {"W2": np.outer(delta, z1 if slip == "z1" else a1), "b2": delta, "W1": np.outer(delta1, x), "b1": delta1}
    if slip == "transposed W1":
        grads["W1"] = np.outer(x, delta1)
    if slip == "transposed W2":
        grads["W2"] = np.outer(a1, delta)
    if residual:
        grads["x"] = {"branch only": W1.T @ delta1, "skip only": delta}.get(slip, delta + W1.T @ delta1)
    return grads


_residual = partial(_backward, residual=True)


def _with(slip, residual=False):
    return partial(_backward, residual=residual, slip=slip)


def test_a_right_backward_pass_passes_as_arrays_tensors_or_lists():
    assert check_two_layer_backprop(_backward).passed
    assert check_residual_backprop(_residual).passed

    def as_tensors(*args):
        return {k: torch.tensor(v) for k, v in _residual(*args).items()}

    def as_lists(*args):
        return {k: v.tolist() for k, v in _backward(*args).items()}

    def extra_keys(*args):
        return {**_backward(*args), "loss": 0.0, "delta1": None}

    assert check_residual_backprop(as_tensors).passed
    assert check_two_layer_backprop(as_lists).passed
    assert check_two_layer_backprop(extra_keys).passed


def test_the_numpy_backward_pass_agrees_with_autograd():
    rng = np.random.default_rng(0)
    for residual in (False, True):
        for activation in chapter2.ACTIVATIONS:
            d, h, o = 5, 3, 2
            args = (*chapter2._problem(rng, d, h, d if residual else o), activation)
            expected = chapter2._two_layer_autograd(*args, residual=residual)
            got = _backward(*args, residual=residual)
            assert set(got) == set(expected)
            for key in expected:
                np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-14)


def test_two_layer_checker_names_each_usual_mistake():
    mistakes = {
        "no slope": "δ1 is missing the factor f'(z1): it was taken as W2ᵀ δ2.",
        "sigmoid as its slope": "δ1 uses σ(z1) as the sigmoid's slope. The slope is σ(z1)(1 − σ(z1))",
        "sign": "the gradient for W2 is wrong: it has the wrong sign, as from the error y − z2. Use δ2 = z2 − y",
        "z1": "the gradient for W2 is wrong: this is outer(δ2, z1), with the pre-activation z1.",
        "transposed W1": "the transpose of W1's shape (4, 3): the outer product's factors are swapped. "
                         "Use outer(δ1, x)",
        "transposed W2": "the transpose of W2's shape (2, 4): the outer product's factors are swapped. "
                         "Use outer(δ2, a1)",
    }
    for slip, needle in mistakes.items():
        feedback = check_two_layer_backprop(_with(slip))
        assert not feedback.passed, slip
        assert needle in str(feedback), (slip, str(feedback))
    # In the square case the shapes match, and the values give the transposed product away.
    for slip, needle in (("transposed W1", "this is outer(x, δ1), the transpose of the right gradient"),
                         ("transposed W2", "this is outer(a1, δ2), the transpose of the right gradient")):
        square = next(line for line in check_two_layer_backprop(_with(slip)).lines if "square" in line)
        assert needle in square, (slip, square)
    # The sigmoid's slip leaves the relu cases right; a relu slope taken as relu(z1) has its own message.
    assert check_two_layer_backprop(_with("sigmoid as its slope")).lines[0].startswith("✓")

    def relu_itself(x, y, W1, b1, W2, b2, activation):
        grads = _backward(x, y, W1, b1, W2, b2, activation)
        if activation == "relu":
            z1 = W1 @ x + b1
            delta1 = (W2.T @ grads["b2"]) * np.maximum(z1, 0.0)
            grads.update(W1=np.outer(delta1, x), b1=delta1)
        return grads

    assert "δ1 uses relu(z1) = a1 as the ReLU's slope" in str(check_two_layer_backprop(relu_itself))


def test_a_missing_slope_shows_on_the_inactive_unit_and_the_first_wrong_gradient_is_named():
    feedback = check_two_layer_backprop(_with("no slope"))
    inactive = next(line for line in feedback.lines if "inactive unit" in line)
    assert inactive.startswith("✗") and "the gradient for W1 is wrong" in inactive, str(feedback)
    assert "the gradient for b1" not in str(feedback), "only the first wrong gradient is named"
    active = next(line for line in feedback.lines if "one hidden unit, active" in line)
    assert active.startswith("✓"), "with every relu unit active a missing slope changes nothing"

    def wrong_b1(*args):
        return {**_backward(*args), "b1": np.zeros_like(args[3])}

    feedback = check_two_layer_backprop(wrong_b1)
    assert "the gradient for b1 is wrong: its entries differ from autograd's by up to" in feedback.lines[0]


def test_residual_checker_names_each_usual_mistake():
    mistakes = {
        "branch only": "the gradient for x is wrong: this is the branch's path alone, W1ᵀ δ1; add δ, the gradient "
                       "that flows through the skip connection.",
        "skip only": "the gradient for x is wrong: this is δ alone, the skip connection's part: the branch's path "
                     "W1ᵀ δ1 is missing.",
        "no slope": "the gradient for x is wrong: the branch's path lacks f'(z1)",
        "no skip in forward": "the gradient for x is wrong: δ leaves out the skip",
        "sign": "the gradient for x is wrong: it has the wrong sign, as from the error y − z. Use δ = z − y",
        "z1": "the gradient for W2 is wrong: this is outer(δ, z1)",
        "transposed W1": "the transpose of W1's shape (3, 4)",
        "transposed W2": "the transpose of W2's shape (4, 3)",
        "sigmoid as its slope": "δ1 uses σ(z1) as the sigmoid's slope",
    }
    for slip, needle in mistakes.items():
        feedback = check_residual_backprop(_with(slip, residual=True))
        assert not feedback.passed, slip
        assert needle in str(feedback), (slip, str(feedback))
    # With a zero second layer, the skip's part is the whole gradient of x.
    feedback = check_residual_backprop(_with("skip only", residual=True))
    zero = next(line for line in feedback.lines if "second layer all zeros" in line)
    assert zero.startswith("✓"), str(feedback)
    feedback = check_residual_backprop(_with("branch only", residual=True))
    zero = next(line for line in feedback.lines if "second layer all zeros" in line)
    assert zero.startswith("✗"), str(feedback)


def _starter(x, y, W1, b1, W2, b2, activation):
    # Your code here.
    return None


def _crashes(x, y, W1, b1, W2, b2, activation):
    return {"W1": W1 @ y}


def test_wrong_kinds_of_answer_get_clear_messages():
    two_layer = {
        "starter": (_starter, "not implemented yet"),
        "raises": (_crashes, "ValueError"),
        "list": (lambda *args: list(_backward(*args).values()),
                 "returned a list; expected a dict with keys 'W1', 'b1', 'W2', 'b2'"),
        "nan": (lambda *args: {**_backward(*args), "W2": np.full_like(args[4], np.nan)},
                "the gradient for W2 has NaN or infinite entries (8 of 8)."),
        "shape": (lambda *args: {**_backward(*args), "b1": _backward(*args)["b1"][:, None]},
                  "the gradient for b1 has shape (4, 1); expected (4,), the shape of b1."),
        "missing key": (lambda *args: {k: v for k, v in _backward(*args).items() if k != "b2"},
                        "returned a dict without the key 'b2'; expected the keys 'W1', 'b1', 'W2', 'b2' (it has"),
        "renamed keys": (lambda *args: {"d" + k: v for k, v in _backward(*args).items()},
                         "returned a dict without the keys 'W1', 'b1', 'W2', 'b2' (it has 'dW2', 'db2', 'dW1', 'db1')"),
        "text": (lambda *args: {**_backward(*args), "W2": "0.5"}, "under the key 'W2': returned a str"),
        "float32": (lambda *args: _backward(*(a.astype(np.float32) for a in args[:6]), args[6]),
                    "the rounding error of float32"),
    }
    for name, (fn, needle) in two_layer.items():
        feedback = check_two_layer_backprop(fn)
        assert not feedback.passed, name
        assert needle in feedback.lines[0], (name, str(feedback))
    feedback = check_two_layer_backprop(_starter)
    assert len(feedback.lines) == 2 and "were not run" in feedback.lines[1]
    feedback = check_residual_backprop(_backward)
    assert "returned a dict without the key 'x'; expected the keys 'x', 'W1', 'b1', 'W2', 'b2'" in feedback.lines[0]
    assert "not implemented yet" in check_residual_backprop(_starter).lines[0]


def test_hidden_cases_change_between_calls(monkeypatch):
    """Each call draws its hidden cases from the checker's generator (fresh entropy in a
    class; here seeded, one seed per call, so the test is deterministic)."""
    seeds = iter(range(100))
    monkeypatch.setattr(chapter2, "_rng", lambda: np.random.default_rng(next(seeds)))
    hidden = {tuple(line for line in check_two_layer_backprop(_backward).lines if "hidden" in line)
              for _ in range(3)}
    assert len(hidden) == 3, "the hidden cases must change from call to call"
    hidden = {tuple(line for line in check_residual_backprop(_residual).lines if "hidden" in line)
              for _ in range(3)}
    assert len(hidden) == 3


def test_the_hidden_cases_catch_a_table_of_the_fixed_answers(monkeypatch):
    table = {}

    def remember(*args):
        table[args[0].tobytes()] = _backward(*args)
        return table[args[0].tobytes()]

    assert check_two_layer_backprop(remember).passed
    fixed = dict(table)

    def looks_up(*args):
        return fixed.get(args[0].tobytes(), {k: np.zeros(1) for k in ("W1", "b1", "W2", "b2")})

    feedback = check_two_layer_backprop(looks_up)
    assert not feedback.passed and all(line.startswith("✓") for line in feedback.lines[:5]), str(feedback)
    # With the hidden generator fixed, the hidden cases repeat.
    monkeypatch.setattr(chapter2, "_rng", lambda: np.random.default_rng(7))
    first, second = (check_two_layer_backprop(_backward).lines for _ in range(2))
    assert first == second


def test_the_references_are_off_limits():
    from helpers.measure.backprop import backprop_by_hand

    def calls_autograd(*args):
        return chapter2._two_layer_autograd(*args)

    def calls_the_course(x, y, W1, b1, W2, b2, activation):
        grads = backprop_by_hand(x[None], y[None], W1, b1, W2, b2, activation)
        return {k: grads[k] for k in ("W1", "b1", "W2", "b2")}

    for fn, name in ((calls_autograd, "_two_layer_autograd"), (calls_the_course, "backprop_by_hand")):
        feedback = check_two_layer_backprop(fn)
        assert not feedback.passed and f"{name} is off limits" in feedback.lines[0], str(feedback)
    assert "off limits" in str(check_residual_backprop(lambda *args: chapter2._two_layer_autograd(*args,
                                                                                                 residual=True)))
    after = chapter2._two_layer_autograd(*chapter2._problem(np.random.default_rng(0), 2, 2, 2), "relu")
    assert set(after) == {"W1", "b1", "W2", "b2"}, "the reference works again after the check"


def test_the_checkers_leave_the_global_random_state_alone():
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    check_two_layer_backprop(_backward)
    check_residual_backprop(_residual)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(numpy_state, np.random.get_state()[1])


def test_the_drawn_problems_avoid_the_relu_kink_and_bad_arguments_raise():
    rng = np.random.default_rng(1)
    for _ in range(50):
        x, y, W1, b1, W2, b2 = chapter2._problem(rng, 3, 4, 2)
        assert np.all(np.abs(W1 @ x + b1) > 1e-6)
    x, y, W1, b1, W2, b2 = chapter2._problem(rng, 3, 3, 3, signs=[1, -1, 1])
    assert np.array_equal(np.sign(W1 @ x + b1), [1, -1, 1])
    x, y, W1, b1, W2, b2 = chapter2._problem(rng, 3, 2, 3, zero_out=True)
    assert not W2.any() and not b2.any()
    with pytest.raises(ValueError, match="signs"):
        chapter2._problem(rng, 3, 2, 3, signs=[1])
    with pytest.raises(ValueError, match="activation"):
        chapter2._two_layer_autograd(x, y, W1, b1, W2, b2, "tanh")
    with pytest.raises(ValueError, match="residual block"):
        chapter2._two_layer_autograd(*chapter2._problem(rng, 3, 2, 4), "relu", residual=True)


def _by_autograd(x, y, W1, b1, W2, b2, activation, *, how):
    """A "solution" that lets PyTorch differentiate, through ``Tensor.backward`` or
    ``torch.autograd.grad``: the exercise asks for NumPy only."""
    t = {k: torch.tensor(v, requires_grad=True) for k, v in dict(W1=W1, b1=b1, W2=W2, b2=b2).items()}
    a1 = torch.relu(t["W1"] @ torch.tensor(x) + t["b1"]) if activation == "relu" else \
        torch.sigmoid(t["W1"] @ torch.tensor(x) + t["b1"])
    loss = 0.5 * ((t["W2"] @ a1 + t["b2"] - torch.tensor(y)) ** 2).sum()
    if how == "backward":
        loss.backward()
        return {k: v.grad.numpy() for k, v in t.items()}
    grads = torch.autograd.grad(loss, list(t.values()))
    return {k: g.numpy() for k, g in zip(t, grads)}


@pytest.mark.parametrize("how", ["backward", "grad"])
def test_autograd_is_off_limits_and_works_again_afterwards(how):
    feedback = check_two_layer_backprop(partial(_by_autograd, how=how))
    assert not feedback.passed and "off limits" in str(feedback), str(feedback)
    x = torch.ones(2, requires_grad=True)
    (x ** 2).sum().backward()
    assert torch.equal(x.grad, torch.full((2,), 2.0)), "autograd works again after the check"
    assert torch.autograd.grad((x ** 3).sum(), x)[0].tolist() == [3.0, 3.0]


@pytest.mark.parametrize("check, backward", [(check_two_layer_backprop, _backward),
                                             (check_residual_backprop, _residual)])
def test_an_answer_that_only_small_cases_pass_scores_nothing(check, backward):
    """A numerical gradient passes every small case and fails the large hidden one (its cost is a
    pass per parameter): the exercise then scores 0, and the feedback says why."""

    def small_only(x, *args):
        if len(x) > 100:
            raise MemoryError("a pass per parameter")
        return backward(x, *args)

    feedback = check(small_only)
    assert not feedback.passed and feedback.score == 0
    assert "No points: the large case" in feedback.lines[-1]
    assert sum(line.startswith("✓") for line in feedback.lines) == len(feedback.lines) - 2
