"""Chapter 5's figures of deep Transformers: training curves by design, and how far the first
steps move each layer (:mod:`helpers.experiments.deepnorm`)."""

from __future__ import annotations

import numpy as np

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure
from .transformer import _smooth

DESIGN_STYLES = {
    "Post-LN": dict(color=COLORS["plain"], linestyle="-"),
    "Post-LN, warm-up": dict(color=OTHER_COLORS[1], linestyle="-"),
    "Post-LN, lower rate": dict(color=OTHER_COLORS[3], linestyle="--"),
    "DeepNorm": dict(color=OTHER_COLORS[0], linestyle="-"),
    "Pre-LN": dict(color=COLORS["residual"], linestyle="--"),
    "ReZero": dict(color="#1c7ed6", linestyle=":"),
}
"""One colour and line style per design, in every figure of the section."""


def _after(steps: int) -> str:
    return f"change of the layer's output\nafter {steps} step{'s' if steps > 1 else ''} (relative)"


def design_curves(runs, *, title: str):
    """Training loss (running mean over 10 steps, log scale) against the step for each
    :class:`~helpers.experiments.deepnorm.DesignRun`, with its test accuracy in the legend."""
    fig, ax = new_figure(width=6.8, height=4.2)
    with house_style():
        for r in runs:
            ax.plot(np.arange(1, len(r.run.losses) + 1), _smooth(r.run.losses),
                    label=f"{r.design}: {100 * r.run.accuracy:.0f} % right", **DESIGN_STYLES[r.design])
        ax.set_yscale("log")
        ax.axhline(np.log(8), color="0.5", linewidth=1, linestyle=":")
        ax.legend(fontsize=10, loc="lower left")
    finish(ax, title=title, xlabel="step", ylabel="training loss (nats per token)", legend=False)
    return fig


def early_update_profile(updates, *, title: str):
    """For each :class:`~helpers.experiments.deepnorm.EarlyUpdate`, the relative change of each
    layer's output after the first step(s), against the layer (log scale)."""
    fig, ax = new_figure(width=6.6, height=3.9)
    with house_style():
        for u in updates:
            ax.plot(np.arange(1, len(u.layers) + 1), u.layers, marker=".", label=u.design,
                    **DESIGN_STYLES[u.design])
        ax.set_yscale("log")
        ax.legend(fontsize=10)
    finish(ax, title=title, xlabel="layer (1 = next to the embeddings)",
           ylabel=_after(updates[0].steps), legend=False)
    return fig


def design_frame(run, update, *, title: str):
    """One design (an explorer's frame): its training curve (left) and, where measured, how
    far its first step(s) moved each layer (right)."""
    fig, (left, right) = new_figure(2, width=7.4, height=3.5)
    style = DESIGN_STYLES[run.design]
    with house_style():
        left.plot(np.arange(1, len(run.run.losses) + 1), _smooth(run.run.losses), **style)
        left.axhline(np.log(8), color="0.5", linewidth=1, linestyle=":")
        left.set_yscale("log")
        left.set_ylim(1e-4, 10)
        if update is not None:
            right.plot(np.arange(1, len(update.layers) + 1), update.layers, marker=".", **style)
            right.set_yscale("log")
            right.set_ylim(1e-3, 10)
        else:
            right.text(0.5, 0.5, "not measured for this design\n(same net as Post-LN;\nonly the rate differs)",
                       ha="center", va="center", transform=right.transAxes, fontsize=10)
    finish(left, title=f"{100 * run.run.accuracy:.0f} % of test tokens right", xlabel="step",
           ylabel="training loss (nats per token)", legend=False)
    finish(right, title="the first step" if update is None or update.steps == 1 else f"the first {update.steps} steps",
           xlabel="layer",
           ylabel=_after(update.steps) if update is not None else "relative change of its output", legend=False)
    title_figure(fig, title)
    return fig
