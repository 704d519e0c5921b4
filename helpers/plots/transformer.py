"""Chapter 4's figures: the Add & Norm diagram of a Transformer layer, gradients at
initialisation, the training grid and the sublayer lesions."""

from __future__ import annotations

import numpy as np

from .diagrams import _arrow
from .style import COLORS, OTHER_COLORS, finish, house_style, new_figure, title_figure

_SUBLAYERS = {
    "sublayer": ("SubLayer(x): attention or FFN",),
    "encoder": ("multi-head self-attention", "feed-forward net (FFN)"),
    "decoder": ("masked multi-head self-attention", "cross-attention to the encoder", "feed-forward net (FFN)"),
}
_BRANCH, _NORM, _SKIP = "#1c7ed6", OTHER_COLORS[0], COLORS["residual"]


def _box(ax, y: float, text: str, color: str, fill: str) -> None:
    ax.text(1.6, y, text, ha="center", va="center", fontsize=10,
            bbox=dict(boxstyle="round,pad=0.45", facecolor=fill, edgecolor=color, linewidth=1.4))


def layer_diagram(kind: str = "encoder", norm: str = "post", *, title: str):
    """A Transformer layer as boxes and arrows, top to bottom: each sublayer of ``kind``
    (``"sublayer"``: the article's one-sublayer diagram; ``"encoder"``; ``"decoder"``) with
    its skip connection into the sum ``+``, and a LayerNorm after the sum (``norm="post"``)
    or before the sublayer (``"pre"``)."""
    if kind not in _SUBLAYERS:
        raise ValueError(f"kind must be one of {list(_SUBLAYERS)}, got {kind!r}")
    if norm not in ("post", "pre"):
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    subs = _SUBLAYERS[kind]
    step = 3.1 if kind != "sublayer" else 2.2
    height = step * len(subs) + 1.6
    fig, ax = new_figure(width=4.8, height=0.62 * height + 0.5)
    with house_style():
        ax.set_xlim(-0.3, 3.6)
        ax.set_ylim(-0.2, height)
        ax.axis("off")
        y = height - 0.4
        ax.text(1.6, y, "input x" if kind == "sublayer" else "x (from the layer below)", ha="center",
                va="center", fontsize=10, style="italic")
        for sub in subs:
            split = y - 0.45
            _arrow(ax, (1.6, y - 0.25), (1.6, split - 0.3), "0.3")
            y = split - 0.75
            if kind != "sublayer" and norm == "pre":
                _box(ax, y, "LayerNorm", _NORM, "#efeefa")
                _arrow(ax, (1.6, y - 0.3), (1.6, y - 0.6), "0.3")
                y -= 0.95
            _box(ax, y, sub, _BRANCH, "#dbeeff")
            plus = y - 1.0
            _arrow(ax, (1.6, y - 0.3), (1.6, plus + 0.2), "0.3")
            ax.plot([1.6], [plus], marker="o", markersize=17, markerfacecolor="#e3f6e8", markeredgecolor=_SKIP,
                    markeredgewidth=1.6, zorder=3)
            ax.text(1.6, plus, "+", ha="center", va="center", fontsize=12, zorder=4)
            ax.plot([1.6, 3.3, 3.3], [split, split, plus], color=_SKIP, linewidth=1.6)
            _arrow(ax, (3.3, plus), (1.72, plus), _SKIP)
            ax.text(3.4, (split + plus) / 2, "skip: x", rotation=90, ha="left", va="center",
                    fontsize=10, color=_SKIP)
            y = plus - 0.2
            if kind == "sublayer":
                _arrow(ax, (1.6, y), (1.6, y - 0.45), "0.3")
                ax.text(1.6, y - 0.7, "x + SubLayer(x), on to LayerNorm", ha="center", va="center",
                        fontsize=10, style="italic")
            elif norm == "post":
                _arrow(ax, (1.6, y), (1.6, y - 0.45), "0.3")
                y -= 0.75
                _box(ax, y, "LayerNorm", _NORM, "#efeefa")
                y -= 0.05
        if kind != "sublayer":
            _arrow(ax, (1.6, y), (1.6, y - 0.45), "0.3")
            ax.text(1.6, y - 0.7, "to the next layer", ha="center", va="center", fontsize=10, style="italic")
        title_figure(fig, title)
    return fig


