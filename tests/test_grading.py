import inspect
import itertools
import math
import signal
import sys
import threading
import time

import numpy as np
import pytest
import torch

from helpers.grading import Case, Feedback, check_per_layer_factor, check_prediction, run_cases


def _right(norms):
    slope = np.polyfit(np.arange(len(norms)), np.log(norms), 1)[0]
    return math.exp(-slope)


def _endpoints(norms):  # the first and last layer only: right on exact profiles, wrong on noisy ones
    return (norms[0] / norms[-1]) ** (1 / (len(norms) - 1))


def _forgets_return(norms):
    slope = np.polyfit(np.arange(len(norms)), np.log(norms), 1)[0]
    math.exp(-slope)


def test_checker_passes_a_correct_answer():
    feedback = check_per_layer_factor(_right)
    assert feedback.passed, str(feedback)
    assert "all checks passed" in str(feedback) and "all checks passed" in feedback._repr_html_()


def test_checker_names_the_specific_mistake():
    cases = {
        "forgot return": (_forgets_return, "forget the `return`"),
        "reciprocal": (lambda norms: 1 / _right(norms), "reciprocal"),
        "endpoints only": (_endpoints, "noisy"),
        "crash": (lambda norms: norms.nonexistent, "AttributeError"),
        "not a number": (lambda norms: "0.5", "expected"),
    }
    for name, (fn, needle) in cases.items():
        feedback = check_per_layer_factor(fn)
        assert not feedback.passed, name
        assert needle in str(feedback), (name, str(feedback))


def test_a_fit_through_the_endpoints_fails_every_noisy_case():
    """It passed about one hidden case in 120 (a class grader's flaky 5/7 instead of 4/7)."""
    from tools.judge.scorer import seeded_hidden_cases

    for seed in range(300):
        with seeded_hidden_cases(seed):
            feedback = check_per_layer_factor(_endpoints)
        assert feedback.score == pytest.approx(4 / 7), (seed, str(feedback))


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

@pytest.fixture(scope="module")
def tiny_net():
    from helpers.data import digits
    from helpers.experiments import train_twins

    data = digits()
    model = train_twins(data, 8, seed=0, epochs=3)["residual"][0]
    return model, data.x_test, data.y_test


def _measures(m, x, y):
    from helpers.measure import error_rate

    return int(np.argmax([error_rate(m, x, y, skip=[i]) for i in range(len(m.blocks))]))


def _answers_on(x_given, answer):
    """A learner's function that measures, except on the net of ``x_given``, where it says ``answer``."""
    return lambda m, x, y: answer if x.shape == x_given.shape and torch.equal(x, x_given) else _measures(m, x, y)


def test_most_harmful_block_checker(tiny_net):
    from helpers.grading import check_most_harmful_block
    from helpers.grading.predictions import COUNTED
    from helpers.measure import single_block_lesions

    model, x, y = tiny_net
    worst = int(np.argmax(single_block_lesions(model, x, y)))
    other = (worst + 2) % len(model.blocks)  # neither the answer nor an off-by-one
    good = check_most_harmful_block(_measures, model, x, y, prediction=worst)
    assert good.passed and "was right" in str(good), str(good)
    COUNTED.clear()  # a fresh kernel: the first prediction judged counts
    wrong = check_most_harmful_block(_answers_on(x, other), model, x, y, prediction=other)
    assert not wrong.passed and f"deleting block {worst}" in wrong.lines[0], str(wrong)
    assert all(line.startswith("✓") for line in wrong.lines[1:3]), str(wrong)
    assert "measurement says" in str(wrong)
    if worst + 1 < len(model.blocks):
        off = check_most_harmful_block(_answers_on(x, worst + 1), model, x, y)
        assert "0-based" in str(off) or f"deleting block {worst}" in str(off)
    assert "expected a block index" in str(check_most_harmful_block(_answers_on(x, "1"), model, x, y))
    assert "blocks 0 to" in str(check_most_harmful_block(_answers_on(x, 99), model, x, y))
    assert "not a block index" in str(check_most_harmful_block(_measures, model, x, y, prediction=True))


