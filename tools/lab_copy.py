"""The learner's copy of the book: the notebooks as JupyterLab shows them without MyST.

    python -m tools.lab_copy              # into _build/lab/ (what `make lab` opens)
    python -m tools.lab_copy DEST         # elsewhere; --force overwrites your edits

JupyterLab renders plain markdown and math, not the book's Sphinx roles and directives: the
book's own notebooks show ``{glue:text}`` where a number belongs. This copy has every page of
``_toc.yml`` that a learner reads, in the book's folder layout (``DEST/ch1/...``), with its
markdown made plain by ``tools/plain_markdown.py`` (as in the student edition,
``tools/student.py``):

* exercises and admonitions are quoted boxes, numbered as on the site; math stays math;
  citations read (Author year); ``{doc}`` links and the prose's own links lead to the copied
  notebooks;
* each glued number is the one the book's last run of that notebook measured (seed 0, from
  the jupyter-cache that ``make site`` and ``python -m tools.execute`` fill), when the cache
  holds a run of the notebook's current code. Otherwise the number reads
  :data:`NOT_MEASURED`, and a note under the page's title says why and how to fill it in
  (``glue`` displays nothing in a cell, so running the page does not show it either);
* solutions stay, folded: each solution, its text and its code, is one ``<details>`` box,
  "Solution to Exercise N", closed until clicked. Its code is shown there, not run: Run All
  then checks the learner's own answer, as in the student edition (the book runs its
  solutions; a solution cell's first line would show even when collapsed). Every other code
  cell is the book's own, without outputs;
* the preface (the page ``make lab`` opens), the chapters' index pages, the glossary and the
  bibliography become notebooks of one markdown cell, so that they open rendered (JupyterLab
  opens a ``.md`` file as text). The instructors' page, the API and the claims ledger (whose
  rows the site build writes) stay on the site; links to them keep their text only.

The notebooks import ``helpers`` as the book's do (it is installed, editable) and read no
file by a relative path, so they run from any folder.

A learner works in the copy, so making it again never overwrites a notebook changed since
it was written (``DEST/.lab-copy.json`` records what was written): such a file is kept and
named, and ``--force`` (or deleting it) gets the new one. Nothing else in ``DEST`` is
removed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from pybtex.database import parse_file
from pybtex.plugin import find_plugin

from tools.plain_markdown import book_markdown, citation, contents, glued_numbers
from tools.toc import ROOT, page_title, toc_files

DEST = ROOT / "_build" / "lab"
MANIFEST = ".lab-copy.json"
NOT_MEASURED = "*[not yet measured]*"


# Pages besides the notebooks: those whose markdown a learner reads (not the instructors' or the
# API's, which the copy leaves out; the ledger's rows are written by the site build).
PAGES = ("preface", "index", "glossary", "bibliography")
SOLUTION_START = re.compile(r"\s*```\{solution-start\}[ \t]*(?P<label>\S*)[^\n]*\n(?::[a-z-]+:[^\n]*\n)*```[ \t]*\n?")
SOLUTION_END = re.compile(r"```\{solution-end\}[^\n]*\n```[ \t]*\n?")
TOC = re.compile(r"```\{tableofcontents\}\n```")
BIBLIOGRAPHY = re.compile(r"```\{bibliography\}\n(?::[a-z-]+:[^\n]*\n)*```")
GLOSSARY = re.compile(r"```\{glossary\}\n(?P<body>.*?)\n```", re.S)
LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s:#]+\.(?:md|ipynb))(?P<anchor>#[^)\s]*)?\)")
KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


@dataclass
class Copy:
    """What :func:`make_lab_copy` did: the files written, the learner's edits kept, and the pages
    whose numbers are not filled in (no cached run of their current code)."""

    dest: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def lab_pages(root: Path = ROOT) -> dict[Path, str]:
    """{page of the book: its path in the copy}, in reading order: every notebook of
    ``_toc.yml`` and the pages of :data:`PAGES`, as notebooks, relative to ``book/``."""
    book = Path(root) / "book"
    return {path: path.relative_to(book).with_suffix(".ipynb").as_posix() for path in toc_files(root)
            if path.suffix == ".ipynb" or path.stem in PAGES}


def not_measured_note(notebooks: list[str], here: str) -> str:
    """The note under a page's title when some of its numbers come from ``notebooks`` (file
    names) that the jupyter-cache holds no run of."""
    names = ["this page" if name == here else f"`{name}`" for name in notebooks]
    which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"> **Numbers not filled in.** The book has not yet run the current code of {which}, so the "
            f"numbers measured there read {NOT_MEASURED} in the text below. Run the page (Run > Run All Cells) "
            "to see its own measurements in its outputs and figures. To fill in the text, run `make site` (or "
            "`python -m tools.execute`), then `make lab` again.")


def solution_box(label: str, parts: list[str]) -> str:
    """A solution as a folded ``<details>`` box headed by its exercise (``label``, e.g.
    "Exercise 5"), holding ``parts``: its text (plain markdown) and its code, in order."""
    if any(part.startswith("```python") for part in parts):
        parts = [*parts, "*To run this code, copy it into the cell under the exercise.*"]
    body = "\n\n".join(parts)
    return f"<details>\n<summary><b>Solution to {label}</b> (click to show)</summary>\n\n{body}\n\n</details>"


def glossary_markdown(text: str) -> str:
    """A ``{glossary}`` block as a list of terms in bold, each followed by its definition."""
    def entries(m: re.Match) -> str:
        items, term, lines = [], None, []
        for line in m["body"].splitlines() + [""]:
            if line and not line[0].isspace():
                if term:
                    items.append(f"- **{term}**: {' '.join(lines)}")
                term, lines = line.strip(), []
            elif line.strip():
                lines.append(line.strip())
        if term:
            items.append(f"- **{term}**: {' '.join(lines)}")
        return "\n".join(items)

    return GLOSSARY.sub(entries, text)


def bibliography_markdown(bib: Path) -> str:
    """Every entry of ``bib`` as a list, each headed by how the text cites it (Author year),
    in that order."""
    data = parse_file(str(bib), bib_format="bibtex")
    style = find_plugin("pybtex.style.formatting", "plain")()
    formatted = {entry.key: entry.text.render_as("markdown") for entry in style.format_entries(data.entries.values())}
    cited = sorted((citation(key, bib), key) for key in data.entries)
    return "\n".join(f"- **{who}.** {formatted[key]}" for who, key in cited)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _notebook_text(nb) -> str:
    return nbformat.writes(nb) + "\n"


def answer_box(text: str) -> str:
    """A discussion question's model answer (``text``, plain markdown) as a folded box."""
    return f"<details>\n<summary><b>Model answer</b> (click to show)</summary>\n\n{text.strip()}\n\n</details>"


