"""Chapter 4's figures of stacks at initialisation: the FFN weight gradient of Xiong et al.'s
Theorem 1, and rank collapse.

Every function takes the :class:`~helpers.experiments.transformer_depth.InitGradients` that
:func:`~helpers.experiments.transformer_depth.gradients_at_init` returns (imported from this
submodule: ``from helpers.plots.transformer_depth import ...``).
"""

from __future__ import annotations

import numpy as np

from .style import OTHER_COLORS, finish, house_style, new_figure, title_figure
from .transformer import _setting_style

FLOAT32_ROUNDING = 1e-7
"""About the smallest token spread a float32 net can hold (float32's relative precision)."""

THEOREM_SLOPES = {"Post-LN": 0.0, "Pre-LN": -0.5}
"""The exponent of ``N`` in Xiong et al.'s Theorem 1 for the last layer's ``||dL/dW2||``."""


def _residual(results, norm: str) -> list:
    rows = sorted((r for r in results if r.residual and r.norm == norm), key=lambda r: r.depth)
    if not rows or any(r.w2 is None for r in rows):
        raise ValueError(f"results hold no residual {norm} stack with its W2 gradients")
    return rows


def w2_gradients(results, *, profile_depth: int, title: str):
    """Two panels for the residual stacks of ``results``. Left: ``||dL/dW2_l||`` against the
    layer ``l`` in the stacks of ``profile_depth`` layers, Post-LN and Pre-LN. Right: the last
    layer's ``||dL/dW2_N||`` against the depth ``N`` on log-log axes, with dotted guides from
    the shallowest depth at the slopes of Xiong et al.'s Theorem 1 (:data:`THEOREM_SLOPES`)."""
    fig, (left, right) = new_figure(ncols=2, width=7.6, height=4.0)
    with house_style():
        for norm in THEOREM_SLOPES:
            rows = _residual(results, norm)
            [deep] = [r for r in rows if r.depth == profile_depth] or [None]
            if deep is None:
                raise ValueError(f"results hold no residual {norm} stack of {profile_depth} layers")
            style = _setting_style(deep)
            left.plot(np.arange(1, len(deep.w2) + 1), deep.w2, marker=".", **style)
            depths = np.array([r.depth for r in rows])
            last = np.array([r.w2[-1] for r in rows])
            right.plot(depths, last, marker="o", **style)
            guide = last[0] * (depths / depths[0]) ** THEOREM_SLOPES[norm]
            right.plot(depths, guide, color=style["color"], linestyle=":", linewidth=1.5,
                       label=f"Theorem 1's slope, {norm}")
        left.set_yscale("log")
        right.set_xscale("log")
        right.set_yscale("log")
        right.set_xticks(depths, [str(d) for d in depths])
        right.minorticks_off()
    finish(left, title=f"Layer by layer, {profile_depth} layers", xlabel="layer (1 = next to the embeddings)",
           ylabel="||dL/dW2|| of the layer (log)")
    finish(right, title="The last layer, against depth", xlabel="number of layers N (log)",
           ylabel="last layer's ||dL/dW2|| (log)")
    title_figure(fig, title)
    return fig


def token_spread_by_layer(results, *, title: str):
    """The token spread (:func:`helpers.measure.rank_collapse.token_spread`) of the stream
    after each layer, from the embeddings (layer 0) up, one line per setting of ``results``
    (stacks of one depth), on a log scale; a dotted line marks float32's rounding
    (:data:`FLOAT32_ROUNDING`)."""
    if not results or any(r.spread is None for r in results):
        raise ValueError("results must hold InitGradients with their token spread")
    fig, ax = new_figure(width=6.4, height=3.9)
    with house_style():
        for r in results:
            ax.plot(np.arange(len(r.spread)), np.maximum(r.spread, 1e-12), marker=".", **_setting_style(r))
        ax.axhline(FLOAT32_ROUNDING, color=OTHER_COLORS[0], linestyle=":", linewidth=1.5,
                   label="float32 rounding")
        ax.set_yscale("log")
    finish(ax, title=title, xlabel="layer (0 = the embeddings)",
           ylabel="token spread ||X - mean|| / ||X|| (log)")
    return fig


def w2_profile(results, *, title: str):
    """``||dL/dW2_l||`` at initialisation against the layer ``l`` (input to output), one
    line per setting of ``results`` (the explorer's frame)."""
    if not results or any(r.w2 is None for r in results):
        raise ValueError("results must hold InitGradients with their W2 gradients")
    fig, ax = new_figure(width=6.4, height=3.8)
    with house_style():
        for r in results:
            ax.plot(np.arange(1, len(r.w2) + 1), r.w2, marker=".", **_setting_style(r))
        ax.set_yscale("log")
    finish(ax, title=title, xlabel="layer (1 = next to the embeddings)", ylabel="||dL/dW2|| of the layer (log)")
    return fig
