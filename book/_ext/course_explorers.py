"""Sphinx extension: an exploration's frames as image files, loaded only when a reader asks.

A notebook's exploration (:func:`helpers.widgets.explore`) carries every frame inside its
HTML output as a ``data:`` URL, the only way an output can hold images. Left so, a page
with three explorations would send every frame of each to every reader, who looks at a
few. While each page is written, this extension moves the frames of the page's
explorations into ``_images/`` (named by their content's hash, so equal frames are stored
once) and leaves their URLs: a first view loads one frame per exploration, and each further
frame is fetched when its radio button is chosen.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

EXPLORER = re.compile(r'<div class="course-explorer".*?</script>\s*</div>', re.S)
DATA_URL = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def frames_to_files(body: str, outdir: Path, url_for) -> str:
    """``body`` with each exploration's PNG data URLs written to ``outdir/_images`` and
    replaced by ``url_for("_images/<name>.png")``."""

    def to_file(match: re.Match) -> str:
        data = base64.b64decode(match.group(1))
        name = f"explore-{hashlib.sha256(data).hexdigest()[:20]}.png"
        path = outdir / "_images" / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return url_for(f"_images/{name}")

    return EXPLORER.sub(lambda block: DATA_URL.sub(to_file, block.group(0)), body)


def page_context(app, pagename, templatename, context, doctree):
    if "body" in context and "course-explorer" in context["body"]:
        context["body"] = frames_to_files(context["body"], Path(app.outdir),
                                          lambda target: context["pathto"](target, 1))


def setup(app):
    app.connect("html-page-context", page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
