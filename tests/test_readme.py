"""The README is for users, and stays true: its chapter table matches ``_toc.yml`` (each
chapter's number, title and sections, as each page's first heading has them), it is under
1,500 words, every ``make`` target it names exists, and it names no path outside the
repository. How the tests work is in CONTRIBUTING.md."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from tools.toc import ROOT, page_title

README = ROOT / "README.md"
MAX_WORDS = 1500
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|\s*$")


def _title(stem: str, root: Path = ROOT) -> str:
    path = next((p for p in (root / f"{stem}.ipynb", root / f"{stem}.md") if p.exists()), None)
    assert path is not None, f"_toc.yml lists {stem!r}, but neither {stem}.ipynb nor {stem}.md exists"
    return page_title(path)


def book_chapters(toc: dict, root: Path = ROOT) -> list[tuple[int, str, list[str]]]:
    """``(number, title, section titles)`` of each chapter of the part "Chapters" of ``toc``,
    titles from each page's first heading (a chapter's "N. Title" without its number)."""
    part = next(p for p in toc["parts"] if p.get("caption") == "Chapters")
    chapters = []
    for number, chapter in enumerate(part["chapters"], 1):
        heading = _title(chapter["file"], root)
        prefix = f"{number}. "
        title = heading[len(prefix):] if heading.startswith(prefix) else heading
        sections = [_title(s["file"], root) for s in chapter.get("sections") or []]
        chapters.append((number, title, sections))
    return chapters


def table(chapters) -> str:
    """The README's chapter table for ``chapters``, as it should read."""
    lines = ["| # | chapter | sections | section titles |", "|---|---|---|---|"]
    lines += [f"| {n} | {title} | {len(sections)} | {'; '.join(sections)} |" for n, title, sections in chapters]
    return "\n".join(lines)


def readme_chapters(text: str) -> list[tuple[int, str, list[str]]]:
    """The chapter table's rows in ``text``: ``(number, title, section titles)``; a row whose
    count disagrees with its titles is an error."""
    rows = []
    for line in text.splitlines():
        match = ROW.match(line)
        if not match:
            continue
        cells = [c.strip() for c in match.group(2).split("|")]
        assert len(cells) == 3, f"a chapter row has four columns: {line}"
        title, count, titles = cells
        sections = [s.strip() for s in titles.split(";")] if titles else []
        assert count.isdigit() and int(count) == len(sections), f"the count disagrees with the titles: {line}"
        rows.append((int(match.group(1)), title, sections))
    return rows


def mismatch(toc: dict, text: str) -> str | None:
    """Why ``text``'s chapter table does not match ``toc``, or None."""
    expected, found = book_chapters(toc), readme_chapters(text)
    if expected == found:
        return None
    return f"README.md's chapter table does not match _toc.yml; it should read:\n\n{table(expected)}\n"


def _toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_the_chapter_table_matches_the_toc():
    problem = mismatch(_toc(), _text())
    assert problem is None, problem


def test_a_section_added_or_removed_in_the_toc_fails_the_check():
    toc, text = _toc(), _text()
    chapters = next(p for p in toc["parts"] if p.get("caption") == "Chapters")["chapters"]
    removed = copy.deepcopy(toc)
    next(p for p in removed["parts"] if p.get("caption") == "Chapters")["chapters"][-1]["sections"].pop()
    added = copy.deepcopy(toc)
    next(p for p in added["parts"] if p.get("caption") == "Chapters")["chapters"][0]["sections"].append(
        chapters[1]["sections"][0])
    fewer_chapters = copy.deepcopy(toc)
    next(p for p in fewer_chapters["parts"] if p.get("caption") == "Chapters")["chapters"].pop()
    for changed in (removed, added, fewer_chapters):
        assert mismatch(changed, text) is not None
    renamed = text.replace("| 2 | How gradients reach a layer |", "| 2 | How gradients reach a net |")
    assert renamed != text and mismatch(toc, renamed) is not None


def test_the_readme_is_short():
    words = len(_text().split())
    assert words < MAX_WORDS, f"README.md has {words} words; the limit is {MAX_WORDS} (move detail to CONTRIBUTING.md)"


def _code(text: str) -> str:
    """The README's code: fenced blocks and inline code spans."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return "\n".join(fenced + inline)


def test_every_make_target_it_names_exists():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, flags=re.M))
    named = set(re.findall(r"(?:^|[\s;&(])make ([A-Za-z][\w-]*)", _code(_text()), flags=re.M))
    assert {"site", "test"} <= named
    assert named <= targets, f"README.md names make targets the Makefile lacks: {sorted(named - targets)}"


def test_it_names_no_path_outside_the_repository():
    text = _text()
    assert "../" not in text and "..\\" not in text
    links = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    for target in links:
        assert not target.startswith("/"), target
        assert (ROOT / target.split("#")[0]).exists(), f"README.md links to {target}, which is not in the repository"
