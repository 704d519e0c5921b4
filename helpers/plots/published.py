"""Published ImageNet top-5 errors as a bar chart, each bar saying what kind of result it is."""

from __future__ import annotations

from matplotlib.patches import Patch

from .style import COLORS, finish, house_style, new_figure

PLAIN_GREY = "0.6"
"""Bars of non-residual nets (the course's orange is for its own plain twins, not for these)."""


def _label(entry) -> str:
    depth = f", {entry.layers} layers" if entry.layers else ""
    return f"{entry.year} {entry.name}{depth}\n({entry.kind})"


def imagenet_history(entries, *, title: str):
    """Horizontal bars of top-5 error (%), one per :class:`helpers.published.Entry`, first entry on top.

    Residual nets are green, others grey. A single model is hatched, so that it is not
    read as one more step of the ensembles' record; each label says whether the entry
    is an ensemble or a single model and on which split it was measured.
    """
    entries = list(entries)
    if not entries:
        raise ValueError("entries must not be empty")
    fig, ax = new_figure(width=7.0, height=0.5 * len(entries) + 1.4)
    labels = [_label(e) for e in entries][::-1]
    values = [e.top5_error for e in entries][::-1]
    colors = [COLORS["residual"] if e.residual else PLAIN_GREY for e in entries][::-1]
    hatches = ["" if e.ensemble else "///" for e in entries][::-1]
    with house_style():
        bars = ax.barh(labels, values, color=colors, hatch=hatches, edgecolor="white", linewidth=0)
        for bar, hatch in zip(bars, hatches):
            if hatch:
                bar.set_edgecolor("0.15")
        ax.bar_label(bars, fmt="%.2f %%", padding=3, fontsize=10)
        ax.set_xlim(0, max(values) * 1.2)
        ax.grid(axis="y", visible=False)
        ax.tick_params(axis="y", labelsize=10)
        handles = [Patch(color=PLAIN_GREY, label="non-residual nets"),
                   Patch(color=COLORS["residual"], label="residual nets")]
        if any(hatches):
            handles.append(Patch(facecolor="white", edgecolor="0.15", hatch="///",
                                 label="a single net (validation set)"))
        ax.legend(handles=handles, loc="lower right", fontsize=10)
    finish(ax, title=title, xlabel="ImageNet top-5 error (%)", ylabel="entry (kind of result)", legend=False)
    return fig
