"""The built site: warnings are errors, nothing from a CDN, no debris, and every page works in a browser."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tools.execute import executed_notebook
from tools.plain_markdown import glued_text, glued_values
from tools.site_audit import MIN_FIGURE_TEXT_PX, PAGE_BUDGET_BYTES, WIDTHS, audit_page, serve
from tools.toc import ROOT, toc_files, toc_notebooks

pytestmark = pytest.mark.slow

PAGES = [str(p.relative_to(ROOT).with_suffix(".html")) for p in toc_files(ROOT)]
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)
CDN = re.compile(r"unpkg\.com|jsdelivr|cdnjs|googleapis|polyfill\.io|requirejs", re.I)


def _html(site: Path, page: str) -> str:
    return (site / page).read_text(encoding="utf-8")


def _shows_glued(site: Path, page: str, key: str) -> None:
    """The value the page's run glued under ``key`` is on the page, formatted as its prose
    asks ({glue:text}`key:spec`): checked by key, so a copy edit cannot break it."""
    path = ROOT / Path(page).with_suffix(".ipynb")
    prose = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    use = re.search(rf"\{{glue:text\}}`{re.escape(key)}(?::([^`]*))?`", prose)
    assert use, f"{page} does not glue {key!r} into its prose"
    shown = glued_text(glued_values(executed_notebook(path))[key], use.group(1) or "")
    assert re.search(rf"<span[^>]*>\s*{re.escape(shown)}\s*</span>", _html(site, page)), (page, key, shown)


def test_every_toc_page_is_built(site):
    for page in PAGES:
        assert (site / page).exists(), page


def test_the_site_build_executes_no_notebook_again(executed, site_build):
    """One execution per notebook and seed: the site takes every notebook from the cache. (Every
    test of the site build is in this file: pytest's workers each build a session's fixtures,
    so a second file would build the site a second time.)"""
    if any(executed.values()):
        pytest.skip("a notebook failed, so the site build had to execute it again")
    log = site_build.stdout + site_build.stderr
    again = re.findall(r"Executing notebook using .*", log)
    assert not again, f"the site build executed notebooks again: {again}"
    assert log.count("Using cached notebook") >= len(toc_notebooks(ROOT)), log[-3000:]


def test_no_page_loads_anything_from_a_cdn(site):
    for path in site.rglob("*.html"):
        hits = EXTERNAL.findall(path.read_text(encoding="utf-8"))
        assert not hits, f"{path.relative_to(site)} loads from another host: {hits[:3]}"
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", path.read_text(encoding="utf-8"), re.S)
        named = [m.group(0) for body in scripts for m in [CDN.search(body)] if m]
        assert not named, f"{path.relative_to(site)} has scripts naming a CDN: {named[:3]}"
    assert (site / "_static" / "mathjax" / "tex-chtml.js").exists(), "MathJax must be bundled"


LITERAL = re.compile(r'<code class="docutils literal[^"]*">.*?</code>', re.S)


def test_pages_carry_no_debris(site):
    for page in PAGES:
        text = _html(site, page)
        for needle in ("it/s]", "Traceback (most recent call last)", "AssertionError",
                       'type="application/vnd.jupyter.widget-view+json"', "Error in glue"):
            assert needle not in text, f"{page} contains {needle!r}"
        # An unrendered glue role shows up as prose; the syntax quoted as inline code (as the API
        # page does, documenting helpers.reporting.glue) is not debris.
        prose = LITERAL.sub("", text)
        for needle in ("{glue", "glue:text"):
            assert needle not in prose, f"{page} shows an unrendered glue role ({needle!r})"


def test_every_figure_cell_shows_its_figure_with_alt_text(site):
    """Each cell tagged as a figure (``mystnb.figure`` metadata) must show an image in its page."""
    import nbformat

    for path in toc_files(ROOT):
        if path.suffix != ".ipynb":
            continue
        nb = nbformat.read(path, as_version=4)
        figures = [c for c in nb.cells if c.get("metadata", {}).get("mystnb", {}).get("figure")]
        page = str(path.relative_to(ROOT).with_suffix(".html"))
        html = _html(site, page)
        for cell in figures:
            meta = cell.metadata["mystnb"]
            name = meta["figure"]["name"]
            match = re.search(rf'<figure[^>]*id="{re.escape(name)}".*?</figure>', html, re.S)
            assert match, f"{page}: figure {name!r} is missing"
            assert re.search(r'<img[^>]*src=', match.group(0)), f"{page}: figure {name!r} has no image"
            assert 'alt="' in match.group(0), f"{page}: figure {name!r} has no alt text"


def test_every_page_names_its_licences_and_the_version_it_was_built_from(site):
    import subprocess

    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    for page in PAGES:
        text = _html(site, page)
        assert "creativecommons.org/licenses/by-sa/4.0" in text and "opensource.org/license/mit" in text, page
        assert f"Built from the course's version {version} (commit {commit})" in text, page


def test_glued_numbers_and_solutions_are_rendered(site):
    text = _html(site, "book/ch1/01_degradation.html")
    assert "glue:text" not in text and "{glue" not in text
    _shows_glued(site, "book/ch1/01_degradation.html", "plain8_train")
    assert "dropdown" in text and "solution" in text.lower()
    assert 'class="course-explorer"' in text


def test_the_ledger_lists_every_claim_and_links_to_its_cell(site):

    from course_ledger import VERDICTS, read_inventory, read_ledger, summary, verdict_label

    from tools.toc import toc_notebooks

    entries = read_ledger(toc_notebooks(ROOT))
    counts = summary(entries)
    text = _html(site, "book/appendix/ledger.html")
    chapters = {n: _html(site, f"book/appendix/ledger_ch{n}.html") for n in range(1, 6)}
    assert f"{counts['claims']} claims</strong>: {counts['holds']} hold as stated" in text
    for verdict in VERDICTS:  # the summary table's counts jump to the claims with each verdict
        assert f'id="{verdict_label(verdict)}"' in text, f"no anchor for the verdict {verdict!r}"
    for claim in read_inventory().claims:  # every source claim has its line, and its anchor on its chapter's page
        assert f'ledger_ch{claim.chapter}.html#{claim.label}"' in text, f"the overview does not link {claim.id}"
        assert f'id="{claim.label}"' in chapters[claim.chapter], f"source claim {claim.id} has no anchor"
    for e in entries:
        page = str(e.notebook.relative_to(ROOT).with_suffix(".html"))
        rows = chapters[e.chapter]
        assert f'id="{e.row_label}"' in rows, f"ledger row {e.id} has no anchor on its chapter's page"
        assert f"{e.id} " in rows, f"ledger row {e.id} is missing"
        link = re.search(rf'href="([^"]*{re.escape(page.split("/")[-1])}#{e.label})"', rows)
        assert link, f"ledger row {e.id} does not link to its cell on {page}"
        assert f'id="{e.label}"' in _html(site, page), f"{page} has no anchor {e.label} for claim {e.id}"


@pytest.fixture(scope="module")
def server(site):
    with serve(site) as url:
        yield url


@pytest.mark.browser
@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("page", PAGES)
def test_page_in_a_browser(browser, server, page, width):
    """What ``tools/site_audit.py`` measures, within its budgets, on a desktop and a phone: no
    console error, no request to another host, every image loaded and with alt text, math
    typeset, no notebook error or unrendered glue shown; nothing cut off at the column's edge;
    whatever scrolls sideways shows a scroll cue (and at the desktop width no code cell
    scrolls at all); every figure's smallest text, as shown, at least the agreed minimum; a
    first view of the page within the weight budget; no serious or critical accessibility
    violation (axe-core, light and dark); and the page readable in dark mode."""
    report = audit_page(browser, server, page, width)
    assert not report["errors"], f"console errors on {page}: {report['errors']}"
    assert not report["foreign"], f"{page} requested other hosts: {report['foreign'][:5]}"
    assert not report["broken"], f"images that did not load on {page}: {report['broken']}"
    assert not report["no_alt"], f"images without alt text on {page}: {report['no_alt']}"
    assert report["math_errors"] == 0, f"{page}: {report['math_errors']} formulas did not typeset"
    assert not report["faults"], f"{page} shows {report['faults']}"
    assert report["page_px"] <= report["viewport_px"], f"{page} is wider than the screen at {width}"
    assert not report["cut"], f"{page} at {width}: cut off at the column's edge: {report['cut'][:3]}"
    silent = [s for s in report["scrolling"] if not s["cue"]]
    assert not silent, f"{page} at {width}: scrolls with no cue: {silent[:3]}"
    if width == "desktop":
        code = [s for s in report["scrolling"] if s["code_input"]]
        assert not code, f"{page}: code cells wider than the column at 1280 px: {code[:3]}"
    unknown = [i["alt"] for i in report["images"] if i["text_px"] is None]
    assert not unknown, f"{page}: figures that do not record their smallest font: {unknown}"
    small = [(i["alt"], round(i["text_px"], 1)) for i in report["images"]
             if i["text_px"] < MIN_FIGURE_TEXT_PX[width]]
    assert not small, f"{page} at {width}: figure text under {MIN_FIGURE_TEXT_PX[width]} px: {small}"
    for theme, violations in report["axe"].items():
        assert not violations, f"{page} at {width}, {theme}: axe-core finds {violations}"
    assert report["total_bytes"] <= PAGE_BUDGET_BYTES, (
        f"{page}: a first view transfers {report['total_bytes'] / 1e6:.2f} MB {report['weight']}")
    # Dark mode (the same page, switched): the prose and the course's own outputs (explorations,
    # checker feedback) have light text on a dark background, WCAG contrast at least 4.5, rather
    # than the light boxes myst-nb gives foreign HTML.
    dark = report["dark"]
    if page == "book/ch1/08_why_it_works.html":
        assert len(dark["own"]) >= 3, "this page has explorations and checker feedback to check"
    for name, text, background in [["prose", *dark["prose"]], *dark["own"]]:
        light, darker = sorted((_luminance(text), _luminance(background)), reverse=True)
        assert _luminance(background) < 0.1, f"{page}: {name} sits on a light box in dark mode ({background})"
        assert (light + 0.05) / (darker + 0.05) >= 4.5, f"{page}: {name}: text {text} on {background}"


@pytest.mark.browser
def test_the_accessibility_check_finds_what_it_should(browser):
    """The page checks' axe-core run reports a serious or critical violation it is shown: an
    image without alt text, a button without a name, grey text on white."""
    from tools.site_audit import accessibility

    tab = browser.new_page()
    tab.set_content('<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
                    '<img src="data:image/png;base64,iVBORw0KGgo="><button></button>'
                    '<p style="color:#ccc;background:#fff">faint</p></main></body></html>')
    found = {v["rule"] for v in accessibility(tab)}
    assert {"image-alt", "button-name", "color-contrast"} <= found, found
    assert {v["rule"] for v in accessibility(tab, only=["color-contrast"])} == {"color-contrast"}
    tab.close()


@pytest.mark.browser
def test_static_explorer_switches_frames_without_a_kernel(browser, server):
    tab = browser.new_page()
    tab.goto(f"{server}/book/ch1/01_degradation.html", wait_until="networkidle")
    explorer = tab.locator(".course-explorer").first
    image = explorer.locator("img")
    before = image.get_attribute("src")
    explorer.locator("input[type=radio]").nth(1).check()
    after, alt = image.get_attribute("src"), image.get_attribute("alt")
    tab.close()
    assert after != before and after.endswith(".png"), "frames are image files, fetched when chosen"
    assert "(seed 1)" in alt


CHAPTER_2 = ["book/ch2/01_backprop_by_hand.html", "book/ch2/02_scrambled_signals.html",
             "book/ch2/03_shattered_gradients.html", "book/ch2/04_walking_in_the_dark.html"]
CHAPTER_3 = ["book/ch3/01_a_correction.html", "book/ch3/02_switched_off.html", "book/ch3/03_add_or_concat.html",
             "book/ch3/04_branch_scale.html", "book/ch3/05_why_norm_follows_add.html"]
CHAPTER_4 = ["book/ch4/01_inside_the_layer.html", "book/ch4/02_the_plus_one_path.html",
             "book/ch4/03_deep_stacks.html", "book/ch4/04_twenty_four_layers.html",
             "book/ch4/05_ignore_a_layer.html", "book/ch4/06_warm_up_under_adam.html"]
CHAPTER_5 = ["book/ch5/01_incremental_explosion.html", "book/ch5/02_stable_propagation.html",
             "book/ch5/03_small_enough.html", "book/ch5/04_deepnorm.html", "book/ch5/05_adam.html"]


@pytest.mark.browser
@pytest.mark.parametrize("page", CHAPTER_2 + CHAPTER_3 + CHAPTER_4 + CHAPTER_5)
def test_each_sections_explorer_switches_frames_without_a_kernel(browser, server, page):
    tab = browser.new_page()
    tab.goto(f"{server}/{page}", wait_until="networkidle")
    explorer = tab.locator(".course-explorer").first
    image = explorer.locator("img")
    before = image.get_attribute("src")
    explorer.locator("input[type=radio]").last.check()
    after, alt = image.get_attribute("src"), image.get_attribute("alt")
    tab.close()
    assert after != before and after.endswith(".png"), f"{page}: the explorer's frames do not switch"
    assert alt, f"{page}: an explorer frame has no alt text"


def _shows_figures_explorer_and_solutions(site, chapter: int, figures: dict) -> None:
    """Each page of ``figures`` ({page: [figure names]}) shows those figures, an explorer and a hidden solution."""
    for page, names in figures.items():
        text = _html(site, f"book/ch{chapter}/{page}.html")
        for name in names:
            assert f'id="{name}"' in text, (page, name)
        assert 'class="course-explorer"' in text and "Solution to" in text, page


def test_chapter_3_shows_its_measurements(site):
    """Chapter 3's signature figures, glued numbers and hidden answers, as a reader sees them."""
    figures = {"01_a_correction": ["fig-bank-correction"], "02_switched_off": ["fig-switched-off"],
               "03_add_or_concat": ["fig-join-costs", "fig-joins-compared"],
               "04_branch_scale": ["fig-scale-sweep", "fig-divergence-map"],
               "05_why_norm_follows_add": ["fig-stream-variance", "fig-batch-mates"]}
    _shows_figures_explorer_and_solutions(site, 3, figures)
    concat = _html(site, "book/ch3/03_add_or_concat.html")
    assert re.search(r"has\s+<span[^>]*>\s*2,097,152\s*</span>", concat), "the width after 12 concatenations"
    assert "course-model-answer" in concat, "the discussion's model answer, in a dropdown"
    _shows_glued(site, "book/ch3/05_why_norm_follows_add.html", "var_factor")