def test_most_harmful_block_checker_has_hidden_nets_and_guards_the_model(tiny_net):
    from helpers.grading import check_most_harmful_block
    from helpers.measure import single_block_lesions

    model, x, y = tiny_net
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # A constant answer fails: the hidden nets have two different blocks that matter most.
    for constant in range(len(model.blocks)):
        feedback = check_most_harmful_block(lambda m, x_, y_, c=constant: c, model, x, y)
        assert not feedback.passed and "hidden test net" in str(feedback), str(feedback)

    assert check_most_harmful_block(_measures, model, x, y).passed

    def in_training_mode(m, x_, y_):  # updates the batch-norm statistics of the model it was given
        m.train()
        return int(np.argmax([(m(x_, skip=[i]).argmax(1) != y_).float().mean() for i in range(len(m.blocks))]))

    feedback = check_most_harmful_block(in_training_mode, model, x, y)
    assert not feedback.passed and "modified its argument m in place" in feedback.lines[0], str(feedback)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "the caller's net changed"

    def calls_the_reference(m, x_, y_):
        return int(np.argmax(single_block_lesions(m, x_, y_)))

    feedback = check_most_harmful_block(calls_the_reference, model, x, y)
    assert not feedback.passed and "single_block_lesions is off limits" in str(feedback), str(feedback)
    assert len(single_block_lesions(model, x, y)) == len(model.blocks)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        check_most_harmful_block(_measures, model, x.tolist(), y)
    with pytest.raises(ValueError, match="same length"):
        check_most_harmful_block(_measures, model, x, y[:-1])
    with pytest.raises(TypeError, match="model"):
        check_most_harmful_block(_measures, "net", x, y)


# --- the base: copies, in-place changes, exits, time limits, types, where it failed --------

def test_arguments_are_copied_and_changes_in_place_are_reported():
    from helpers.grading import check_residual_forward

    def adds_in_place(x, w1, b1, w2, b2):
        x.add_(100)
        return x

    feedback = check_residual_forward(adds_in_place)
    message = "modified its argument x in place; return a new tensor instead"
    zero = next(line for line in feedback.lines if "second layer all zeros" in line)
    # The zero-branch case is the one whose expected value *is* x: it must fail too. When the case
    # before it failed the same way, its line says so instead of repeating the message.
    assert zero.startswith("✗") and (message in zero or "the same problem as above" in zero)
    assert any(message in line for line in feedback.lines)

    x = torch.randn(3, 4)
    pristine = x.clone()
    cases = [Case("zero branch", (x, torch.zeros(3, 4)), x)]

    def f(x, branch):
        x.add_(100)
        return x

    def right_value_but_in_place(x, branch):
        x += branch
        return x

    branch = torch.ones(3, 4)
    nonzero = [Case("branch of ones", (x, branch), x + branch)]
    for fn, fn_cases in ((f, cases), (right_value_but_in_place, nonzero)):
        feedback = run_cases("residual", fn, fn_cases)
        assert not feedback.passed and "modified its argument x in place" in str(feedback), str(feedback)
    assert torch.equal(x, pristine) and cases[0].expected is x, "the checker's own data must not change"
    assert run_cases("residual", lambda x, branch: x + branch, cases + nonzero).passed

    def sorts(values):
        values.sort()
        return values[-1]

    for values, kind in ((np.array([3.0, 1.0, 2.0]), "array"), ([3.0, 1.0, 2.0], "list")):
        feedback = run_cases("max", sorts, [Case("max", (values,), 3.0)])
        assert f"modified its argument values in place; return a new {kind} instead" in str(feedback)
    assert run_cases("max", lambda values: max(values), [Case("max", ([3.0, 1.0, 2.0],), 3.0)]).passed
    with pytest.raises(TypeError, match="deep-copied"):
        run_cases("gen", lambda g: 1.0, [Case("a generator", ((i for i in range(3)),), 1.0)])


def _exits(norms):
    sys.exit(3)


def _raises_system_exit(norms):
    raise SystemExit


