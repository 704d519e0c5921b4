"""Chapter 5's figures on stable propagation: second moments through a chain of linear layers
against the formula, how far single chains stray, and the parameter gradients of plain and
residual nets against depth and against the branch scale."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, LogLocator, NullLocator

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

INIT_STYLES = {
    "1/n": dict(color=OTHER_COLORS[0], marker="o", linestyle="-"),
    "2/n, ReLU": dict(color=OTHER_COLORS[1], marker="s", linestyle="--"),
    "1/m": dict(color=OTHER_COLORS[2], marker="^", linestyle="-"),
    "Xavier": dict(color=OTHER_COLORS[3], marker="D", linestyle="-"),
}
INIT_LABELS = {"1/n": "Var W = 1/n", "2/n, ReLU": "Var W = 2/n, with ReLU", "1/m": "Var W = 1/m",
               "Xavier": "Xavier: Var W = 2/(n + m)"}
"""How the figures name the inits of :data:`helpers.measure.moments.INITS`."""

SIDES = {
    "forward": ("forward: activations", "E[h_l²] / E[h_0²]"),
    "backward": ("backward: gradients", "E[(∂L/∂h_l)²] / E[(∂L/∂h_L)²]"),
}


def _readable_log_ticks(ax) -> None:
    """On a log-scale y axis that spans less than three decades, ticks at 1, 2 and 5 times the
    powers of ten, labelled as plain numbers (0.2, 0.5, 1, 2) rather than powers."""
    low, high = ax.get_ylim()
    if high / low < 1e3:
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_minor_locator(NullLocator())


def _check_results(results) -> dict:
    if not isinstance(results, dict) or not results:
        raise TypeError(f"results must be a non-empty dict {{init: ChainMoments}}, got {type(results).__name__}")
    unknown = [k for k in results if k not in INIT_STYLES]
    if unknown:
        raise ValueError(f"results has unknown inits {unknown}; expected some of {list(INIT_STYLES)}")
    return results


def second_moments(results: dict, *, title: str):
    """Forward (left) and backward (right) second moments against the layer, log scale, for each
    init of ``results`` (``{init: ChainMoments}``, one width profile): the formula as a line, the
    average over the chains as markers (every fourth layer, staggered). A strip on top shows the
    width ``n_l`` of each layer's output."""
    results = _check_results(results)
    widths = next(iter(results.values())).widths
    layers = np.arange(len(widths))
    every = 4  # markers on every fourth layer, each init on its own ones
    fig, grid = new_figure(ncols=2, nrows=2, width=7.0, height=5.4, squeeze=False,
                           gridspec_kw=dict(height_ratios=[1, 3.2]))
    with house_style():
        spec = grid[0, 0].get_gridspec()
        for ax in grid[0]:
            ax.remove()
        top = fig.add_subplot(spec[0, :])
        top.step(layers, widths, where="mid", color="0.35")
        top.set_yscale("log", base=2)
        top.yaxis.set_major_locator(FixedLocator(sorted({int(w) for w in widths})))
        top.yaxis.set_minor_locator(NullLocator())
        top.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
        top.set_xlim(layers[0] - 0.5, layers[-1] + 0.5)
    finish(top, title="width of each layer's output", xlabel="layer l", ylabel="n_l", legend=False)
    top.set_xlabel("")
    for ax, side in zip(grid[1], ("forward", "backward")):
        with house_style():
            for i, (init, r) in enumerate(results.items()):
                style = INIT_STYLES[init]
                measured = r.mean_forward if side == "forward" else r.mean_backward
                predicted = r.predicted_forward if side == "forward" else r.predicted_backward
                shown = slice(i % every, None, every)
                ax.plot(layers, predicted, color=style["color"], linestyle=style["linestyle"], linewidth=1.6)
                ax.plot(layers[shown], measured[shown], color=style["color"], marker=style["marker"],
                        linestyle="none", markersize=5, markerfacecolor="none", markeredgewidth=1.3,
                        label=INIT_LABELS[init])
            ax.set_yscale("log")
            ax.set_xlim(layers[0] - 0.5, layers[-1] + 0.5)
            _readable_log_ticks(ax)
        name, ylabel = SIDES[side]
        finish(ax, title=name, xlabel="layer l (0 = the input)", ylabel=ylabel, legend=False)
    with house_style():
        handles, labels = grid[1, 0].get_legend_handles_labels()
        handles.append(grid[1, 0].plot([], [], color="0.3", linewidth=1.6)[0])
        labels.append("the formula (lines)")
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=10)
    title_figure(fig, title)
    return fig


