"""The book's own Sphinx extensions (``book/_ext``), unit by unit; the site tests check them built."""

from __future__ import annotations

import base64

import course_a11y
import course_explorers
import course_icons
import course_pages
import course_solutions
import nbformat

from tools.toc import ROOT

PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)


def test_icon_code_points_are_read_from_the_theme_script_and_only_used_icons_get_css():
    script = 'var a={"magnifying-glass":[512,512,[128269,"search"],"f002","M0"],sun:[512,512,[9728],"f185","M1"]}'
    points = course_icons.code_points(script)
    assert points == {"magnifying-glass": "f002", "search": "f002", "sun": "f185"}
    css = course_icons.icon_css({"sun", "solid", "lg"}, points)
    assert '.fa-sun::before{content:"\\f185"}' in css
    assert "magnifying" not in css and "solid" not in css, "only icons the pages use, and only icons"


def test_the_icon_script_tag_is_recognised():
    tag = '\n  <script defer src="../_static/scripts/fontawesome.js?digest=abc"></script>'
    assert course_icons.SCRIPT_TAG.sub("", f"<head>{tag}</head>") == "<head></head>"


def test_exploration_frames_become_files_named_by_content(tmp_path):
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    body = (f'<p><img src="{url}"></p><div class="course-explorer" id="e"><img src="{url}">'
            f'<script>const frames = {{"a": "{url}", "b": "{url}"}};</script>\n</div>')
    out = course_explorers.frames_to_files(body, tmp_path, lambda target: "../" + target)
    files = list((tmp_path / "_images").iterdir())
    assert len(files) == 1 and files[0].read_bytes() == PNG, "equal frames are stored once"
    assert out.count(f"../_images/{files[0].name}") == 3
    assert out.startswith(f'<p><img src="{url}">'), "images outside an exploration are left alone"


def test_chinese_runs_are_marked_and_the_rest_is_left_as_text():
    parts = course_pages.chinese_spans("section 问题的根源：梯度消失 (the root)")
    assert [p.astext() for p in parts] == ["section ", '<span lang="zh">问题的根源：梯度消失</span>', " (the root)"]
    assert [p.astext() for p in course_pages.chinese_spans("no Chinese")] == ["no Chinese"]
    quoted = course_pages.chinese_spans('核心洞见：不学整体，只学"差值"')
    assert [p.astext() for p in quoted] == ['<span lang="zh">核心洞见：不学整体，只学&quot;差值</span>', '"']


def test_sidebar_toggles_get_the_name_of_their_chapter():
    """axe-core's "summary-name": the theme's <summary> holds only a decorative chevron."""
    html = ('<ul><li class="toctree-l1 has-children"><a class="reference internal" href="ch1/index.html">'
            '1. Why  residuals</a><details><summary><span class="toctree-toggle" role="presentation">'
            '<i class="fa-solid fa-chevron-down"></i></span></summary><ul><li><a href="x.html">x</a></li>'
            '</ul></details></li><li><details><summary><p class="caption">Named</p></summary></details></li></ul>')
    labelled = course_a11y.label_toggles(html)
    assert labelled.count("aria-label") == 1
    assert 'aria-label="Sections of 1. Why residuals"' in labelled
    assert course_a11y.label_toggles("<ul><li>no toggles</li></ul>") == "<ul><li>no toggles</li></ul>"


def test_bibliography_entries_are_items_of_their_list():
    body = '<div role="list" class="citation-list">\n<div class="citation" id="id1" role="doc-biblioentry">x</div>'
    fixed = course_a11y.list_entries(body)
    assert 'role="listitem"' in fixed and "doc-biblioentry" not in fixed and 'role="list"' in fixed


def test_the_syllabus_counts_each_sections_workload_and_links_from_the_notebooks():
    import course_syllabus

    from tools.classroom import find_exercises
    from tools.toc import toc_notebooks

    rows = course_syllabus.sections(ROOT)
    paths = toc_notebooks(ROOT)
    assert [r["path"] for r in rows] == paths
    for row in rows:
        exercises = find_exercises(nbformat.read(row["path"], as_version=4))
        assert row["exercise_minutes"] == sum(e.minutes for e in exercises) > 0
        assert row["points"] == sum(e.points for e in exercises) and 2 < row["reading_minutes"] < 60
        assert all(j < row["index"] for j in row["builds_on"]) and all(j > row["index"] for j in row["linked_from"])
    by_name = {r["path"].name: r for r in rows}
    # ch1/02 links to ch1/01 ("the experiment of the previous section"), so 01 is linked from 02
    first, second = by_name["01_degradation.ipynb"], by_name["02_learning_rates.ipynb"]
    assert first["index"] in second["builds_on"] and second["index"] in first["linked_from"]


def test_a_class_site_withholds_each_predictions_measurement_and_nothing_else():
    import datetime

    import pytest
    from docutils import nodes

    from tools.site_without_solutions import withheld_message

    def cell(*classes):
        return nodes.container("", nodes.container("", nodes.literal_block("", "code"), classes=["cell_input"]),
                               nodes.container("", nodes.paragraph("", "measured 1.02"), classes=["cell_output"]),
                               classes=["cell", *classes])

    document = nodes.section("", cell("tag_hide-output"), cell())
    assert course_solutions.withhold_measurements(document, "withheld") == 1
    measured, other = document.children
    assert [c.astext() for c in measured.children] == ["code", "withheld"] and "measured 1.02" in other.astext()
    day = datetime.date(2026, 12, 15)
    assert withheld_message("2026-12-15", today=day - datetime.timedelta(days=1)).startswith(
        "The measurement is withheld until 15 December 2026")
    assert withheld_message("2026-12-15", today=day) == "" and withheld_message(None) == ""
    assert withheld_message("always") == "The measurement is withheld on this class's site."
    for bad in ("soon", "15/12/2026"):
        with pytest.raises(ValueError, match="withhold must be"):
            withheld_message(bad)