def test_system_exit_is_feedback_but_keyboard_interrupt_is_not():
    for fn in (_exits, _raises_system_exit):
        feedback = check_per_layer_factor(fn)
        assert not feedback.passed and "SystemExit" in feedback.lines[0] and fn.__name__ in feedback.lines[0]
        assert feedback.lines[1].endswith(": the same problem as above."), str(feedback)

    def interrupted(norms):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_per_layer_factor(interrupted)


def _sleeps(norms):
    time.sleep(30)
    return 0.5


def _stubborn(x):
    try:
        time.sleep(30)
    except BaseException:  # swallows the first time-out; the alarm repeats
        pass
    time.sleep(30)
    return x


def test_a_slow_function_is_stopped_and_the_other_cases_skipped():
    from helpers.grading import DEFAULT_TIME_LIMIT

    start = time.monotonic()
    feedback = check_per_layer_factor(_sleeps)  # the checker's default limit
    assert time.monotonic() - start < DEFAULT_TIME_LIMIT + 5
    assert not feedback.passed
    assert f"took longer than {DEFAULT_TIME_LIMIT:g} s (in _sleeps, line" in feedback.lines[0], str(feedback)
    assert "time.sleep(30)" in feedback.lines[0] and "were not run" in feedback.lines[1]

    cases = [Case("one", (1.0,), 1.0), Case("two", (2.0,), 2.0)]
    start = time.monotonic()
    feedback = run_cases("slow", _stubborn, cases, time_limit=0.5)
    assert time.monotonic() - start < 5 and "took longer than 0.5 s" in str(feedback), str(feedback)
    assert run_cases("fast", lambda v: v, cases, time_limit=0.5).passed
    assert run_cases("no limit", lambda v: v, cases, time_limit=math.inf).passed
    # A case's own limit wins over the check's.
    short = [Case("one", (1.0,), 1.0, time_limit=0.3)]
    assert "took longer than 0.3 s" in str(run_cases("slow", _stubborn, short, time_limit=60))


def _enumerates(n):
    counts = [0] * (n + 1)
    for taken in itertools.product((0, 1), repeat=n):
        counts[sum(taken)] += 1
    return counts


def test_an_exponential_enumeration_runs_into_the_time_limit(monkeypatch):
    from helpers.grading import check_path_counts, sandbox

    monkeypatch.setattr(sandbox, "DEFAULT_TIME_LIMIT", 1.0)
    start = time.monotonic()
    feedback = check_path_counts(_enumerates)
    assert time.monotonic() - start < 8
    assert any(line.startswith("✓ n = 10") for line in feedback.lines)
    assert any(line.startswith("✗ n = 27: took longer than 1 s") for line in feedback.lines), str(feedback)


def test_the_time_limit_gives_back_an_outer_alarm():
    def handler(signum, frame):
        pass

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        assert "took longer" in str(run_cases("slow", _sleeps, [Case("one", (1.0,), 0.5)], time_limit=0.3))
        assert signal.getsignal(signal.SIGALRM) is handler
        assert 20 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_outside_the_main_thread_the_check_runs_without_a_limit_and_says_so():
    result = {}
    cases = [Case("double", (1.0,), 2.0)]
    thread = threading.Thread(target=lambda: result.update(feedback=run_cases("double", lambda v: 2 * v, cases)))
    thread.start()
    thread.join(30)
    assert result["feedback"].passed and "no time limit could be set" in str(result["feedback"])


class _SneakyTensor(torch.Tensor):
    pass


