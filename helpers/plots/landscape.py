"""Loss-landscape figures: 1-D slices and 2-D contour maps (Li et al. 2018)."""

from __future__ import annotations

import numpy as np

from .style import COLORS, finish, house_style, new_figure


def loss_slices(alphas, slices: dict, *, title: str):
    """Training loss along one filter-normalised direction, one line per net (log scale).

    ``slices`` maps a label ("plain-20", "residual-20", ...) to losses at ``alphas``.
    """
    fig, ax = new_figure(width=7.0, height=3.6)
    for label, losses in slices.items():
        kind = next((k for k in COLORS if label.startswith(k)), None)
        with house_style():
            ax.semilogy(alphas, losses, color=COLORS.get(kind), label=label, marker=".", markersize=3)
    finish(ax, title=title, xlabel="step a along the direction (1 = each unit's own weight norm)",
           ylabel="training loss, cross-entropy (log)")
    return fig


def loss_surfaces(alphas, surfaces: dict, *, title: str, levels=None):
    """Contour maps of the training loss on a 2-D slice, one panel per net, shared levels."""
    fig, axes = new_figure(ncols=len(surfaces), width=3.6 * len(surfaces), height=3.4)
    axes = np.atleast_1d(axes)
    if levels is None:
        levels = np.geomspace(0.01, 100, 13)
    for ax, (label, surface) in zip(axes, surfaces.items()):
        with house_style():
            grid = np.clip(np.asarray(surface, dtype=float), levels[0], levels[-1])
            cs = ax.contour(alphas, alphas, grid, levels=levels, cmap="viridis", linewidths=1)
            ax.plot([0], [0], marker="*", color="k", markersize=8)
            ax.set_aspect("equal")
            ax.grid(False)
        finish(ax, title=label, xlabel="step a along direction 1", ylabel="step b along direction 2",
               legend=False)
    cbar = fig.colorbar(cs, ax=list(axes), shrink=0.9)
    cbar.set_label("training loss (contours, log-spaced)")
    fig.suptitle(title, fontweight="bold")
    return fig
