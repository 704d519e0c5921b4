"""Checkers for the exercises of chapter 1.

Each checker runs fixed cases, shown in the notebook with hints for the usual mistakes,
and hidden cases drawn at random on every call (from fresh entropy, so the notebook's
seeded random state is left alone): a function that only knows the fixed answers fails.
Expected values are computed before the learner's function runs; while it runs, the
course's references (:data:`REFERENCES`) raise, so calling them is no solution.
"""

from __future__ import annotations

import numpy as np
import torch

from ..measure.gradients import per_layer_factor
from ..measure.lesion import error_rate, single_block_lesions
from ..measure.paths import enumerate_path_lengths, path_length_counts
from ..measure.tuning import best_setting
from ..models.mlp import DeepMLP
from ..seeding import isolated
from .base import Case, Feedback, compare_numeric, run_cases
from .values import WrongType, as_number, as_numeric_array


def _geometric(g: float, n: int, scale: float = 1.0) -> np.ndarray:
    """Norms listed input -> output that shrink by ``g`` per layer going back to the input."""
    return scale * g ** np.arange(n - 1, -1, -1, dtype=float)


def _rng() -> np.random.Generator:
    """A generator seeded from fresh entropy: new hidden cases on every call."""
    return np.random.default_rng()


def check_per_layer_factor(fn) -> Feedback:
    """Check a learner's ``fn(norms) -> g``, the per-layer factor of a gradient-norm profile.

    Known answers: exact geometric profiles (vanishing, exploding, flat, two layers), and
    a noisy profile whose least-squares factor is :func:`helpers.measure.gradients.per_layer_factor`;
    then two hidden noisy profiles of random length, factor and scale. The answer must be
    one finite number (not a string, not a bool).
    """
    rng = np.random.default_rng(0)
    noisy = _geometric(0.7, 12) * np.exp(rng.normal(0, 0.1, 12))
    reversed_hint = ("norms are listed from the input layer to the output layer; a gradient that "
                     "vanishes on its way back is *small* at index 0, and its factor is < 1.")
    fit_hint = ("fit a straight line to log(norms) against the layer index, using every layer, "
                "not just the first and last.")
    cases = [
        Case("vanishing profile, g = 0.5 over 10 layers", (_geometric(0.5, 10),), 0.5, reversed_hint),
        Case("exploding profile, g = 1.3 over 6 layers", (_geometric(1.3, 6, scale=2.0),), 1.3, reversed_hint),
        Case("flat profile, g = 1", (np.full(8, 3.0),), 1.0, "a constant profile neither shrinks nor grows."),
        Case("two layers only, g = 0.25", (_geometric(0.25, 2),), 0.25,
             "with two layers the factor is norms[0] / norms[1]."),
        Case("noisy 12-layer profile (least-squares fit on log norms)", (noisy,), per_layer_factor(noisy), fit_hint),
    ]
    hidden = _rng()
    for _ in range(2):
        # 4 layers or more: with 3, the least-squares slope is the endpoints' slope, and a
        # fit through the first and last layer only would pass by chance
        n = int(hidden.integers(4, 41))
        g = float(hidden.uniform(0.3, 0.9) if hidden.random() < 0.5 else hidden.uniform(1.1, 1.8))
        profile = _geometric(g, n, scale=10 ** hidden.uniform(-4, 2)) * np.exp(hidden.normal(0, 0.15, n))
        cases.append(Case(f"hidden random noisy profile of {n} layers", (profile,), per_layer_factor(profile),
                          fit_hint))
    for case in cases:
        case.compare = _compare_factor
    return run_cases("Per-layer factor", fn, cases, off_limits=REFERENCES)


def _compare_factor(got, expected) -> str | None:
    """A comparison that recognises a factor turned upside down (a reversed profile)."""
    value, problem = as_number(got)
    if problem:
        return problem
    if np.isclose(value, 1 / expected, rtol=1e-4) and not np.isclose(expected, 1.0):
        return f"returned {value:.4g}, the reciprocal of the expected {expected:.4g}."
    if not np.isclose(value, expected, rtol=1e-4):
        return f"returned {value:.4g}; expected {expected:.4g}."
    return None


