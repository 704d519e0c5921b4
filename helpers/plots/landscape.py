"""Loss-landscape figures: 1-D slices and 2-D contour maps (Li et al. 2018)."""

from __future__ import annotations

import numpy as np

from .style import color_for, finish, house_style, new_figure, title_figure

LEVELS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""The contour levels of the 2-D maps, as rises of the training loss above the trained net's own loss."""


def loss_slices(alphas, slices: dict, *, title: str, top: float = 4.0):
    """Training loss along one filter-normalised direction, one line per net (linear scale,
    cut at ``top`` as in Li et al.'s figures). ``slices`` maps a label ("plain-20", ...) to
    losses at ``alphas``."""
    fig, ax = new_figure(width=7.0, height=3.6)
    for i, (label, losses) in enumerate(slices.items()):
        with house_style():
            ax.plot(alphas, losses, color=color_for(label, i), label=label, marker=".", markersize=3)
    ax.set_ylim(0, top)
    finish(ax, title=title, xlabel="step a along the direction (1 = each unit's own weight norm)",
           ylabel="training loss, cross-entropy")
    return fig


def loss_surfaces(alphas, surfaces: dict, *, title: str, basin: float = 0.5, levels=LEVELS):
    """Contour maps of the training loss on a 2-D slice, one panel per net.

    Contours are drawn at ``levels`` *above the loss at the centre* (the trained
    parameters), the same for every panel; the thick contour is ``basin``.
    """
    fig, axes = new_figure(ncols=len(surfaces), width=7.0, height=0.9 + 5.6 / len(surfaces))
    axes = np.atleast_1d(axes)
    for ax, (label, surface) in zip(axes, surfaces.items()):
        surface = np.asarray(surface, dtype=float)
        rise = surface - surface[len(alphas) // 2, len(alphas) // 2]
        with house_style():
            cs = ax.contour(alphas, alphas, rise, levels=list(levels), cmap="viridis", linewidths=1)
            ax.contour(alphas, alphas, rise, levels=[basin], colors="k", linewidths=2.2)
            ax.plot([0], [0], marker="*", color="k", markersize=8)
            ax.set_aspect("equal")
            ax.grid(False)
        finish(ax, title=label, xlabel="step a along direction 1", ylabel="step b along direction 2",
               legend=False)
    cbar = fig.colorbar(cs, ax=list(axes), shrink=0.9)
    cbar.set_label("loss above the trained net's (contours)")
    title_figure(fig, title)
    return fig
