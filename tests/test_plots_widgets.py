import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots, widgets


def _draw(a, b):
    fig, ax = plots.new_figure()
    ax.plot([0, 1], [a, b])
    plots.finish(ax, title=f"{a} {b}", xlabel="x (units)", ylabel="y (units)")
    return fig


def test_finish_insists_on_title_and_labels():
    fig, ax = plots.new_figure()
    with pytest.raises(ValueError, match="xlabel"):
        plots.finish(ax, title="A finding", xlabel="", ylabel="y")
    plots.finish(ax, title="A finding", xlabel="x", ylabel="y")
    assert ax.get_title() == "A finding" and ax.get_xlabel() == "x"
    plt.close(fig)


def test_band_checks_shapes():
    fig, ax = plots.new_figure()
    plots.band(ax, np.arange(3), np.ones((2, 3)), label="a", color="k")
    with pytest.raises(ValueError, match="runs"):
        plots.band(ax, np.arange(4), np.ones((2, 3)), label="a", color="k")
    plt.close(fig)


def test_render_frames_covers_every_combination():
    frames = widgets.render_frames(_draw, {"a": [1, 2], "b": ["x", "y", "z"]})
    assert sorted(frames) == sorted(f"{a}|{b}" for a in (1, 2) for b in "xyz")
    assert all(png.startswith(b"\x89PNG") for png in frames.values())


def test_static_html_is_self_contained():
    controls = {"a": [1, 2], "b": ["x"]}
    page = widgets.static_html(controls, widgets.render_frames(_draw, controls), alt="a line")
    assert page.count('type="radio"') == 3
    assert "data:image/png;base64," in page and 'alt="a line (1|x)"' in page
    assert "http://" not in page and "https://" not in page


def test_explore_displays_widget_and_fallback(monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "display", lambda obj, raw=False: shown.append((obj, raw)))
    widgets.explore(_draw, alt="a line", a=[1, 2], b=["x"])
    bundle, raw = shown[-1]
    assert raw
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(bundle)


def test_explore_rejects_bad_input():
    with pytest.raises(ValueError, match="alt"):
        widgets.explore(_draw, alt=" ", a=[1])
    with pytest.raises(ValueError, match="control"):
        widgets.render_frames(_draw, {})
    with pytest.raises(ValueError, match="b"):
        widgets.render_frames(_draw, {"a": [1], "b": []})
    with pytest.raises(TypeError, match="draw"):
        widgets.render_frames("draw", {"a": [1]})
    with pytest.raises(ValueError, match="combinations"):
        widgets.render_frames(_draw, {"a": list(range(8)), "b": list(range(8))})