def test_only_numbers_are_numbers():
    right = {
        "float": _right,
        "numpy float": lambda norms: np.float64(_right(norms)),
        "0-d tensor": lambda norms: torch.tensor(_right(norms)),
    }
    for name, fn in right.items():
        assert check_per_layer_factor(fn).passed, name
    wrong = {
        "str": ("0.5", "not text"),
        "bool": (True, "returned a bool"),
        "numpy bool": (np.bool_(True), "returned a bool"),
        "nan": (float("nan"), "not a finite number"),
        "inf": (float("inf"), "not a finite number"),
        "list": ([0.5], "expected one number"),
        "tensor of one": (torch.tensor([0.5]), "shape (1,)"),
    }
    for name, (value, needle) in wrong.items():
        feedback = check_per_layer_factor(lambda norms, v=value: v)
        assert not feedback.passed and needle in feedback.lines[0], (name, str(feedback))
        assert "Hint" not in feedback.lines[0] or name in ("nan", "inf"), (name, str(feedback))
    from helpers.grading import check_path_counts, compare_numeric

    assert "not text" in compare_numeric("2.0", 2.0)
    assert "booleans" in compare_numeric([True, False], np.array([1.0, 0.0]))
    assert "subclass of torch.Tensor" in compare_numeric(torch.ones(2).as_subclass(_SneakyTensor), torch.ones(2))
    assert compare_numeric([1, 2], np.array([1.0, 2.0])) is None
    feedback = check_path_counts(lambda n: [str(math.comb(n, k)) for k in range(n + 1)])
    assert not feedback.passed and "expected numbers" in str(feedback)


def _calls_helpers_wrongly(norms):
    from helpers.models import blocks_for_depth

    return blocks_for_depth(3)


def _calls_numpy_wrongly(norms):
    return np.polyfit(norms, norms[:1], 1)


def test_an_error_points_at_the_learners_own_line():
    for fn, source in ((_calls_helpers_wrongly, "return blocks_for_depth(3)"),
                       (_calls_numpy_wrongly, "return np.polyfit(norms, norms[:1], 1)")):
        lines, first = inspect.getsourcelines(fn)
        lineno = first + next(i for i, line in enumerate(lines) if source in line)
        feedback = check_per_layer_factor(fn)
        assert f"(in {fn.__name__}, line {lineno}: {source})" in feedback.lines[0], str(feedback)
        assert ".py" not in feedback.lines[0]


def _pass(norms):
    pass


def _ellipsis(norms):
    ...


def _starter(norms):
    """Fit the factor."""
    # Your code here.
    return None


def _raises_not_implemented(norms):
    raise NotImplementedError("fit the factor")


def test_an_untouched_starter_is_not_implemented_yet():
    for fn in (_pass, _ellipsis, _starter, _raises_not_implemented):
        feedback = check_per_layer_factor(fn)
        assert not feedback.passed and "not implemented yet" in feedback.lines[0], (fn.__name__, str(feedback))
        assert "forget" not in str(feedback) and len(feedback.lines) == 2 and "were not run" in feedback.lines[1]
    feedback = check_per_layer_factor(_forgets_return)
    assert "did you forget the `return` statement?" in feedback.lines[0] and len(feedback.lines) > 2


# --- gaming: hidden random cases, the course's references off limits -----------------------

def test_a_table_of_the_fixed_answers_fails():
    from helpers.grading import check_path_counts

    table = {n: [math.comb(n, k) for k in range(n + 1)] for n in (1, 3, 10, 27)}
    feedback = check_path_counts(lambda n: table[n])
    assert not feedback.passed and "hidden random n" in str(feedback)
    hidden = {tuple(line for line in check_path_counts(lambda n: table.get(n)).lines if "hidden" in line)
              for _ in range(5)}
    assert len(hidden) > 1, "the hidden cases must change from call to call"
    answers = {len(norms): _right(norms) for norms in (2.0 ** -np.arange(10), np.full(8, 3.0))}
    assert not check_per_layer_factor(lambda norms: answers.get(len(norms), 0.5)).passed


def test_checkers_leave_the_global_random_state_alone(tiny_net):
    from helpers.grading import check_most_harmful_block, check_path_counts, check_residual_forward

    model, x, y = tiny_net
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    check_per_layer_factor(_right)
    check_path_counts(lambda n: [math.comb(n, k) for k in range(n + 1)])
    check_residual_forward(_block)
    check_most_harmful_block(lambda m, x_, y_: 0, model, x, y)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(numpy_state, np.random.get_state()[1])


def _imports_the_reference(norms):
    from helpers.measure import per_layer_factor as fit

    return fit(norms)


