"""What a reader's browser meets on each page of the built site, at a desktop and a phone width.

For every page and width it records, in a real Chromium:

* **overflow**: elements that reach past the page's column, or past an ancestor that clips
  (a long inline formula in the theme's ``span.math``), where nothing scrolls (cut off), and the
  elements that do scroll sideways, with whether they show a scroll cue (the course's edge
  shadows, :file:`book/_static/course.css`);
* **figure text**: for every figure, the smallest text it holds as displayed, in CSS pixels
  (the smallest font in the saved image, recorded in the PNG by :mod:`helpers.plots.style`,
  times the scale at which the page shows the image);
* **dark mode**: the same page switched to the dark theme, the colours of its prose and of
  the course's own outputs and the backgrounds behind them;
* **weight**: every byte the first view of the page transfers (each response as a web server
  sends it, gzip-compressed where that makes it smaller), by kind of resource.
* **accessibility**: axe-core's serious and critical violations (the axe-core bundled in
  ``axe-playwright-python``, run in the page): every rule on the light page at each width,
  and in dark mode the one rule that dark mode can change, colour contrast. Contrast is
  checked once, at the desktop width: no style sheet of the theme or the course changes a
  colour with the width, and the phone's run leaves it out.

``python -m tools.site_audit [page ...]`` prints the report for the built site in
``_build/html``; ``tests/test_site.py`` asserts the budgets below on every page.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
WIDTHS = {"desktop": 1280, "phone": 390}
MIN_FIGURE_TEXT_PX = {"desktop": 12.0, "phone": 6.5}
"""The smallest text a figure may show, in CSS pixels at the column width: 9 pt (12 px) on a
desktop. On a phone the 7-inch figures are shown at about half size (a 342 px column), and
the house style's smallest font (10 pt) comes out at about 6.8 px: at least 6.5 px, which a
phone's screen (two to three device pixels per CSS pixel) draws sharply, and the reader can
zoom. Meeting 9 pt there too would need fonts so large that the desktop figures crowd."""
PAGE_BUDGET_BYTES = 1_500_000
"""A page's first view, everything it transfers (HTML, styles, scripts, fonts, images)."""
AXE_IMPACTS = ("serious", "critical")
"""The axe-core violations a page may not have (it also reports "moderate" and "minor")."""
PAGE_FAULTS = ("Traceback", "AssertionError", "Error in glue")
"""Text a page must never show: a notebook's error, or a glued value that did not render."""

LAYOUT_JS = r"""() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const column = article.getBoundingClientRect();
  const classes = el => typeof el.className === 'string' && el.className
      ? '.' + el.className.trim().split(/\s+/).slice(0, 3).join('.') : '';
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + classes(el);
  const where = el => { const s = el.closest('section[id]'); return s ? s.id : ''; };
  const cut = [], scrolling = [];
  for (const el of article.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || el.closest('mjx-assistive-mml')) continue;  // (for screen readers, clipped)
    // the nearest ancestor that scrolls sideways (then nothing is lost) or clips (a formula in
    // the theme's span.math, overflow: hidden), else the column, is the edge the element must keep to
    let p = el.parentElement, edge = column.right;
    while (p && p !== article) {
      const overflow = getComputedStyle(p).overflowX;
      if (/(auto|scroll)/.test(overflow)) { edge = Infinity; break; }
      if (/(hidden|clip)/.test(overflow)) { edge = p.getBoundingClientRect().right; break; }
      p = p.parentElement;
    }
    if (r.right > edge + 1)
      cut.push({element: name(el), section: where(el), over_px: Math.round(r.right - edge),
                text: (el.innerText || '').slice(0, 60)});
    const st = getComputedStyle(el);
    if (/(auto|scroll)/.test(st.overflowX) && el.scrollWidth > el.clientWidth + 1)
      scrolling.push({element: name(el), section: where(el), hidden_px: el.scrollWidth - el.clientWidth,
                      code_input: !!el.closest('.cell_input'),
                      cue: /gradient/.test(st.backgroundImage) && /local/.test(st.backgroundAttachment)});
  }
  const images = Array.from(article.querySelectorAll('img')).filter(img => img.getBoundingClientRect().width > 0)
      .map(img => ({src: img.currentSrc || img.src, shown: img.getBoundingClientRect().width,
                    natural: img.naturalWidth, alt: (img.alt || '').slice(0, 60), section: where(img)}));
  const broken = Array.from(document.images).filter(img => !(img.complete && img.naturalWidth > 0))
      .map(img => img.src.slice(0, 80));
  const no_alt = Array.from(document.querySelectorAll('main img'))
      .filter(img => !(img.getAttribute('alt') || '').trim()).map(img => img.src.slice(0, 80));
  const math_errors = document.querySelectorAll('mjx-merror, .MathJax_Error').length;
  return {column_px: Math.round(column.width), page_px: document.documentElement.scrollWidth,
          viewport_px: window.innerWidth, cut, scrolling, images, broken, no_alt, math_errors,
          text: document.querySelector('main').innerText};
}"""