PASS_STYLES = {"forward": dict(color=OTHER_COLORS[0], marker="o", linestyle="-"),
               "backward": dict(color=OTHER_COLORS[1], marker="s", linestyle="--")}


def chain_frame(result, *, title: str):
    """Both passes of one init on one width profile in one panel (an explorer's frame): the
    formula as lines, the average over the chains as markers and the middle 80 % of single
    chains as a band, forward relative to the input and backward relative to the output
    (``result``: :class:`helpers.measure.moments.ChainMoments`)."""
    layers = np.arange(len(result.widths))
    fig, ax = new_figure(width=6.6, height=4.6)
    names = {"forward": "forward, E[h_l²] / E[h_0²]", "backward": "backward, E[(∂L/∂h_l)²] / E[(∂L/∂h_L)²]"}
    with house_style():
        for side, style in PASS_STYLES.items():
            single = result.forward if side == "forward" else result.backward
            mean = result.mean_forward if side == "forward" else result.mean_backward
            predicted = result.predicted_forward if side == "forward" else result.predicted_backward
            low, high = np.quantile(single, [0.1, 0.9], axis=0)
            ax.fill_between(layers, low, high, color=style["color"], alpha=0.15, linewidth=0)
            ax.plot(layers, predicted, color=style["color"], linestyle=style["linestyle"], linewidth=1.6,
                    label=f"{names[side]}: formula")
            ax.plot(layers, mean, color=style["color"], marker=style["marker"], linestyle="none",
                    markersize=4, markerfacecolor="none", markeredgewidth=1.1,
                    label=f"{side}: average of {len(single)} chains")
        ax.fill_between([], [], [], color="0.5", alpha=0.2, linewidth=0, label="middle 80 % of single chains")
        ax.set_yscale("log")
        _readable_log_ticks(ax)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1, fontsize=10)
    finish(ax, title=title, xlabel="layer l (0 = the input)", ylabel="second moment, relative", legend=False)
    return fig


def chain_spread(results: dict, *, title: str, side: str = "forward", shown: int = 16):
    """One panel per init of ``results``: the ``side`` second moment of the first ``shown``
    single chains (thin lines; fewer lines keep the image small), the average of all chains
    (markers) and the formula (thick line), against the layer, log scale."""
    results = _check_results(results)
    if side not in SIDES:
        raise ValueError(f"side must be one of {list(SIDES)}, got {side!r}")
    fig, axes = new_figure(ncols=len(results), width=7.0, height=3.9, sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (init, r) in zip(axes, results.items()):
        style = INIT_STYLES[init]
        single = r.forward if side == "forward" else r.backward
        mean = r.mean_forward if side == "forward" else r.mean_backward
        predicted = r.predicted_forward if side == "forward" else r.predicted_backward
        layers = np.arange(single.shape[1])
        with house_style():
            for chain in single[:shown]:
                ax.plot(layers, chain, color=style["color"], alpha=0.25, linewidth=0.8)
            ax.plot(layers, predicted, color="0.15", linewidth=2.0, label="the formula")
            ax.plot(layers[::5], mean[::5], color=style["color"], marker=style["marker"], linestyle="none",
                    markersize=6, markeredgecolor="0.15", label=f"average of {len(single)} chains")
            ax.plot([], [], color=style["color"], alpha=0.5, linewidth=0.8,
                    label=f"{min(shown, len(single))} single chains")
            ax.set_yscale("log")
        finish(ax, title=INIT_LABELS[init], xlabel="layer l (0 = the input)", ylabel=SIDES[side][1], legend=False)
    for ax in axes[1:]:
        ax.set_ylabel("")
    with house_style():
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=10)
    title_figure(fig, title)
    return fig