def test_chapter_4_shows_its_measurements(site):
    """Chapter 4's diagram, signature figures, glued numbers and hidden answers, as a reader sees them."""
    figures = {"01_inside_the_layer": ["fig-sublayer-diagram"],
               "02_the_plus_one_path": ["fig-embedding-gradients", "fig-rank-collapse", "fig-xiong-gradients"],
               "03_deep_stacks": ["fig-grid-curves"], "04_twenty_four_layers": ["fig-grid-24"],
               "05_ignore_a_layer": ["fig-lesion-maps"], "06_warm_up_under_adam": ["fig-amplification"]}
    _shows_figures_explorer_and_solutions(site, 4, figures)
    _shows_glued(site, "book/ch4/01_inside_the_layer.html", "gap64")
    _shows_glued(site, "book/ch4/05_ignore_a_layer.html", "deep_median")
    # a prediction's measurement is on the page, folded: the reader opens it after predicting
    for page, measured in (("03_deep_stacks", r"best of three rates: \d+% right"),
                           ("05_ignore_a_layer", r"FFNs zeroed: \d+% of the tokens right")):
        html = _html(site, f"book/ch4/{page}.html")
        assert re.search(rf"<details[^>]*>(?:(?!</details>).)*{measured}", html, re.S), (page, measured)


