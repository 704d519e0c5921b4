"""Chapter 5's figures of incremental explosion: one SGD step's loss change against depth, and
one net's stream and per-block gradient (:mod:`helpers.experiments.increments`)."""

from __future__ import annotations

import math

import numpy as np

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

_RULE_COLORS = {"plain": COLORS["plain"], "1": OTHER_COLORS[1], "1/sqrt(N)": COLORS["residual"],
                "1/N": OTHER_COLORS[0]}


def step_change_by_depth(runs, *, title: str):
    """Left: ``|ΔL|`` of one SGD step at initialisation (markers: measured, where the step
    lowered the loss for every initialisation; lines: the first-order ``η ||g||²``) against
    the number of blocks, one colour per rule, on log-log axes. Right: the same for the rules
    whose change stays moderate, divided by its value at the smallest depth, on linear axes,
    with the line ``N / N_0`` that growth in proportion to depth would follow."""
    fig, (left, right) = new_figure(2, width=6.8, height=4.8)
    depths = sorted({r.depth for r in runs})
    with house_style():
        for rule in dict.fromkeys(r.rule for r in runs):
            rows = sorted((r for r in runs if r.rule == rule), key=lambda r: r.depth)
            color = _RULE_COLORS[rule]
            left.plot([r.depth for r in rows], [r.first_order for r in rows], color=color, label=rows[0].label)
            lowered = [(r.depth, r.change) for r in rows if r.decreased and math.isfinite(r.change)]
            if lowered:
                left.plot(*zip(*lowered), linestyle="none", marker="o", color=color)
            if rows[-1].first_order / rows[0].first_order < 100:
                right.plot([r.depth for r in rows], [r.change / rows[0].change for r in rows], color=color,
                           marker="o", label=rows[0].label)
        right.plot(depths, [d / depths[0] for d in depths], color="0.5", linestyle=":",
                   label="in proportion to N")
        left.set_xscale("log", base=2)
        left.set_yscale("log")
        right.set_xscale("log", base=2)
        for ax in (left, right):
            ax.set_xticks(depths, [str(d) for d in depths])
        left.plot([], [], linestyle="none", marker="o", color="0.4", label="measured (markers)")
        left.plot([], [], color="0.4", label="first order, η‖g‖² (lines)")
    finish(left, title="all three designs", xlabel="number of blocks N (log scale)",
           ylabel="loss change of one SGD step, |ΔL|", legend=False)
    finish(right, title="the two that stay moderate", xlabel="number of blocks N (log scale)",
           ylabel=f"|ΔL| relative to {depths[0]} blocks", legend=False)
    with house_style():
        left.legend(fontsize=10, loc="upper left")
        right.legend(fontsize=10, loc="upper left")
    title_figure(fig, title)
    return fig


def increment_frame(run, *, title: str):
    """One rule at one depth: the size of the stream after each block (left) and each block's
    share ``||g_l||²`` of the gradient (right), with the step's loss change in the title."""
    fig, (left, right) = new_figure(2, width=7.4, height=3.4)
    color = _RULE_COLORS[run.rule]
    with house_style():
        left.plot(np.arange(len(run.stream)), run.stream, marker="o", color=color)
        left.set_yscale("log")
        left.set_ylim(min(0.5, float(np.min(run.stream)) / 1.5), max(1e3, float(np.max(run.stream)) * 1.5))
        right.bar(np.arange(1, run.depth + 1), run.per_block, color=color)
        right.set_yscale("log")
        right.set_ylim(1e-3, max(1e4, float(np.max(run.per_block)) * 2))
    finish(left, title="the stream, block by block", xlabel="block (0 = the stem's output)",
           ylabel="root-mean-square of the stream")
    finish(right, title="each block's gradient", xlabel="block", ylabel="‖g_l‖² (log scale)")
    change = "overflows" if not math.isfinite(run.change) else f"{run.change:.3g}"
    title_figure(fig, f"{title}: ε = {run.eps:.3g}, |ΔL| of one step {change}")
    return fig
