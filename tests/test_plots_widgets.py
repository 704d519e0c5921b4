import matplotlib.pyplot as plt
import numpy as np
import pytest

import helpers
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


def test_a_claims_only_run_draws_one_frame(monkeypatch):
    monkeypatch.setenv("COURSE_CLAIMS_ONLY", "1")
    assert list(widgets.render_frames(_draw, {"a": [1, 2], "b": ["x", "y"]})) == ["1|x"]


def test_static_html_is_self_contained():
    controls = {"a": [1, 2], "b": ["x"]}
    frames = widgets.render_frames(_draw, controls)
    page = widgets.static_html(controls, frames, alt="a line")
    assert page.count('type="radio"') == 3
    assert "data:image/png;base64," in page and 'alt="a line (a 1, b x)"' in page
    assert "http://" not in page and "https://" not in page
    # Each frame is in the page once (the first is the image's own src), shown at half its pixels.
    assert page.count("data:image/png;base64,") == len(frames)
    assert f'width="{plots.png_size(frames["1|x"])[0] // plots.SCALE}"' in page


def test_controls_are_labelled_in_words():
    controls = {"branch_scale": [1, 2]}
    page = widgets.static_html(controls, widgets.render_frames(lambda branch_scale: _draw(branch_scale, 0), controls),
                               alt="a line")
    assert "<legend>branch scale</legend>" in page and 'alt="a line (branch scale 1)"' in page