def test_the_course_references_are_off_limits_during_a_check_only():
    import helpers.measure
    from helpers.measure import gradients, per_layer_factor

    learners = {
        "package": lambda norms: helpers.measure.per_layer_factor(norms),
        "module": lambda norms: gradients.per_layer_factor(norms),
        "import inside": _imports_the_reference,
        "default argument": lambda norms, fit=per_layer_factor: fit(norms),
        "in a list": lambda norms, tools=[per_layer_factor]: tools[0](norms),
    }
    for name, fn in learners.items():
        feedback = check_per_layer_factor(fn)
        assert not feedback.passed, name
        assert ("the course's reference per_layer_factor is off limits inside this exercise; write your own"
                in feedback.lines[0]), (name, str(feedback))
    assert "the course's own reference" in str(check_per_layer_factor(per_layer_factor))
    # A notebook: the reference imported into the namespace the learner's function lives in.
    notebook: dict = {}
    exec("from helpers.measure import per_layer_factor\n"
         "def my_per_layer_factor(norms):\n    return per_layer_factor(norms)\n", notebook)
    assert "per_layer_factor is off limits" in str(check_per_layer_factor(notebook["my_per_layer_factor"]))
    assert notebook["per_layer_factor"] is per_layer_factor
    # Put back afterwards, after a time-out and after an interrupt too.
    assert "took longer" in str(run_cases("slow", _sleeps, [Case("one", (1.0,), 0.5)], time_limit=0.3,
                                          off_limits=(per_layer_factor,)))

    def interrupted(norms):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_per_layer_factor(interrupted)
    assert helpers.measure.per_layer_factor is per_layer_factor is gradients.per_layer_factor
    assert per_layer_factor([1.0, 2.0, 4.0]) == pytest.approx(0.5)
    from helpers.grading import check_path_counts
    from helpers.measure import path_length_counts

    feedback = check_path_counts(lambda n: path_length_counts(n))
    assert "path_length_counts is off limits" in str(feedback)
    assert list(path_length_counts(3)) == [1, 3, 3, 1]


def test_bad_arguments_to_the_base_name_the_argument():
    from helpers.grading import Feedback, compare_numeric, sandbox

    cases = [Case("one", (1.0,), 1.0)]
    bad = [
        (TypeError, "args", lambda: Case("d", [1.0], 1.0)),
        (TypeError, "description", lambda: Case(1, (1.0,), 1.0)),
        (TypeError, "compare", lambda: Case("d", (1.0,), 1.0, compare=3)),
        (TypeError, "kwargs", lambda: Case("d", (1.0,), 1.0, kwargs={1: 2})),
        (ValueError, "time_limit", lambda: Case("d", (1.0,), 1.0, time_limit=0)),
        (TypeError, "exercise", lambda: run_cases(1, abs, cases)),
        (TypeError, "cases", lambda: run_cases("e", abs, cases[0])),
        (ValueError, "cases", lambda: run_cases("e", abs, [])),
        (TypeError, r"cases\[0\]", lambda: run_cases("e", abs, [1.0])),
        (TypeError, "time_limit", lambda: run_cases("e", abs, cases, time_limit="5")),
        (ValueError, "time_limit", lambda: run_cases("e", abs, cases, time_limit=-1)),
        (TypeError, r"off_limits\[0\]", lambda: run_cases("e", abs, cases, off_limits=(3,))),
        (TypeError, "passed", lambda: Feedback("e", [], "yes")),
        (TypeError, "lines", lambda: Feedback("e", "line", True)),
        (ValueError, "rtol", lambda: compare_numeric(1.0, 1.0, rtol=-1)),
        (ValueError, "seconds", lambda: sandbox.time_limit(float("nan"))),
        (TypeError, "functions", lambda: sandbox.off_limits(3)),
        (TypeError, r"namespaces\[0\]", lambda: sandbox.off_limits((abs,), namespaces=[3])),
    ]
    for error, name, call in bad:
        with pytest.raises(error, match=name):
            call()


