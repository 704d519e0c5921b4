"""Sphinx extension: what the header's download menu offers on a notebook page.

The theme offers the page's source: the book's notebook without outputs, its prose in MyST
markup (``{glue:text}`` where a number belongs). On a notebook page this extension offers
instead the notebook as the page shows it (``tools/lab_copy.py``, :func:`executed_pages`):
plain markdown with every measured number, the outputs of the site's run, and the solutions
as the page has them, folded, or none in the site without solutions
(``course_hide_solutions``), which also deletes its copies of the book's own notebooks
(in ``_sources/``, with the solutions). The files lie in ``_downloads/notebooks/``, in the
book's folder layout, so the links between pages keep working once the folder is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "_downloads/notebooks"
TOOLTIP = "Download this page's notebook, as run for this page"


def notebook_download(pagename: str) -> str | None:
    """The download's path in the site for a page of the book (``book/ch1/01_degradation``), or
    None for a page outside ``book/``."""
    return f"{FOLDER}/{pagename.removeprefix('book/')}.ipynb" if pagename.startswith("book/") else None


def page_context(app, pagename, templatename, context, doctree):
    if context.get("page_source_suffix") != ".ipynb":
        return
    target = notebook_download(pagename)
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons" or target is None:
            continue
        kept = [b for b in group["buttons"] if b.get("label") not in ("download-notebook-button",
                                                                       "download-source-button")]
        ours = {"type": "link", "url": context["pathto"](target, 1), "text": ".ipynb", "icon": "fas fa-code",
                "tooltip": TOOLTIP, "label": "download-notebook-button"}
        group["buttons"] = [ours, *kept]


def finish(app, exception):
    if exception is not None or app.builder.name != "html":
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.lab_copy import executed_pages

    out = Path(app.outdir)
    hide = app.config.course_hide_solutions
    for rel, text in executed_pages(ROOT, solutions=not hide).items():
        path = out / FOLDER / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if hide:  # the book's own notebooks hold the solutions
        for path in (out / "_sources").rglob("*.ipynb"):
            path.unlink()


def setup(app):
    app.setup_extension("course_solutions")  # course_hide_solutions
    # after the theme's handlers (priority 501), which fill the header's buttons
    app.connect("html-page-context", page_context, priority=600)
    app.connect("build-finished", finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
