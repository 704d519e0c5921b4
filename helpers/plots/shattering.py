"""Shattered gradients: the gradient against the input, its neighbour correlation by depth, and
what two mini-batches' gradients agree on."""

from __future__ import annotations

import numpy as np

from .._checks import real_number
from .style import COLORS, OTHER_COLORS, band, color_for, finish, house_style, new_figure, title_figure


def gradient_curves(curves: dict, *, title: str, correlations: dict | None = None):
    """One panel per entry of ``curves`` (label -> gradient values on the grid), two a row: the
    gradient ``dy/dx`` against the input ``x`` on an even grid over [-2, 2], or, for a label
    that names a noise, the values against their index. ``correlations`` (label -> number) adds each
    curve's neighbour correlation to its panel title."""
    ncols = 2
    nrows = -(-len(curves) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=7.0, height=0.6 + 2.3 * nrows, squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(curves):]:
        ax.set_visible(False)
    for i, (ax, (label, g)) in enumerate(zip(axes, curves.items())):
        g = np.asarray(g, dtype=float)
        noise = "noise" in label
        xs = np.arange(len(g)) if noise else np.linspace(-2.0, 2.0, len(g))
        with house_style():
            ax.plot(xs, g, color="0.35" if noise else color_for(label, i), linewidth=1.0)
        name = label if correlations is None else f"{label}\nneighbour correlation {correlations[label]:.2f}"
        finish(ax, title=name, xlabel="sample index" if noise else "input x",
               ylabel="value" if noise else "dy/dx", legend=False)
    title_figure(fig, title)
    return fig


def correlation_by_depth(depths, correlations: dict, *, title: str, references: dict | None = None):
    """Neighbour correlation of the gradient against depth (log axis): one line per
    ``(setup, kind)`` of ``correlations`` (mean over nets, band min to max); ``references``
    (label -> value) adds dotted horizontal lines, e.g. white and brown noise."""
    fig, ax = new_figure(width=7.0, height=4.2)
    depths = np.asarray(depths)
    styles = {}
    for (setup, kind), runs in correlations.items():
        style = styles.setdefault(setup, ("-", "--", ":")[len(styles) % 3])
        band(ax, depths, np.asarray(runs).T, label=f"{kind}, {setup}", color=COLORS[kind], linestyle=style,
             marker="o")
    for i, (label, value) in enumerate((references or {}).items()):
        with house_style():
            ax.axhline(value, color=OTHER_COLORS[i % len(OTHER_COLORS)], linestyle=":", linewidth=1.2,
                       label=f"{label} ({value:.2f})")
    lowest = min(float(np.min(runs)) for runs in correlations.values())
    with house_style():
        ax.set_xscale("log")
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.minorticks_off()
        ax.set_ylim(min(-0.2, lowest - 0.05), 1.08)
    finish(ax, title=title, xlabel="number of hidden layers (log scale)",
           ylabel="correlation of dy/dx at neighbouring inputs", legend=False)
    with house_style():
        # the lower left holds the deep plain nets' points near 0; the middle left is empty
        ax.legend(fontsize=10, loc="center left", bbox_to_anchor=(0.0, 0.42))
    return fig


def minibatch_agreement(depths, cosines: dict, first_steps: dict, *, title: str):
    """Left/top: the cosine between two mini-batches' gradients against depth, per kind (mean
    over pairs, band min to max). Bottom: the training loss over the first steps at each
    kind's best learning rate (the lowest final loss), with the others faint."""
    fig, (top, bottom) = new_figure(nrows=2, width=7.0, height=7.2)
    depths = np.asarray(depths)
    for kind, runs in cosines.items():
        band(top, depths, np.asarray(runs).T, label=kind, color=COLORS[kind], marker="o")
    with house_style():
        top.axhline(0.0, color="0.3", linestyle=":", linewidth=1)
        top.set_xticks(depths, [str(d) for d in depths])
    finish(top, title="at initialisation", xlabel="number of hidden layers",
           ylabel="cosine of two mini-batch gradients")
    for kind, by_rate in first_steps.items():
        best = min(by_rate, key=lambda lr: by_rate[lr][-1])
        for lr, losses in by_rate.items():
            with house_style():
                bottom.plot(np.arange(len(losses)), losses, color=COLORS[kind],
                            alpha=1.0 if lr == best else 0.25, linewidth=2.0 if lr == best else 1.0,
                            label=f"{kind}, best rate {best:g}" if lr == best else None)
    finish(bottom, title="the first steps of training (faint: the other learning rates)",
           xlabel="SGD step", ylabel="training loss (cross-entropy)")
    title_figure(fig, title)
    return fig


def first_steps_at_rate(first_steps: dict, learning_rate: float, *, title: str):
    """The training loss of each kind over the first steps at one learning rate of
    ``first_steps`` (``{kind: {lr: losses}}``, as :func:`helpers.experiments.shattering.first_steps`
    returns it)."""
    rates = sorted({lr for by_rate in first_steps.values() for lr in by_rate})
    if learning_rate not in rates:
        raise ValueError(f"learning_rate must be one of the rates measured, {rates}; got {learning_rate!r}")
    fig, ax = new_figure(width=7.0, height=3.8)
    for kind, by_rate in first_steps.items():
        losses = by_rate[learning_rate]
        with house_style():
            ax.plot(np.arange(len(losses)), losses, color=COLORS[kind], linewidth=2.0, label=kind)
    with house_style():
        ax.set_ylim(bottom=0.0)
    finish(ax, title=title, xlabel="SGD step", ylabel="training loss (cross-entropy)")
    return fig