def learner_notebook(nb, here: str, plain: Callable[[str], str], labels: dict[str, str], *,
                     outputs: bool = False, solutions: bool = True):
    """``nb`` (a book notebook) for the learner's copy: plain markdown (``plain``, for one
    markdown text of this page), code cells without outputs, and each solution, its text and
    its code, one folded box. ``labels`` maps each exercise label met so far to "Exercise N".

    ``outputs`` keeps the code cells' outputs (of an executed ``nb``); ``solutions=False``
    leaves the solutions out, boxes and all (the prose after a solution's end stays)."""
    nb = nbformat.from_dict(nb)
    cells, box = [], None  # box: the open solution's first cell, its exercise and its parts so far

    def close(after: str = "") -> None:
        after = plain(after) if after.strip() else ""
        if solutions:
            box["cell"].source = solution_box(box["label"], box["parts"]) + (f"\n\n{after}" if after else "")
        elif not after:
            return
        else:
            box["cell"].source = after
        cells.append(box["cell"])

    for cell in nb.cells:
        if cell.cell_type == "code":
            if not outputs:
                cell.outputs, cell.execution_count = [], None
            code = f"```python\n{cell.source.strip()}\n```"
            if box is not None:
                box["parts"].append(code)
            elif "solution" in cell.metadata.get("tags", []):  # a solution marked by its tag alone
                box = {"cell": nbformat.v4.new_markdown_cell(id=cell.id), "label": "the exercise above",
                       "parts": [code]}
                close()
                box = None
            else:
                cells.append(cell)
            continue
        if cell.cell_type != "markdown":
            cells.append(cell)
            continue
        if box is None and "solution" in cell.metadata.get("tags", []):  # a discussion's model answer
            if solutions:
                cell.source = answer_box(plain(cell.source))
                cells.append(cell)
            continue
        text, start = cell.source, SOLUTION_START.match(cell.source)
        if start:
            if box is not None:
                raise ValueError(f"{here}: a solution opens inside another solution")
            box = {"cell": cell, "label": labels.get(start["label"], "the exercise above"), "parts": []}
            text = text[start.end():]
        if box is None:
            text = plain(SOLUTION_END.sub("", text, count=1))
            if text.strip():  # an empty markdown cell would show JupyterLab's placeholder text
                cell.source = text
                cells.append(cell)
            continue
        closed = SOLUTION_END.search(text)
        inside = text[:closed.start()] if closed else text
        if inside.strip():
            box["parts"].append(plain(inside).strip())
        if closed:
            close(text[closed.end():])
            box = None
    if box is not None:
        raise ValueError(f"{here}: a solution has no solution-end")
    nb.cells = cells
    return nb