def _compare_rate(table: dict):
    """A comparison that names the usual wrong answers: an error instead of a rate, the worst
    rate, or the rate of the luckiest single seed."""
    means = {lr: float(np.mean(v)) for lr, v in table.items()}
    worst = max(means, key=means.get)
    luckiest = min(table, key=lambda lr: float(np.min(table[lr])))

    def compare(got, expected) -> str | None:
        value, problem = as_number(got)
        if problem:
            return problem
        if np.isclose(value, expected):
            return None
        if not any(np.isclose(value, lr) for lr in table):
            if any(np.isclose(value, e) for v in table.values() for e in [*np.ravel(v), np.mean(v)]):
                return f"returned {value:.4g}, which is an error, not one of the learning rates {sorted(table)}."
            return f"returned {value:.4g}, which is not one of the learning rates {sorted(table)}."
        if np.isclose(value, luckiest):
            return (f"returned {value:g}, the rate of the single best seed; average over the seeds instead "
                    "(one lucky seed is not a better rate).")
        if np.isclose(value, worst):
            return f"returned {value:g}, the rate with the *highest* mean error; the best has the lowest."
        return f"returned {value:g}; the lowest mean error is at {expected:g}."
    return compare


def _random_table(rng: np.random.Generator) -> dict:
    """Learning rate -> per-seed errors, with one clearly best mean and a lucky seed elsewhere."""
    rates = sorted(float(r) for r in rng.choice([0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5], size=int(rng.integers(3, 7)),
                                                 replace=False))
    n_seeds = int(rng.integers(2, 6))
    means = rng.uniform(0.1, 0.9, len(rates))
    best = int(rng.integers(len(rates)))
    means[best] = means.min() - 0.08
    table = {lr: np.clip(m + rng.normal(0, 0.01, n_seeds), 0, 1) for lr, m in zip(rates, means)}
    others = [lr for i, lr in enumerate(rates) if i != best]
    lucky = others[int(rng.integers(len(others)))]
    table[lucky][0] = max(0.0, table[rates[best]].min() - 0.05)  # one lucky seed beats every run of the best rate
    return {lr: [float(e) for e in v] for lr, v in table.items()}


def check_best_rate(fn) -> Feedback:
    """Check a learner's ``fn(errors_by_rate) -> lr``: the learning rate whose runs have the
    lowest mean final error (:func:`helpers.measure.tuning.best_setting`).

    Known answers (a clear winner, a lucky single seed at a worse rate, one seed only), then
    two hidden random tables; the answer must be one of the rates, as a number."""
    hint = "average each rate's errors over its seeds, then pick the rate with the lowest mean."
    fixed = [
        ("two rates, one clearly better", {0.01: [0.5, 0.52, 0.48], 0.1: [0.2, 0.22, 0.18]}),
        ("a lucky seed at a worse rate", {0.01: [0.05, 0.6, 0.62], 0.05: [0.2, 0.21, 0.19], 0.1: [0.4, 0.41, 0.39]}),
        ("one seed per rate", {0.02: [0.3], 0.05: [0.1], 0.1: [0.7]}),
    ]
    hidden = _rng()
    fixed += [("hidden random table", _random_table(hidden)) for _ in range(2)]
    cases = [Case(f"{name}: {len(table)} rates, {len(next(iter(table.values())))} seed(s) each", (table,),
                  best_setting(table), hint, compare=_compare_rate(table)) for name, table in fixed]
    return run_cases("Best learning rate", fn, cases, off_limits=REFERENCES)


def _residual_reference(x, w1, b1, w2, b2):
    return x + torch.relu(x @ w1.T + b1) @ w2.T + b2


