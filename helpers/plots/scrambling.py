"""What a random deep chain does to its input: similarity of two inputs and a linear probe, by layer."""

from __future__ import annotations

import numpy as np

from .style import COLORS, finish, house_style, new_figure, title_figure

NORM_NAMES = {"none": "no normalisation", "batch": "BatchNorm", "layer": "LayerNorm"}
NORM_STYLES = {"none": "-", "batch": "--", "layer": ":"}


def signal_through_depth(result, *, title: str):
    """Two panels against the layer index: the mean cosine similarity of pairs of different
    inputs (with the mean-field prediction, dotted, where there is no normalisation) and the
    accuracy of a linear probe of the class (with the raw pixels' accuracy and chance as
    references). ``result`` is a :class:`helpers.experiments.scrambling.SignalThroughDepth`."""
    fig, (top, bottom) = new_figure(nrows=2, width=7.0, height=7.4, sharex=True)
    layers = np.arange(result.layers + 1)
    for (norm, kind), values in result.cosine.items():
        label = f"{kind}, {NORM_NAMES[norm]}"
        with house_style():
            top.plot(layers, values, color=COLORS[kind], linestyle=NORM_STYLES[norm], label=label)
            bottom.plot(layers, 100 * result.probe[(norm, kind)], color=COLORS[kind],
                        linestyle=NORM_STYLES[norm], label=label)
    for kind, values in result.theory.items():
        with house_style():
            top.plot(layers, values, color=COLORS[kind], linestyle="none", marker="o", markersize=3.5,
                     markerfacecolor="none", markevery=3, label=f"{kind}: mean-field prediction")
    with house_style():
        bottom.axhline(100 * result.input_probe, color="0.3", linestyle=":", linewidth=1)
        bottom.annotate("probe on the raw pixels", (result.layers, 100 * result.input_probe),
                        ha="right", va="bottom", color="0.3")
        bottom.axhline(10, color="0.3", linestyle=":", linewidth=1)
        bottom.annotate("chance (10 classes)", (result.layers, 10), ha="right", va="bottom", color="0.3")
        top.set_ylim(-0.1, 1.05)
        bottom.set_ylim(0, 100)
    finish(top, title="two different digits look more and more alike", xlabel="layer",
           ylabel="cosine similarity of two inputs")
    with house_style():
        top.legend(fontsize=10, ncols=2, loc="lower right")
    finish(bottom, title="how much of the class a linear read-out still finds",
           xlabel="layer (0 = the stem's output)", ylabel="linear probe accuracy (%)", legend=False)
    title_figure(fig, title)
    return fig


def principal_plane(h, labels, *, title: str, ax=None):
    """Scatter the rows of ``h`` (one representation per input) on their first two principal
    components (the plane of largest variance after centring), coloured by class: a view of
    how far apart a layer keeps inputs of different classes. The axis labels give the share
    of the variance each component holds."""
    h = np.asarray(h, dtype=float)
    labels = np.asarray(labels)
    if h.ndim != 2 or len(h) != len(labels):
        raise ValueError(f"h must be (n, width) with one label per row, got {h.shape} and {labels.shape}")
    centred = h - h.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    share = s ** 2 / max(float((s ** 2).sum()), 1e-300)
    fig = None
    if ax is None:
        fig, ax = new_figure(width=7.0, height=4.6)
    with house_style():
        points = ax.scatter(u[:, 0] * s[0], u[:, 1] * s[1], c=labels, cmap="tab10", s=9, vmin=-0.5, vmax=9.5)
        (fig or ax.figure).colorbar(points, ax=ax, label="digit class", ticks=range(10))
    finish(ax, title=title, xlabel=f"first principal component ({100 * share[0]:.0f} % of variance)",
           ylabel=f"second ({100 * share[1]:.0f} %)", legend=False)
    return fig if fig is not None else ax.figure
