"""Sphinx extension: small things a reader meets on every page.

* Chinese text (the source articles' headings and quotations, the glossary's terms) is
  marked ``lang="zh"``, so that browsers pick a Chinese font and screen readers a Chinese
  voice; the pages themselves are English.
* The site's root ``index.html``, which Jupyter Book writes as a bare redirect, gets a
  title and a link to the book for a browser that does not follow the redirect.
* Every page's footer says which version of the course it was built from
  (``helpers.__version__``, and the commit where the build ran in a git checkout), so a
  class pinned to a release can tell its pages from a later build's.
"""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

CHINESE = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+"
                     r"(?:[ ·\"“”]?[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+)*")
"""A run of Chinese characters and Chinese punctuation (full-width forms included), with the
single spaces and quotation marks between them."""
SKIP = (nodes.title, nodes.FixedTextElement, nodes.literal, nodes.raw, nodes.math, nodes.math_block)


def chinese_spans(text: str) -> list[nodes.Node]:
    """``text`` as text nodes, with each run of Chinese wrapped in ``<span lang="zh">``."""
    parts: list[nodes.Node] = []
    start = 0
    for match in CHINESE.finditer(text):
        if match.start() > start:
            parts.append(nodes.Text(text[start:match.start()]))
        parts.append(nodes.raw("", f'<span lang="zh">{html.escape(match.group())}</span>', format="html"))
        start = match.end()
    if start < len(text):
        parts.append(nodes.Text(text[start:]))
    return parts


class MarkChinese(SphinxPostTransform):
    """Wrap Chinese runs in running text (not in titles, code or math) in ``lang="zh"`` spans."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs):
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or not CHINESE.search(text.astext()):
                continue
            if any(isinstance(node, SKIP) for node in _lineage(parent)):
                continue
            parent.replace(text, chinese_spans(text.astext()))


def _lineage(node):
    while node is not None:
        yield node
        node = node.parent


ROOT_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<meta http-equiv="refresh" content="0; url={target}">
<link rel="canonical" href="{target}">
</head>
<body>
<p><a href="{target}">{title}: open the book</a></p>
</body>
</html>
"""


def root_index(app, exception):
    """Replace the bare redirect in ``index.html`` with a page that also links the book."""
    if exception is not None or app.builder.name != "html":
        return
    index = Path(app.outdir) / "index.html"
    if not index.exists():
        return
    match = re.search(r'url=([^"\s>]+)', index.read_text(encoding="utf-8"))
    if match and "<body" not in index.read_text(encoding="utf-8"):
        index.write_text(ROOT_PAGE.format(title=html.escape(app.config.html_title or app.config.project),
                                          target=html.escape(match.group(1))), encoding="utf-8")


def built_from(root: Path) -> str:
    """``version 0.2.0 (commit 1a2b3c4)``: the course's version (``helpers.__version__``, which
    repeats ``pyproject.toml``'s), and the commit of ``root`` where there is one."""
    import helpers

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except OSError:  # no git
        commit = ""
    return f"version {helpers.__version__}" + (f" (commit {commit})" if commit else "")


def footer_version(app, config):
    """Add the version the site is built from to the theme's footer."""
    options = config.html_theme_options
    options["extra_footer"] = (options.get("extra_footer") or "") + (
        f"<p>Built from the course's {html.escape(built_from(Path(app.srcdir)))}.</p>")


def setup(app):
    app.add_post_transform(MarkChinese)
    app.connect("config-inited", footer_version)
    app.connect("build-finished", root_index, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
