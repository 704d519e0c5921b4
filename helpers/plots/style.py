"""One house style for every figure of the course.

Every figure goes through :func:`finish`, which insists on a title (state the finding,
not the topic) and labelled axes with units, so a reader understands it at a glance.
Plain nets are always orange, residual nets always green.
"""

from __future__ import annotations

import io
import struct
import textwrap
from contextlib import contextmanager

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

COLORS = {"plain": "#d95f02", "residual": "#1b9e77"}
"""Colour of each kind of net, used by every figure."""

OTHER_COLORS = ("#7570b3", "#e7298a", "#66a61e", "#e6ab02")
"""Colours for lines that are neither a plain nor a residual net (e.g. Post-LN vs Pre-LN)."""

DEPTH_STYLES = ("-", "--", ":", "-.")


def color_for(label: str, index: int) -> str:
    """The colour of a line labelled ``label``: the kind's colour if the label starts with
    "plain" or "residual", else the ``index``-th of :data:`OTHER_COLORS`."""
    kind = next((k for k in COLORS if label.startswith(k)), None)
    return COLORS[kind] if kind else OTHER_COLORS[index % len(OTHER_COLORS)]

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.figsize": (7.0, 3.6),
    "font.size": 11,
    "axes.titlesize": 11.5,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
}


@contextmanager
def house_style():
    """Context in which matplotlib uses the course's style.

    ``plt.style.context`` restores *every* rc setting on exit, including the interactive
    flag that Jupyter's inline backend switches on when the first figure is made; keep
    that flag, or no later figure would be displayed.
    """
    with plt.style.context(STYLE):
        yield
        interactive = matplotlib.is_interactive()
    matplotlib.interactive(interactive)


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 7.0, height: float = 3.6, **kwargs):
    """A figure and its axes in the house style (``ncols`` x ``nrows`` panels)."""
    with house_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)
    return fig, axes


def title_figure(fig, title: str):
    """The figure's own title, above all its panels (wrapped to the figure's width when it is
    saved, :func:`fit_titles`)."""
    with house_style():
        fig.suptitle(title, fontweight="bold", fontsize=matplotlib.rcParams["axes.titlesize"])
    return fig


def fit_titles(fig) -> None:
    """Wrap each panel's title to the panel's width and the figure's title to the figure's,
    as laid out, so that no title widens its figure beyond the page's column. A title that
    fits keeps its own line breaks; one that does not is rewrapped as one paragraph, more
    narrowly until its measured width fits."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    boxes = [(ax.title, ax.get_window_extent(renderer).width) for ax in fig.axes if ax.get_visible()]
    boxes += [(text, fig.bbox.width) for text in fig.texts]
    for text, room in boxes:
        words = " ".join(text.get_text().split())
        chars = len(words)
        while chars > 20 and text.get_window_extent(renderer).width > room:
            chars = int(chars * 0.9)
            text.set_text(textwrap.fill(words, chars))


def finish(ax, *, title: str, xlabel: str, ylabel: str, legend: bool = True):
    """Title and label ``ax``; refuse an empty title or axis label."""
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty string: every figure says what it shows")
    with house_style():
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend()
    return ax


def band(ax, x, runs, *, label: str, color: str, linestyle: str = "-", marker: str | None = None):
    """Plot the mean of ``runs`` (rows = seeds) as a line and their min-max spread as a band."""
    runs = np.atleast_2d(np.asarray(runs, dtype=float))
    x = np.asarray(x)
    if runs.shape[1] != x.shape[0]:
        raise ValueError(f"runs must have {x.shape[0]} columns to match x, got shape {runs.shape}")
    with house_style():
        ax.plot(x, runs.mean(axis=0), color=color, linestyle=linestyle, marker=marker, label=label)
        if runs.shape[0] > 1:
            ax.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=color, alpha=0.18, linewidth=0)
    return ax


SCALE = 2
"""Image pixels per CSS pixel in every saved figure, so figures stay sharp on high-density
screens; the page shows each image at 1/SCALE of its pixel size."""

MIN_FONT_PT = 10.0
"""The smallest font a figure may use. At the house width (7 in, 700 CSS px) it shows at
14 CSS px in a desktop column and about 6.8 px in a phone's (342 px)
(``tools/site_audit.py`` checks each figure as displayed)."""

FONT_KEY = "course:min-font-px"
"""PNG text chunk holding the smallest font of the figure, in image pixels."""


def smallest_font_pt(fig) -> float:
    """The smallest font size (pt) of any visible, non-empty text in ``fig``."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=MIN_FONT_PT)


def to_png(fig, *, close: bool = True) -> bytes:
    """Render ``fig`` to PNG at :data:`SCALE` times its display size (``bbox_inches="tight"``,
    titles fitted to their panels, :func:`fit_titles`) and (by default) close it. The PNG
    records its smallest font in image pixels (``smallest_font_pt x dpi / 72``) under
    :data:`FONT_KEY`."""
    fit_titles(fig)
    dpi = fig.get_dpi() * SCALE
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.05,
                metadata={FONT_KEY: f"{smallest_font_pt(fig) * dpi / 72:.2f}"})
    if close:
        plt.close(fig)
    return buffer.getvalue()


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels of PNG ``data``, from its header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data must be a PNG image")
    return struct.unpack(">II", data[16:24])


def shown_size(data: bytes) -> tuple[int, int]:
    """(width, height) in CSS pixels at which a page shows PNG ``data`` saved by
    :func:`to_png`: its pixels divided by :data:`SCALE`."""
    width, height = png_size(data)
    return width // SCALE, height // SCALE


def figure_output(fig) -> tuple[bytes, dict]:
    """A figure as a notebook output: its PNG (:func:`to_png`, left open for pyplot to close)
    and the display size (:func:`shown_size`), as IPython's ``retina`` format gives it."""
    data = to_png(fig, close=False)
    width, height = shown_size(data)
    return data, {"width": width, "height": height}


def install_figure_format() -> bool:
    """Make IPython show matplotlib figures with :func:`figure_output`; False outside IPython.

    The inline backend registers its own PNG formatter when it is first loaded, so it is
    loaded first and then replaced."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover (IPython comes with ipykernel)
        return False
    shell = get_ipython()
    if shell is None:
        return False
    try:
        import matplotlib_inline.backend_inline  # noqa: F401 (registers the inline formatters once)
    except ImportError:  # pragma: no cover
        pass
    from matplotlib.figure import Figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, figure_output)
    return True