def _clearly_best_rule(ddof: int = 1, per_mean: bool = True, rivals: str = "all", factor: float = 2.0):
    """A learner's rule for "is ``rate`` clearly the best": the right one by default, or a slip."""
    def fn(table, rate):
        if any(len(v) < 2 for v in table.values()):
            return False
        means = {lr: np.mean(v) for lr, v in table.items()}
        others = [lr for lr in table if lr != rate]
        if rivals == "runner-up":
            others = [min(others, key=means.get)]
        n = (lambda v: len(v)) if per_mean else (lambda v: 1)
        return all(means[lr] - means[rate] > factor * np.sqrt(np.var(table[rate], ddof=ddof) / n(table[rate])
                                                        + np.var(table[lr], ddof=ddof) / n(table[lr]))
                   for lr in others)
    return fn


def test_best_rate_checker_names_each_mistake():
    from helpers.grading import check_best_rate

    def lowest_mean(table, rate):
        return rate == min(table, key=lambda lr: np.mean(table[lr]))

    def luckiest(table, rate):
        return rate == min(table, key=lambda lr: np.min(table[lr]))

    def a_rate(table, rate):
        return rate

    right = _clearly_best_rule()
    assert check_best_rate(right).passed
    def twice_as_strict(table, rate):  # a 4-SE margin, stricter than a t-test with three seeds
        return _clearly_best_rule(factor=4.0)(table, rate)

    for fn, needle in ((lowest_mean, "the lowest mean alone does not make a rate clearly best"),
                       (luckiest, "single best run, not the lowest mean"),
                       (_clearly_best_rule(ddof=0), "use the sample variance (ddof=1)"),
                       (_clearly_best_rule(per_mean=False), "divide each variance by its number of runs"),
                       (_clearly_best_rule(rivals="runner-up"), "not only the runner-up"),
                       (_clearly_best_rule(factor=1.0), "*twice* the standard error"),
                       (twice_as_strict, "clear by 1.2 times the margin"),
                       (a_rate, "expected True or False")):
        feedback = check_best_rate(fn)
        assert not feedback.passed and needle in str(feedback), (fn, str(feedback))
    # Yes-or-no answers: the score counts what beats guessing, so a constant answer earns little.
    assert check_best_rate(lambda table, rate: False).score < 0.3
    assert check_best_rate(lambda table, rate: True).score == 0
    # The hidden random tables are new on every call, and their margins stay clear of the threshold.
    assert all(check_best_rate(right).passed for _ in range(20))


def test_a_prediction_is_compared_with_the_measurement():
    from helpers.grading import check_prediction

    assert check_prediction("factor 1", 1.0, 0.97, rtol=0.1).passed
    wrong = check_prediction("factor 2", 0.4, 0.97, rtol=0.1, explain="Redo the derivation.")
    assert not wrong.passed and "59 % off" in str(wrong) and "Redo the derivation." in str(wrong)
    assert "no prediction yet" in str(check_prediction("factor 3", None, 0.97, rtol=0.1))
    assert "not text" in str(check_prediction("factor 4", "1.0", 0.97, rtol=0.1))
    assert "bool" in str(check_prediction("factor 5", True, 1.0, rtol=0.1))
    assert check_prediction("scale 6", 0.25, 0.25, options=(1.0, 0.5, 0.25, 0.1)).passed
    off = check_prediction("scale 7", 0.5, 0.25, options=(1.0, 0.5, 0.25, 0.1))
    assert not off.passed and "gives 0.25" in str(off)
    assert "not one of the options" in str(check_prediction("scale 8", 0.3, 0.25, options=(0.5, 0.25)))
    with pytest.raises(ValueError, match="exactly one"):
        check_prediction("x 9", 1.0, 1.0)


def test_several_predictions_are_each_compared_within_an_absolute_tolerance():
    from helpers.grading import check_predictions

    measured = {"plain": 0.02, "residual": 0.71}
    right = check_predictions("corr 10", {"plain": 0.1, "residual": 0.6}, measured, atol=0.15)
    assert right.passed and right.score == 1.0
    half = check_predictions("corr 11", {"plain": 0.1, "residual": 0.1}, measured, atol=0.15, explain="Look at 2.4.")
    assert not half.passed and half.score == 0.5
    assert "✗ residual" in str(half) and "✓ plain" in str(half) and "Look at 2.4." in str(half)
    assert "no prediction yet" in str(check_predictions("corr 12", {"plain": None, "residual": None}, measured,
                                                        atol=0.15))
    assert "keys" in str(check_predictions("corr 13", {"plain": 0.1}, measured, atol=0.15))
    assert "not text" in str(check_predictions("corr 14", {"plain": "0.1", "residual": 0.7}, measured, atol=0.15))
    with pytest.raises(ValueError, match="atol"):
        check_predictions("corr 15", {}, measured, atol=0)
    with pytest.raises(TypeError, match="measured"):
        check_predictions("corr 16", {}, {}, atol=0.1)


