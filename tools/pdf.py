"""The whole book as one PDF, for printing and reading offline.

    python -m tools.pdf          # or: make pdf -> _build/pdf/residual-connections-measured.pdf

jupyter-book builds the book as a single HTML page (``--builder singlehtml``, warnings as
errors, the notebooks from the same execution cache as the site), then headless Chromium
(Debian's package, the browser the tests use) waits for MathJax to typeset every formula
and prints the page to PDF: tagged, with bookmarks for the chapters and sections, code
wrapped at the margin (the print styles of ``book/_static/course.css``). The explorations
print their first frame, as on a page without a kernel.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tools.execute import build_book
from tools.toc import ROOT

SINGLE = ROOT / "_build" / "singlehtml"
PAGE = SINGLE / "book.html"
PDF = ROOT / "_build" / "pdf" / "residual-connections-measured.pdf"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""Debian's Chromium (apt-get install chromium), or None where it is absent."""
# Headless Chromium that makes no request of its own (the browser tests launch it so too).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]


def build_single_page(root: Path = ROOT) -> subprocess.CompletedProcess:
    """``jupyter-book build --builder singlehtml`` into ``_build/singlehtml`` (warnings are errors),
    then the page copied to ``_build/singlehtml/book.html`` (:data:`PAGE`).

    Sphinx writes the single page under the root document's name (``book/preface.html``)
    but links its scripts, styles and images as if it lay at the top of the build, where
    the copy lies."""
    result = build_book("--builder", "singlehtml", root=root)
    if result.returncode == 0:
        root_doc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))["root"]
        shutil.copyfile(root / "_build" / "singlehtml" / f"{root_doc}.html", root / "_build" / "singlehtml" / PAGE.name)
    return result


def launch_chromium(playwright):
    """Headless :data:`CHROMIUM` with :data:`CHROMIUM_ARGS`, from a Playwright instance."""
    if CHROMIUM is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def print_to_pdf(html: Path, out: Path, browser=None) -> Path:
    """Print ``html`` to ``out`` (A4) with headless Chromium, after MathJax has finished.
    ``browser``: a Playwright browser already running (the tests'); else one is started."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                return print_to_pdf(html, out, browser)
            finally:
                browser.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    page = browser.new_page()
    try:
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=60_000)
        page.evaluate("() => MathJax.startup.promise.then(() => MathJax.typesetPromise())")
        # folded outputs (a prediction's measurement) and dropdowns print open
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        page.emulate_media(media="print")
        # outline: bookmarks from the headings (chapters and sections); tagged: a structure a
        # screen reader can follow
        page.pdf(path=str(out), format="A4", print_background=True, outline=True, tagged=True,
                 margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"})
    finally:
        page.close()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PDF, help=f"the PDF (default {PDF.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    build = build_single_page()
    if build.returncode != 0:
        sys.exit(f"the single-page build failed (warnings are errors):\n{build.stdout[-4000:]}\n{build.stderr[-3000:]}")
    print(f"wrote {print_to_pdf(PAGE, args.out)}")


if __name__ == "__main__":
    main()
