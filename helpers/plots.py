"""One house style for every figure of the course.

Every figure goes through :func:`finish`, which insists on a title (state the finding,
not the topic) and labelled axes with units, so a reader understands it at a glance.
Plain nets are always orange, residual nets always green.
"""

from __future__ import annotations

import io
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np

COLORS = {"plain": "#d95f02", "residual": "#1b9e77"}
"""Colour of each kind of net, used by every figure."""

DEPTH_STYLES = ("-", "--", ":", "-.")

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
    """Context in which matplotlib uses the course's style."""
    with plt.style.context(STYLE):
        yield


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


def band(ax, x, runs, *, label: str, color: str, linestyle: str = "-"):
    """Plot the mean of ``runs`` (rows = seeds) as a line and their min-max spread as a band."""
    runs = np.atleast_2d(np.asarray(runs, dtype=float))
    x = np.asarray(x)
    if runs.shape[1] != x.shape[0]:
        raise ValueError(f"runs must have {x.shape[0]} columns to match x, got shape {runs.shape}")
    with house_style():
        ax.plot(x, runs.mean(axis=0), color=color, linestyle=linestyle, label=label)
        if runs.shape[0] > 1:
            ax.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=color, alpha=0.18, linewidth=0)
    return ax


def to_png(fig) -> bytes:
    """Render ``fig`` to PNG bytes and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def training_curves(result, *, title: str):
    """Training error (%) against epoch, one panel per kind of net, one line per depth.

    ``result`` is a :class:`helpers.experiments.degradation.DegradationResult`; lines are the mean over
    seeds, bands their min-max spread (the analogue of He et al. 2015, Fig. 6).
    """
    fig, axes = new_figure(ncols=len(result.kinds), width=8.0, height=3.4, sharey=True)
    axes = np.atleast_1d(axes)
    epochs = np.arange(1, result.epochs + 1)
    for ax, kind in zip(axes, result.kinds):
        for depth, style in zip(result.depths, DEPTH_STYLES * 4):
            band(ax, epochs, 100 * result.curves[kind, depth], label=f"{kind}-{depth}",
                 color=COLORS[kind], linestyle=style)
        finish(ax, title=f"{kind} nets", xlabel="epoch", ylabel="training error (%)")
    fig.suptitle(title, fontweight="bold")
    return fig


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
    for (label, profile), style in zip(profiles.items(), DEPTH_STYLES * 8):
        kind = next((k for k in COLORS if label.startswith(k)), None)
        values = getattr(profile, which)
        with house_style():
            ax.semilogy(np.arange(1, len(values) + 1), values, marker=".", label=label,
                        color=COLORS.get(kind), linestyle=style)
    symbol = "||dL/dW||" if which == "weight" else "||dL/dh||"
    finish(ax, title=title, xlabel="layer (1 = next to the input)", ylabel=f"gradient norm {symbol} (log)")
    return fig if fig is not None else ax.figure