def test_a_prediction_counts_once():
    """A wrong answer's feedback shows the measurement: resubmitting it is judged as the first."""
    from helpers.grading import check_prediction, check_predictions
    from helpers.grading.chapter5 import check_adam_step_prediction
    from helpers.grading.choices import check_choices

    assert not check_prediction("factor", 0.4, 0.97, rtol=0.1).passed
    copied = check_prediction("factor", 0.97, 0.97, rtol=0.1)
    assert not copied.passed and "counts once, so your first, 0.4, is judged" in str(copied), str(copied)
    assert "you changed it" not in str(check_prediction("factor", 0.4, 0.97, rtol=0.1))
    assert "no prediction yet" in str(check_prediction("unmade", None, 1.0, rtol=0.1))
    assert check_prediction("unmade", 1.0, 1.0, rtol=0.1).passed  # no prediction is not a first prediction
    assert not check_prediction("options", 0.5, 0.25, options=(0.5, 0.25)).passed
    assert not check_prediction("options", 0.25, 0.25, options=(0.5, 0.25)).passed
    measured = {"plain": 0.02, "residual": 0.71}
    check_predictions("corr", {"plain": 0.1, "residual": 0.1}, measured, atol=0.15)
    again = check_predictions("corr", {"plain": 0.1, "residual": 0.71}, measured, atol=0.15)
    assert again.score == 0.5 and "✓ plain" in str(again) and "your first, 0.1, is judged" in str(again)
    check_choices("fails", {"a": 0, "b": 0}, {"a": 1, "b": 0}, options=(0, 1))
    assert check_choices("fails", {"a": 1, "b": 0}, {"a": 1, "b": 0}, options=(0, 1)).score == 0
    # A value that is not an option (0.5 for "either", or a typo) is marked wrong and not counted,
    # as a single choice's is: the learner may still give an option, and the first option counts.
    hedged = check_choices("hedge", {"a": 0.5, "b": 0}, {"a": 1, "b": 0}, options=(0, 1))
    assert "✗ a: your prediction 0.5 is not one of the options" in str(hedged) and "1 of 2 right" in str(hedged)
    chosen = check_choices("hedge", {"a": 1, "b": 0}, {"a": 1, "b": 0}, options=(0, 1))
    assert chosen.passed and "changed" not in str(chosen), str(chosen)
    later = check_choices("hedge", {"a": 0, "b": 0}, {"a": 1, "b": 0}, options=(0, 1))
    assert later.passed and "so your first, 1, is judged" in str(later), str(later)
    # The note on a changed prediction is a sentence of its own, after the line's full stop.
    assert ("more than 0.15 away. You changed it to 0.71 after it had been judged; a prediction counts once, "
            "so your first, 0.1, is judged.") in str(again), str(again)
    # A float32 tensor and the float it rounds to are the same prediction, not a changed one.
    check_prediction("float32", torch.tensor(0.3), 0.3, rtol=0.1)
    assert "changed" not in str(check_prediction("float32", 0.3, 0.3, rtol=0.1))
    assert not check_adam_step_prediction(2.0, 7.5).passed
    resubmitted = check_adam_step_prediction(7.5, 7.5)
    assert not resubmitted.passed and "your first, 2, is judged" in str(resubmitted), str(resubmitted)


