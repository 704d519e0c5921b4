"""Chapter 1's extension, the dial from plain to residual (:mod:`helpers.experiments.dial`):
the per-layer growth of the gradient against the dial, and the training error against the
growth it predicts."""

from __future__ import annotations

from matplotlib.ticker import NullFormatter

from .style import DEPTH_STYLES, OTHER_COLORS, finish, house_style, new_figure, title_figure

MARKERS = ("o", "s", "^", "D")


def dial_summary(runs, *, rate: float, title: str):
    """Two panels. Left: the fitted per-layer factor ``g`` against ``alpha``, a line per depth,
    and ``rate`` (Yang et al.'s closed form for the plain net) as a dotted line. Right: each
    net's final training error (%) against ``g ** (depth - 1)`` (log scale), a marker per depth."""
    runs = list(runs)
    if not runs or not all(hasattr(r, "growth") and hasattr(r, "alpha") for r in runs):
        raise TypeError("runs must be a non-empty list of DialRun (helpers.experiments.dial.dial_runs)")
    depths = sorted({r.depth for r in runs})
    fig, (left, right) = new_figure(2, width=7.4, height=3.8)
    with house_style():
        for i, depth in enumerate(depths):
            mine = sorted((r for r in runs if r.depth == depth), key=lambda r: r.alpha)
            color, marker = OTHER_COLORS[i % len(OTHER_COLORS)], MARKERS[i % len(MARKERS)]
            left.plot([r.alpha for r in mine], [r.g for r in mine], color=color, marker=marker,
                      linestyle=DEPTH_STYLES[i % len(DEPTH_STYLES)], label=f"{depth} layers")
            right.semilogx([r.growth for r in mine], [100 * r.error for r in mine], color=color,
                           marker=marker, linestyle="none", label=f"{depth} layers")
        left.axhline(rate, color="black", linestyle=":", linewidth=1, label="Yang et al., plain")
        left.set_xticks([0, 0.25, 0.5, 0.75, 1])
        right.set_ylim(-3, 100)
        right.xaxis.set_minor_formatter(NullFormatter())  # decades only, never overlapping
        right.grid(True, which="major", alpha=0.3)
    finish(left, title="Per-layer factor at initialisation", xlabel="skip scale α (0 plain, 1 residual)",
           ylabel="per-layer factor g")
    finish(right, title="Training error after the recipe", xlabel="total growth g^(depth-1) (log)",
           ylabel="training error (%)")
    return title_figure(fig, title)