def _compare_residual(args):
    """A comparison that recognises the usual mistakes in a residual block's forward pass."""
    x, w1, b1, w2, b2 = args
    branch = torch.relu(x @ w1.T + b1) @ w2.T + b2
    mistakes = [
        (branch, "this is F(x) alone: add the block's input x (the skip connection)."),
        (torch.relu(x + branch), "this applies a ReLU after the addition (the post-activation block); "
                                 "here return x + F(x) itself."),
        (x + (x @ w1.T + b1) @ w2.T + b2, "the ReLU between the two layers is missing."),
        (x + torch.relu(x @ w1.T + b1) @ w2.T, "the second bias b2 is missing."),
    ]

    def compare(got, expected):
        problem = compare_numeric(got, expected)
        if problem is None or isinstance(problem, WrongType) or got.shape != expected.shape:
            return problem
        for wrong, message in mistakes:
            if torch.allclose(got.detach().to(wrong.dtype), wrong, rtol=1e-5, atol=1e-6):
                return message
        return problem
    return compare


def check_residual_forward(fn) -> Feedback:
    """Check a learner's ``fn(x, w1, b1, w2, b2) -> x + W2 relu(W1 x + b1) + b2``.

    ``x`` is a batch ``(batch, d)``; weights follow PyTorch's ``nn.Linear`` layout
    ``(out_features, in_features)``, so the layer is ``x @ w1.T + b1``. Cases include a
    branch wider than the stream (so a forgotten transpose fails), a zero second layer
    (the block must then be exactly the identity, and return a new tensor rather than
    its input changed in place), and a hidden case of random sizes.
    """
    gen = torch.Generator().manual_seed(1)

    def case(batch, d, hidden, zero_out=False, generator=gen):
        x = torch.randn(batch, d, generator=generator, dtype=torch.float64)
        w1 = torch.randn(hidden, d, generator=generator, dtype=torch.float64) / d ** 0.5
        b1 = torch.randn(hidden, generator=generator, dtype=torch.float64)
        w2 = torch.randn(d, hidden, generator=generator, dtype=torch.float64) / hidden ** 0.5
        b2 = torch.randn(d, generator=generator, dtype=torch.float64)
        if zero_out:
            w2, b2 = torch.zeros_like(w2), torch.zeros_like(b2)
        return x, w1, b1, w2, b2

    shape_hint = ("weights are (out_features, in_features), as in nn.Linear: a layer computes "
                  "x @ w.T + b.")
    rng = _rng()
    sizes = [int(rng.integers(1, 9)), int(rng.integers(2, 11)), int(rng.integers(1, 17))]
    hidden_args = case(*sizes, generator=torch.Generator().manual_seed(int(rng.integers(2 ** 62))))
    cases = []
    for description, args in [
        ("batch of 5, width 4, branch width 4", case(5, 4, 4)),
        ("batch of 3, width 4, branch width 8", case(3, 4, 8)),
        ("a single row, width 6, branch width 12", case(1, 6, 12)),
        ("hidden random case: batch of {}, width {}, branch width {}".format(*sizes), hidden_args),
    ]:
        cases.append(Case(description, args, _residual_reference(*args), shape_hint,
                          compare=_compare_residual(args)))
    args = case(4, 5, 10, zero_out=True)
    cases.append(Case("second layer all zeros: the block must return x exactly", args, args[0].clone(),
                      "with w2 = 0 and b2 = 0 the branch F is 0, so H(x) = x + 0 = x.",
                      compare=_compare_residual(args)))
    return run_cases("Residual block, forward pass", fn, cases, off_limits=REFERENCES)


def _compare_counts(got, expected) -> str | None:
    """Compare path counts, naming a missing k = 0, a wrong total or the first wrong count."""
    values, problem = as_numeric_array(got)
    if problem:
        return problem
    values = values.ravel()
    n = len(expected) - 1
    if values.size == n:
        return (f"returned {values.size} counts; expected {n + 1}: lengths run from k = 0 "
                "(the path that skips every block) to k = n.")
    if values.size != n + 1:
        return f"returned {values.size} counts; expected {n + 1} (k = 0, 1, ..., {n})"
    if not np.all(np.isfinite(values)):
        return "returned NaN or infinite counts"
    if not np.isclose(values.sum(), 2.0 ** n, rtol=1e-9):
        return (f"the counts add up to {values.sum():.6g}, but there are 2^{n} = {2 ** n} paths "
                "in all: each block is either taken or skipped.")
    if not np.allclose(values, expected, rtol=1e-9):
        k = int(np.argmax(np.abs(values - expected) > 1e-9 * np.abs(expected)))
        return f"the count for k = {k} is {values[k]:.6g}; expected {expected[k]}."
    return None