def test_chapter_5_shows_its_measurements(site):
    """Chapter 5's signature figures, glued numbers and hidden answers, as a reader sees them."""
    figures = {"01_incremental_explosion": ["fig-step-change"],
               "02_stable_propagation": ["fig-second-moments", "fig-gradient-depth", "fig-gradient-scale"],
               "03_small_enough": ["fig-growth-grid", "fig-growth-boundary"],
               "04_deepnorm": ["fig-designs-24", "fig-early-updates"],
               "05_adam": ["fig-adam-step", "fig-model-update"]}
    _shows_figures_explorer_and_solutions(site, 5, figures)
    small = _html(site, "book/ch5/03_small_enough.html")
    assert "course-model-answer" in small, "the derivation's model answer, in a dropdown"
    _shows_glued(site, "book/ch5/01_incremental_explosion.html", "plain_exponent")


def test_chapter_2_shows_its_measurements(site):
    """The error table, the signature figure and the glued numbers of chapter 2, as a reader sees them."""
    hand = _html(site, "book/ch2/01_backprop_by_hand.html")
    table = re.search(r"<pre>(?:<span></span>)?\s*d\s+h\s+o\s+n\s+relu\s+sigmoid(.*?)</pre>", hand, re.S)
    assert table, "the hand-vs-autograd error table"
    assert len(re.findall(r"\d\.\de[-+]\d\d", table.group(1))) == 10, "five shapes, two activations"
    shattered = _html(site, "book/ch2/03_shattered_gradients.html")
    for name in ("fig-shattered-gradients", "fig-shattering-by-depth"):
        assert f'id="{name}"' in shattered, name
    dark = _html(site, "book/ch2/04_walking_in_the_dark.html")
    assert 'id="fig-minibatch-agreement"' in dark
    _shows_glued(site, "book/ch2/04_walking_in_the_dark.html", "kept_plain")
    for page in ("01_backprop_by_hand", "02_scrambled_signals", "03_shattered_gradients", "04_walking_in_the_dark"):
        text = _html(site, f"book/ch2/{page}.html")
        assert 'class="course-explorer"' in text and "Solution to" in text, page


