"""Chapter 3's figures: the residual as a correction, the stream's variance by depth, a
normalised token against its batch mates, and the cost of add vs concat."""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from .style import COLORS, OTHER_COLORS, band, finish, house_style, new_figure, title_figure

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
            ax.annotate(text, point, xytext=(8, -4) if below else (6, 6), textcoords="offset points", color=color,
                        ha="left", va="top" if below else "baseline")
        points = np.stack([np.zeros(2), x, h])
        low, high = min(points.min(), 0.0) - 0.15, max(points.max(), 1.0) + 0.4
        ax.set_xlim(low, high + 0.5 * (high - low))  # room on the right for the labels
        ax.set_ylim(low - 0.1 * (high - low), high)  # and below, for the sum's label
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
    fig, axes = new_figure(ncols=len(names), width=7.0, height=4.4, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names):
        for i, (description, out) in enumerate(outputs[name]):
            out = np.asarray(out, dtype=float)
            with house_style():
                ax.plot(np.arange(1, len(out) + 1), out[:, feature], color=OTHER_COLORS[i % len(OTHER_COLORS)],
                        marker="o", markersize=4, label=description)
        finish(ax, title=name, xlabel="position in the sequence", ylabel=f"normalised feature {feature}",
               legend=False)
    for ax in axes[1:]:
        ax.set_ylabel("")
    with house_style():  # one legend for all panels, below them, clear of the data
        fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside lower center", ncols=1)
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


def switched_off(runs: dict, *, threshold: float, title: str):
    """Two panels against the block: each block's correction ``||F|| / ||x||`` after training
    (solid) and at initialisation (dotted, grey, all nets together), and the rise of the test
    loss when that block alone is deleted (symmetric log scale; below the dashed threshold a
    block is cheap to delete). ``runs`` maps a label (e.g. the weight decay) to a list of
    :class:`helpers.experiments.effective_depth.SwitchedOff`, one per seed (mean and spread shown)."""
    fig, (top, bottom) = new_figure(nrows=2, width=7.0, height=6.2, sharex=True)
    for i, (name, group) in enumerate(runs.items()):
        color = OTHER_COLORS[i % len(OTHER_COLORS)]
        blocks = np.arange(1, len(group[0].ratios) + 1)
        band(top, blocks, [r.ratios for r in group], label=f"{name}: trained", color=color, marker="o")
        band(bottom, blocks, [r.lesion for r in group], label=name, color=color, marker="o")
    initial = [r.initial_ratios for group in runs.values() for r in group]
    band(top, blocks, initial, label="at initialisation", color="0.35", linestyle=":")
    with house_style():
        top.set_yscale("log")
        bottom.set_yscale("symlog", linthresh=threshold)
        bottom.axhline(threshold, color="0.4", linestyle="--", linewidth=1)
        bottom.annotate(f"cheap to delete below {threshold:g}", (blocks[-1], threshold), ha="right", va="bottom",
                        textcoords="offset points", xytext=(0, 3), color="0.3")
        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    finish(top, title="How much each block changes its input", xlabel="block (1 = next to the input)",
           ylabel="‖F(x)‖ / ‖x‖ (log)")
    finish(bottom, title="What deleting that block alone costs", xlabel="block (1 = next to the input)",
           ylabel="rise of the test loss (nats)")
    title_figure(fig, title)
    return fig


def deletion_frame(ratios, deleted, *, error: float, intact: float, title: str):
    """One frame of the deletion explorer: each block's ``||F|| / ||x||`` as a bar, the
    deleted blocks hatched and pale, and the test error (fractions) before and after in the
    axis label."""
    ratios = np.asarray(ratios, dtype=float)
    deleted = set(deleted)
    fig, ax = new_figure(width=7.0, height=3.6)
    blocks = np.arange(1, len(ratios) + 1)
    gone = np.isin(np.arange(len(ratios)), list(deleted))
    with house_style():
        ax.bar(blocks[~gone], ratios[~gone], color=COLORS["residual"], edgecolor="0.3", label="kept")
        ax.bar(blocks[gone], ratios[gone], color="white", edgecolor="0.5", hatch="//", label="deleted at test time")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    finish(ax, title=title, xlabel=f"block (1 = next to the input); test error {100 * intact:.1f} % intact, "
                                   f"{100 * error:.1f} % with {len(deleted)} deleted",
           ylabel="‖F(x)‖ / ‖x‖")
    return fig


