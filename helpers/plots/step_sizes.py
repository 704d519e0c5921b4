"""Chapter 5, section 5's figures: one step under Adam against depth
(:mod:`helpers.experiments.increments`, :mod:`helpers.experiments.step_sizes`)."""

from __future__ import annotations

import numpy as np

from .increments import _RULE_COLORS
from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

_ARCH_COLORS = {"post": COLORS["plain"], "deepnorm": OTHER_COLORS[0]}


def adam_step_by_depth(runs, *, title: str):
    """``|ΔL|`` of Adam's first step against the number of blocks, relative to the smallest
    depth, one colour per rule (markers: measured; dashed lines: the theory's
    ``N ε (1 + ε²)^((N - 1)/2)``, relative to the same depth), on log-log axes."""
    fig, ax = new_figure(1, width=6.0, height=4.4)
    depths = sorted({r.depth for r in runs})
    with house_style():
        for rule in dict.fromkeys(r.rule for r in runs):
            rows = sorted((r for r in runs if r.rule == rule), key=lambda r: r.depth)
            color = _RULE_COLORS[rule]
            x = [r.depth for r in rows]
            ax.plot(x, [r.change / rows[0].change for r in rows], linestyle="none", marker="o", color=color,
                    label=f"{rows[0].label}: measured")
            ax.plot(x, [r.theory / rows[0].theory for r in rows], linestyle="--", color=color,
                    label="theory")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks(depths, [str(d) for d in depths])
    finish(ax, title="Adam's first step, η = 1e-7", xlabel="number of blocks N (log scale)",
           ylabel=f"|ΔL| relative to {depths[0]} blocks (log scale)", legend=False)
    with house_style():
        ax.legend(fontsize=10, loc="upper left", ncol=1)
    title_figure(fig, title)
    return fig


def model_update_by_depth(updates, *, title: str):
    """DeepNet's figure at small scale: ``||ΔF|| / η`` after one step against the number of
    layers, Post-LN and DeepNorm, under SGD (left) and Adam's first step (right), on log-log
    axes; dots are single nets, lines geometric means, the dotted lines a flat line and one
    ``∝ sqrt(N)`` through DeepNorm's value at the smallest depth."""
    optimizers = list(dict.fromkeys(u.optimizer for u in updates))
    fig, axes = new_figure(len(optimizers), width=6.8, height=4.2)
    axes = np.atleast_1d(axes)
    depths = sorted({u.depth for u in updates})
    names = {"sgd": "SGD", "adam": "Adam, first step"}
    for ax, optimizer in zip(axes, optimizers):
        with house_style():
            for architecture in dict.fromkeys(u.architecture for u in updates):
                rows = sorted((u for u in updates if u.architecture == architecture and u.optimizer == optimizer),
                              key=lambda u: u.depth)
                color = _ARCH_COLORS[architecture]
                for u in rows:
                    ax.plot([u.depth] * len(u.changes), u.changes, linestyle="none", marker=".", color=color,
                            alpha=0.6)
                ax.plot([u.depth for u in rows], [u.change for u in rows], color=color, marker="o",
                        label=rows[0].label)
                if architecture == "deepnorm":
                    start = rows[0].change
                    ax.plot(depths, [start] * len(depths), color="0.5", linestyle=":", label="flat")
                    ax.plot(depths, [start * (d / depths[0]) ** 0.5 for d in depths], color="0.5",
                            linestyle="-.", label="∝ √N")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(depths, [str(d) for d in depths])
        finish(ax, title=names.get(optimizer, optimizer), xlabel="number of layers N (log scale)",
               ylabel="output change per unit rate, ‖ΔF‖ / η", legend=False)
        with house_style():
            ax.legend(fontsize=10, loc="upper left")
    title_figure(fig, title)
    return fig