def _check_title(title) -> None:
    if not isinstance(title, str) or not title.strip():
        raise ValueError("title must be a non-empty string that states the finding")


def phase_diagram(weight_variances, scan: dict, *, critical: float, layers: int, title: str,
                  placed: dict | None = None, edge: float | None = None):
    """Order and chaos in a plain tanh chain of ``layers`` layers, against the weight variance
    ``sigma_w^2`` (:func:`helpers.experiments.order_chaos.phase_scan`). Left: the neighbour
    correlation of ``dy/dx``; right: the cosine between neighbouring inputs' last-layer
    pre-activations (mean over chains, band min to max). A dashed line marks the mean-field edge
    of chaos, ``chi_1 = 1`` at ``critical``; ``placed`` (label -> correlation) adds dotted
    horizontal lines on the left panel, e.g. the ReLU chains with BatchNorm of the same depth;
    ``edge`` (a ``sigma_w^2``) marks where the chains' mean correlation falls through 0.5
    (:func:`helpers.experiments.order_chaos.measured_edge`) with a dash-dotted line on the left."""
    _check_title(title)
    edge = None if edge is None else real_number("edge", edge, low=0.0)
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=4.4)
    variances = np.asarray(weight_variances, dtype=float)
    color = OTHER_COLORS[0]
    band(left, variances, np.asarray(scan["gradient"]).T, label=f"tanh, {layers} layers, no norm",
         color=color, marker="o")
    band(right, variances, np.asarray(scan["cosine"]).T, label=f"tanh, {layers} layers, no norm",
         color=color, marker="o")
    with house_style():
        for i, (label, value) in enumerate((placed or {}).items()):
            left.axhline(value, color=color_for(label, i + 1), linestyle=":", linewidth=1.4,
                         label=f"{label} ({value:.2f})")
        for ax in (left, right):
            ax.axvline(critical, color="0.3", linestyle="--", linewidth=1, label="edge of chaos (χ₁ = 1)")
            ax.axvspan(variances.min(), critical, color="0.9", zorder=0)
        if edge is not None:
            left.axvline(edge, color=color, linestyle="-.", linewidth=1.2,
                         label=f"correlation 0.5 at {layers} layers")
        left.set_ylim(-0.25, 1.08)
    finish(left, title="the gradient, backward", xlabel="weight variance σ_w² (× 1/width)",
           ylabel="correlation of dy/dx", legend=False)
    finish(right, title="the signal, forward", xlabel="weight variance σ_w² (× 1/width)",
           ylabel="cosine of h_L at neighbours", legend=False)
    with house_style():
        # the legend below the panels, clear of the lines
        fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=10)
        right.text(0.03, 0.06, "grey: ordered phase", transform=right.transAxes, fontsize=10, color="0.3")
    title_figure(fig, title)
    return fig


def agreement_heat_map(depths, by_layer: dict, *, title: str):
    """Two mini-batches' agreement layer by layer: one panel per kind, one row per depth, one
    cell per weight layer (0 = the stem, then the hidden layers, last = the head), coloured by
    the cosine of the two gradients (mean over pairs; blank beyond a net's last layer), from
    :func:`helpers.experiments.shattering.agreement_by_layer`."""
    _check_title(title)
    depths = list(depths)
    kinds = list(by_layer)
    if not depths or not kinds:
        raise ValueError("depths and by_layer must not be empty")
    if any(len(by_layer[k]) != len(depths) for k in kinds):
        raise ValueError(f"by_layer must hold one array per depth for each kind, {len(depths)} depths")
    columns = max(len(layers) for k in kinds for layers in by_layer[k])
    # the colour scale reaches the largest cosine measured (at least 0.7, so that small
    # cosines stay dark), never saturating
    vmax = max(0.7, float(np.nanmax([np.max(layers) for k in kinds for layers in by_layer[k]])))
    fig, axes = new_figure(nrows=len(kinds), width=7.0, height=1.6 + 0.45 * len(depths) * len(kinds),
                           sharex=True)
    axes = np.atleast_1d(axes)
    with house_style():
        for ax, kind in zip(axes, kinds):
            grid = np.full((len(depths), columns), np.nan)
            for row, layers in enumerate(by_layer[kind]):
                grid[row, :len(layers)] = layers
            image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=-0.1, vmax=vmax, interpolation="nearest")
            ax.set_yticks(range(len(depths)), [str(d) for d in depths])
            ax.set_ylabel("hidden layers")
            ax.set_title(f"{kind} nets", loc="left")
            ax.grid(False)
            fig.colorbar(image, ax=ax, label="cosine", shrink=0.9)
        axes[-1].set_xlabel("weight layer (0 = first layer, the stem; last = output layer)")
    title_figure(fig, title)
    return fig