def joins_compared(runs, *, title: str):
    """Add vs concat, trained: the training loss per epoch of each join (mean over its runs;
    a run that diverged is left out of the mean) and, for each join other than add and the
    plain ``"none"`` (which costs what add does), its parameters, the bytes autograd saves
    for a step and the time of a step relative to add's (the dotted line at 1). ``runs`` is
    a list of :class:`helpers.experiments.joins.JoinRun`."""
    joins = list(dict.fromkeys(r.join for r in runs))
    if "add" not in joins:
        raise ValueError("runs must include the add join, which the costs are relative to")
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=3.9)
    colors = {"add": COLORS["residual"], "none": COLORS["plain"], "concat-project": OTHER_COLORS[0],
              "concat-grow": OTHER_COLORS[1]}
    base = [r for r in runs if r.join == "add"]
    measures = (("params", "parameters"), ("saved_bytes", "memory"), ("seconds_per_step", "time"))
    costly = [j for j in joins if j not in ("add", "none")]
    height = 0.8 / max(len(costly), 1)
    for join in joins:
        group = [r for r in runs if r.join == join]
        finite = [r.losses for r in group if np.all(np.isfinite(r.losses))]
        if finite:
            with house_style():
                left.plot(np.arange(1, len(finite[0]) + 1), np.mean(finite, axis=0), color=colors.get(join, "0.3"),
                          marker="o", markersize=4, label=f"{join} ({group[0].blocks} blocks)")
    for j, join in enumerate(costly):
        group = [r for r in runs if r.join == join]
        relative = [np.mean([getattr(r, key) for r in group]) / np.mean([getattr(r, key) for r in base])
                    for key, _ in measures]
        with house_style():
            bars = right.barh(np.arange(len(measures)) + (j - (len(costly) - 1) / 2) * height, relative, height,
                              color=colors.get(join, "0.3"), label=join)
            right.bar_label(bars, fmt="%.1f×", padding=2, fontsize=10)
    with house_style():
        left.set_yscale("log")
        right.axvline(1, color="0.3", linestyle=":", linewidth=1.2)
        right.set_yticks(np.arange(len(measures)), [name for _, name in measures])
        right.set_xlim(0, 1.25 * max([1.0] + [p.get_width() for p in right.patches]))
        right.invert_yaxis()
        right.grid(axis="y", visible=False)
    finish(left, title="Training loss", xlabel="epoch", ylabel="training loss (log)")
    finish(right, title="Cost of a step (dotted: add)", xlabel="relative to add", ylabel="what a step needs")
    title_figure(fig, title)
    return fig


