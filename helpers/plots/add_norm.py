"""Chapter 3's figures: the residual as a correction, the stream's variance by depth, a
normalised token against its batch mates, and the cost of add vs concat."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

STREAM_NAMES = {"none": "no normalisation: x + F(x)", "pre": "Pre-LN: x + F(LN(x))", "post": "Post-LN: LN(x + F(x))"}
STREAM_COLORS = {"none": COLORS["plain"], "pre": OTHER_COLORS[0], "post": COLORS["residual"]}


def _vector(v, *, sign: bool = False) -> str:
    """``[0.50, −0.20]``, with true minus signs (and ``+`` on positive entries if ``sign``)."""
    return "[" + ", ".join(format(float(c), "+.2f" if sign else ".2f").replace("-", "\u2212") for c in v) + "]"


def correction_picture(x, f, *, axis_names=("finance", "river bank"), title: str | None = None, ax=None):
    """The 2-D picture of ``H = x + F(x)``: the input ``x`` and the output ``H`` as arrows from
    the origin, the correction ``F(x)`` as the arrow from the tip of ``x`` to the tip of ``H``.
    ``axis_names`` name the two features. The default title gives ``||F|| / ||x||`` and says
    whether the correction is smaller than the input (a nudge) or larger (it outweighs it)."""
    x, f = np.asarray(x, dtype=float), np.asarray(f, dtype=float)
    if x.shape != (2,) or f.shape != (2,):
        raise ValueError(f"x and f must be 2-D vectors, got shapes {x.shape} and {f.shape}")
    h = x + f
    fig = None
    if ax is None:
        fig, ax = new_figure(width=7.0, height=5.2)
    arrow = dict(length_includes_head=True, head_width=0.035, linewidth=2.2)
    with house_style():
        ax.arrow(0, 0, *x, color="0.35", **arrow)
        ax.arrow(*x, *f, color=OTHER_COLORS[0], **arrow)
        ax.arrow(0, 0, *h, color=COLORS["residual"], **arrow)
        for point, text, color, below in ((x, f"x = {_vector(x)}", "0.35", False),
                                          (x + f / 2, f"F(x) = {_vector(f, sign=True)}", OTHER_COLORS[0], False),
                                          (h, f"H = x + F(x) = {_vector(h)}", COLORS["residual"], True)):
            ax.annotate(text, point, xytext=(-8, -16) if below else (6, 6), textcoords="offset points", color=color,
                        ha="right" if below else "left")
        points = np.stack([np.zeros(2), x, h])
        low, high = min(points.min(), 0.0) - 0.15, max(points.max(), 1.0) + 0.4
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal")
        ax.axhline(0, color="0.8", linewidth=0.8)
        ax.axvline(0, color="0.8", linewidth=0.8)
    ratio = float(np.linalg.norm(f) / max(np.linalg.norm(x), 1e-12))
    finding = ("F(x) nudges x; it does not replace it" if ratio < 1 else
               "F(x) outweighs x: the sum is mostly the branch")
    finish(ax, title=title or f"{finding} (‖F‖ / ‖x‖ = {ratio:.2f})",
           xlabel=f"feature 1: {axis_names[0]}", ylabel=f"feature 2: {axis_names[1]}", legend=False)
    return fig if fig is not None else ax.figure


def stream_variance(records: dict, *, title: str):
    """The residual stream's variance against the layer, log scale, one line per
    normalisation (``records`` maps ``"none"``, ``"pre"``, ``"post"`` to a
    :class:`helpers.measure.streams.StreamRecord`), with ``Var(x) + Var(F)`` (circles): the
    variance the sum would have if the two terms were uncorrelated."""
    fig, ax = new_figure(width=7.0, height=4.4)
    for norm, record in records.items():
        layers = np.arange(len(record.stream_var))
        with house_style():
            ax.plot(layers, record.stream_var, color=STREAM_COLORS[norm], label=STREAM_NAMES[norm])
            if norm != "post":
                ax.plot(layers[1:], record.predicted_var, color=STREAM_COLORS[norm], linestyle="none",
                        marker="o", markerfacecolor="none", markersize=5)
    with house_style():
        ax.plot([], [], color="0.3", linestyle="none", marker="o", markerfacecolor="none",
                label="Var(x) + Var(F), the prediction")
        ax.set_yscale("log")
    finish(ax, title=title, xlabel="layer (0 = the input)", ylabel="variance of the stream")
    return fig


def batch_mate_outputs(outputs: dict, *, title: str, feature: int = 0):
    """One token sequence's normalised output (feature ``feature``, against the position)
    in several batches: ``outputs`` maps a normalisation's name to a list of
    ``(batch description, output (length, features))``. One panel per normalisation."""
    names = list(outputs)
    fig, axes = new_figure(ncols=len(names), width=7.0, height=3.8, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names):
        for i, (description, out) in enumerate(outputs[name]):
            out = np.asarray(out, dtype=float)
            with house_style():
                ax.plot(np.arange(1, len(out) + 1), out[:, feature], color=OTHER_COLORS[i % len(OTHER_COLORS)],
                        marker="o", markersize=4, label=description)
        finish(ax, title=name, xlabel="position in the sequence", ylabel=f"normalised feature {feature}",
               legend=ax is axes[-1])
    title_figure(fig, title)
    return fig


def join_costs_figure(add_rows: list[dict], concat_rows: list[dict], *, title: str):
    """Width and cumulative parameters against the number of layers, add vs concat, log
    scale (rows from :func:`helpers.measure.concat.join_costs`)."""
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=3.8)
    for rows, name, color in ((add_rows, "add", COLORS["residual"]), (concat_rows, "concat", COLORS["plain"])):
        n = [r["layer"] for r in rows]
        with house_style():
            left.plot(n, [r["width_out"] for r in rows], color=color, marker="o", markersize=4, label=name)
            right.plot(n, [r["total_params"] for r in rows], color=color, marker="o", markersize=4, label=name)
    for ax in (left, right):
        with house_style():
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    finish(left, title="features after N layers", xlabel="layers N", ylabel="width (features)")
    finish(right, title="parameters of the stack", xlabel="layers N", ylabel="parameters", legend=False)
    title_figure(fig, title)
    return fig
