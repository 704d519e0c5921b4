"""Figures of the ensemble view (Veit et al. 2016): path lengths and lesion studies."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from .style import COLORS, band, finish, house_style, new_figure


def path_lengths(counts_enumerated, counts_analytic, *, title: str):
    """Number of paths of each length: bars counted by enumeration, dots from ``C(n, k)``."""
    fig, ax = new_figure(width=7.0, height=3.4)
    k = np.arange(len(counts_analytic))
    with house_style():
        ax.bar(k, counts_enumerated, color=COLORS["residual"], alpha=0.7, label="counted (all 2^n paths listed)")
        ax.plot(k, counts_analytic, "ko", markersize=4, label="binomial C(n, k)")
    finish(ax, title=title, xlabel="path length k (blocks whose branch the path goes through)",
           ylabel="number of paths")
    return fig


def lesion_by_block(errors: dict, *, intact: dict, title: str):
    """Test error (%) after deleting each single block, one line per net; dashed: intact."""
    fig, ax = new_figure(width=7.0, height=3.4)
    for kind, errs in errors.items():
        errs = np.atleast_2d(errs)
        band(ax, np.arange(1, errs.shape[1] + 1), 100 * errs, label=f"{kind}: one block deleted",
             color=COLORS[kind])
        with house_style():
            ax.axhline(100 * intact[kind], color=COLORS[kind], linestyle="--", linewidth=1,
                       label=f"{kind}: intact")
            ax.axhline(90, color="0.5", linestyle=":", linewidth=1)
    ax.set_ylim(0, 100)
    ax.annotate("chance (90 %)", (1, 90), textcoords="offset points", xytext=(0, 3), fontsize=10, color="0.3")
    finish(ax, title=title, xlabel="deleted block (1 = next to the input)", ylabel="test error (%)")
    return fig


def lesion_by_count(ks, errors: dict, *, title: str):
    """Test error (%) against the number ``k`` of blocks deleted at random (band: spread over draws)."""
    fig, ax = new_figure(width=7.0, height=3.4)
    for kind, errs in errors.items():
        band(ax, ks, 100 * np.asarray(errs).T, label=kind, color=COLORS[kind])
    with house_style():
        ax.axhline(90, color="0.5", linestyle=":", linewidth=1)
    ax.set_ylim(0, 100)
    finish(ax, title=title, xlabel="number of blocks deleted at test time", ylabel="test error (%)")
    return fig


def lesion_frame(n_blocks: int, deleted, errors: dict, intact: dict):
    """One frame of the lesion explorer: the blocks (deleted ones crossed out) and the errors.

    ``errors`` and ``intact`` map a kind of net to its test error (a fraction) with and
    without the deletion.
    """
    fig, (top, bottom) = new_figure(nrows=2, width=7.0, height=3.6, height_ratios=[1, 2.4])
    deleted = set(deleted)
    kinds = list(errors)
    y = np.arange(len(kinds))
    with house_style():
        for i in range(n_blocks):
            gone = i in deleted
            top.add_patch(Rectangle((i + 0.1, 0.1), 0.8, 0.8, facecolor="white" if gone else "0.85",
                                    edgecolor="0.3"))
            top.text(i + 0.5, 0.5, "x" if gone else str(i + 1), ha="center", va="center",
                     color="#b2182b" if gone else "0.2", fontweight="bold")
        top.set_xlim(0, n_blocks)
        top.set_ylim(0, 1)
        top.axis("off")
        top.set_title(f"Blocks of the net: {len(deleted)} of {n_blocks} deleted (x) at test time")
        bottom.barh(y - 0.2, [100 * intact[k] for k in kinds], height=0.4, color="0.75", label="intact")
        bars = bottom.barh(y + 0.2, [100 * errors[k] for k in kinds], height=0.4,
                           color=[COLORS[k] for k in kinds], label="with the deletion")
        bottom.bar_label(bars, fmt="%.1f %%", padding=3, fontsize=10)
        bottom.set_yticks(y, kinds)
        bottom.set_xlim(0, 105)
        bottom.invert_yaxis()
        bottom.grid(axis="y", visible=False)
    finish(bottom, title="Test error with and without the deletion", xlabel="test error (%)",
           ylabel="net")
    return fig
