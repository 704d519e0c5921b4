"""Sphinx extension: fixes to the markup that axe-core finds fault with.

* Names for the sidebar's expand/collapse toggles. The pydata theme wraps each chapter of
  the sidebar's table of contents in ``<details>`` and gives its ``<summary>`` only a
  decorative chevron, so a screen reader announces a button with no name ("summary-name", a
  serious violation in axe-core's rules). This extension wraps the theme's
  ``generate_toctree_html`` and gives every such ``<summary>`` an ``aria-label`` that names
  the chapter whose sections it shows or hides, taken from the link beside it.
* The bibliography's entries as items of their list. Docutils writes the list as
  ``<div role="list">`` and each entry as ``role="doc-biblioentry"``, which a list may not hold
  ("aria-required-children", critical): each entry becomes ``role="listitem"``.
"""

from __future__ import annotations

from bs4 import BeautifulSoup


def label_toggles(html: str) -> str:
    """``html`` (the sidebar's table of contents) with an ``aria-label`` on each ``<summary>``
    that has no text of its own: "Sections of <the title of the entry it belongs to>"."""
    if "<summary" not in html:
        return html
    soup = BeautifulSoup(html, "html.parser")
    for summary in soup.find_all("summary"):
        if summary.get_text(strip=True) or summary.get("aria-label"):
            continue
        entry = summary.find_parent("li")
        link = entry.find("a", recursive=False) if entry is not None else None
        title = " ".join(link.get_text().split()) if link is not None else ""
        summary["aria-label"] = f"Sections of {title}" if title else "Sections"
    return str(soup)


def list_entries(body: str) -> str:
    """``body`` with each bibliography entry (``role="doc-biblioentry"``) a ``role="listitem"``."""
    return body.replace('role="doc-biblioentry"', 'role="listitem"')


def page_context(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = list_entries(context["body"])
    generate = context.get("generate_toctree_html")
    if generate is None or getattr(generate, "labels_toggles", False):
        return

    def generate_labelled(*args, **kwargs):
        return label_toggles(str(generate(*args, **kwargs)))

    generate_labelled.labels_toggles = True
    context["generate_toctree_html"] = generate_labelled


def setup(app):
    # after the theme's own handler (priority 500), which puts generate_toctree_html in the context
    app.connect("html-page-context", page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
