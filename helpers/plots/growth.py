"""Chapter 5's figures on how small the branch scale must be: the squared growth of a gradient
through ``N`` residual layers against both formulas, what random one-dimensional stacks do,
and the boundary ``eps = 1/sqrt(N)`` (:mod:`helpers.measure.growth`)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

from ..measure.growth import aligned_growth, high_dim_growth
from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

HIGH_DIM_FORMULA = r"$(1+\varepsilon^2)^N$"
ALIGNED_FORMULA = r"$(1+\varepsilon)^{2N}$"
HIGH_DIM = COLORS["residual"]  # the measured growth in high dimension and (1 + eps^2)^N
ALIGNED = OTHER_COLORS[0]  # every branch along the stream, and (1 + eps)^(2N)
ONE_DIM = OTHER_COLORS[1]  # random one-dimensional stacks
EXPONENT_COLORS = {0.25: OTHER_COLORS[1], 0.5: COLORS["residual"], 0.75: OTHER_COLORS[0]}


def _depth_axis(ax, depths) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(depths), [str(d) for d in depths])
    ax.minorticks_off()


def _log_ticks(ax) -> None:
    """Log-scale ticks that label a narrow range too (1, 2, 5, 10 ...)."""
    low, high = ax.get_ylim()
    if high / low < 100:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(lambda value, _: f"{value:g}")


def _check_runs(name: str, runs) -> list:
    runs = list(runs)
    if not runs or not all(hasattr(r, "log_growth") and hasattr(r, "eps") for r in runs):
        raise TypeError(f"{name} must be a non-empty list of GrowthRun (helpers.measure.growth.backward_growth)")
    return sorted(runs, key=lambda r: r.depth)


def growth_grid(panels: dict, *, title: str):
    """One panel per branch-scale rule (``panels`` maps a label such as ``"ε = 1/N"`` to its
    :class:`helpers.measure.growth.GrowthRun` list): the squared growth through the stack
    against its depth ``N``, log scales. Green circles: measured in high dimension, green
    line ``(1 + ε²)^N``; purple squares: the aligned growth, purple dashed line ``(1 + ε)^(2N)``."""
    if not isinstance(panels, dict) or not panels:
        raise TypeError("panels must be a non-empty dict: rule label -> list of GrowthRun")
    fig, axes = new_figure(ncols=len(panels), width=7.0, height=3.9)
    axes = np.atleast_1d(axes)
    with house_style():
        for i, (ax, (label, runs)) in enumerate(zip(axes, panels.items())):
            runs = _check_runs(f"panels[{label!r}]", runs)
            depths = [r.depth for r in runs]
            ax.plot(depths, [high_dim_growth(r.eps, r.depth) for r in runs], color=HIGH_DIM, linewidth=1.4,
                    label=HIGH_DIM_FORMULA)
            ax.plot(depths, [r.final for r in runs], color=HIGH_DIM, marker="o", linestyle="none",
                    markerfacecolor="none", markersize=7, markeredgewidth=1.6,
                    label=f"measured, {runs[0].width} dimensions")
            ax.plot(depths, [aligned_growth(r.eps, r.depth) for r in runs], color=ALIGNED, linestyle="--",
                    linewidth=1.4, label=ALIGNED_FORMULA)
            ax.plot(depths, [r.aligned_final for r in runs], color=ALIGNED, marker="s", linestyle="none",
                    markersize=5, label="measured gains, aligned")
            ax.set_yscale("log")
            _log_ticks(ax)
            _depth_axis(ax, depths)
            finish(ax, title=label, xlabel="layers N", ylabel="squared growth G (log)", legend=False)
            if i:
                ax.set_ylabel("")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=10)
        title_figure(fig, title)
    return fig


def one_dimensional_spread(growth, *, eps: float, depth: int, high_dim: float, title: str):
    """The squared growth of many random one-dimensional stacks (``growth``, one value each;
    :func:`helpers.measure.growth.one_dimensional_growth`) as a histogram of ``log10 G``,
    with lines at their mean and median, at ``(1 + ε²)^N``, at the growth measured in high
    dimension (``high_dim``) and at the aligned ``(1 + ε)^(2N)``."""
    growth = np.asarray(growth, dtype=float)
    if growth.ndim != 1 or growth.size < 2 or not np.all(growth > 0):
        raise ValueError("growth must be a 1-D array of at least two positive growths")
    logs = np.log10(growth)
    worst = math.log10(aligned_growth(eps, depth))
    fig, ax = new_figure(width=7.0, height=3.9)
    with house_style():
        ax.hist(logs, bins=60, color=ONE_DIM, alpha=0.55, weights=np.full(logs.shape, 100 / logs.size),
                label="random 1-D stacks")
        marks = (  # value, colour, style, width, label: the three near e are told apart by width and style
            (math.log10(np.median(growth)), "0.35", ":", 1.8, "their median"),
            (math.log10(growth.mean()), ONE_DIM, "-", 6.0, "their mean"),
            (math.log10(high_dim), HIGH_DIM, "-", 2.4, "measured in high dimension"),
            (math.log10(high_dim_growth(eps, depth)), "0.1", "--", 1.4, HIGH_DIM_FORMULA),
            (worst, ALIGNED, "--", 1.8, ALIGNED_FORMULA + ", every step aligned"),
        )
        for value, color, style, width, label in marks:
            ax.axvline(value, color=color, linestyle=style, linewidth=width, label=label)
        ax.set_xlim(min(logs.min(), 0) - 0.5, max(worst, logs.max()) + 0.8)
        ax.legend(fontsize=10, loc="upper center")
    finish(ax, title=title, xlabel="log10 of the squared growth G", ylabel="share of stacks (%)", legend=False)
    return fig


def exponent_sweep(runs_by_exponent: dict, *, title: str, ceiling: float = 4.0):
    """The boundary ``ε = N^(-a)``: for each exponent ``a`` (``runs_by_exponent`` maps ``a`` to
    its :class:`helpers.measure.growth.GrowthRun` list), the measured growth (markers) and
    ``(1 + ε²)^N`` (dashed) against ``N``. Left: ``G`` itself on a linear scale up to
    ``ceiling`` (a growth beyond it is drawn as a triangle at the top), with ``e`` dotted.
    Right: its logarithm ``ln G`` on log scales, where ``ln G ≈ N ε² = N^(1 - 2a)`` is a
    straight line of slope ``1 - 2a``."""
    if not isinstance(runs_by_exponent, dict) or not runs_by_exponent:
        raise TypeError("runs_by_exponent must be a non-empty dict: exponent a -> list of GrowthRun")
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=4.2)
    with house_style():
        for i, (a, runs) in enumerate(runs_by_exponent.items()):
            runs = _check_runs(f"runs_by_exponent[{a!r}]", runs)
            color = EXPONENT_COLORS.get(a, OTHER_COLORS[(i + 2) % len(OTHER_COLORS)])
            depths = np.array([r.depth for r in runs])
            measured = np.array([r.final for r in runs])
            formula = np.array([high_dim_growth(r.eps, r.depth) for r in runs])
            inside = measured <= ceiling
            left.plot(depths, np.minimum(formula, ceiling * 1.5), color=color, linestyle="--", linewidth=1.3)
            left.plot(depths[inside], measured[inside], color=color, marker="o", linestyle="none",
                      label=f"ε = N^(−{a:g})")
            left.plot(depths[~inside], np.full((~inside).sum(), ceiling * 0.97), color=color, marker="^",
                      linestyle="none", markersize=8)
            right.plot(depths, np.log(formula), color=color, linestyle="--", linewidth=1.3)
            right.plot(depths, np.log(measured), color=color, marker="o", linestyle="none")
        left.axhline(math.e, color="0.4", linestyle=":", linewidth=1.2)
        left.text(depths[-1] * 1.25, math.e, "e", color="0.3", fontsize=11, va="center")
        left.axhline(1.0, color="0.6", linewidth=0.8)
        left.set_ylim(0.8, ceiling)
        right.set_yscale("log")
        for ax in (left, right):
            _depth_axis(ax, depths)
        finish(left, title=f"the growth G (▲: above {ceiling:g})", xlabel="layers N", ylabel="squared growth G",
               legend=False)
        finish(right, title="its logarithm ln G", xlabel="layers N", ylabel="ln G (log scale)", legend=False)
        handles, labels = left.get_legend_handles_labels()
        handles.append(left.plot([], [], color="0.3", linestyle="--", linewidth=1.3)[0])
        labels.append(HIGH_DIM_FORMULA)
        fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=10)
        title_figure(fig, title)
    return fig


def growth_by_layer(run, *, title: str):
    """One stack, layer by layer from its top (an explorer's frame): the measured squared
    growth after ``k`` layers against ``(1 + ε²)^k``, and the aligned growth against
    ``(1 + ε)^(2k)``."""
    _check_runs("run", [run])
    k = np.arange(run.depth + 1)
    fig, ax = new_figure(width=6.4, height=3.8)
    with house_style():
        ax.plot(k, np.exp(k * math.log1p(run.eps ** 2)), color=HIGH_DIM, linewidth=1.3, label=r"$(1+\varepsilon^2)^k$")
        ax.plot(k, run.growth, color=HIGH_DIM, marker="o" if run.depth <= 16 else None, markerfacecolor="none",
                linewidth=2.6, alpha=0.7, label=f"measured, {run.width} dimensions")
        ax.plot(k, np.exp(2 * k * math.log1p(run.eps)), color=ALIGNED, linestyle="--", linewidth=1.3,
                label=r"$(1+\varepsilon)^{2k}$")
        ax.plot(k, run.aligned, color=ALIGNED, linewidth=2.6, alpha=0.5, label="measured gains, aligned")
        ax.set_yscale("log")
        _log_ticks(ax)
        ax.set_xlim(0, run.depth)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=10, loc="upper left")
    finish(ax, title=title, xlabel="layers passed on the way back, k", ylabel="squared growth (log)", legend=False)
    return fig
