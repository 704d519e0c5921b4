"""Diagrams drawn by the course's own code: a plain block next to its residual twin."""

from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .style import COLORS, house_style, new_figure, title_figure

_STEPS = ("weight layer + BN", "ReLU", "weight layer + BN")


def _box(ax, y: float, text: str, color: str) -> None:
    ax.add_patch(FancyBboxPatch((0.05, y - 0.28), 1.9, 0.56, boxstyle="round,pad=0.04",
                                facecolor="white", edgecolor=color, linewidth=1.6))
    ax.text(1.0, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start, end, color: str) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color,
                                 linewidth=1.4, shrinkA=0, shrinkB=0))


def block_diagrams(*, title: str, steps=_STEPS, after: str | None = "ReLU", output: str = "",
                   names=("H(x)", "F(x)"),
                   notes=("learns the whole map H(x)", "learns the change F(x) = H(x) - x")):
    """A plain block (left) and a residual block (right): by default as
    :class:`helpers.models.mlp.Block` builds them in their post-activation form, the same two
    weight layers, and on the right the skip that adds the block's input ``x`` to ``F(x)``
    before the last ReLU. ``steps`` are the three boxes of the branch (top to bottom),
    ``after`` the box after the sum (``None``: the sum is the output, labelled ``output``),
    ``names`` what the plain and residual branch compute, ``notes`` the line under each."""
    steps = tuple(steps)
    if len(steps) != 3 or not all(isinstance(step, str) for step in steps):
        raise ValueError(f"steps must be three strings, the boxes of the branch; got {steps!r}")
    fig, axes = new_figure(ncols=2, width=6.4, height=4.6)
    ys = (5.0, 4.0, 3.0)
    with house_style():
        for ax, kind in zip(axes, ("plain", "residual")):
            color = COLORS[kind]
            ax.set_xlim(-0.9, 2.9)
            ax.set_ylim(-0.5, 6.5)
            ax.set_aspect("equal")
            ax.axis("off")
            ax.text(1.0, 6.2, "x", ha="center", va="center", fontsize=11, style="italic")
            _arrow(ax, (1.0, 5.95), (1.0, ys[0] + 0.32), color)
            for y, text in zip(ys, steps):
                _box(ax, y, text, color)
            for upper, lower in zip(ys, ys[1:]):
                _arrow(ax, (1.0, upper - 0.32), (1.0, lower + 0.32), color)
            if kind == "residual":
                ax.add_patch(Circle((1.0, 1.9), 0.2, facecolor="white", edgecolor=color, linewidth=1.6))
                ax.text(1.0, 1.9, "+", ha="center", va="center", fontsize=12)
                _arrow(ax, (1.0, ys[-1] - 0.32), (1.0, 2.1), color)
                ax.plot([1.0, 2.35, 2.35], [5.75, 5.75, 1.9], color=color, linewidth=1.4)
                _arrow(ax, (2.35, 1.9), (1.2, 1.9), color)
                ax.text(2.45, 3.9, "identity: x", ha="left", va="center", fontsize=10, color=color,
                        rotation=90)
                ax.text(-0.1, 4.0, names[1], ha="right", va="center", fontsize=10, style="italic")
                _arrow(ax, (1.0, 1.7), (1.0, 1.22), color)
                learns = notes[1]
            else:
                _arrow(ax, (1.0, ys[-1] - 0.32), (1.0, 1.22), color)
                ax.text(-0.1, 4.0, names[0], ha="right", va="center", fontsize=10, style="italic")
                learns = notes[0]
            if after is None:
                ax.text(1.0, 0.95, output, ha="center", va="center", fontsize=11, style="italic")
            else:
                _box(ax, 0.95, after, color)
            ax.text(1.0, 0.0, learns, ha="center", va="center", fontsize=10)
            ax.set_title(f"{kind} block", color=color)
        title_figure(fig, title)
    return fig
