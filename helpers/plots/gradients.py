"""Gradient profiles and Jacobian spectra: how signals and gradients pass through a stack."""

from __future__ import annotations

import numpy as np

from .style import DEPTH_STYLES, color_for, finish, house_style, new_figure


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
    for i, ((label, profile), style) in enumerate(zip(profiles.items(), DEPTH_STYLES * 8)):
        values = getattr(profile, which)
        with house_style():
            ax.semilogy(np.arange(1, len(values) + 1), values, marker=".", label=label,
                        color=color_for(label, i), linestyle=style)
    symbol = "||dL/dW||" if which == "weight" else "||dL/dh||"
    finish(ax, title=title, xlabel="layer (1 = next to the input)", ylabel=f"gradient norm {symbol} (log)")
    return fig if fig is not None else ax.figure


def singular_value_histograms(spectra: dict, *, title: str, bins=None):
    """Histogram of Jacobian singular values, one panel per entry of ``spectra``.

    ``spectra`` maps a label (starting with "plain" or "residual", which sets the colour)
    to a 1-D array of singular values pooled over inputs. The dotted line marks 1: a
    singular value of 1 passes that direction through unchanged.
    """
    fig, axes = new_figure(ncols=len(spectra), width=3.5 * len(spectra), height=3.2, sharey=True)
    axes = np.atleast_1d(axes)
    top = max(float(np.max(v)) for v in spectra.values())
    bins = np.linspace(0, max(2.0, top * 1.02), 41) if bins is None else bins
    for i, (ax, (label, values)) in enumerate(zip(axes, spectra.items())):
        values = np.asarray(values, dtype=float)
        with house_style():
            ax.hist(values, bins=bins, color=color_for(label, i),
                    weights=np.full(values.shape, 100 / values.size))
            ax.axvline(1.0, color="0.3", linestyle=":", linewidth=1)
        finish(ax, title=label, xlabel="singular value of the Jacobian", ylabel="share of values (%)",
               legend=False)
    fig.suptitle(title, fontweight="bold")
    return fig
