"""Gradient profiles and Jacobian spectra: how signals and gradients pass through a stack."""

from __future__ import annotations

import numpy as np

from .style import DEPTH_STYLES, color_for, finish, house_style, new_figure, title_figure


def gradient_profiles(profiles: dict, *, title: str, ax=None, which: str = "weight"):
    """Per-layer gradient norm (log scale) against layer index, one line per profile.

    ``profiles`` maps a label to a :class:`helpers.measure.gradients.GradientProfile`; a label that
    starts with "plain" or "residual" takes that kind's colour. ``which`` is ``"weight"``
    (``||dL/dW_l||``) or ``"output"`` (``||dL/dh_l||``).
    """
    if which not in ("weight", "output"):
        raise ValueError(f"which must be 'weight' or 'output', got {which!r}")
    fig = None
    if ax is None:
        fig, ax = new_figure()
    for i, ((label, profile), style) in enumerate(zip(profiles.items(), DEPTH_STYLES * 8)):
        values = getattr(profile, which)
        with house_style():
            ax.semilogy(np.arange(1, len(values) + 1), values, marker=".", label=label,
                        color=color_for(label, i), linestyle=style)
    symbol = "||dL/dW||" if which == "weight" else "||dL/dh||"
    finish(ax, title=title, xlabel="layer (1 = next to the input)", ylabel=f"gradient norm {symbol} (log)")
    return fig if fig is not None else ax.figure


def singular_value_histograms(spectra: dict, *, title: str, bins=None):
    """Histogram of Jacobian singular values, one panel per entry of ``spectra``.

    ``spectra`` maps a label (starting with "plain" or "residual", which sets the colour)
    to a 1-D array of singular values pooled over inputs. The dotted line marks 1: a
    singular value of 1 passes that direction through unchanged.
    """
    # At most two panels a row, so that each is legible in the page's column.
    ncols = min(2, len(spectra))
    nrows = -(-len(spectra) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=7.0, height=0.5 + 2.9 * nrows, sharey=True,
                           sharex=True, squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(spectra):]:
        ax.set_visible(False)
    top = max(float(np.max(v)) for v in spectra.values())
    bins = np.linspace(0, max(2.0, top * 1.02), 41) if bins is None else bins
    for i, (ax, (label, values)) in enumerate(zip(axes, spectra.items())):
        values = np.asarray(values, dtype=float)
        with house_style():
            ax.hist(values, bins=bins, color=color_for(label, i),
                    weights=np.full(values.shape, 100 / values.size))
            ax.axvline(1.0, color="0.3", linestyle=":", linewidth=1)
        finish(ax, title=label, xlabel="singular value of the Jacobian", ylabel="share of values (%)",
               legend=False)
        if i < len(spectra) - ncols:  # the panels share their axes: label the bottom row and left column
            ax.set_xlabel("")
        if i % ncols:
            ax.set_ylabel("")
    title_figure(fig, title)
    return fig


def norm_order_by_depth(profiles: dict, *, title: str, orders=("Post-LN", "Pre-LN")):
    """Post-LN vs Pre-LN at several depths, in two panels.

    ``profiles`` maps a depth ``N`` to ``{"Post-LN": profile, "Pre-LN": profile}``
    (:class:`helpers.measure.gradients.GradientProfile`). Left: each layer's weight
    gradient norm against its layer index, one line per order and depth (colour: order;
    line style: depth). Right: the last layer's gradient norm against ``N`` on log-log
    axes, with dotted guides from the shallowest depth at the slopes Xiong et al.'s
    Theorem 1 gives (Post-LN: independent of ``N``; Pre-LN: like ``1/sqrt(N)``).
    """
    depths = sorted(profiles)
    if len(depths) < 2:
        raise ValueError(f"profiles must hold at least two depths, got {depths}")
    fig, (left, right) = new_figure(nrows=2, width=7.0, height=8.2)
    slopes = {"Post-LN": 0.0, "Pre-LN": -0.5}
    for i, order in enumerate(orders):
        color = color_for(order, i)
        for n, style in zip(depths, DEPTH_STYLES * 8):
            values = profiles[n][order].weight
            with house_style():
                left.semilogy(np.arange(1, len(values) + 1), values, color=color, linestyle=style,
                              label=f"{order}, {n} layers")
        last = np.array([profiles[n][order].weight[-1] for n in depths])
        with house_style():
            right.loglog(depths, last, color=color, marker="o", label=f"{order}, measured")
            if order in slopes:
                guide = last[0] * (np.array(depths) / depths[0]) ** slopes[order]
                right.loglog(depths, guide, color=color, linestyle=":",
                             label=f"{order}, slope of Xiong et al.'s bound")
    with house_style():
        right.set_xticks(depths, [str(n) for n in depths])
        right.minorticks_off()
        left.legend(fontsize=10, ncols=len(orders), loc="upper left", bbox_to_anchor=(1.0, 1.0))
        right.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    finish(left, title=f"Each layer, at {len(depths)} depths", xlabel="layer (1 = next to the input)",
           ylabel="gradient norm ||dL/dW2|| (log)", legend=False)
    finish(right, title="The last layer, against depth", xlabel="number of layers N (log)",
           ylabel="last layer's ||dL/dW2|| (log)", legend=False)
    title_figure(fig, title)
    return fig