def test_figures_are_saved_at_twice_their_size_and_record_their_smallest_font():
    import io

    from PIL import Image

    from helpers.plots.style import FONT_KEY, smallest_font_pt

    fig = _draw(1, 2)
    fig.axes[0].annotate("tiny", (0.5, 0.5), fontsize=6)
    assert smallest_font_pt(fig) == 6
    data, shown = plots.figure_output(fig)
    width, height = plots.png_size(data)
    assert shown == {"width": width // 2, "height": height // 2}
    assert 0.9 * 7.0 * 100 <= shown["width"] <= 1.05 * 7.0 * 100  # the house width, 7 in at 100 dpi
    with Image.open(io.BytesIO(data)) as image:
        assert float(image.text[FONT_KEY]) == pytest.approx(6 * 200 / 72, abs=0.01)
    plt.close(fig)
    with pytest.raises(ValueError, match="PNG"):
        plots.png_size(b"GIF89a" + bytes(30))


def test_long_titles_wrap_to_the_figure_width():
    fig = _draw(1, 2)
    plots.title_figure(fig, "A finding stated in many words " * 4)
    data = plots.to_png(fig)
    assert plots.png_size(data)[0] <= 7.05 * 100 * plots.SCALE, "a long title must not widen the figure"


def test_explore_displays_widget_and_fallback(monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.delenv("COURSE_STATIC_BUILD", raising=False)
    widgets.explore(_draw, alt="a line", a=[1, 2], b=["x"])
    bundle, raw = shown[-1]
    assert raw
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(bundle)
    # Executed for the site or the sweep: the kernel-free page only, no widget (no comms to hang on).
    monkeypatch.setenv("COURSE_STATIC_BUILD", "1")
    widgets.explore(_draw, alt="a line", a=[1, 2], b=["x"])
    bundle, raw = shown[-1]
    assert raw and set(bundle) == {"text/html", "text/plain"} and 'class="course-explorer"' in bundle["text/html"]


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


def test_show_source_returns_highlighted_code():
    import pytest

    from helpers import show_source
    from helpers.models import Block

    code = show_source(Block.branch, Block.forward)
    assert "def branch" in code.data and "def forward" in code.data and "residual" in code.data
    with pytest.raises(TypeError, match="objs"):
        show_source(42)
    with pytest.raises(TypeError, match="at least one"):
        show_source()


def test_glue_converts_numbers_and_refuses_what_prose_cannot_show(monkeypatch):
    import numpy as np
    import pytest
    import torch

    import helpers.reporting as reporting

    stored = {}
    monkeypatch.setattr(reporting, "_myst_glue", lambda name, value, display: stored.update({name: value}))
    assert reporting.glue("a", np.float64(0.5)) is None  # nothing to print at the end of a cell
    reporting.glue("b", torch.tensor(3))
    reporting.glue("c", np.array([2.5]))
    assert stored == {"a": 0.5, "b": 3, "c": 2.5}
    assert type(stored["a"]) is float and type(stored["b"]) is int
    with pytest.raises(ValueError, match="finite"):
        reporting.glue("d", float("nan"))
    with pytest.raises(TypeError, match="number"):
        reporting.glue("e", "12")
    with pytest.raises(ValueError, match="single number"):
        reporting.glue("f", np.ones(3))
    with pytest.raises(ValueError, match="name"):
        reporting.glue("not valid", 1.0)
    # Several at once, by keyword; each is checked like a single one.
    reporting.glue(g=1.5, h=np.int64(2))
    assert stored["g"] == 1.5 and stored["h"] == 2
    with pytest.raises(ValueError, match="finite"):
        reporting.glue(i=1.0, j=float("inf"))
    assert "i" not in stored, "nothing is stored when one value is refused"
    with pytest.raises(TypeError, match="name=value"):
        reporting.glue()
    with pytest.raises(TypeError, match="name and a value"):
        reporting.glue("k")
    with pytest.raises(ValueError, match="twice"):
        reporting.glue("k", 1.0, k=2.0)


def test_house_style_keeps_the_interactive_flag_that_jupyter_sets():
    # The inline backend turns interactive mode on inside the first figure's style context;
    # if the context undid that, no later figure in the notebook would be displayed.
    import matplotlib

    from helpers.plots import house_style

    matplotlib.interactive(False)
    try:
        with house_style():
            matplotlib.interactive(True)
        assert matplotlib.is_interactive()
    finally:
        matplotlib.interactive(False)


def test_imagenet_history_marks_single_models_and_kinds():
    from helpers.published import IMAGENET_TOP5

    fig = plots.imagenet_history(IMAGENET_TOP5, title="A finding")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(IMAGENET_TOP5) and "(single model, validation)" in labels[1]
    hatched = [p.get_hatch() for p in ax.patches]
    assert hatched.count("///") == sum(not e.ensemble for e in IMAGENET_TOP5)
    with pytest.raises(ValueError, match="empty"):
        plots.imagenet_history([], title="A finding")
    plt.close(fig)


def test_norm_order_by_depth_draws_profiles_and_the_last_layer():
    from helpers.measure.gradients import GradientProfile

    def profile(values):
        values = np.asarray(values, dtype=float)
        return GradientProfile(tuple(f"layer {i}" for i in range(len(values))), values, values, 1.0)

    data = {n: {"Post-LN": profile(np.ones(n)), "Pre-LN": profile(np.full(n, 0.5))} for n in (2, 4)}
    fig = plots.norm_order_by_depth(data, title="A finding")
    left, right = fig.axes[:2]
    assert len(left.get_lines()) == 4 and len(right.get_lines()) == 4  # measured + guide per order
    assert left.get_title() and right.get_title()
    with pytest.raises(ValueError, match="two depths"):
        plots.norm_order_by_depth({2: data[2]}, title="A finding")
    plt.close(fig)


def test_block_diagrams_draw_a_plain_and_a_residual_block():
    fig = helpers.plots.block_diagrams(title="A skip adds the input back")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["plain block", "residual block"]
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts.count("+") == 1 and "identity: x" in texts  # only the residual block has the skip
    plt.close(fig)
    chain = helpers.plots.block_diagrams(title="t", steps=("norm", "ReLU", "linear"), after=None, output="next layer")
    texts = [t.get_text() for ax in chain.axes for t in ax.texts]
    assert texts.count("next layer") == 2 and "norm" in texts and "ReLU" in texts
    plt.close(chain)
    with pytest.raises(ValueError, match="steps must be three strings"):
        helpers.plots.block_diagrams(title="t", steps=("ReLU",))


def test_lesion_frame_crosses_out_the_deleted_blocks():
    fig = plots.lesion_frame(4, (1, 2), {"plain": 0.6, "residual": 0.05}, {"plain": 0.02, "residual": 0.01})
    top, bottom = fig.axes
    assert [t.get_text() for t in top.texts] == ["1", "x", "x", "4"]
    assert "2 of 4 deleted" in top.get_title()
    assert [round(b.get_width(), 6) for b in bottom.containers[1]] == [60.0, 5.0]
    plt.close(fig)


def test_chapter_3_figures_draw_what_they_say():
    import torch

    from helpers.measure.concat import join_costs
    from helpers.measure.streams import residual_stream

    fig = plots.correction_picture([0.5, 0.5], [0.3, -0.2])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "H = x + F(x) = [0.80, 0.30]" in texts and "F(x) = [+0.30, \u22120.20]" in texts
    assert "‖F‖ / ‖x‖ = 0.51" in fig.axes[0].get_title()
    plt.close(fig)
    large = plots.correction_picture([0.5, 0.5], [-0.6, 0.9])
    assert large.axes[0].get_title().startswith("F(x) outweighs x")
    plt.close(large)
    with pytest.raises(ValueError, match="2-D vectors"):
        plots.correction_picture([1, 2, 3], [0, 0])
    records = {n: residual_stream(3, 8, 16, norm=n, generator=torch.Generator().manual_seed(0))
               for n in ("none", "pre", "post")}
    fig = plots.stream_variance(records, title="The variance doubles")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.get_lines()) == 3 + 2 + 1  # curves, predictions, legend key
    plt.close(fig)
    out = {"LayerNorm": [("mates A", np.zeros((4, 2))), ("mates B", np.ones((4, 2)))],
           "BatchNorm": [("a", np.ones((4, 2)))]}
    fig = plots.batch_mate_outputs(out, title="Only BatchNorm listens to the batch")
    assert [ax.get_title() for ax in fig.axes] == ["LayerNorm", "BatchNorm"]
    plt.close(fig)
    fig = plots.join_costs_figure(join_costs(8, 5, join="add"), join_costs(8, 5), title="Concat explodes")
    assert fig.axes[0].get_lines()[1].get_ydata()[-1] == 8 * 2 ** 5
    plt.close(fig)


def test_branch_ratios_by_block_draws_one_bar_per_block_and_rejects_bad_input():
    from helpers.plots.branches import branch_ratios_by_block

    ratios = np.array([[0.5, 0.2, 0.3], [0.7, 0.1, 0.3]])
    fig = branch_ratios_by_block(ratios, title="Three blocks")
    ax = fig.axes[0]
    heights = [bar.get_height() for bar in ax.patches]
    assert np.allclose(heights, ratios.mean(axis=0))
    assert ax.get_yscale() == "linear"
    plt.close(fig)
    # ratios spanning more than a factor of 30 go on a log axis, so small branches stay visible
    fig = branch_ratios_by_block([1.0, 0.001, 0.5], title="One net")
    assert fig.axes[0].get_yscale() == "log" and len(fig.axes[0].patches) == 3
    plt.close(fig)
    with pytest.raises(ValueError, match="ratios"):
        branch_ratios_by_block([], title="none")
    with pytest.raises(ValueError, match="non-negative"):
        branch_ratios_by_block([0.1, -1.0], title="negative")
    with pytest.raises(TypeError, match="ratios"):
        branch_ratios_by_block(0.5, title="a number")
