"""Chapter 3's figures on blocks that switch off: each block's correction and lesion, chosen on
a validation split, and what the weight decay does to the blocks that are cheap to delete.

The runs are :class:`helpers.experiments.effective_depth.SwitchedOff`, as
:func:`helpers.experiments.effective_depth.decay_sweep` returns them.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from .add_norm import switched_off
from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure


def _short(decay: float) -> str:
    """``1e-4`` for 0.0001, ``5e-3`` for 0.005: a tick label that stays narrow."""
    mantissa, exponent = f"{decay:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def switched_off_on_validation(runs: dict, *, threshold: float, title: str):
    """:func:`helpers.plots.add_norm.switched_off` for runs whose lesions are measured on a
    held-out validation split (the bottom panel's axis says so): ``runs`` maps a label to a
    list of ``SwitchedOff``, one per seed."""
    if not isinstance(runs, dict) or not runs or not all(runs.values()):
        raise ValueError("runs must map each label to a non-empty list of SwitchedOff runs")
    fig = switched_off(runs, threshold=threshold, title=title)
    bottom = fig.axes[1]
    with house_style():
        bottom.set_ylabel("rise of the validation loss (nats)")
    return fig


def decay_trend(runs: dict, *, title: str):
    """Two panels against the weight decay (log scale), one dot per net and a line through
    the means: how many blocks are cheap to delete on their own, and the test error (%) of
    the intact nets and of the same nets with all their cheap blocks deleted at once.
    ``runs`` maps each weight decay (a number > 0) to a list of ``SwitchedOff``."""
    if not isinstance(title, str) or not title.strip():
        raise ValueError("title must be a non-empty string that states the finding")
    if not isinstance(runs, dict) or not runs or not all(runs.values()):
        raise ValueError("runs must map each weight decay to a non-empty list of SwitchedOff runs")
    decays = sorted(runs)
    if decays[0] <= 0:
        raise ValueError(f"the weight decays must be > 0 for a log axis, got {decays}")
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=4.4)
    x = np.array(decays, dtype=float)
    jitter = np.array([0.93, 1.0, 1.07])

    def dots_and_line(ax, values, *, color, label, marker="o"):
        with house_style():
            for d, row in zip(x, values):
                ax.plot(d * jitter[:len(row)] if len(row) <= 3 else np.full(len(row), d), row, color=color,
                        linestyle="none", marker=marker, markersize=4, alpha=0.6)
            ax.plot(x, [np.mean(row) for row in values], color=color, marker=marker, label=label)

    dots_and_line(left, [[len(r.cheap) for r in runs[d]] for d in decays], color=OTHER_COLORS[0],
                  label="blocks cheap to delete alone")
    dots_and_line(right, [[100 * r.test_error for r in runs[d]] for d in decays], color=COLORS["residual"],
                  label="intact")
    dots_and_line(right, [[100 * r.joint_error for r in runs[d]] for d in decays], color=COLORS["plain"],
                  label="cheap blocks deleted together", marker="s")
    for ax in (left, right):
        with house_style():
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(FixedLocator(x))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticklabels([_short(d) for d in x])
    with house_style():
        left.yaxis.set_major_locator(MaxNLocator(integer=True))
        left.set_ylim(bottom=0)
        right.set_ylim(bottom=0)
    n_blocks = len(runs[decays[0]][0].lesion)
    finish(left, title="Blocks cheap to delete alone", xlabel="weight decay",
           ylabel=f"blocks (of {n_blocks}), chosen on validation", legend=False)
    finish(right, title="Test error", xlabel="weight decay", ylabel="test error (%)", legend=False)
    with house_style():  # the legend below the panels, clear of the data
        fig.legend(*right.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    title_figure(fig, title)
    return fig
