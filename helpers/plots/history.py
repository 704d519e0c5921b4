"""The ImageNet top-5 error of famous winners, as a bar chart with its sources."""

from __future__ import annotations

from .style import COLORS, finish, house_style, new_figure


def imagenet_history(entries, *, title: str):
    """Horizontal bars of top-5 test error (%), one per :class:`helpers.history.Entry`."""
    fig, ax = new_figure(width=7.0, height=2.8)
    labels = [f"{e.year} {e.name} ({e.layers} layers)" for e in entries]
    values = [e.top5_error for e in entries]
    colors = [COLORS["residual"] if e.residual else "0.6" for e in entries]
    with house_style():
        bars = ax.barh(labels[::-1], values[::-1], color=colors[::-1])
        ax.bar_label(bars, fmt="%.2f %%", padding=3, fontsize=9)
        ax.set_xlim(0, max(values) * 1.2)
        ax.grid(axis="y", visible=False)
    finish(ax, title=title, xlabel="ImageNet top-5 test error (%)", ylabel="winning entry", legend=False)
    return fig
