"""The book as one PDF (``make pdf``): every page of the book in it, its figures, and its math typeset."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tools.toc import ROOT, page_title, toc_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.coursework]


def _title(path) -> str:
    """A page's title as the PDF prints it (code markup gone)."""
    return page_title(path).replace("`", "")


def _flat(text: str) -> str:
    """Without white space (the PDF's text layer adds some around Chinese), with ligatures
    (the "ﬁ" of "fix") spelt out and typographic apostrophes (the site's smart quotes) straight."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).replace("\u2019", "'")


@pytest.fixture(scope="module")
def pdf(executed, browser, tmp_path_factory):
    from tools.pdf import PAGE, build_single_page, print_to_pdf

    build = build_single_page()
    assert build.returncode == 0, f"single-page build failed:\n{build.stdout[-4000:]}\n{build.stderr[-2000:]}"
    html = PAGE.read_text(encoding="utf-8")
    return print_to_pdf(PAGE, tmp_path_factory.mktemp("pdf") / "book.pdf", browser), html


def test_the_pdf_has_every_page_of_the_book_its_figures_and_typeset_math(pdf):
    from pypdf import PdfReader

    path, html = pdf
    reader = PdfReader(path)
    text = _flat("\n".join(page.extract_text() or "" for page in reader.pages))
    missing = [_title(p) for p in toc_files(ROOT) if _flat(_title(p)) not in text]
    assert not missing, f"pages missing from the PDF: {missing}"
    figures = len(re.findall(r'<img [^>]*src="data:image/png|<img [^>]*src="_images/', html))
    images = sum(len(page.images) for page in reader.pages)
    assert figures >= 10 and images >= figures, f"{images} images in the PDF for {figures} figures in the book"
    for raw in ("$$", "\\frac", "\\mathrm"):
        assert raw not in text, f"untypeset math in the PDF: {raw!r}"
    assert len(reader.pages) >= 30


def test_the_pdf_has_bookmarks_and_no_code_line_cut_at_the_margin(pdf):
    """Bookmarks for every chapter, and every long line of code, as the page shows it, whole in
    the PDF's text (wrapped at the margin, not cut off there)."""
    import html as markup

    from pypdf import PdfReader

    path, html = pdf
    reader = PdfReader(path)

    def titles(outline):
        for item in outline:
            yield from titles(item) if isinstance(item, list) else [item.title]

    bookmarks = _flat(" ".join(titles(reader.outline)))
    chapters = [_title(p) for p in toc_files(ROOT) if p.name == "index.md" and p.parent.name.startswith("ch")]
    assert len(chapters) == 5 and all(_flat(t) in bookmarks for t in chapters), (chapters, bookmarks[:500])
    pages = [_flat(page.extract_text() or "") for page in reader.pages]
    text = "".join(pages)

    def whole(line: str) -> bool:
        """In the text, or split by a page break: its start ends one page, its rest is on the next
        (where the text layer may put a floating note first)."""
        flat = _flat(line)
        return flat in text or any(
            pages[i].endswith(flat[:k]) and flat[k:] in pages[i + 1]
            for i in range(len(pages) - 1) for k in range(1, len(flat)) if flat[:k] == pages[i][-k:])

    blocks = re.findall(r'<div class="highlight"><pre>(.*?)</pre>', html, flags=re.S)
    lines = [markup.unescape(re.sub(r"<[^>]+>", "", line)) for block in blocks for line in block.splitlines()]
    # at the print's font an A4 line holds fewer than 80 characters, so these would be cut
    long = [line for line in lines if len(line) > 60]
    assert long, "the book has long code lines to check"
    cut = [line for line in long if not whole(line)]
    assert not cut, f"{len(cut)} of {len(long)} long code lines are not whole in the PDF: {cut[:3]}"
