"""Let the single-page build (``--builder singlehtml``, which ``make pdf`` prints) render every node.

Sphinx looks up an extension's node handlers by the builder's name first and falls back to
its format (``html``) only when no extension registered any handler under that name.
sphinx-exercise registers handlers for ``singlehtml``, so the ``html`` handlers of every
other extension (myst-nb's hidden cells, for one) are then skipped and the build fails on
"unknown node type". This extension gives ``singlehtml`` every ``html`` handler it lacks.
"""

from __future__ import annotations


def _inherit_html_handlers(app) -> None:
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, pair in handlers.get("html", {}).items():
        single.setdefault(node, pair)


def setup(app):
    app.connect("builder-inited", _inherit_html_handlers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