FIXED_N = (1, 3, 10, 27)


def check_path_counts(fn) -> Feedback:
    """Check a learner's ``fn(n)`` that returns the number of paths of each length ``k = 0..n``
    through ``n`` residual blocks: the binomial coefficients ``C(n, k)``, summing to ``2^n``.

    Fixed ``n`` in ``FIXED_N`` (27 is too many paths to enumerate within the time
    limit), then two hidden ``n`` drawn at random from 2 to 60, so a table of the fixed
    answers fails."""
    hint = "a path of length k chooses which k of the n blocks it goes through."
    rng = _rng()
    hidden = rng.choice([n for n in range(2, 61) if n not in FIXED_N], size=2, replace=False)
    cases = [Case(f"n = {n}", (n,), path_length_counts(n), hint, compare=_compare_counts) for n in FIXED_N]
    cases += [Case(f"hidden random n = {n}", (int(n),), path_length_counts(int(n)), hint, compare=_compare_counts)
              for n in hidden]
    return run_cases("Paths of each length", fn, cases, off_limits=REFERENCES)


def _net_with_key_block(rng: np.random.Generator, n_blocks: int, key: int):
    """A residual net of ``n_blocks`` blocks, inputs ``x`` and labels ``y`` such that deleting
    block ``key`` raises the error most: its branch is large, the others' are small, and
    ``y`` is the whole net's own prediction. Returns ``(model, x, y, errors)``.

    The net is drawn from ``rng`` without touching PyTorch's global random state."""
    for _ in range(20):
        with isolated(int(rng.integers(2 ** 62))):
            model = DeepMLP(2 * n_blocks + 2, width=16, norm="none")
            x = torch.randn(256, 64)
        with torch.no_grad():
            for i, block in enumerate(model.blocks):
                block.fc2.weight.mul_(3.0 if i == key else 0.1)
                block.fc2.bias.zero_()
            y = model(x).argmax(dim=1)
        model.eval()
        errors = single_block_lesions(model, x, y)
        if int(np.argmax(errors)) == key and np.sum(errors == errors[key]) == 1:
            return model, x, y, errors
    raise RuntimeError(f"could not build a net whose block {key} matters most")  # not seen in practice


def _compare_block(errors: np.ndarray):
    """A comparison for a block index, with the error of each deletion in its messages."""
    table = ", ".join(f"{i}: {100 * e:.1f} %" for i, e in enumerate(errors))

    def compare(got, expected):
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
            return WrongType(f"returned a {type(got).__name__}; expected a block index (an int)")
        got = int(got)
        if got == expected + 1:
            return (f"returned {got}, one more than the answer: use the 0-based index that "
                    "model(x, skip=[i]) takes.")
        if not 0 <= got < len(errors):
            return f"returned {got}, but the net has blocks 0 to {len(errors) - 1}."
        if got != expected:
            return (f"returned block {got}; deleting it gives {100 * errors[got]:.1f} % test error, "
                    f"but deleting block {expected} gives {100 * errors[expected]:.1f} %. "
                    f"Errors by block: {table}.")
        return None
    return compare