def make_lab_copy(dest: Path = DEST, root: Path = ROOT, *, force: bool = False,
                  glued: dict[str, dict[str, str]] | None = None) -> Copy:
    """Write the learner's copy of the book into ``dest`` (see the module's docstring); the
    glued numbers come from the jupyter-cache unless ``glued`` ({notebook file name: {name:
    value}}, for a test) is given."""
    root, dest = Path(root), Path(dest)
    report = Copy(dest)
    glued = glued_numbers(root, strict=False) if glued is None else glued
    pages = lab_pages(root)
    titles = {copy: page_title(path) for path, copy in pages.items()}
    missing_here: dict[str, None] = {}  # the notebooks, in order, whose numbers a page lacks

    def missing(notebook: str, name: str) -> str:
        if notebook in glued:
            report.warnings.append(f"{notebook}: the cached run glued nothing under {name!r}")
        else:
            missing_here[notebook] = None
        return NOT_MEASURED

    plain_book = book_markdown(glued, root, missing=missing)
    files: dict[str, str] = {}
    for path, copy in pages.items():
        missing_here.clear()
        nb = _learner_page(path, copy, pages, titles, plain_book, root)
        if missing_here:
            report.unmeasured.append(copy)
            note = not_measured_note(list(missing_here), path.name)
            nb.cells.insert(1, nbformat.v4.new_markdown_cell(note, id="not-measured"))
        files[copy] = _notebook_text(nb)
    _write(files, report, force)
    return report


def executed_pages(root: Path = ROOT, *, solutions: bool = True) -> dict[str, str]:
    """{path in the copy (``ch1/01_degradation.ipynb``): notebook text} for every notebook page of
    the book as its page on the site shows it, for the site's downloads: the learner's copy's
    plain markdown with every glued number, the outputs of the site's run (the jupyter-cache),
    and the solutions as folded boxes, or none (``solutions=False``, the site without them).
    A page whose current code the cache holds no run of is left out."""
    from tools.execute import executed_notebook, read_cache

    root = Path(root)
    cache, glued = read_cache(), glued_numbers(root, strict=False)
    plain_book = book_markdown(glued, root, missing=lambda notebook, name: NOT_MEASURED)
    pages = lab_pages(root)
    titles = {copy: page_title(path) for path, copy in pages.items()}
    files = {}
    for path, copy in pages.items():
        if path.suffix != ".ipynb":
            # the other pages' text goes through plain_book too: it numbers the exercises in order
            _learner_page(path, copy, pages, titles, plain_book, root)
            continue
        try:
            run = executed_notebook(path, cache)
        except KeyError:
            _learner_page(path, copy, pages, titles, plain_book, root)
            continue
        nb = _learner_page(path, copy, pages, titles, plain_book, root, executed=run, solutions=solutions)
        files[copy] = _notebook_text(nb)
    return files