def test_error_rate_checker_names_each_mistake_and_keeps_error_rate_for_the_lesion_exercise():
    import helpers
    from helpers.grading import check_error_rate

    def right(logits, labels):
        return float((logits.argmax(dim=1) != labels).float().mean())

    def accuracy(logits, labels):
        return float((logits.argmax(dim=1) == labels).float().mean())

    def count(logits, labels):
        return int((logits.argmax(dim=1) != labels).sum())

    def borrowed(logits, labels):
        return helpers.measure.error_rate(lambda x, skip=(): logits, logits, labels)

    assert check_error_rate(right).passed
    for fn, needle in ((accuracy, "the accuracy"), (count, "*number* of errors"), (borrowed, "off limits")):
        feedback = check_error_rate(fn)
        assert not feedback.passed and needle in str(feedback), (fn.__name__, str(feedback))
    from helpers.grading.chapter1 import REFERENCES
    assert helpers.measure.error_rate not in REFERENCES  # the lesion exercise uses it


def test_score_is_the_share_of_cases_passed_and_award_turns_it_into_points(capsys):
    from helpers.grading import award

    cases = [Case(f"case {i}", (i,), i) for i in range(4)]
    feedback = run_cases("Half right", lambda i: i if i < 2 else -1, cases)
    assert not feedback.passed and feedback.score == 0.5 and feedback.tests == [f"case {i}" for i in range(4)]
    assert award(3) == 1.5, "3 points x 2 of 4 cases"
    assert award(3) == 0.0 and "No checker ran" in capsys.readouterr().out, "each feedback is awarded once"
    assert run_cases("All right", lambda i: i, cases).score == 1.0 and award(2) == 2.0
    for bad in (0, -1, True, "2"):
        with pytest.raises(ValueError, match="points must be a positive number"):
            award(bad)
    with pytest.raises(ValueError, match="score must be a number from 0 to 1"):
        Feedback("e", [], False, score=1.5)


def test_on_the_site_a_checker_shows_what_it_tests_not_how_the_hidden_solution_did(monkeypatch):
    feedback = check_per_layer_factor(_right)
    monkeypatch.setenv("COURSE_SITE", "1")
    page = feedback._repr_html_()
    assert "what the checker tests" in page and "vanishing profile, g = 0.5 over 10 layers" in page
    assert "all checks passed" not in page and 'data-passed="true"' in page
    prediction = check_prediction("Guess", 1.0, 1.02, rtol=0.1)._repr_html_()
    assert "within 10 %" in prediction and "1.02" not in prediction


def test_choices_must_be_options_and_are_scored_above_guessing():
    from helpers.grading.choices import check_choices, guessing_score

    measured = {"a": 1, "b": 0, "c": 1, "d": 1, "e": 0}
    right = check_choices("fails 1", dict(measured), measured, options=(0, 1))
    assert right.passed and right.score == 1.0
    # An "either" answer is not an option: wrong, not half right, and never passes.
    hedged = check_choices("fails 2", {name: 0.5 for name in measured}, measured, options=(0, 1))
    assert not hedged.passed and hedged.score == 0.0
    assert "0.5 is not one of the options" in str(hedged)
    # Three of five yes/no answers is what guessing gets: 0.2 above chance, not 0.6.
    three = check_choices("fails 3", {"a": 1, "b": 0, "c": 1, "d": 0, "e": 1}, measured, options=(0, 1),
                          explain="Think of the +1 path.")
    assert not three.passed and three.score == pytest.approx(0.2)
    assert "3 of 5 right" in str(three) and "Guessing gets 2.5" in str(three) and "+1 path" in str(three)
    all_ones = check_choices("fails 4", {name: 1 for name in measured}, measured, options=(0, 1))
    assert all_ones.score == pytest.approx(0.2)
    assert "no prediction yet" in str(check_choices("fails 5", {name: None for name in measured}, measured,
                                                    options=(0, 1)))
    assert "keys" in str(check_choices("fails 6", {"a": 1}, measured, options=(0, 1)))
    assert guessing_score(1, 2, 2) == 0.0 and guessing_score(0, 4, 4) == 0.0
    with pytest.raises(ValueError, match="options"):
        check_choices("fails 7", {}, measured, options=(1,))
    with pytest.raises(ValueError, match="among options"):
        check_choices("fails 8", {}, {"a": 2}, options=(0, 1))
    with pytest.raises(ValueError, match="right"):
        guessing_score(6, 5, 2)