def _power_ticks(ax, values, *, inverse: bool = False) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(values)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(lambda v, _: f"1/{1 / v:g}" if inverse and v < 1 else f"{v:g}")


def depth_gradients(result, *, title: str):
    """The RMS gradient per block parameter against the number of blocks ``N`` (log-log), for the
    plain nets (orange) and their residual twins with ``eps = 1/sqrt(N)`` (green): each draw a
    dot, the geometric mean a line, and dotted guides ``∝ N^0`` and ``∝ N^(-1/2)``
    (``result``: :class:`helpers.experiments.moments.DepthGradients`)."""
    blocks = np.asarray(result.blocks, dtype=float)
    fig, ax = new_figure(width=6.6, height=4.2)
    with house_style():
        for kind, values, typical in (("plain", result.plain, result.typical_plain),
                                      ("residual", result.residual, result.typical_residual)):
            color = COLORS[kind]
            for column in values.T:
                ax.plot(blocks, column, color=color, marker=".", linestyle="none", alpha=0.45, markersize=6)
            label = ("plain: y = f(x)" if kind == "plain" else "residual: y = x + f(x)/√N")
            ax.plot(blocks, typical, color=color, marker="o", label=label)
        ax.plot(blocks, result.typical_plain[0] * np.ones_like(blocks), color=COLORS["plain"], linestyle=":",
                linewidth=1.2, label="∝ N⁰ (flat)")
        ax.plot(blocks, result.typical_residual[0] * (blocks / blocks[0]) ** -0.5, color=COLORS["residual"],
                linestyle=":", linewidth=1.2, label="∝ 1/√N")
        ax.set_yscale("log")
        _readable_log_ticks(ax)
        _power_ticks(ax, blocks)
    finish(ax, title=title, xlabel="blocks N (two weight layers each)",
           ylabel="RMS gradient per block parameter")
    return fig


def scale_gradients(result, *, fit_up_to: float, title: str):
    """The RMS gradient per block parameter against the branch scale ``eps`` (log-log), residual
    nets of one depth: each draw a dot, the geometric mean a marker (filled where it enters the
    fit, ``eps <= fit_up_to``, open beyond), and the fitted power law ``∝ eps^a`` over the
    filled ones (``result``: :class:`helpers.experiments.moments.ScaleGradients`)."""
    eps, typical = np.asarray(result.eps, dtype=float), result.typical
    fitted = eps <= fit_up_to
    slope, intercept = np.polyfit(np.log(eps[fitted]), np.log(typical[fitted]), 1)
    color = COLORS["residual"]
    fig, ax = new_figure(width=6.6, height=4.2)
    with house_style():
        for column in result.rms.T:
            ax.plot(eps, column, color=color, marker=".", linestyle="none", alpha=0.45, markersize=6)
        ax.plot(eps[fitted], typical[fitted], color=color, marker="o", linestyle="none",
                label=f"ε ≤ 1/{1 / fit_up_to:g} (ε²N ≤ {fit_up_to ** 2 * result.blocks:g}): fitted")
        ax.plot(eps[~fitted], typical[~fitted], color=color, marker="o", markerfacecolor="white",
                linestyle="none", label="larger ε: the stream itself grows")
        ax.plot(eps, np.exp(intercept) * eps ** slope, color="0.3", linestyle=":", linewidth=1.4,
                label=f"fit: ∝ ε^{slope:.2f}")
        ax.set_yscale("log")
        _readable_log_ticks(ax)
        _power_ticks(ax, eps, inverse=True)
    finish(ax, title=title, xlabel=f"branch scale ε ({result.blocks} blocks)",
           ylabel="RMS gradient per block parameter")
    return fig
