"""A learner opens the book in JupyterLab (``make lab``): every page of the learner's copy
(``tools/lab_copy.py``) shows rendered prose, not MyST.

One JupyterLab serves a fresh copy, made from whatever runs the jupyter-cache holds (after
``make site``, or the execution in ``make test``, one of every notebook). Each page is opened
in it with File > Open from Path (as a click in the file browser or on a link opens it, without
reloading JupyterLab), and its rendered markdown cells are read: no role or
directive of MyST is left, every ``$...$`` is typeset by MathJax, and each solution, with its
code, is a folded ``<details>`` box. Two pages (:data:`RUN_ALL`) are also run
from the top with Run All Cells, and show no error; ``tests/test_lab.py`` does the same, with
live widgets, for the book's own notebook.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_lab import _jupyterlab, assert_no_error_output, run_all_cells

from tools.lab_copy import NOT_MEASURED, lab_pages, make_lab_copy
from tools.toc import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PAGES = list(lab_pages(ROOT).values())
# What JupyterLab would show of MyST that was not converted (as the student edition's test looks for).
RAW = ("{glue", "{cite}", "{doc}", "{numref}", "{term}", "{ref}", "{eq}", "{func}", "{mod}", "{class}",
       "{exercise}", "{solution", "{admonition}", "{tableofcontents}", "{bibliography}", "{glossary}",
       ":::", "```{", ":class:", ":label:", ":name:", "\\frac", "\\text{")
RUN_ALL = ("ch2/01_backprop_by_hand.ipynb", "ch3/01_a_correction.ipynb")  # two short pages with exercises
SHOTS = ("ch1/04_vanishing_gradients.ipynb",)  # a screenshot of each, beside the test's temporary files
PROSE = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown'))
  .map(n => { const c = n.cloneNode(true);
              c.querySelectorAll('code, pre, mjx-container').forEach(e => e.remove());
              return c.textContent; }).join('\\n')"""
FENCES = """() => Array.from(document.querySelectorAll('.jp-RenderedMarkdown pre code'))
  .map(e => e.className).filter(c => c.includes('{'))"""


@pytest.fixture(scope="module")
def lab_copy(tmp_path_factory):
    copy = make_lab_copy(tmp_path_factory.mktemp("lab") / "lab")
    assert sorted(copy.written) == sorted(PAGES) and not copy.warnings, copy
    print(f"\nthe copy reads {NOT_MEASURED} on {len(copy.unmeasured)} pages (no cached run): {copy.unmeasured}")
    return copy.dest


@pytest.fixture(scope="module")
def learner_lab(lab_copy, tmp_path_factory):
    with _jupyterlab(tmp_path_factory.mktemp("jupyterlab"), lab_copy) as url:
        yield url


@pytest.fixture(scope="module")
def tab(browser, learner_lab):
    """One JupyterLab window, loaded once: each test opens its page in it and closes it after."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(f"{learner_lab}/lab?reset")
    page.wait_for_selector(".jp-DirListing-item")
    yield page
    page.close()


def _menu(tab, menu: str, item: str) -> None:
    tab.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    tab.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def _open(tab, page: str) -> None:
    """File > Open from Path (as a link or the file browser opens it, without reloading JupyterLab)."""
    if tab.locator(".jp-Dialog, .jp-NotebookPanel").count():  # what a failed test before left: start afresh
        tab.goto(tab.url.split("/lab")[0] + "/lab?reset")
        tab.wait_for_selector(".jp-DirListing-item")
    _menu(tab, "File", "Open from Path")
    path = tab.locator(".jp-Dialog input")
    path.fill(page)
    path.press("Enter")
    tab.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")


def _close(tab) -> None:
    """File > Close and Shut Down Notebook: no tab and no kernel is left for the next page."""
    if not tab.locator(".jp-NotebookPanel").count():
        return
    _menu(tab, "File", "Close and Shut Down Notebook")
    tab.locator(".jp-Dialog button.jp-mod-accept").click()
    tab.wait_for_function("() => !document.querySelector('.jp-NotebookPanel')")


@pytest.mark.parametrize("page", PAGES)
def test_a_learner_sees_the_book_not_its_markup(tab, lab_copy, page, tmp_path):
    nb = nbformat.read(lab_copy / page, as_version=4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    solutions = [text for text in markdown if "<details>" in text]
    has_math = any("$" in text for text in markdown)
    start = time.monotonic()
    try:
        _open(tab, page)
        tab.wait_for_function(f"() => document.querySelectorAll("
                              f"'.jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown').length === {len(markdown)}")
        if has_math:  # MathJax typesets after the markdown renders: wait until no $ is left in the prose
            try:
                tab.wait_for_function(f"() => document.querySelector('.jp-RenderedMarkdown mjx-container')"
                                      f" && !({PROSE})().includes('$')", timeout=30_000)
            except PlaywrightTimeout:
                pass  # the assertions below say what is left
        prose, fences = tab.evaluate(PROSE), tab.evaluate(FENCES)
        maths = tab.locator(".jp-RenderedMarkdown mjx-container").count()
        # a solution, or a discussion's model answer: each one box, closed
        details = tab.locator(".jp-RenderedMarkdown details:not([open]) > summary").count()
        solution_code = tab.locator(".jp-RenderedMarkdown details pre").count()
        if page in SHOTS:  # the top of the page, then its first solution, folded and unfolded
            tab.screenshot(path=str(tmp_path / f"{Path(page).stem}-top.png"))
            summary = tab.locator(".jp-RenderedMarkdown details > summary").first
            summary.scroll_into_view_if_needed()
            tab.screenshot(path=str(tmp_path / f"{Path(page).stem}-solution-folded.png"))
            summary.click()
            tab.screenshot(path=str(tmp_path / f"{Path(page).stem}-solution-unfolded.png"))
    except Exception:
        tab.screenshot(path=str(tmp_path / "failed.png"))
        raise
    finally:
        _close(tab)
    print(f"{page}: rendered in {time.monotonic() - start:.1f} s ({len(markdown)} markdown cells, {maths} maths)")

    left = [raw for raw in RAW if raw in prose]
    assert not left and not fences, f"{page}: JupyterLab shows raw MyST {left} {fences}"
    assert not has_math or (maths and "$" not in prose), f"{page}: math is not typeset"
    assert details == len(solutions), f"{page}: {len(solutions)} solutions and answers, {details} shown as folded boxes"
    assert solution_code == sum(text.count("```python") for text in solutions), f"{page}: a solution's code is lost"


@pytest.mark.parametrize("page", RUN_ALL)
def test_a_learner_runs_a_page_of_the_copy(tab, lab_copy, page):
    n_code = sum(c.cell_type == "code" for c in nbformat.read(lab_copy / page, as_version=4).cells)
    _open(tab, page)
    try:
        tab.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
        seconds = run_all_cells(tab, n_code, 180)
        print(f"{page}: Run All Cells in {seconds:.1f} s")
        assert_no_error_output(tab)
    finally:
        _close(tab)
