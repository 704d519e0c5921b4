"""How large each residual branch is against its stream: r_i = ||F_i(h_i)|| / ||h_i|| per block."""

from __future__ import annotations

import numpy as np

from .._checks import non_empty
from .style import COLORS, finish, house_style, new_figure


def branch_ratios_by_block(ratios, *, title: str, ylabel: str = "branch ratio ||F(h)|| / ||h||"):
    """Bars of the branch ratio r_i of each block (1 = next to the input), one per block.

    ``ratios`` is ``(blocks,)`` for one net, or ``(nets, blocks)``: bars show the mean over the
    nets and whiskers their min-max spread. The y-axis is logarithmic when the ratios span more
    than a factor of 30, so a branch that decay has all but removed stays visible.
    """
    r = np.atleast_2d(np.asarray(non_empty("ratios", ratios), dtype=float))
    if r.ndim != 2 or r.shape[1] == 0:
        raise ValueError(f"ratios must be (blocks,) or (nets, blocks), got shape {np.shape(ratios)}")
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError("ratios must be finite and non-negative")
    mean, low, high = r.mean(axis=0), r.min(axis=0), r.max(axis=0)
    blocks = np.arange(1, r.shape[1] + 1)
    fig, ax = new_figure(width=7.0, height=3.2)
    with house_style():
        ax.bar(blocks, mean, color=COLORS["residual"], alpha=0.8,
               label="mean over nets" if len(r) > 1 else "one net")
        if len(r) > 1:
            ax.errorbar(blocks, mean, yerr=[mean - low, high - mean], fmt="none", ecolor="black",
                        capsize=3, linewidth=1, label="min to max")
    positive = r[r > 0]
    if positive.size and positive.max() / positive.min() > 30:
        ax.set_yscale("log")
    ax.set_xticks(blocks)
    finish(ax, title=title, xlabel="block (1 = next to the input)", ylabel=ylabel)
    return fig