def _luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", rgb)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


NOTEBOOK_PAGES = [page for page in PAGES if (ROOT / page).with_suffix(".ipynb").exists()]


def _download(site: Path, page: str) -> Path:
    """Where a notebook page's download lies in ``site`` (book/_ext/course_downloads.py)."""
    from course_downloads import notebook_download

    return site / notebook_download(page.removesuffix(".html"))


def _plain_and_run(path: Path, *, solutions: bool) -> None:
    """The downloaded notebook at ``path`` is the page as run: plain markdown (no MyST left), the
    outputs of the site's run, and solutions folded or absent."""
    nb = nbformat.read(path, as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for markup in ("{glue:", "{doc}", "{cite}", "```{", ":::{"):
        assert markup not in prose, f"{path.name}: raw MyST {markup!r} in the download"
    run = [c for c in nb.cells if c.cell_type == "code" and c.outputs]
    assert run and all(c.execution_count for c in run), f"{path.name}: the download has no outputs"
    assert ("Solution to" in prose) == solutions, f"{path.name}: solutions {'missing' if solutions else 'shown'}"
    assert solutions or "Model answer" not in prose, f"{path.name}: a discussion's model answer is shown"


def test_every_notebook_page_offers_its_notebook_as_run(site):
    """The download menu of every notebook page gives the notebook as the page shows it, not the
    book's source (no outputs, MyST markup)."""
    for page in NOTEBOOK_PAGES:
        html = _html(site, page)
        assert "download-source-button" not in html, f"{page} still offers its source"
        href = re.search(r'<a href="([^"]+)"[^>]*\n?\s*class="[^"]*btn-download-notebook-button', html)
        assert href, f"{page} has no notebook download"
        assert (site / Path(page).parent / href[1]).resolve() == _download(site, page).resolve(), href[1]
        assert _download(site, page).exists(), page
    _plain_and_run(_download(site, "book/ch4/04_twenty_four_layers.html"), solutions=True)


@pytest.mark.browser
def test_the_download_button_gives_the_notebook_as_run(browser, server):
    """A reader's click: the header's download menu, then ".ipynb"."""
    tab = browser.new_page(accept_downloads=True)
    tab.goto(f"{server}/book/ch2/01_backprop_by_hand.html", wait_until="networkidle")
    tab.get_by_role("button", name="Download this page").click()
    with tab.expect_download() as info:
        tab.locator(".dropdown-download-buttons a.btn-download-notebook-button").click()
    download = info.value
    assert download.suggested_filename == "01_backprop_by_hand.ipynb"
    _plain_and_run(Path(download.path()), solutions=True)
    tab.close()


@pytest.mark.slow
@pytest.mark.coursework
def test_the_site_without_solutions_has_none_and_reuses_the_execution(site):
    """``make site-no-solutions WITHHOLD=always``: the same pages, every solution and every
    prediction's measurement gone, no notebook run again."""
    from tools.site_without_solutions import HTML, build

    result = build(withhold="always")
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"the build failed (warnings are errors):\n{log[-4000:]}"
    assert "Executing notebook" not in log, "it must take the notebooks from the site's cache"
    for page in PAGES:
        with_solutions, without = _html(site, page), (HTML / page).read_text(encoding="utf-8")
        assert "Solution to" not in without and 'class="solution' not in without, page
        assert with_solutions.count("exercise admonition") == without.count("exercise admonition"), page
    assert "Solution to" in _html(site, "book/ch1/04_vanishing_gradients.html"), "the site itself keeps them"
    for page in NOTEBOOK_PAGES:  # each prediction's measurement (tests/test_book.py: the cells tagged hide-output)
        notebook = nbformat.read(ROOT / page.replace(".html", ".ipynb"), as_version=4)
        tagged = sum("hide-output" in c.metadata.get("tags", []) for c in notebook.cells)
        without = (HTML / page).read_text(encoding="utf-8")
        assert without.count('class="course-withheld"') == tagged, page
    printed = "measured error-signal factor under Xavier init: {"  # the output's line, not the code's string
    assert printed in _html(site, "book/ch1/04_vanishing_gradients.html")
    assert printed not in (HTML / "book/ch1/04_vanishing_gradients.html").read_text("utf-8")
    assert "course-model-answer" not in (HTML / "book/ch3/03_add_or_concat.html").read_text(encoding="utf-8"), \
        "a discussion's model answer is a solution too"
    assert not list((HTML / "_sources").rglob("*.ipynb")), "the book's own notebooks hold the solutions"
    assert (site / "_modules/helpers/measure/backprop.html").is_file(), "the site itself links the source"
    assert not (HTML / "_modules").exists(), "the class's site publishes no checker's or key's source"
    assert "_modules/" not in (HTML / "book/appendix/api.html").read_text(encoding="utf-8")
    for page in NOTEBOOK_PAGES:
        if "Solution to" in _html(site, page):
            _plain_and_run(_download(HTML, page), solutions=False)