DARK_JS = """() => {
  const clear = el => /rgba\\(.*, 0\\)$/.test(getComputedStyle(el).backgroundColor);
  const solid = el => { while (el && clear(el)) el = el.parentElement;
                        return el ? getComputedStyle(el).backgroundColor : 'rgb(255, 255, 255)'; };
  const article = document.querySelector('article.bd-article');
  const own = Array.from(document.querySelectorAll('.course-feedback, .course-explorer'))
      .map(el => [el.className, getComputedStyle(el).color, solid(el)]);
  return {theme: document.documentElement.dataset.theme,
          prose: [getComputedStyle(article.querySelector('p') || article).color, solid(article)], own};
}"""
"""In dark mode: the prose's colours and each of the course's own outputs' (explorations,
checker feedback), each with the first solid background behind it."""


def png_text(data: bytes) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return dict(getattr(image, "text", {}) or {})


def image_bytes(src: str, page_url: str) -> bytes | None:
    """The bytes of an image of the built site, from its ``src`` URL on the local server."""
    base = page_url.split("/", 3)
    if len(base) < 4 or not src.startswith("/".join(base[:3])):
        return None
    path = SITE / src.split("/", 3)[3].split("#")[0].split("?")[0]
    return path.read_bytes() if path.exists() else None


def figure_text_px(image: dict, page_url: str) -> float | None:
    """The smallest text of a figure as shown, in CSS px; None if the image records no font."""
    data = image_bytes(image["src"], page_url)
    if not data or not data.startswith(b"\x89PNG"):
        return None
    from helpers.plots.style import FONT_KEY

    font = png_text(data).get(FONT_KEY)
    if font is None or not image["natural"]:
        return None
    return float(font) * image["shown"] / image["natural"]


def transferred(body: bytes) -> int:
    """Bytes a web server sends for ``body``: gzip-compressed when that is smaller (text), else as is."""
    return min(len(body), len(gzip.compress(body, 6)))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D102 (no line per request)
        pass


