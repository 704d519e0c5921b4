"""``make release``: the book's PDF and the student edition in every page's download menu, as
files the site serves (book/_ext/course_downloads.py), checked on a book of one page."""

from __future__ import annotations

import os
import zipfile

import pytest
from minibook import one_page_book

from tools.site_audit import serve

pytestmark = pytest.mark.slow


def _release_files(folder):
    pdf = folder / "book.pdf"
    pdf.write_bytes(b"%PDF-1.7\n% a stand-in for the book\n%%EOF\n")
    archive = folder / "student.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("residual-course-student/README.md", "# Student edition\n")
    return pdf, archive


def _clicked(tab, kind: str) -> bytes:
    """What a reader gets by choosing ``kind`` (pdf, zip) in the page's download menu: a download,
    or a new tab showing the file (Chromium opens a PDF in its viewer), read back."""
    tab.get_by_role("button", name="Download this page").click()
    link = tab.locator(f".dropdown-download-buttons a.btn-download-release-{kind}-button")
    got = []
    tab.on("download", lambda download: got.append(download))
    tab.context.on("page", lambda page: got.append(page))
    link.click()
    for _ in range(100):
        if got:
            break
        tab.wait_for_timeout(100)
    assert got, f"choosing {kind} gave neither a download nor a new tab"
    if hasattr(got[0], "path"):  # a download
        return open(got[0].path(), "rb").read()
    opened = got[0]
    opened.wait_for_load_state()
    body = tab.request.get(opened.url).body()
    opened.close()
    return body


@pytest.mark.browser
def test_a_release_build_offers_the_pdf_and_the_student_edition_and_a_click_gets_them(tmp_path, browser):
    pdf, archive = _release_files(tmp_path)
    env = {**os.environ, "COURSE_RELEASE_FILES": os.pathsep.join(map(str, (pdf, archive)))}
    book = tmp_path / "book-root"
    book.mkdir()
    one_page_book(book, extensions=["course_solutions", "course_downloads"], env=env)
    site = book / "_build" / "html"
    with serve(site) as server:
        for page in ("intro.html", "book/ch1/page.html"):
            tab = browser.new_page(accept_downloads=True)
            tab.goto(f"{server}/{page}", wait_until="networkidle")
            for kind, original in (("pdf", pdf), ("zip", archive)):
                assert _clicked(tab, kind) == original.read_bytes(), (page, kind)
            tab.close()


def test_a_release_file_that_is_missing_fails_the_build(tmp_path):
    env = {**os.environ, "COURSE_RELEASE_FILES": str(tmp_path / "no-such.pdf")}
    book = tmp_path / "book-root"
    book.mkdir()
    with pytest.raises(AssertionError, match="does not exist"):
        one_page_book(book, extensions=["course_solutions", "course_downloads"], env=env)


def test_without_release_files_the_menu_offers_neither(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COURSE_RELEASE_FILES"}
    page = one_page_book(tmp_path, extensions=["course_solutions", "course_downloads"], env=env)
    html = page.read_text(encoding="utf-8")
    assert "btn-download-release" not in html and "btn-download-notebook-button" in html
    assert "download-source-button" not in html
