"""Chapter 4's figure of amplification: how far one step moves a stack's output, against depth
(:func:`helpers.experiments.amplification.amplification_by_depth`)."""

from __future__ import annotations

from .style import OTHER_COLORS, finish, house_style, new_figure, title_figure

STYLES = {"Post-LN": ("-", "o"), "Pre-LN": ("--", "s"), "DeepNorm": (":", "^")}


def amplification_by_depth(results, *, title: str):
    """Two panels on log-log axes, one line per design of ``results``
    (:class:`~helpers.experiments.amplification.Amplification`): the relative output change
    against the number of layers, left for a step of random signs, right for Adam's first
    step."""
    if not results:
        raise ValueError("results must hold at least one design")
    fig, axes = new_figure(ncols=2, width=7.6, height=4.0, sharey=True)
    panels = (("random", "A random step of ±{step:g} per parameter"), ("adam", "Adam's first step at rate {step:g}"))
    with house_style():
        for ax, (what, _) in zip(axes, panels):
            for i, r in enumerate(results):
                linestyle, marker = STYLES.get(r.design, ("-", "o"))
                ax.plot(r.depths, getattr(r, what), color=OTHER_COLORS[i % len(OTHER_COLORS)],
                        linestyle=linestyle, marker=marker, label=r.design)
            ax.set_xscale("log")
            ax.set_yscale("log")
            depths = results[0].depths
            ax.set_xticks(depths, [str(d) for d in depths])
            ax.minorticks_off()
    for k, (ax, (_, panel_title)) in enumerate(zip(axes, panels)):
        finish(ax, title=panel_title.format(step=results[0].step), xlabel="number of layers N (log)",
               ylabel="relative change of the output (log)", legend=k == 0)
    title_figure(fig, title)
    return fig


