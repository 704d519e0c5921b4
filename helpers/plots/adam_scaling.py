"""Figures of chapter 5's extension "a DeepNorm for Adam" (:mod:`helpers.experiments.adam_scaling`):
one Adam update against depth for each power of ``N`` in ``beta`` and for T-Fixup, the rules in
training, and Admin's profiled skip weights beside DeepNorm's ``alpha``."""

from __future__ import annotations

import numpy as np

from .style import OTHER_COLORS, finish, house_style, new_figure, title_figure
from .transformer import _smooth

_STYLES = {
    "b = 1/4 (DeepNorm)": dict(color=OTHER_COLORS[0], linestyle="-", marker="o"),
    "b = 1/2": dict(color=OTHER_COLORS[3], linestyle="--", marker="s"),
    "b = 3/4": dict(color=OTHER_COLORS[1], linestyle="-", marker="D"),
    "b = 1": dict(color=OTHER_COLORS[2], linestyle=":", marker="^"),
    "T-Fixup": dict(color="#a6761d", linestyle="-.", marker="v"),
}
_PARTS = {"no stream biases": "step on all but W_o's and W_2's biases", "all": "step on every sublayer parameter"}


def _style(design: str) -> dict:
    return _STYLES.get(design, dict(color="0.3", linestyle="-", marker="o"))


def _rows(updates, design: str, part: str):
    return sorted((u for u in updates if u.design == design and u.part == part), key=lambda u: u.depth)


def _log2_depth_axes(ax, depths) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(depths, [str(d) for d in depths])


def update_by_depth_panels(updates, *, title: str):
    """``||ΔF|| / η`` after Adam's first step against the number of layers, relative to the
    smallest depth, one line per design (geometric means over the nets): left the step on every
    sublayer parameter but the biases of ``W_o`` and ``W_2``, right on every sublayer
    parameter; the grey dotted line is flat. Log-log axes."""
    fig, axes = new_figure(2, width=7.0, height=4.2, sharey=True)
    depths = sorted({u.depth for u in updates})
    for ax, part in zip(axes, ("no stream biases", "all")):
        with house_style():
            for design in dict.fromkeys(u.design for u in updates):
                rows = _rows(updates, design, part)
                ax.plot([u.depth for u in rows], [u.change / rows[0].change for u in rows], label=design,
                        **_style(design))
            ax.axhline(1.0, color="0.5", linewidth=1, linestyle=":")
            _log2_depth_axes(ax, depths)
        finish(ax, title=_PARTS[part], xlabel="number of layers N (log scale)",
               ylabel=f"‖ΔF‖ / η relative to {depths[0]} layers\n(log scale)", legend=False)
    with house_style():
        axes[0].legend(fontsize=10, loc="upper left")
    title_figure(fig, title)
    return fig


def design_update(updates, design: str, *, reference: str | None = None, title: str):
    """One design's ``||ΔF|| / η`` against the number of layers (dots: single nets; lines:
    their geometric mean), for the step on every sublayer parameter (solid) and on all but the
    stream biases (dashed), beside ``reference``'s (grey), on log-log axes: an explorer's
    frame."""
    fig, ax = new_figure(width=6.6, height=4.2)
    depths = sorted({u.depth for u in updates})
    with house_style():
        chosen = [(design, _style(design)["color"])]
        if reference is not None and reference != design:
            chosen.append((reference, "0.6"))
        for name, color in chosen:
            for part, linestyle in (("all", "-"), ("no stream biases", "--")):
                rows = _rows(updates, name, part)
                for u in rows:
                    ax.plot([u.depth] * len(u.changes), u.changes, linestyle="none", marker=".", color=color,
                            alpha=0.6)
                ax.plot([u.depth for u in rows], [u.change for u in rows], color=color, linestyle=linestyle,
                        marker="o", label=f"{name}, {_PARTS[part].removeprefix('step on ')}")
        _log2_depth_axes(ax, depths)
        ax.legend(fontsize=10, loc="upper left")
    finish(ax, title=title, xlabel="number of layers N (log scale)",
           ylabel="output change per unit rate, ‖ΔF‖ / η\n(log scale)", legend=False)
    return fig


def rule_curves(runs, *, threshold: float, title: str):
    """Training loss (running mean over 10 steps, log scale) against the step for each
    :class:`~helpers.experiments.deepnorm.DesignRun`, one colour per design (several nets of a
    design: one line each), the design's mean test accuracy in the legend; the dotted line is
    the loss of guessing (ln 8), the dashed one ``threshold``."""
    fig, ax = new_figure(width=6.8, height=4.2)
    with house_style():
        for design in dict.fromkeys(r.design for r in runs):
            mine = [r for r in runs if r.design == design]
            style = {k: v for k, v in _style(design).items() if k != "marker"}
            accuracy = 100 * float(np.mean([r.run.accuracy for r in mine]))
            label = f"{design}: {accuracy:.0f} % right" + (f" (mean of {len(mine)})" if len(mine) > 1 else "")
            for k, r in enumerate(mine):
                ax.plot(np.arange(1, len(r.run.losses) + 1), _smooth(r.run.losses), linewidth=1.4,
                        label=label if k == 0 else None, **style)
        ax.set_yscale("log")
        ax.axhline(np.log(8), color="0.5", linewidth=1, linestyle=":")
        ax.axhline(threshold, color="0.5", linewidth=1, linestyle="--")
        ax.legend(fontsize=10, loc="lower left")
    finish(ax, title=title, xlabel="step", ylabel="training loss (nats per token)", legend=False)
    return fig


def admin_omegas_figure(profiles, *, title: str):
    """Admin's profiled skip weight ``omega_i`` against the sublayer ``i`` (dots: single nets;
    line: their mean), one colour per profile in ``profiles`` (the same depth, the branches
    drawn another way), beside DeepNorm's closed-form ``alpha`` (the same at every sublayer)
    and Post-LN's skip weight 1."""
    fig, ax = new_figure(width=6.8, height=4.0)
    first = profiles[0]
    sublayers = np.arange(1, first.omegas.shape[1] + 1)
    draws = {"pytorch": "PyTorch's default draw", "fairseq": "fairseq's Xavier draw"}
    with house_style():
        for profile, color in zip(profiles, ("0.2", OTHER_COLORS[1])):
            for row in profile.omegas:
                ax.plot(sublayers, row, linestyle="none", marker=".", color=color, alpha=0.5)
            ax.plot(sublayers, profile.omega, color=color, label=f"Admin's ω, {draws[profile.init]}")
        ax.axhline(first.alpha, color=OTHER_COLORS[0], linestyle="--",
                   label=f"DeepNorm: α = (2N)^(1/4) = {first.alpha:.2f}")
        ax.axhline(1.0, color="0.6", linestyle=":", label="Post-LN: 1")
        ax.set_ylim(0, max(first.alpha, *(p.omegas.max() for p in profiles)) * 1.15)
        ax.legend(fontsize=10, loc="lower right")
    finish(ax, title=title, xlabel=f"sublayer i (1 = next to the embeddings; {first.depth} layers)",
           ylabel="weight on the skip (ω or α)", legend=False)
    return fig
