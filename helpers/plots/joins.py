"""Chapter 3's add-vs-concat nets, trained: where the projection after a concatenation
starts decides how the net trains.

Each function takes :class:`helpers.experiments.joins.JoinRun` records. A net is named by
its join and, for concat-project, by how its projection ``P`` started
(:attr:`~helpers.experiments.joins.JoinRun.name`): ``[I, I]`` is add at initialisation,
``[I, 0]`` keeps the stream and ignores the branch, a random ``P`` (Xavier) keeps neither.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

# name -> (legend label, colour, line style); names as JoinRun.name gives them
STYLES = {
    "add": ("add: h + F(h)", COLORS["residual"], "-"),
    "concat-project [I, I]": ("concat, P starts [I, I]", OTHER_COLORS[1], "--"),
    "concat-project [I, 0]": ("concat, P starts [I, 0]", OTHER_COLORS[3], "-."),
    "concat-project": ("concat, P starts random", OTHER_COLORS[0], "-"),
    "concat-grow": ("concat, no P (width grows)", "0.45", ":"),
    "none": ("plain: F(h)", COLORS["plain"], "-"),
}
TOP = 8.0  # where a diverged run is marked, in training-loss units


def _style(run) -> tuple[str, str, str]:
    label, color, line = STYLES.get(run.name, (run.name, "0.3", "-"))
    return f"{label}, {run.blocks} blocks", color, line


def _checked(name: str, runs) -> list:
    runs = list(runs) if isinstance(runs, (list, tuple)) else None
    if not runs or not all(hasattr(r, "losses") and hasattr(r, "name") for r in runs):
        raise TypeError(f"{name} must be a non-empty list of JoinRun records")
    return runs


def _final(run) -> float:
    """The last epoch's training loss, ``inf`` for a run that diverged."""
    last = float(run.losses[-1])
    return last if np.isfinite(last) else np.inf


def loss_curves(runs, *, title: str, ax=None, by: str = "net"):
    """The training loss per epoch (log scale) of each of ``runs``, one line each; a run that
    diverged has no line and says so in the legend. ``by="net"`` colours and labels the lines
    by net (runs of several nets), ``by="rate"`` by learning rate (one net at several rates,
    darker for smaller rates)."""
    runs = _checked("runs", runs)
    if by not in ("net", "rate"):
        raise ValueError(f"by must be 'net' or 'rate', got {by!r}")
    rates = sorted({r.lr for r in runs})
    shades = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(rates)))
    fig = None
    if ax is None:
        fig, ax = new_figure(width=7.0, height=3.8)
    with house_style():
        for run in runs:
            if by == "net":
                label, color, line = _style(run)
            else:
                label, color, line = f"learning rate {run.lr:g}", shades[rates.index(run.lr)], "-"
            finite = np.isfinite(run.losses)
            if finite.all():
                ax.plot(np.arange(1, len(run.losses) + 1), run.losses, color=color, linestyle=line, marker="o",
                        markersize=3.5, label=label)
            else:
                ax.plot([], [], color=color, linestyle=line, label=f"{label} (diverged)")
        ax.set_yscale("log")
    finish(ax, title=title, xlabel="epoch", ylabel="training loss (log)")
    ax.legend(fontsize=10)
    return fig if fig is not None else ax.figure


def rate_sweep(runs, *, ax, title: str = "Each rate (circled: best; x: diverged)"):
    """The final training loss against the learning rate (log-log), one line per net of
    ``runs``; each net's best rate circled, a diverged run marked x at the top (one height
    per net, so that marks at one rate do not hide each other)."""
    runs = _checked("runs", runs)
    names = list(dict.fromkeys(r.name for r in runs))
    rates = sorted({r.lr for r in runs})
    with house_style():
        for i, name in enumerate(names):
            group = sorted((r for r in runs if r.name == name), key=lambda r: r.lr)
            label, color, line = _style(group[0])
            final = np.array([_final(r) for r in group])
            lrs = np.array([r.lr for r in group])
            ok = np.isfinite(final)
            ax.plot(lrs[ok], final[ok], color=color, linestyle=line, marker="o", markersize=3.5, label=label)
            ax.plot(lrs[~ok], np.full((~ok).sum(), TOP * 1.3 ** i), color=color, marker="x", markersize=8,
                    markeredgewidth=2, linestyle="none")
            if ok.any():
                best = int(np.argmin(final))
                ax.plot(lrs[best], final[best], marker="o", markersize=11, markerfacecolor="none",
                        markeredgecolor=color, markeredgewidth=1.6, linestyle="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(None, TOP * 1.3 ** len(names))
        ax.xaxis.set_major_locator(FixedLocator(rates))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.tick_params(axis="x", labelrotation=45)
    finish(ax, title=title, xlabel="learning rate (SGD, momentum 0.9)",
           ylabel="last epoch's training loss (log)", legend=False)
    return ax


def joins_trained(best, runs, *, title: str):
    """Three panels and a legend: the training loss per epoch of ``best`` (each net at its
    best rate); the final training loss against the learning rate for every net of ``runs``
    (the grid); and the cost of a step of each architecture other than add (parameters,
    bytes autograd saves, time), relative to add's (the dotted line at 1). The concat-project
    nets differ only in how ``P`` starts, so they cost the same and share one bar each."""
    best, runs = _checked("best", best), _checked("runs", runs)
    base = [r for r in best if r.join == "add"]
    if not base:
        raise ValueError("best must include the add net, which the costs are relative to")
    fig, ((curves, sweep), (cost, key)) = new_figure(width=7.0, height=7.0, nrows=2, ncols=2)
    loss_curves(best, title="Each net at its best rate", ax=curves)
    curves.get_legend().remove()
    rate_sweep(runs, ax=sweep)
    measures = (("params", "parameters"), ("saved_bytes", "memory"), ("seconds_per_step", "time"))
    costly = list(dict.fromkeys(r.join for r in best if r.join not in ("add", "none")))
    height = 0.8 / max(len(costly), 1)
    with house_style():
        for j, join in enumerate(costly):
            run = next(r for r in best if r.join == join)
            relative = [getattr(run, key) / getattr(base[0], key) for key, _ in measures]
            if join == "concat-project":
                label, color = "concat + P (any start)", OTHER_COLORS[0]
            else:
                label, color, _ = STYLES.get(join, (join, "0.3", "-"))
            bars = cost.barh(np.arange(len(measures)) + (j - (len(costly) - 1) / 2) * height, relative, height,
                             color=color, label=label)
            cost.bar_label(bars, fmt="%.1f×", padding=2, fontsize=10)
        cost.axvline(1, color="0.3", linestyle=":", linewidth=1.2)
        cost.set_yticks(np.arange(len(measures)), [name for _, name in measures])
        cost.set_xlim(0, 1.3 * max([1.0] + [p.get_width() for p in cost.patches]))
        cost.invert_yaxis()
        cost.grid(axis="y", visible=False)
        handles, labels = curves.get_legend_handles_labels()
        bar_handles, bar_labels = cost.get_legend_handles_labels()
        key.axis("off")
        key.legend(handles + bar_handles, labels + [f"cost: {b}" for b in bar_labels], loc="center",
                   fontsize=10)
    finish(cost, title="Cost of a step (dotted: add)", xlabel="relative to add", ylabel="what a step needs",
           legend=False)
    title_figure(fig, title)
    return fig