@contextmanager
def serve(site: Path = SITE):
    """A local web server for ``site``; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def accessibility(tab, *, only: list[str] | None = None, skip: list[str] | None = None) -> list[dict]:
    """axe-core's violations of :data:`AXE_IMPACTS` on the page open in ``tab``: every rule, or
    ``only`` those rules, less ``skip``; one dict per rule violated, with its first element."""
    from axe_playwright_python.sync_playwright import Axe

    # preload: off. axe then re-fetches every style sheet for one rule (css-orientation-lock), and
    # resolves their @import against the page rather than the sheet: requests for files that
    # do not exist (/book/basic.css), which the page checks count as errors.
    options: dict = {"resultTypes": ["violations"], "preload": False}
    if only:
        options["runOnly"] = {"type": "rule", "values": only}
    if skip:
        options["rules"] = {rule: {"enabled": False} for rule in skip}
    response = Axe().run(tab, options=options).response
    return [{"rule": v["id"], "impact": v["impact"], "elements": len(v["nodes"]),
             "first": v["nodes"][0]["target"], "html": v["nodes"][0]["html"][:160], "help": v["help"]}
            for v in response["violations"] if v["impact"] in AXE_IMPACTS]


def audit_page(browser, server: str, page: str, width: str) -> dict:
    """Open ``page`` at one of :data:`WIDTHS` in a fresh context (a first visit) and measure it:
    layout and figures, then the same page switched to dark mode; with the console's errors,
    requests to other hosts, images that did not load or lack alt text, math that did not
    typeset, and which of :data:`PAGE_FAULTS` the page shows."""
    context = browser.new_context(viewport={"width": WIDTHS[width], "height": 900},
                                  device_scale_factor=2 if width == "phone" else 1)
    tab = context.new_page()
    responses, errors, foreign = [], [], []
    tab.on("response", lambda response: responses.append(response))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("request", lambda req: foreign.append(req.url)
           if not req.url.startswith((server, "data:", "blob:", "about:")) else None)
    url = f"{server}/{page}"
    tab.goto(url, wait_until="networkidle")
    if tab.evaluate("() => document.querySelectorAll('.math').length > 0"):
        tab.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=20000)
        tab.wait_for_timeout(300)
    layout = tab.evaluate(LAYOUT_JS)
    axe = {"light": accessibility(tab, skip=None if width == "desktop" else ["color-contrast"])}
    # no colour transitions: the dark page is measured as it ends up, not half-way there
    tab.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    tab.evaluate("() => { const root = document.documentElement; root.dataset.theme = root.dataset.mode = 'dark'; }")
    tab.wait_for_timeout(100)
    dark = tab.evaluate(DARK_JS)
    if width == "desktop":
        axe["dark"] = accessibility(tab, only=["color-contrast"])
    weight: dict[str, int] = {}
    for response in responses:
        if not response.url.startswith(server):
            continue
        try:
            body = response.body()
        except Exception:  # noqa: BLE001 (a redirect or an aborted request carries no body)
            continue
        kind = response.request.resource_type
        weight[kind] = weight.get(kind, 0) + transferred(body)
    context.close()
    for image in layout["images"]:
        image["text_px"] = figure_text_px(image, url)
        image["src"] = image["src"][:60]
    text = layout.pop("text")
    layout["faults"] = [fault for fault in PAGE_FAULTS if fault in text]
    return {"page": page, "width": width, **layout, "dark": dark, "axe": axe, "weight": weight,
            "total_bytes": sum(weight.values()),
            "errors": errors, "foreign": foreign}


def main(pages: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    from tools.pdf import launch_chromium
    from tools.toc import toc_files

    pages = pages or [str(p.relative_to(ROOT).with_suffix(".html")) for p in toc_files(ROOT)]
    with serve() as server, sync_playwright() as pw:
        browser = launch_chromium(pw)
        for page in pages:
            for width in WIDTHS:
                report = audit_page(browser, server, page, width)
                small = [i for i in report["images"] if i["text_px"] is not None
                         and i["text_px"] < MIN_FIGURE_TEXT_PX[width]]
                unknown = [i for i in report["images"] if i["text_px"] is None]
                print(f"{page} @{width}: column {report['column_px']} px, page {report['page_px']} px, "
                      f"{report['total_bytes'] / 1e6:.2f} MB {json.dumps(report['weight'])}")
                print(f"  cut off: {len(report['cut'])}, scrolling: {len(report['scrolling'])} "
                      f"(no cue: {sum(not s['cue'] for s in report['scrolling'])}), figures: "
                      f"{len(report['images'])} (small text: {len(small)}, no font record: {len(unknown)})")
                for item in report["cut"][:8]:
                    print("    cut", item)
                for item in [s for s in report["scrolling"] if not s["cue"]][:8]:
                    print("    scroll", item)
                for item in small[:8]:
                    print("    small", item)
                for theme, violations in report["axe"].items():
                    for item in violations:
                        print(f"    axe ({theme})", item)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
