"""Training curves (the analogue of He et al. 2015, Figs. 1 and 6)."""

from __future__ import annotations

import numpy as np

from .style import COLORS, DEPTH_STYLES, band, finish, new_figure, title_figure


def training_curves(result, *, title: str, lr: float | None = None, seed: int | None = None):
    """Training error (%) against epoch at learning rate ``lr`` (default: the recipe's), one
    panel per kind of net, one line per depth; all seeds (mean and band) or the one ``seed``.

    ``result`` is a :class:`helpers.experiments.degradation.DegradationResult`; lines are the mean over
    seeds, bands their min-max spread (the analogue of He et al. 2015, Fig. 6).
    """
    fig, axes = new_figure(ncols=len(result.kinds), width=7.0, height=3.4, sharey=True)
    axes = np.atleast_1d(axes)
    epochs = np.arange(1, result.epochs + 1)
    rate = result.lr if lr is None else lr
    if rate not in result.lrs:
        raise ValueError(f"lr must be one of the learning rates trained, {result.lrs}; got {lr!r}")
    if seed is not None and seed not in result.seeds:
        raise ValueError(f"seed must be one of the seeds trained, {result.seeds}; got {seed!r}")
    rows = slice(None) if seed is None else slice(result.seeds.index(seed), result.seeds.index(seed) + 1)
    for ax, kind in zip(axes, result.kinds):
        for depth, style in zip(result.depths, DEPTH_STYLES * 4):
            band(ax, epochs, 100 * result.curves[kind, depth, rate][rows], label=f"{kind}-{depth}",
                 color=COLORS[kind], linestyle=style)
        finish(ax, title=f"{kind} nets", xlabel="epoch", ylabel="training error (%)")
    title_figure(fig, title)
    return fig


def learning_rate_sweep(result, *, title: str):
    """Final training error (%) against learning rate (log axis), one panel per kind of net,
    one line per depth: mean over seeds, bands the min-max spread; each depth's best rate ringed."""
    fig, axes = new_figure(ncols=len(result.kinds), width=7.0, height=3.4, sharey=True)
    axes = np.atleast_1d(axes)
    lrs = np.array(result.lrs)
    for ax, kind in zip(axes, result.kinds):
        for depth, style in zip(result.depths, DEPTH_STYLES * 4):
            errors = 100 * np.stack([result.train_error[kind, depth, lr] for lr in result.lrs], axis=1)
            band(ax, lrs, errors, label=f"{kind}-{depth}", color=COLORS[kind], linestyle=style, marker="o")
            best = result.best_lr(kind, depth)
            ax.plot([best], [100 * result.best_train_error(kind, depth)], marker="o", markersize=11,
                    markerfacecolor="none", markeredgecolor="black", linestyle="none")
        ax.set_xscale("log")
        ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs])
        ax.minorticks_off()
        finish(ax, title=f"{kind} nets", xlabel="learning rate (log scale)", ylabel="final training error (%)")
    title_figure(fig, title)
    return fig


def identity_race(losses: dict, *, threshold: float, title: str):
    """Relative loss (log scale) against training step while fitting the identity map.

    ``losses`` maps ``(kind, n_blocks)`` to a 1-D array of per-step relative losses
    (see :func:`helpers.experiments.identity.identity_race`); the dotted line is the
    ``threshold`` the race is run to.
    """
    fig, ax = new_figure(width=7.0, height=3.6)
    blocks = sorted({n for _, n in losses})
    for (kind, n), curve in losses.items():
        style = DEPTH_STYLES[blocks.index(n) % len(DEPTH_STYLES)]
        ax.semilogy(np.arange(1, len(curve) + 1), curve, color=COLORS[kind], linestyle=style,
                    label=f"{kind}, {n} block{'s' if n > 1 else ''}")
    ax.axhline(threshold, color="0.4", linestyle=":", linewidth=1)
    ax.annotate(f"threshold {threshold:g}", (1, threshold), textcoords="offset points",
                xytext=(2, 3), fontsize=10, color="0.3")
    finish(ax, title=title, xlabel="training step (Adam, full batch)",
           ylabel="loss / Var(target) (log)")
    return fig


def layer_updates(result, *, depth: int, title: str, lr: float | None = None):
    """How far training moved each weight layer (log scale) against its position, stem first:
    ``||W(T) - W(0)|| / ||W(0)||`` (:func:`helpers.measure.updates.relative_updates`), one line
    per kind of net at ``depth`` and learning rate ``lr`` (default: the recipe's); mean over
    seeds, bands the min-max spread. The dotted line marks a change as large as the layer."""
    rate = result.lr if lr is None else lr
    if (result.kinds[0], depth, rate) not in result.updates:
        raise ValueError(f"depth and lr must be among those trained, {result.depths} and {result.lrs}; "
                         f"got {depth!r} and {lr!r}")
    fig, ax = new_figure(width=7.0, height=3.6)
    for kind in result.kinds:
        runs = result.updates[kind, depth, rate]
        band(ax, np.arange(1, runs.shape[1] + 1), runs, label=f"{kind}-{depth}", color=COLORS[kind])
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    ax.set_yscale("log")
    finish(ax, title=f"{depth}-layer nets after training", xlabel="weight layer (1 = nearest the input)",
           ylabel="relative change of its weights")
    title_figure(fig, title)
    return fig