def _check_lesion_inputs(model, x, y) -> None:
    if not callable(model) or not hasattr(model, "blocks"):
        raise TypeError(f"model must be a net with .blocks (a DeepMLP), got {type(model).__name__}")
    for name, value in (("x", x), ("y", y)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")


def check_most_harmful_block(fn, model, x, y, *, prediction=None) -> Feedback:
    """Check ``fn(model, x, y) -> i``, the 0-based index of the block whose deletion raises the
    test error most, against :func:`helpers.measure.lesion.single_block_lesions`: on the
    given net, then on two hidden nets built so that a different, random block matters
    most (so no constant answer passes). Then say how the learner's ``prediction`` (a
    0-based index, made before measuring) fared on the given net."""
    _check_lesion_inputs(model, x, y)
    errors = single_block_lesions(model, x, y)
    worst = int(np.argmax(errors))
    table = ", ".join(f"{i}: {100 * e:.1f} %" for i, e in enumerate(errors))
    hint = "delete one block at a time with model(x, skip=[i]) and keep the i with the largest error."
    cases = [Case("the block whose deletion raises the test error most", (model, x, y), worst, hint,
                  compare=_compare_block(errors))]
    rng = _rng()
    n_blocks = int(rng.integers(4, 10))
    for key in rng.choice(n_blocks, size=2, replace=False):
        net, x_net, y_net, net_errors = _net_with_key_block(rng, n_blocks, int(key))
        cases.append(Case(f"hidden test net of {n_blocks} blocks (a different block matters most each time)",
                          (net, x_net, y_net), int(key), hint, compare=_compare_block(net_errors)))
    feedback = run_cases("Which deleted block hurts most", fn, cases, off_limits=REFERENCES)
    if prediction is not None:
        is_index = isinstance(prediction, (int, np.integer)) and not isinstance(prediction, (bool, np.bool_))
        if is_index and prediction == worst:
            feedback.lines.append(f"Your prediction, block {prediction}, was right.")
        elif is_index and 0 <= prediction < len(errors):
            feedback.lines.append(
                f"You predicted block {prediction} ({100 * errors[prediction]:.1f} % when deleted); the "
                f"measurement says block {worst} ({100 * errors[worst]:.1f} %). Errors by block: {table}.")
        else:
            feedback.lines.append(f"Your prediction {prediction!r} is not a block index 0 to {len(errors) - 1}.")
    return feedback





def _error_rate_reference(logits, labels):
    return float((logits.argmax(dim=1) != labels).float().mean())


def _logits_case(rng: np.random.Generator, n: int, classes: int) -> tuple:
    """Random logits (no ties) and labels, with a known share of wrong predictions."""
    logits = torch.as_tensor(rng.normal(size=(n, classes)), dtype=torch.float32)
    labels = torch.as_tensor(rng.integers(0, classes, size=n))
    return logits, labels


def _compare_error(args):
    n = len(args[1])

    def compare(got, expected) -> str | None:
        value, problem = as_number(got)
        if problem:
            return problem
        if np.isclose(value, expected, atol=1e-6):
            return None
        if np.isclose(value, 1 - expected, atol=1e-6):
            return f"returned {value:.4g}, the accuracy; the error rate is 1 - accuracy = {expected:.4g}."
        if np.isclose(value, expected * n, atol=1e-6):
            return f"returned {value:.4g}, the *number* of errors; divide by the {n} examples."
        return f"returned {value:.4g}; expected {expected:.4g}."
    return compare


def check_error_rate(fn) -> Feedback:
    """Check a learner's ``fn(logits, labels) -> error``: the fraction of rows of ``logits``
    whose largest entry is not at the row's label (:func:`helpers.measure.lesion.error_rate`
    computes it for a model). Known answers, then two hidden random batches."""
    hint = "the predicted class of a row is the index of its largest logit; compare with the label and average."
    cases = [
        Case("3 examples, 1 wrong", (torch.tensor([[2.0, 1.0], [0.0, 3.0], [5.0, -1.0]]), torch.tensor([0, 1, 1])),
             1 / 3, hint),
        Case("all right", (torch.eye(4), torch.arange(4)), 0.0, hint),
        Case("all wrong", (torch.eye(3), torch.tensor([1, 2, 0])), 1.0, hint),
    ]
    rng = _rng()
    for _ in range(2):
        n, classes = int(rng.integers(5, 200)), int(rng.integers(2, 11))
        args = _logits_case(rng, n, classes)
        cases.append(Case(f"hidden random batch of {n} examples, {classes} classes", args,
                          _error_rate_reference(*args), hint))
    for case in cases:
        case.compare = _compare_error(case.args)
    # error_rate is a tool of the lesion exercise, so it is off limits here only.
    return run_cases("Error rate", fn, cases, off_limits=REFERENCES + (error_rate, _error_rate_reference))


REFERENCES = (per_layer_factor, path_length_counts, enumerate_path_lengths, single_block_lesions,
              best_setting, _residual_reference)
"""The course's answer keys for chapter 1, off limits while a learner's function is checked
(:func:`check_error_rate` adds the error rate itself)."""
