"""Checkers for the exercises of chapter 1.

Each checker runs fixed cases, shown in the notebook with hints for the usual mistakes,
and hidden cases drawn at random on every call (from fresh entropy, so the notebook's
seeded random state is left alone): a function that only knows the fixed answers fails.
Expected values are computed before the learner's function runs; while it runs, the
course's references (:data:`REFERENCES`) raise, so calling them is no solution.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..measure.gradients import per_layer_factor
from ..measure.lesion import error_rate, single_block_lesions
from ..measure.paths import enumerate_path_lengths, path_length_counts
from ..measure.tuning import best_setting
from ..models.mlp import DeepMLP
from ..seeding import isolated
from .base import Case, Feedback, compare_numeric, run_cases
from .choices import guessing_score
from .predictions import counted
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
        # fit through the first and last layer only would pass; with more, it passed one
        # hidden case in about 120 (6,000 drawn) until the noise is drawn again below
        n = int(hidden.integers(4, 41))
        g = float(hidden.uniform(0.3, 0.9) if hidden.random() < 0.5 else hidden.uniform(1.1, 1.8))
        scale = 10 ** hidden.uniform(-4, 2)
        while True:  # noise under which the endpoints' factor misses the fit by 10 times the tolerance
            profile = _geometric(g, n, scale=scale) * np.exp(hidden.normal(0, 0.15, n))
            expected = per_layer_factor(profile)
            if not np.isclose((profile[0] / profile[-1]) ** (1 / (n - 1)), expected, rtol=1e-3):
                break
        cases.append(Case(f"hidden random noisy profile of {n} layers", (profile,), expected, fit_hint))
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


COMBINATIONS = ("welch", "sum", "pooled", "paired")


def _variance(runs: np.ndarray, ddof: int) -> float:
    """The variance of ``runs`` with ``ddof``; NaN (without a warning) for too few runs."""
    return float(runs.var(ddof=ddof)) if runs.size > ddof else float("nan")


def _means_and_margins(table: dict, rate, *, ddof: int = 1, sqrt: bool = True, per_mean: bool = True,
                       combine: str = "welch") -> dict:
    """For each rival of ``rate`` in ``table``: ``(difference of mean errors, rival minus rate;
    twice the standard error of that difference)``.

    The standard error (``combine="welch"``) is ``sqrt(s_rate^2 / n_rate + s_rival^2 / n_rival)``,
    ``s^2`` the variance of a rate's runs with ``ddof``. The other arguments give the usual
    slips, for the feedback: ``sqrt=False`` leaves out the square root, ``per_mean=False`` the
    division by the number of runs; ``combine="sum"`` adds the two standard errors (error bars
    that do not overlap), ``"pooled"`` pools the two variances, ``"paired"`` takes the spread of
    the per-seed differences (equal numbers of runs only; otherwise as ``"welch"``)."""
    runs = {lr: np.asarray(v, dtype=float) for lr, v in table.items()}
    mine = runs[rate]
    out = {}
    for lr, other in runs.items():
        if lr == rate:
            continue
        n_mine, n_other = (mine.size, other.size) if per_mean else (1, 1)
        v_mine, v_other = _variance(mine, ddof) / n_mine, _variance(other, ddof) / n_other
        if combine == "sum":
            error = np.sqrt(v_mine) + np.sqrt(v_other)
        elif combine == "pooled" and mine.size + other.size > 2:
            pooled = ((mine.size - 1) * mine.var(ddof=1) + (other.size - 1) * other.var(ddof=1)) / (
                mine.size + other.size - 2)
            error = np.sqrt(pooled * (1 / mine.size + 1 / other.size))
        elif combine == "paired" and mine.size == other.size and mine.size > 1:
            error = np.std(other - mine, ddof=ddof) / np.sqrt(mine.size)
        else:
            error = np.sqrt(v_mine + v_other) if sqrt else v_mine + v_other
        out[lr] = (float(other.mean() - mine.mean()), 2 * float(error))
    return out


def _clearly_best(errors_by_rate: dict, rate) -> bool:
    """Whether ``rate`` is clearly the best of ``errors_by_rate`` (rate -> final errors, one per
    seed): every other rate's mean error is higher by more than twice the standard error of the
    difference of the two means (sample variances, ``ddof=1``). With fewer than two runs at any
    rate there is no spread to judge by: ``False``."""
    if any(len(v) < 2 for v in errors_by_rate.values()):
        return False
    return all(gap > twice_se for gap, twice_se in _means_and_margins(errors_by_rate, rate).values())


def _rival_line(table: dict, rate, margins: dict) -> str:
    """The closest call for ``rate``: the rival whose lead over it, less twice the standard error
    of that lead (``margins``, from :func:`_means_and_margins`), is smallest (negative: the
    rival is not clearly beaten)."""
    lr, (gap, twice_se) = min(margins.items(), key=lambda kv: kv[1][0] - kv[1][1])
    side = "higher" if gap >= 0 else "lower"
    return (f"at {rate:g} the mean error is {np.mean(table[rate]):.3f}; at {lr:g} it is {np.mean(table[lr]):.3f}, "
            f"{side} by {abs(gap):.3f}, and twice the standard error of that difference is {twice_se:.3f}")


def _compare_clearly_best(table: dict, rate):
    """A comparison of a learner's True/False that names the usual slips: each a rule that gives
    the learner's wrong answer here (the lowest mean alone, the best single seed, the lowest
    median, only the runner-up checked, the population variance, the factor 2 or the square root
    or the division by the number of runs left out, ``>=`` for ``>``, the two standard errors
    added, pooled or paired); where several do, it names them all, and where none does, it
    gives the numbers."""
    means = {lr: float(np.mean(v)) for lr, v in table.items()}
    runner_up = min((lr for lr in means if lr != rate), key=means.get)
    enough = all(len(v) >= 2 for v in table.values())
    margins = _means_and_margins(table, rate) if enough else {}
    rival = _rival_line(table, rate, margins) if enough else ""  # now: references are off limits in compare

    def clear(**slip) -> bool:
        return enough and all(g > t for g, t in _means_and_margins(table, rate, **slip).values())

    lenient, strict = True, False  # the wrong answer a slip gives: True (too lenient) or False (too strict)
    slips = [  # (the slip's verdict here, the wrong answer it explains, the feedback), the most specific first
        (clear(ddof=0), lenient, "use the sample variance (ddof=1): the population variance (ddof=0) "
                                 "underestimates the spread of a handful of seeds"),
        (clear(combine="pooled"), lenient, "do not pool the two variances: with unequal numbers of runs, each "
                                           "mean's noise is its own variance over its own n"),
        (clear(combine="paired"), lenient, "treat each rate's runs as independent samples, as the exercise says: "
                                           "the spread of the per-seed differences is a paired comparison"),
        (enough and all(g >= t for g, t in margins.values()), lenient,
         "a tie is not a win: the difference must be strictly larger than twice its standard error (with no "
         "spread at all, equal means are not clearly different)"),
        (enough and all(g > t / 2 for g, t in margins.values()), lenient,
         "the margin is *twice* the standard error of the difference, not once"),
        (clear(sqrt=False), lenient, "the standard error is the square root of s_a^2/n_a + s_b^2/n_b, not that sum"),
        (enough and margins[runner_up][0] > margins[runner_up][1], lenient,
         "check every rival, not only the runner-up: a rate with a higher mean and widely spread runs "
         "can be within the noise too"),
        (clear(per_mean=False), strict, "divide each variance by its number of runs: the noise in a mean of n "
                                        "runs is smaller than the spread of the runs themselves"),
        (clear(combine="sum"), strict, "combine the two standard errors as sqrt(se_a^2 + se_b^2), not se_a + se_b "
                                       "(error bars that do not overlap ask for more than the rule)"),
        (rate == min(table, key=lambda lr: float(np.min(table[lr]))) and rate != min(means, key=means.get), lenient,
         "average over the seeds: this rate has the single best run, not the lowest mean"),
        (rate == min(table, key=lambda lr: float(np.median(table[lr]))) and rate != min(means, key=means.get),
         lenient, "compare means, not medians: the rule is about the mean error over the seeds"),
        (rate == min(means, key=means.get), lenient,
         "the lowest mean alone does not make a rate clearly best: every rival's mean must be higher by "
         "more than twice the standard error of the difference"),
    ]

    def compare(got, expected) -> str | None:
        if isinstance(got, np.ndarray) and got.ndim == 0:
            got = got[()]
        if not isinstance(got, (bool, np.bool_)):
            return WrongType(f"returned a {type(got).__name__} ({got!r}); expected True or False.")
        got = bool(got)
        if got == expected:
            return None
        if got and not enough:
            return ("returned True, but some rate has a single run: one run shows no spread, so no rate "
                    "is clearly better; return False.")
        found = [message for says, explains, message in slips if says == got == explains]
        if len(found) > 1:
            reason = ": any of these slips gives that here: " + "; ".join(f"({i}) {m}" for i, m in enumerate(found, 1))
        else:
            reason = f": {found[0]}" if found else f"; expected {expected}"
        return f"returned {got}{reason}. Here {rival}."
    return compare


def _random_table(rng: np.random.Generator) -> tuple[dict, object]:
    """Learning rate -> per-seed errors, and a rate to ask about: mostly the lowest mean, clearly
    best or not, sometimes another rate. Every margin stays more than 25 % away from twice the
    standard error, so that rounding cannot flip an answer."""
    while True:
        rates = sorted(float(r) for r in rng.choice([0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
                                                    size=int(rng.integers(3, 6)), replace=False))
        spread = float(rng.choice([0.01, 0.05, 0.1]))
        table = {lr: [float(e) for e in np.clip(rng.uniform(0.1, 0.9) + rng.normal(0, spread, int(rng.integers(3, 6))),
                                                0, 1)] for lr in rates}
        means = {lr: np.mean(v) for lr, v in table.items()}
        rate = min(means, key=means.get) if rng.random() < 0.85 else rates[int(rng.integers(len(rates)))]
        margins = _means_and_margins(table, rate)
        if all(abs(gap - twice_se) > 0.25 * twice_se for gap, twice_se in margins.values()):
            return table, rate


def check_best_rate(fn) -> Feedback:
    """Check a learner's ``fn(errors_by_rate, rate) -> bool``: whether ``rate`` is *clearly* the
    best learning rate, by :func:`_clearly_best`'s rule (every rival's mean error higher by more
    than twice the standard error of the difference, sample variances; a rate with one run: no).

    Fifteen known tables, six of them with a clear winner (two by only 1.2 and 1.3 times the
    margin, where a stricter rule or a t-test says no), nine without (a worse rate; a lucky seed;
    a lower median; a difference within the noise; two seeds, where ``ddof=0`` misleads; a noisy
    rival far behind; unequal numbers of runs; a tie at zero error; one run per rate), then two
    hidden random tables. Each answer is a yes or no, so the score counts only the cases beyond
    what guessing gets (:func:`~helpers.grading.choices.guessing_score`). The course's
    :func:`~helpers.measure.tuning.best_setting` (the lowest mean, a step of the answer) is off
    limits too."""
    hint = ("compare the rate's mean error with every other rate's: each must be higher by more than "
            "2 * sqrt(s_a^2/n_a + s_b^2/n_b), s^2 the sample variance (ddof=1) of a rate's runs.")
    clear = {0.01: [0.5, 0.52, 0.48], 0.1: [0.2, 0.22, 0.18]}
    uneven = [0.1, 0.12, 0.11, 0.09, 0.08]
    fixed = [
        ("a clear winner", clear, 0.1),
        ("the same table, asked about the worse rate", clear, 0.01),
        ("five seeds per rate, a clear winner", {0.05: [0.1, 0.2, 0.15, 0.05, 0.25], 0.1: [0.25, 0.35, 0.3, 0.2, 0.4]},
         0.05),
        ("a lucky seed at a worse rate", {0.01: [0.05, 0.6, 0.62], 0.05: [0.2, 0.21, 0.19], 0.1: [0.4, 0.41, 0.39]},
         0.01),
        ("clear by 1.2 times the margin", {0.05: [0.1, 0.2, 0.3], 0.1: [0.296, 0.396, 0.496]}, 0.05),
        ("the lowest mean, within the noise", {0.02: [0.3, 0.1, 0.2], 0.05: [0.25, 0.35, 0.15]}, 0.02),
        ("clear by 1.3 times the margin, one rate much noisier", {0.05: [0.1, 0.11, 0.12], 0.1: [0.211, 0.411, 0.611]},
         0.05),
        ("two seeds per rate", {0.1: [0.1, 0.2], 0.2: [0.22, 0.32]}, 0.1),
        ("three rates, each clearly beaten", {0.01: [0.3, 0.32, 0.31], 0.05: [0.1, 0.12, 0.11], 0.2: [0.5, 0.55, 0.45]},
         0.05),
        ("a noisy rate far behind", {0.01: [0.2, 0.21, 0.19], 0.05: [0.3, 0.31, 0.29], 0.2: [0.0, 1.0, 0.5]}, 0.01),
        ("unequal numbers of runs, a clear winner", {0.05: uneven, 0.1: [0.5, 0.52]}, 0.05),
        ("a low median, a noisy mean", {0.05: [0.0, 0.01, 0.5], 0.1: [0.44, 0.45, 0.46]}, 0.05),
        ("unequal numbers of runs, within the noise", {0.05: uneven, 0.1: [0.2, 0.7]}, 0.05),
        ("a tie at zero error", {0.05: [0.0, 0.0, 0.0], 0.1: [0.0, 0.0, 0.0]}, 0.05),
        ("one run per rate", {0.02: [0.3], 0.05: [0.1], 0.1: [0.7]}, 0.05),
    ]
    hidden = _rng()
    fixed += [("hidden random table", *_random_table(hidden)) for _ in range(2)]
    cases = [Case(f"{name}: {len(table)} rates, is {rate:g} clearly best?", (table, rate), _clearly_best(table, rate),
                  hint, compare=_compare_clearly_best(table, rate)) for name, table, rate in fixed]
    feedback = run_cases("Clearly the best rate?", fn, cases, off_limits=REFERENCES + (best_setting,))
    right = round(feedback.score * len(cases))
    return dataclasses.replace(feedback, score=guessing_score(right, len(cases), 2))


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
        note = ""
        if is_index and 0 <= prediction < len(errors):
            first, note = counted(("Which deleted block hurts most",), int(prediction))
            prediction, note = int(first), f" ({note})" if note else ""
        if is_index and prediction == worst:
            feedback.lines.append(f"Your prediction, block {prediction}, was right{note}.")
        elif is_index and 0 <= prediction < len(errors):
            feedback.lines.append(
                f"You predicted block {prediction}{note} ({100 * errors[prediction]:.1f} % when deleted); the "
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
              _residual_reference, _clearly_best, _means_and_margins)
"""The course's answer keys for chapter 1, off limits while a learner's function is checked
(:func:`check_error_rate` adds the error rate itself)."""