def scale_sweep(runs, *, title: str):
    """The baseline's init-scale sweep: left, at initialisation, the mean ``||F|| / ||x||`` over
    the blocks and the gradient norm of the first layer against the init scale (log-log);
    right, the training loss per epoch at each scale, one colour a scale; a run that diverged
    is marked x at the top, at the epoch where its loss became infinite or NaN. ``runs`` are
    :class:`helpers.experiments.branch_scale.ScaleRun` of one setting."""
    scales = sorted({r.scale for r in runs})
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=4.0)
    ratio = [np.mean([r.ratios.mean() for r in runs if r.scale == s]) for s in scales]
    grad = [np.mean([r.first_layer_grad for r in runs if r.scale == s]) for s in scales]
    colors = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(scales)))
    top = 8.0
    with house_style():
        left.loglog(scales, ratio, color=COLORS["residual"], marker="o", label="‖F‖ / ‖x‖, mean of the blocks")
        left.loglog(scales, grad, color=COLORS["plain"], marker="s", label="‖dL/dW‖, first layer")
        left.xaxis.set_major_locator(FixedLocator(scales))
        left.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        left.xaxis.set_minor_locator(NullLocator())
        for i, (s, color) in enumerate(zip(scales, colors)):
            group = [r for r in runs if r.scale == s]
            lost = sum(not np.all(np.isfinite(r.losses)) for r in group)
            label = f"scale {s:g}" + (" (diverged)" if lost == len(group) else "")
            right.plot([], [], color=color, marker="o", markersize=3, label=label)
            for r in group:
                finite = np.isfinite(r.losses)
                epochs = np.arange(1, len(r.losses) + 1)
                right.plot(epochs[finite], r.losses[finite], color=color, marker="o", markersize=3)
                if not finite.all():
                    right.plot(epochs[~finite][0] + 0.06 * i, top, marker="x", color=color, markersize=9,
                               markeredgewidth=2, linestyle="none")
        right.set_yscale("log")
        right.set_ylim(None, 1.5 * top)
    finish(left, title="At initialisation", xlabel="init scale of the branch's last layer", ylabel="value (log)")
    left.legend(loc="upper left")
    finish(right, title="Training (x: diverged)", xlabel="epoch", ylabel="training loss (log)")
    right.legend(loc="lower left", fontsize=10)
    title_figure(fig, title)
    return fig


def divergence_map(runs, *, title: str):
    """Setting x init scale: the last epoch's training loss in each cell (the mean over seeds;
    darker is better), "diverged" where any seed's loss became infinite or NaN.
    ``runs`` are :class:`helpers.experiments.branch_scale.ScaleRun`."""
    settings = list(dict.fromkeys(r.setting for r in runs))
    scales = sorted({r.scale for r in runs})
    grid = np.full((len(settings), len(scales)), np.nan)
    for i, setting in enumerate(settings):
        for j, scale in enumerate(scales):
            cell = [r.losses[-1] for r in runs if r.setting == setting and r.scale == scale]
            if cell and all(np.isfinite(cell)):
                grid[i, j] = np.mean(cell)
    fig, ax = new_figure(width=7.0, height=0.5 * len(settings) + 1.9)
    with house_style():
        shown = np.ma.masked_invalid(np.log10(np.clip(grid, 1e-3, None)))
        image = ax.imshow(shown, cmap="viridis_r", aspect="auto", vmin=np.log10(0.05), vmax=np.log10(3.0))
        ax.set_facecolor("#f2dede")
        for i in range(len(settings)):
            for j in range(len(scales)):
                text = "diverged" if np.isnan(grid[i, j]) else f"{grid[i, j]:.2f}"
                dark = not np.isnan(grid[i, j]) and grid[i, j] < 0.4
                ax.text(j, i, text, ha="center", va="center", fontsize=10, color="white" if dark else "0.1")
        ax.set_xticks(range(len(scales)), [f"{s:g}" for s in scales])
        ax.set_yticks(range(len(settings)), settings)
        ax.grid(False)
        bar = fig.colorbar(image, ax=ax, pad=0.02)
        bar.set_label("final training loss (log10)")
    finish(ax, title=title, xlabel="init scale of the branch's last layer", ylabel="setting")
    return fig


def scale_profile_frame(profile, *, title: str):
    """One frame of the branch-scale explorer: the stream's root mean square entering each
    block (log) and the gradient norm of every weight layer (log), at initialisation.
    ``profile`` is a :class:`helpers.experiments.branch_scale.ScaleProfile`."""
    fig, (left, right) = new_figure(ncols=2, width=7.0, height=3.7)
    with house_style():
        left.semilogy(np.arange(len(profile.stream_rms)), profile.stream_rms, color=COLORS["residual"], marker=".")
        right.semilogy(np.arange(1, len(profile.weight_grads) + 1), profile.weight_grads, color=COLORS["plain"],
                       marker=".")
        for ax in (left, right):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    finish(left, title="The stream", xlabel="block (0 = the stem's output)", ylabel="RMS of the stream (log)")
    finish(right, title="The gradient", xlabel="weight layer (1 = next to the input)", ylabel="‖dL/dW‖ (log)")
    title_figure(fig, title)
    return fig