def _setting_style(result) -> dict:
    kind = "residual" if result.residual else "plain"
    return dict(color=COLORS[kind], linestyle="-" if result.norm == "Post-LN" else "--",
                label=f"{kind}, {result.norm}")


def embedding_gradients(results, *, title: str):
    """``||dL/dh_0||`` at initialisation against depth, one line per setting
    (:func:`helpers.experiments.transformer_depth.gradients_at_init`)."""
    fig, ax = new_figure(width=6.4, height=3.8)
    with house_style():
        settings = sorted({(r.norm, r.residual) for r in results}, key=lambda s: (not s[1], s[0]))
        for norm, residual in settings:
            rows = sorted((r for r in results if r.norm == norm and r.residual == residual), key=lambda r: r.depth)
            ax.plot([r.depth for r in rows], [r.embedding for r in rows], marker="o", **_setting_style(rows[0]))
        ax.set_yscale("log")
        ax.set_xticks(sorted({r.depth for r in results}))
    finish(ax, title=title, xlabel="layers in the stack", ylabel="gradient norm at the embeddings")
    return fig


def layer_profiles(results, *, title: str):
    """``||dL/dθ_l||`` at initialisation against the layer ``l`` (input to output), one line
    per setting of ``results``."""
    fig, ax = new_figure(width=6.4, height=3.8)
    with house_style():
        for r in results:
            ax.plot(np.arange(1, len(r.layers) + 1), r.layers, marker=".", **_setting_style(r))
        ax.set_yscale("log")
    finish(ax, title=title, xlabel="layer (1 = next to the embeddings)",
           ylabel="gradient norm of the layer's parameters")
    return fig


def _smooth(losses: np.ndarray, window: int = 10) -> np.ndarray:
    if not np.isfinite(losses).all():
        return losses
    kernel = np.ones(window) / window
    return np.convolve(np.pad(losses, (window - 1, 0), mode="edge"), kernel, mode="valid")


def _run_style(run) -> dict:
    kind = "residual" if run.residual else "plain"
    if run.warmup:
        return dict(color=OTHER_COLORS[1], linestyle="-")
    return dict(color=COLORS[kind], linestyle="-" if run.norm == "Post-LN" else "--")


def grid_curves(runs, *, title: str, best_only: bool = True):
    """Training loss (running mean over 10 steps) against the step, one panel per depth; for
    each setting (residual or plain, norm position, warm-up) the learning rate of lowest
    final loss when ``best_only``, else every run."""
    from ..experiments.transformer_depth import best

    depths = sorted({r.depth for r in runs})
    fig, axes = new_figure(ncols=len(depths), width=7.0, height=4.4 if len(depths) > 1 else 3.9, sharey=True)
    axes = np.atleast_1d(axes)
    with house_style():
        for i, (ax, depth) in enumerate(zip(axes, depths)):
            chosen = [r for r in runs if r.depth == depth]
            if best_only:
                chosen = [best(chosen, label=label) for label in dict.fromkeys(r.label for r in chosen)]
            for r in chosen:
                label = r.label if best_only else f"{r.label}, lr {r.lr:g}"
                ax.plot(np.arange(1, len(r.run.losses) + 1), _smooth(r.run.losses), label=label, **_run_style(r))
            ax.set_yscale("log")
            ax.axhline(np.log(8), color="0.5", linewidth=1, linestyle=":")
            finish(ax, title=f"{depth} layers", xlabel="step", ylabel="training loss (nats per token)",
                   legend=False)
            if i:  # the panels share the first one's y axis and its label
                ax.set_ylabel("")
        if len(depths) > 1:
            fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=10)
        else:
            axes[0].legend(fontsize=10, loc="lower left")
        title_figure(fig, title)
    return fig


