"""One house style for every figure of the course.

Every figure goes through :func:`finish`, which insists on a title (state the finding,
not the topic) and labelled axes with units, so a reader understands it at a glance.
Plain nets are always orange, residual nets always green.
"""

from __future__ import annotations

import io
from contextlib import contextmanager

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

COLORS = {"plain": "#d95f02", "residual": "#1b9e77"}
"""Colour of each kind of net, used by every figure."""

OTHER_COLORS = ("#7570b3", "#e7298a", "#66a61e", "#e6ab02")
"""Colours for lines that are neither a plain nor a residual net (e.g. Post-LN vs Pre-LN)."""

DEPTH_STYLES = ("-", "--", ":", "-.")


def color_for(label: str, index: int) -> str:
    """The colour of a line labelled ``label``: the kind's colour if the label starts with
    "plain" or "residual", else the ``index``-th of :data:`OTHER_COLORS`."""
    kind = next((k for k in COLORS if label.startswith(k)), None)
    return COLORS[kind] if kind else OTHER_COLORS[index % len(OTHER_COLORS)]

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.figsize": (7.0, 3.6),
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
}


@contextmanager
def house_style():
    """Context in which matplotlib uses the course's style.

    ``plt.style.context`` restores *every* rc setting on exit, including the interactive
    flag that Jupyter's inline backend switches on when the first figure is made; keep
    that flag, or no later figure would be displayed.
    """
    with plt.style.context(STYLE):
        yield
        interactive = matplotlib.is_interactive()
    matplotlib.interactive(interactive)


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 7.0, height: float = 3.6, **kwargs):
    """A figure and its axes in the house style (``ncols`` x ``nrows`` panels)."""
    with house_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)
    return fig, axes


def finish(ax, *, title: str, xlabel: str, ylabel: str, legend: bool = True):
    """Title and label ``ax``; refuse an empty title or axis label."""
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty string: every figure says what it shows")
    with house_style():
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend()
    return ax


def band(ax, x, runs, *, label: str, color: str, linestyle: str = "-", marker: str | None = None):
    """Plot the mean of ``runs`` (rows = seeds) as a line and their min-max spread as a band."""
    runs = np.atleast_2d(np.asarray(runs, dtype=float))
    x = np.asarray(x)
    if runs.shape[1] != x.shape[0]:
        raise ValueError(f"runs must have {x.shape[0]} columns to match x, got shape {runs.shape}")
    with house_style():
        ax.plot(x, runs.mean(axis=0), color=color, linestyle=linestyle, marker=marker, label=label)
        if runs.shape[0] > 1:
            ax.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=color, alpha=0.18, linewidth=0)
    return ax


def to_png(fig) -> bytes:
    """Render ``fig`` to PNG bytes and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()
