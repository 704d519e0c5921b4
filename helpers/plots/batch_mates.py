"""Chapter 3's figure on batch mates: how much one sequence's normalised output depends on
the batch it is in, against the number of tokens per batch
(:func:`helpers.measure.batch_mates.drift_by_batch_size` and
:func:`~helpers.measure.batch_mates.source_shift`)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure


def drift_by_tokens(tokens, spreads: dict, *, title: str, shifted=None, shift: float = 1.0,
                    reference: float | None = 1.5):
    """One panel, log-log: for each entry of ``spreads`` (a label and one value per batch
    size in ``tokens``) the spread of the sequence's output over batches of natural mates;
    a dotted line ``sqrt(reference / N)`` (the error of a mean and a variance estimated from
    ``N`` tokens; none if ``reference`` is None); and, dashed and labelled apart, ``shifted``:
    how far the output moves when the mates come from a source shifted by ``shift``."""
    if not isinstance(title, str) or not title.strip():
        raise ValueError("title must be a non-empty string that states the finding")
    tokens = np.asarray(tokens, dtype=float)
    if tokens.ndim != 1 or len(tokens) < 2 or np.any(tokens <= 0):
        raise ValueError(f"tokens must list at least two positive batch sizes, got {tokens}")
    if not isinstance(spreads, dict) or not spreads:
        raise ValueError("spreads must map at least one label to one value per batch size")
    fig, ax = new_figure(width=7.0, height=5.0)
    colors = (COLORS["plain"], OTHER_COLORS[0], OTHER_COLORS[2])
    for i, (label, values) in enumerate(spreads.items()):
        values = np.asarray(values, dtype=float)
        if values.shape != tokens.shape or np.any(values <= 0):
            raise ValueError(f"spreads[{label!r}] must hold one positive value per batch size")
        with house_style():
            ax.plot(tokens, values, color=colors[i % len(colors)], marker="o", label=label)
    if reference is not None:
        with house_style():
            ax.plot(tokens, np.sqrt(reference / tokens), color="0.35", linestyle=":",
                    label=f"√({reference:g} / N)")
    if shifted is not None:
        shifted = np.asarray(shifted, dtype=float)
        if shifted.shape != tokens.shape:
            raise ValueError("shifted must hold one value per batch size")
        with house_style():
            ax.plot(tokens, shifted, color=COLORS["residual"], linestyle="--", marker="s",
                    label=f"mates from a source shifted by {shift:+g}: systematic move")
    with house_style():
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(tokens))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{t:g}" for t in tokens])
        ax.annotate("LayerNorm: 0 at every size (off this log scale)", (0.02, 0.03), xycoords="axes fraction",
                    color="0.3")
    finish(ax, title="How much its batch moves one sequence's output",
           xlabel="real tokens per batch, N", ylabel="change of the output (its std units)", legend=False)
    with house_style():  # the legend below the panel, clear of the lines
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    title_figure(fig, title)
    return fig
