"""Chapter 3's figures of the real Add & Norm: the stability map over initial branch scale and
learning rate, and the gradient that reaches each sublayer of a Post-LN and a Pre-LN stack
(:mod:`helpers.experiments.add_norm_stability`)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from .add_norm import STREAM_COLORS
from .style import finish, house_style, new_figure

CHANCE_LOSS = math.log(10)
ORDER_COLORS = {"Post-LN": STREAM_COLORS["post"], "Pre-LN": STREAM_COLORS["pre"]}


def _row_label(architecture: str, scale: float) -> str:
    return "ReZero (α = 0)" if architecture == "ReZero" else f"{architecture}, s = {scale:g}"


def _cell_text(value: float) -> str:
    if not np.isfinite(value):
        return "diverged"
    if value >= 10:
        return "≥ 10"
    return f"{value:.2f}" if value >= 0.01 else f"{value:.3f}"


def stability_heatmap(smap, *, title: str):
    """Row (architecture, initial branch scale) x learning rate: the last epoch's training
    loss of each cell (the mean over its nets; lighter is lower), "diverged" where any net's
    loss became infinite or NaN; the map's warm-up columns, if any, come last, set apart by
    a line. ``smap`` is a :class:`helpers.experiments.add_norm_stability.StabilityMap`."""
    rows, columns = list(smap.rows), smap.columns()
    if not rows or not columns:
        raise ValueError("smap must hold at least one row and one learning rate")
    grid = smap.grid()
    optimiser = {"sgd": "SGD, momentum 0.9", "adam": "Adam"}.get(smap.optimizer, smap.optimizer)
    low, high = np.log10(0.003), np.log10(10.0)
    fig, ax = new_figure(width=7.0, height=0.42 * len(rows) + 1.9)
    with house_style():
        shown = np.ma.masked_invalid(np.log10(np.clip(grid, 1e-3, 10.0)))
        image = ax.imshow(shown, cmap="viridis_r", aspect="auto", vmin=low, vmax=high)
        ax.set_facecolor("#f2dede")
        for i in range(len(rows)):
            for j in range(len(columns)):
                value = grid[i, j]
                # viridis_r: low losses are light (dark text), high ones dark (white text)
                dark = np.isfinite(value) and (np.log10(np.clip(value, 1e-3, 10.0)) - low) / (high - low) > 0.55
                ax.text(j, i, _cell_text(value), ha="center", va="center", fontsize=10,
                        color="white" if dark else "0.1")
        # a thin line between architectures
        for i in range(1, len(rows)):
            if rows[i][0] != rows[i - 1][0]:
                ax.axhline(i - 0.5, color="white", linewidth=2.5)
        # and one between the constant rates and the warm-up columns
        if smap.warmup_lrs:
            ax.axvline(len(smap.lrs) - 0.5, color="white", linewidth=2.5)
        ax.set_xticks(range(len(columns)), [f"{lr:g}\nwarm-up" if warm else f"{lr:g}" for lr, warm in columns])
        ax.set_yticks(range(len(rows)), [_row_label(a, s) for a, s in rows])
        ax.grid(False)
        bar = fig.colorbar(image, ax=ax, pad=0.02)
        bar.set_label(f"training loss after {smap.epochs} epochs (log10)")
    xlabel = f"learning rate ({optimiser})"
    if smap.warmup_lrs:
        xlabel += f"; warm-up: linear over the first {smap.warmup_steps} steps"
    finish(ax, title=title, xlabel=xlabel, ylabel="sublayer, initial branch scale")
    return fig


def sublayer_gradient_profiles(results, *, title: str):
    """The gradient that reaches each sublayer's sum, relative to the last sublayer's (solid,
    the mean over the nets), and the part of it the skip connections alone deliver (dashed),
    against the sublayer, on a log axis. ``results`` are
    :class:`helpers.experiments.add_norm_stability.SublayerGradients` (Post-LN, Pre-LN)."""
    results = list(results)
    if not results:
        raise ValueError("results must hold at least one architecture")
    fig, ax = new_figure(width=7.0, height=4.0)
    with house_style():
        for r in results:
            color = ORDER_COLORS.get(r.architecture, "0.3")
            layers = np.arange(1, r.arriving.shape[1] + 1)
            last = r.arriving[:, -1:]
            ax.semilogy(layers, (r.arriving / last).mean(axis=0), color=color, marker="o",
                        label=f"{r.architecture}: all that arrives")
            ax.semilogy(layers, (r.skip_only / last).mean(axis=0), color=color, linestyle="--",
                        label=f"{r.architecture}: along the skips alone")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="lower right", fontsize=10)
    finish(ax, title=title, xlabel="sublayer (1 = next to the input)",
           ylabel="‖dL/dS_l‖ / last sublayer's (log)")
    return fig
