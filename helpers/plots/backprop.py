"""Back-propagation by hand: a weight gradient as the outer product of an error and an input."""

from __future__ import annotations

import numpy as np

from .style import finish, house_style, new_figure, title_figure


def outer_product(delta, activation, *, title: str, row_name: str = "δ₂ (error of output unit)",
                  column_name: str = "a₁ (activation of hidden unit)"):
    """Heat map of one example's weight gradient ``dW = delta activation^T``, with the two
    vectors it is made of drawn along its sides as bars: row ``i`` of the map is
    ``delta[i]`` times the activations, column ``j`` is ``activation[j]`` times the errors."""
    delta, activation = np.asarray(delta, dtype=float), np.asarray(activation, dtype=float)
    if delta.ndim != 1 or activation.ndim != 1:
        raise ValueError(f"delta and activation must be 1-D, got shapes {delta.shape} and {activation.shape}")
    grad = np.outer(delta, activation)
    limit = float(np.abs(grad).max()) or 1.0
    fig, axes = new_figure(ncols=2, nrows=2, width=7.0, height=4.6,
                           gridspec_kw={"width_ratios": [1, 5], "height_ratios": [1.3, 3]})
    corner, top, left, heat = axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]
    corner.set_visible(False)
    rows, cols = np.arange(len(delta)), np.arange(len(activation))
    with house_style():
        image = heat.imshow(grad, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        fig.colorbar(image, ax=heat, label="∂L/∂W₂ entry")
        top.bar(cols, activation, color="0.45", width=0.8)
        left.barh(rows, delta, color="#7570b3", height=0.8)
    top.set_xlim(-0.5, len(activation) - 0.5)
    left.set_ylim(len(delta) - 0.5, -0.5)
    heat.grid(False)
    with house_style():
        top.set_ylabel("a₁")
        top.set_xticks([])
        left.set_xlabel("δ₂")
        # three ticks: the narrow panel has room for no more
        reach = float(np.max(np.abs(delta))) or 1.0
        left.set_xlim(-1.1 * reach, 1.1 * reach)
        left.set_xticks([-reach, 0.0, reach], [f"\u2212{reach:.2g}", "0", f"{reach:.2g}"])
        left.set_yticks([])
    finish(heat, title="the gradient: one row per output, one column per hidden unit",
           xlabel=f"column j: {column_name}", ylabel=f"row i: {row_name}", legend=False)
    title_figure(fig, title)
    return fig
