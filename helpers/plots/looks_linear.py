"""Looks-linear initialisation beside the plain and residual twins: the gradient along a line of
inputs, and the first steps of training
(:mod:`helpers.experiments.looks_linear`)."""

from __future__ import annotations

import numpy as np

from .._checks import real_number
from .style import OTHER_COLORS, color_for, finish, house_style, new_figure, title_figure

STYLES = {"plain": "-", "residual": "-", "CReLU": "--", "looks-linear": "-"}
"""The line style of each net (the unmirrored CReLU net's is dashed)."""


def color_of(kind: str, index: int) -> str:
    """The colour of a net: plain orange and residual green as everywhere in the course, the
    looks-linear net purple, its unmirrored CReLU twin pink."""
    own = {"looks-linear": OTHER_COLORS[0], "CReLU": OTHER_COLORS[1]}
    return own.get(kind) or color_for(kind, index)


def _check_title(title) -> None:
    if not isinstance(title, str) or not title.strip():
        raise ValueError("title must be a non-empty string that states the finding")


def _kinds(losses) -> list[str]:
    if not isinstance(losses, dict) or not losses:
        raise ValueError("losses must be a non-empty dict {kind: {learning rate: losses}}")
    return list(losses)


def line_gradients(gradients: dict, *, correlations: dict, title: str):
    """One panel per net (two a row): its ``dy/dx`` on an even grid of inputs over [-2, 2];
    each panel's title gives the net and ``correlations[kind]``, its neighbour correlation,
    or, where that is None, says that the gradient is constant (no correlation to measure)."""
    _check_title(title)
    if not isinstance(gradients, dict) or not gradients:
        raise ValueError("gradients must be a non-empty dict {kind: dy/dx on the grid}")
    missing = [kind for kind in gradients if kind not in correlations]
    if missing:
        raise ValueError(f"correlations must have an entry (a number or None) for {missing}")
    nrows = -(-len(gradients) // 2)
    fig, axes = new_figure(ncols=2, nrows=nrows, width=7.0, height=0.9 + 2.3 * nrows, squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(gradients):]:
        ax.set_visible(False)
    for i, (ax, (kind, g)) in enumerate(zip(axes, gradients.items())):
        g = np.asarray(g, dtype=float)
        rho = correlations[kind]
        with house_style():
            ax.plot(np.linspace(-2.0, 2.0, len(g)), g, color=color_of(kind, i), linewidth=1.0)
            if rho is None:  # a constant: show it at its height, with the axis around it
                ax.set_ylim(g.mean() - abs(g.mean()) - 1e-12, g.mean() + abs(g.mean()) + 1e-12)
        note = "constant: no correlation" if rho is None else f"neighbour correlation {rho:.2f}"
        finish(ax, title=f"{kind}\n{note}", xlabel="input x", ylabel="dy/dx", legend=False)
    title_figure(fig, title)
    return fig


def first_steps_compared(losses: dict, *, title: str):
    """Left: each net's training loss over the first steps at its own best learning rate (the
    lowest final loss). Right: each net's final loss against the learning rate (log axis).
    ``losses`` is ``{kind: {lr: losses}}``, as
    :func:`helpers.experiments.looks_linear.first_steps_compared` returns it."""
    _check_title(title)
    kinds = _kinds(losses)
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=3.9)
    for i, kind in enumerate(kinds):
        by_rate = losses[kind]
        best = min(by_rate, key=lambda lr: by_rate[lr][-1])
        rates = sorted(by_rate)
        color, style = color_of(kind, i), STYLES.get(kind, "-")
        with house_style():
            left.plot(np.arange(len(by_rate[best])), by_rate[best], color=color, linestyle=style,
                      label=f"{kind} ({best:g})")
            right.plot(rates, [by_rate[lr][-1] for lr in rates], color=color, linestyle=style, marker="o",
                       label=kind)
    with house_style():
        right.set_xscale("log")
        for ax in (left, right):
            ax.set_ylim(bottom=0.0)
        left.legend(fontsize=10, title="net (its best rate)", title_fontsize=10, loc="center right")
    finish(left, title="at each net's best rate", xlabel="SGD step", ylabel="training loss (cross-entropy)",
           legend=False)
    steps = len(next(iter(losses[kinds[0]].values()))) - 1
    finish(right, title=f"after {steps} steps, at every rate", xlabel="learning rate (log scale)",
           ylabel="final training loss", legend=False)
    title_figure(fig, title)
    return fig


def first_steps_at_rate(losses: dict, learning_rate: float, *, title: str):
    """Every net's training loss over the first steps at one learning rate of ``losses``
    (``{kind: {lr: losses}}``)."""
    _check_title(title)
    kinds = _kinds(losses)
    learning_rate = real_number("learning_rate", learning_rate, low=0.0, low_inclusive=False)
    rates = sorted({lr for kind in kinds for lr in losses[kind]})
    if learning_rate not in rates:
        raise ValueError(f"learning_rate must be one of the rates measured, {rates}; got {learning_rate!r}")
    fig, ax = new_figure(width=7.0, height=3.8)
    for i, kind in enumerate(kinds):
        curve = losses[kind][learning_rate]
        with house_style():
            ax.plot(np.arange(len(curve)), curve, color=color_of(kind, i), linestyle=STYLES.get(kind, "-"),
                    linewidth=2.0, label=kind)
    with house_style():
        ax.set_ylim(bottom=0.0)
    finish(ax, title=title, xlabel="SGD step", ylabel="training loss (cross-entropy)")
    return fig


def agreement_by_gap(cosines: dict, *, reached: dict, title: str):
    """Two mini-batches' agreement at initialisation against the gap from the mirror (0: the
    looks-linear net; ``sqrt(2)``: its unmirrored CReLU twin), mean over pairs with a band from
    the lowest to the highest; a dotted line at each gap in ``reached`` (label -> gap), e.g.
    where 30 steps at each learning rate took the looks-linear net. ``cosines`` is
    ``{gap: cosines}``, as :func:`helpers.experiments.looks_linear.agreement_toward_mirror`
    returns it."""
    _check_title(title)
    if not isinstance(cosines, dict) or len(cosines) < 2:
        raise ValueError("cosines must be a dict {gap: cosines} with at least two gaps")
    gaps = sorted(cosines)
    fig, ax = new_figure(width=7.0, height=3.9)
    color = OTHER_COLORS[0]
    runs = np.array([np.asarray(cosines[g], dtype=float) for g in gaps])
    with house_style():
        ax.plot(gaps, runs.mean(axis=1), color=color, marker="o", label="a net that far from the mirror")
        ax.fill_between(gaps, runs.min(axis=1), runs.max(axis=1), color=color, alpha=0.18, linewidth=0)
        ax.axhline(0.0, color="0.3", linestyle=":", linewidth=1)
        top = float(runs.max())
        for i, (label, gap) in enumerate(reached.items()):
            ax.axvline(gap, color="0.45", linestyle="--", linewidth=1)
            ax.text(gap, top * (1.0 - 0.1 * (i % 2)), f" {label}", fontsize=10, color="0.3", va="top")
    finish(ax, title=title, xlabel="gap from the mirror, ‖W_right + W_left‖ / ‖W_left‖",
           ylabel="cosine of two mini-batch gradients", legend=False)
    return fig
