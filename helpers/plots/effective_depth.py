"""Chapter 3's figures on blocks that switch off: each block's correction and lesion, chosen on
a validation split, and what the weight decay does to the blocks that are cheap to delete.

The runs are :class:`helpers.experiments.effective_depth.SwitchedOff`, as
:func:`helpers.experiments.effective_depth.decay_sweep` returns them.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from .add_norm import switched_off
from .style import OTHER_COLORS, band, finish, house_style, new_figure, title_figure


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


def decay_trend(runs: dict, costs: dict, *, title: str):
    """Two panels. Left, against the weight decay (log scale), one dot per net and a line
    through the means: how many blocks are cheap to delete on their own. Right, against the
    number of blocks ``k`` deleted together, one line per weight decay (the mean over its
    nets, a band for their spread): the rise of the test error (points) when each net's
    ``k`` blocks that are cheapest to delete alone are deleted at once, so that every decay
    is compared at the same count. ``runs`` maps each weight decay (a number > 0) to a list
    of ``SwitchedOff``; ``costs`` maps the same decays to an array (nets, K + 1) of those
    rises, as fractions, for k = 0, ..., K."""
    if not isinstance(title, str) or not title.strip():
        raise ValueError("title must be a non-empty string that states the finding")
    if not isinstance(runs, dict) or not runs or not all(runs.values()):
        raise ValueError("runs must map each weight decay to a non-empty list of SwitchedOff runs")
    decays = sorted(runs)
    if decays[0] <= 0:
        raise ValueError(f"the weight decays must be > 0 for a log axis, got {decays}")
    if not isinstance(costs, dict) or sorted(costs) != decays:
        raise ValueError(f"costs must map the same weight decays as runs, {decays}, to arrays of costs")
    curves = {d: np.atleast_2d(np.asarray(costs[d], dtype=float)) for d in decays}
    if len({c.shape[1] for c in curves.values()}) != 1 or curves[decays[0]].shape[1] < 2:
        raise ValueError("costs must hold one row per net and the same number (at least 2) of counts k = 0, 1, ...")
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=4.4)
    x = np.array(decays, dtype=float)
    jitter = np.array([0.93, 1.0, 1.07])
    counts = [[len(r.cheap) for r in runs[d]] for d in decays]
    with house_style():
        for d, row in zip(x, counts):
            left.plot(d * jitter[:len(row)] if len(row) <= 3 else np.full(len(row), d), row,
                      color="0.35", linestyle="none", marker="o", markersize=4, alpha=0.6)
        left.plot(x, [np.mean(row) for row in counts], color="0.35", marker="o")
        left.set_xscale("log")
        left.xaxis.set_major_locator(FixedLocator(x))
        left.xaxis.set_minor_locator(NullLocator())
        left.set_xticklabels([_short(d) for d in x])
        left.yaxis.set_major_locator(MaxNLocator(integer=True))
        left.set_ylim(bottom=0)
    k = np.arange(curves[decays[0]].shape[1])
    for i, d in enumerate(decays):
        band(right, k, 100 * curves[d], label=f"decay {_short(d)}",
             color=OTHER_COLORS[i % len(OTHER_COLORS)])
    with house_style():
        right.axhline(0, color="0.5", linewidth=0.8, linestyle=":")
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
    n_blocks = len(runs[decays[0]][0].lesion)
    finish(left, title="Blocks cheap to delete alone", xlabel="weight decay",
           ylabel=f"blocks (of {n_blocks}), chosen on validation", legend=False)
    finish(right, title="The k cheapest deleted together", xlabel="blocks deleted together, k",
           ylabel="rise of the test error (points)", legend=False)
    with house_style():  # the legend below the panels, clear of the data
        fig.legend(*right.get_legend_handles_labels(), loc="outside lower center", ncols=4)
    title_figure(fig, title)
    return fig