def stack_frame(runs, *, title: str):
    """Every run of one depth and norm position: training loss against the step, and the
    test accuracy in the legend (an explorer's frame); the plain nets' learning rates are
    told apart by the line style."""
    fig, ax = new_figure(width=6.4, height=3.8)
    with house_style():
        rates = sorted({r.lr for r in runs if not r.residual})
        for r in runs:
            style = _run_style(r)
            if not r.residual:  # one norm position per frame: the line style tells the plain nets' rates apart
                style["linestyle"] = (":", "--", "-.", "-")[rates.index(r.lr) % 4]
            ax.plot(np.arange(1, len(r.run.losses) + 1), _smooth(r.run.losses),
                    label=f"{r.label}, lr {r.lr:g}: {100 * r.run.accuracy:.0f} % right", **style)
        ax.set_yscale("log")
        ax.axhline(np.log(8), color="0.5", linewidth=1, linestyle=":")
        ax.legend(fontsize=10, loc="lower left")
    finish(ax, title=title, xlabel="step", ylabel="training loss (nats per token)", legend=False)
    return fig


def lesion_maps(maps: dict, *, intact: dict, title: str):
    """One panel per net: the test accuracy with each sublayer zeroed (rows attention and
    FFN, columns the layers), in percent, coloured from 0 (dark) to 100 % (light). The
    first net fills the top row, the others share the bottom row."""
    names = list(maps)
    rest = max(len(names) - 1, 1)
    fig, grid = new_figure(ncols=rest, nrows=2 if len(names) > 1 else 1, width=7.0,
                           height=5.6 if len(names) > 1 else 3.0, squeeze=False)
    with house_style():
        if len(names) > 1:
            spec = grid[0, 0].get_gridspec()
            for ax in grid[0]:
                ax.remove()
            axes = [fig.add_subplot(spec[0, :]), *grid[1]]
        else:
            axes = [grid[0, 0]]
        for ax, name in zip(axes, names, strict=True):
            acc = 100 * np.asarray(maps[name])
            image = ax.imshow(acc, vmin=0, vmax=100, cmap="viridis", aspect="auto")
            for (row, col), value in np.ndenumerate(acc):
                ax.text(col, row, f"{value:.0f}", ha="center", va="center", fontsize=10,
                        color="white" if value < 60 else "black")
            ax.set_xticks(range(acc.shape[1]), [str(i + 1) for i in range(acc.shape[1])])
            ax.set_yticks([0, 1], ["attention", "FFN"])
            ax.grid(False)
            finish(ax, title=f"{name} (intact: {100 * intact[name]:.0f} %)", xlabel="layer", ylabel="sublayer",
                   legend=False)
        fig.colorbar(image, ax=axes, label="accuracy (%)", shrink=0.8)
        title_figure(fig, title)
    return fig


def position_accuracy(per_position: np.ndarray, intact: np.ndarray, *, title: str):
    """Accuracy at each output position with a lesion (bars) and intact (line): which
    positions of the reversed sequence a zeroed sublayer breaks."""
    fig, ax = new_figure(width=6.4, height=3.6)
    positions = np.arange(1, len(per_position) + 1)
    with house_style():
        ax.bar(positions, 100 * per_position, color=COLORS["residual"], alpha=0.8, label="with the lesion")
        ax.plot(positions, 100 * intact, color="0.2", marker="o", linestyle="none", label="intact")
        ax.axhline(100 / 8, color="0.5", linewidth=1, linestyle=":", label="chance")
        ax.set_ylim(0, 105)
        ax.set_xticks(positions)
    finish(ax, title=title, xlabel="output position", ylabel="tokens right (%)")
    return fig