def _learner_page(path: Path, copy: str, pages: dict[Path, str], titles: dict[str, str], plain_book, root: Path,
                  *, executed=None, solutions: bool = True):
    """The page ``path`` of the book as a notebook of the learner's copy, at ``copy``; with
    ``executed`` (the notebook with its outputs), those outputs kept."""
    folder = posixpath.dirname(copy) or "."
    rel = {posixpath.relpath(other, folder): title for other, title in titles.items()}

    def plain(text: str) -> str:
        text = plain_book(text, path.name, rel)
        return LINK.sub(lambda m: _link(m, path, root, pages, folder), text)

    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4) if executed is None else executed
        return learner_notebook(nb, copy, plain, plain_book.labels, outputs=executed is not None,
                                solutions=solutions)
    text = path.read_text(encoding="utf-8")
    sections = {posixpath.relpath(other, folder): titles[other] for p, other in pages.items()
                if p.suffix == ".ipynb" and p.parent == path.parent}
    text = TOC.sub(lambda m: contents(sections), text)
    text = BIBLIOGRAPHY.sub(lambda m: bibliography_markdown(Path(root) / "book" / "references.bib"), text)
    nb = nbformat.v4.new_notebook(metadata=dict(KERNEL))
    nb.cells = [nbformat.v4.new_markdown_cell(plain(glossary_markdown(text)), id="page")]
    return nb


def _link(m: re.Match, page: Path, root: Path, pages: dict[Path, str], folder: str) -> str:
    """A markdown link of ``page``'s prose to a page of the book, pointed at its copy; the
    link's text alone where the copy leaves that page out."""
    target = (page.parent / m["target"]).resolve().with_suffix("")
    source = next((p for p in pages if p.with_suffix("") == target), None)
    if source is not None:
        return f"[{m['text']}]({posixpath.relpath(pages[source], folder)}{m['anchor'] or ''})"
    if target.is_relative_to((Path(root) / "book").resolve()):
        return m["text"]  # a page the copy leaves out (the instructors', the API's)
    return m[0]


def _write(files: dict[str, str], report: Copy, force: bool) -> None:
    """Write ``files`` ({path in the copy: text}) into ``report.dest``, keeping every file the
    learner changed since the last copy (unless ``force``)."""
    dest = report.dest
    manifest_path = dest / MANIFEST
    before = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    after = {}
    for rel, text in files.items():
        target, data = dest / rel, text.encode("utf-8")
        if target.exists() and not force:
            now = _sha(target.read_bytes())
            if now != _sha(data) and now != before.get(rel):
                report.kept.append(rel)
                after[rel] = before.get(rel, "")
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        report.written.append(rel)
        after[rel] = _sha(data)
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(after, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, nargs="?", default=DEST, help=f"default: {os.path.relpath(DEST)}")
    parser.add_argument("--force", action="store_true", help="overwrite the notebooks you changed in DEST")
    args = parser.parse_args(argv)
    report = make_lab_copy(args.dest, force=args.force)
    print(f"wrote {len(report.written)} notebooks into {args.dest}/")
    for rel in report.kept:
        print(f"kept your changed {rel} (delete it, or pass --force, for the book's current version)")
    for warning in report.warnings:
        print(f"warning: {warning}")
    if report.unmeasured:
        print(f"{len(report.unmeasured)} pages read {NOT_MEASURED} for their numbers (the jupyter-cache has no run "
              "of their current code; `make site` or `python -m tools.execute` fills it): "
              + ", ".join(report.unmeasured))


if __name__ == "__main__":
    main()
