"""Sphinx extension: what the header's download menu offers on a notebook page.

The theme offers the page's source: the book's notebook without outputs, its prose in MyST
markup (``{glue:text}`` where a number belongs). On a notebook page this extension offers
instead the notebook as the page shows it (``tools/lab_copy.py``, :func:`executed_pages`):
plain markdown with every measured number, the outputs of the site's run, and the solutions
as the page has them, folded, or none in the site without solutions
(``course_hide_solutions``), which also deletes its copies of the book's own notebooks
(in ``_sources/``, with the solutions). The files lie in ``_downloads/notebooks/``, in the
book's folder layout, so the links between pages keep working once the folder is downloaded.

``make release`` also puts the book's PDF and the student edition in every page's download
menu: it names them in ``COURSE_RELEASE_FILES`` (paths separated by ``os.pathsep``), and this
extension copies each into ``_downloads/release/``. A named file that is missing fails the
build. The site without solutions leaves the PDF out: it prints the solutions.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "_downloads/notebooks"
TOOLTIP = "Download this page's notebook, as run for this page"
RELEASE = "_downloads/release"
RELEASE_FILES = "COURSE_RELEASE_FILES"
RELEASE_KINDS = {".pdf": ("book (.pdf)", "fas fa-book", "The whole book as one PDF"),
                 ".zip": ("student edition (.zip)", "fas fa-file-zipper",
                          "The student edition: every notebook, no solutions, and its install")}


def release_files(hide_solutions: bool = False) -> list[Path]:
    """The files ``COURSE_RELEASE_FILES`` names (relative to the book's root), each a .pdf or a
    .zip that exists; the PDF left out when ``hide_solutions``."""
    names = [n for n in os.environ.get(RELEASE_FILES, "").split(os.pathsep) if n.strip()]
    files = [(ROOT / name).resolve() for name in names]
    for path in files:
        if path.suffix not in RELEASE_KINDS:
            raise ExtensionError(f"{RELEASE_FILES}: {path.name} is neither a .pdf nor a .zip")
        if not path.is_file():
            raise ExtensionError(f"{RELEASE_FILES}: {path} does not exist (make pdf, make student)")
    return [p for p in files if not (hide_solutions and p.suffix == ".pdf")]


def notebook_download(pagename: str) -> str | None:
    """The download's path in the site for a page of the book (``book/ch1/01_degradation``), or
    None for a page outside ``book/``."""
    return f"{FOLDER}/{pagename.removeprefix('book/')}.ipynb" if pagename.startswith("book/") else None


def page_context(app, pagename, templatename, context, doctree):
    notebook = notebook_download(pagename) if context.get("page_source_suffix") == ".ipynb" else None
    releases = [{"type": "link", "url": context["pathto"](f"{RELEASE}/{path.name}", 1),
                 "text": RELEASE_KINDS[path.suffix][0], "icon": RELEASE_KINDS[path.suffix][1],
                 "tooltip": RELEASE_KINDS[path.suffix][2], "label": f"download-release-{path.suffix[1:]}-button"}
                for path in app.course_release_files]
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        if notebook is not None:
            kept = [b for b in group["buttons"] if b.get("label") not in ("download-notebook-button",
                                                                           "download-source-button")]
            ours = {"type": "link", "url": context["pathto"](notebook, 1), "text": ".ipynb",
                    "icon": "fas fa-code", "tooltip": TOOLTIP, "label": "download-notebook-button"}
            group["buttons"] = [ours, *kept]
        group["buttons"] = [*group["buttons"], *releases]


def finish(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.lab_copy import executed_pages

    out = Path(app.outdir)
    hide = app.config.course_hide_solutions
    for path in app.course_release_files:
        (out / RELEASE).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / RELEASE / path.name)
    for rel, text in executed_pages(Path(app.srcdir), solutions=not hide).items():
        path = out / FOLDER / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if hide:  # the book's own notebooks hold the solutions
        for path in (out / "_sources").rglob("*.ipynb"):
            path.unlink()


def read_release_files(app):
    """The release files of this build, found (or failed for) once, before any page is written."""
    app.course_release_files = release_files(app.config.course_hide_solutions)


def setup(app):
    app.setup_extension("course_solutions")  # course_hide_solutions
    app.connect("builder-inited", read_release_files)
    # after the theme's handlers (priority 501), which fill the header's buttons
    app.connect("html-page-context", page_context, priority=600)
    app.connect("build-finished", finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
