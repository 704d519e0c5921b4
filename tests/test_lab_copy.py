"""The learner's copy (``tools/lab_copy.py``): a small book of two notebooks, made plain for
JupyterLab, with its numbers from a cached run or marked as not measured yet."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from tools.lab_copy import NOT_MEASURED, bibliography_markdown, glossary_markdown, learner_notebook, make_lab_copy
from tools.toc import ROOT

# What JupyterLab would show raw (tests/test_student_edition.py looks for the same).
RAW = re.compile(r"\{[a-z:-]+\}`|```\{|:::|^:[a-z-]+:", re.M)
TOC = """format: jb-book
root: book/preface
chapters:
  - file: book/ch1/index
    sections:
      - file: book/ch1/01_first
  - file: book/ch2/index
    sections:
      - file: book/ch2/01_second
"""


def _md(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source)


def _code(source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("stream", text="an old output\n")]
    cell.execution_count = 3
    return cell


FIRST = [
    _md("# The first section\n\n*Source: the [chapter page](index.md).*\n\nIt took {glue:text}`t:.1f` s "
        "as in {cite}`he2016deep`. {numref}`fig-a` shows it. Read {doc}`the second <../ch2/01_second>`, the "
        "[second again](../ch2/01_second.ipynb) and the [bibliography](../appendix/bibliography.md); "
        "see {term}`skip <skip connection>` and {func}`~helpers.measure.paths`. Math: $y = x + F(x)$."),
    _code("import helpers\nt = 2.345"),
    _md(":::{admonition} A caution\n:class: note dropdown\nMind the {glue:text}`n` steps.\n:::"),
    _md("```{exercise} Count\n:label: ex-count\n\n**Goal:** count · **Points:** 1\n\nDo $x^2$.\n```"),
    _code("my_count = None"),
    _md("```{solution-start} ex-count\n:class: dropdown\n```\nSquare it: $x \\cdot x$."),
    _code("my_count = 4"),
    _md("```{solution-end}\n```"),
    _code("helpers.grading.check(my_count)"),
    _md("As in {ref}`ex-count`, done."),
]
SECOND = [
    _md("# The second section\n\nIt used {glue:text}`k` layers and the first one's {glue:text}`01_first.ipynb::t:.2f` "
        "s; back to {doc}`../ch1/01_first`."),
    _code("k = 7"),
]


@pytest.fixture
def book(tmp_path) -> Path:
    """A book of two chapters, one section each, in ``tmp_path``."""
    (tmp_path / "_toc.yml").write_text(TOC, encoding="utf-8")
    for chapter, name, cells in (("ch1", "01_first", FIRST), ("ch2", "01_second", SECOND)):
        folder = tmp_path / "book" / chapter
        folder.mkdir(parents=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells])
        nbformat.write(nb, folder / f"{name}.ipynb")
        (folder / "index.md").write_text(f"# Chapter {chapter[-1]}\n\n```{{tableofcontents}}\n```\n", encoding="utf-8")
    (tmp_path / "book" / "preface.md").write_text("# Preface\n\nStart with {doc}`ch1/01_first`.\n", encoding="utf-8")
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    return tmp_path


def _markdown(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def test_each_marker_becomes_plain_markdown_with_a_cached_run(book, tmp_path):
    copy = make_lab_copy(tmp_path / "lab", book, glued={"01_first.ipynb": {"t": "2.345", "n": "12"},
                                                        "01_second.ipynb": {"k": "7"}})
    assert sorted(copy.written) == ["ch1/01_first.ipynb", "ch1/index.ipynb", "ch2/01_second.ipynb",
                                    "ch2/index.ipynb", "preface.ipynb"]
    assert not copy.unmeasured and not copy.kept and not copy.warnings
    first = _markdown(copy.dest / "ch1" / "01_first.ipynb")
    text = "\n".join(first)
    assert not RAW.findall(text), RAW.findall(text)
    assert first[0].startswith("# The first section\n\n*Source: the [chapter page](index.ipynb).*")
    assert ("It took 2.3 s as in (He et al. 2016). The figure shows it. Read [the second](../ch2/01_second.ipynb), "
            "the [second again](../ch2/01_second.ipynb) and the bibliography; see skip and `paths`. "
            "Math: $y = x + F(x)$.") in first[0]
    assert first[1] == "> **A caution**\n>\n> Mind the 12 steps."
    assert first[2].startswith("> **Exercise 1: Count**\n>\n> **Goal:** count")
    assert first[3] == ("<details>\n<summary><b>Solution to Exercise 1</b> (click to show)</summary>\n\n"
                        "Square it: $x \\cdot x$.\n\n```python\nmy_count = 4\n```\n\n"
                        "*To run this code, copy it into the cell under the exercise.*\n\n</details>")
    assert first[4] == "As in Exercise 1, done.", "the solution-end cell, empty once converted, is dropped"
    second = _markdown(copy.dest / "ch2" / "01_second.ipynb")
    assert second == ["# The second section\n\nIt used 7 layers and the first one's 2.35 s; back to "
                      "[The first section](../ch1/01_first.ipynb)."]
    assert _markdown(copy.dest / "ch1" / "index.ipynb") == ["# Chapter 1\n\n1. [The first section](01_first.ipynb)\n"]
    preface = ["# Preface\n\nStart with [The first section](ch1/01_first.ipynb).\n"]
    assert _markdown(copy.dest / "preface.ipynb") == preface


def test_code_cells_are_the_books_without_outputs_but_solutions_are_in_their_box(book, tmp_path):
    copy = make_lab_copy(tmp_path / "lab", book, glued={"01_first.ipynb": {"t": "1", "n": "2"}})
    original = nbformat.read(book / "book" / "ch1" / "01_first.ipynb", as_version=4)
    nb = nbformat.read(copy.dest / "ch1" / "01_first.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in code] == [c.source for c in original.cells if c.cell_type == "code"
                                        and c.source != "my_count = 4"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert [c.id for c in nb.cells] == [c.id for c in original.cells if c.source not in (
        "my_count = 4", "```{solution-end}\n```")], "cells keep their ids, the box its opening cell's"


def test_a_solution_of_several_cells_is_one_box():
    labels = {"ex-a": "Exercise 2"}
    nb = nbformat.v4.new_notebook(cells=[
        _md("```{solution-start} ex-a\n:class: dropdown\n```\nFirst."), _code("a = 1"), _md("Then."),
        _code("b = 2"), _md("```{solution-end}\n```\nAfter it."), _code("check(a, b)")])
    cells = learner_notebook(nb, "x.ipynb", lambda text: text, labels).cells
    assert [c.cell_type for c in cells] == ["markdown", "code"]
    assert cells[0].source == ("<details>\n<summary><b>Solution to Exercise 2</b> (click to show)</summary>\n\n"
                               "First.\n\n```python\na = 1\n```\n\nThen.\n\n```python\nb = 2\n```\n\n"
                               "*To run this code, copy it into the cell under the exercise.*\n\n</details>\n\n"
                               "After it.")
    with pytest.raises(ValueError, match="no solution-end"):
        learner_notebook(nbformat.v4.new_notebook(cells=[_md("```{solution-start} ex-a\n```")]), "x.ipynb",
                         lambda text: text, labels)


def test_the_sites_download_keeps_outputs_and_can_leave_the_solutions_out():
    """The site's download of a page (``executed_pages``): the executed notebook's outputs
    stay; without solutions, each solution goes, its box and its code, the text after it stays."""
    ran = _code("t = 2")
    ran["outputs"] = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    ran["execution_count"] = 1
    cells = [_md("```{exercise} E\n:label: ex-a\n```"), _code("my = None"),
             _md("```{solution-start} ex-a\n:class: dropdown\n```\nBecause."), _code("my = 4"),
             _md("```{solution-end}\n```\nAfter it."), ran]
    answer = _md("**Model answer.** Add, then normalise.")
    answer["metadata"]["tags"] = ["solution"]  # a discussion's model answer, marked by its tag
    cells.append(answer)
    nb = nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells])
    kept = learner_notebook(nb, "x.ipynb", lambda text: text, {}, outputs=True)
    assert kept.cells[-1].source.startswith("<details>") and "Add, then normalise" in kept.cells[-1].source
    assert kept.cells[-2].outputs[0]["text"] == "2\n" and kept.cells[-2].execution_count == 1
    assert any("Solution to" in c.source for c in kept.cells)
    bare = learner_notebook(nb, "x.ipynb", lambda text: text, {}, outputs=True, solutions=False)
    text = "\n".join(c.source for c in bare.cells)
    assert "Solution" not in text and "Because" not in text and "my = 4" not in text
    assert "Model answer" not in text and "normalise" not in text
    assert "After it." in text and bare.cells[-1].outputs
    assert learner_notebook(nb, "x.ipynb", lambda text: text, {}).cells[-2].outputs == []


def test_numbers_without_a_cached_run_say_so(book, tmp_path):
    copy = make_lab_copy(tmp_path / "lab", book, glued={"01_second.ipynb": {"k": "7"}})
    assert copy.unmeasured == ["ch1/01_first.ipynb", "ch2/01_second.ipynb"]
    first = _markdown(copy.dest / "ch1" / "01_first.ipynb")
    assert f"It took {NOT_MEASURED} s" in first[0]
    assert first[1].startswith("> **Numbers not filled in.** The book has not yet run the current code of this "
                               "page, so the numbers measured there read")
    assert "`make site`" in first[1]
    second = _markdown(copy.dest / "ch2" / "01_second.ipynb")
    assert second[0].startswith(f"# The second section\n\nIt used 7 layers and the first one's {NOT_MEASURED} s")
    assert "current code of `01_first.ipynb`, so" in second[1], "the note names the page that measures it"


def test_a_glue_the_cached_run_lacks_is_a_warning(book, tmp_path):
    copy = make_lab_copy(tmp_path / "lab", book, glued={"01_first.ipynb": {"t": "1"}, "01_second.ipynb": {"k": "7"}})
    assert copy.warnings == ["01_first.ipynb: the cached run glued nothing under 'n'"]
    assert copy.unmeasured == []


def test_making_the_copy_again_keeps_what_the_learner_changed(book, tmp_path):
    dest = tmp_path / "lab"
    make_lab_copy(dest, book, glued={})
    mine = dest / "ch1" / "01_first.ipynb"
    mine.write_text(mine.read_text(encoding="utf-8").replace("my_count = None", "my_count = 5"), encoding="utf-8")
    again = make_lab_copy(dest, book, glued={"01_first.ipynb": {"t": "2.345", "n": "12"}})
    assert again.kept == ["ch1/01_first.ipynb"] and "ch2/01_second.ipynb" in again.written
    assert "my_count = 5" in mine.read_text(encoding="utf-8")
    third = make_lab_copy(dest, book, glued={"01_first.ipynb": {"t": "2.345", "n": "12"}}, force=True)
    assert third.kept == [] and "It took 2.3 s" in mine.read_text(encoding="utf-8")
    untouched = make_lab_copy(dest, book, glued={})
    assert untouched.kept == [], "a file as the last copy wrote it is the copy's to replace"


def test_glossary_and_bibliography_pages_are_plain_lists():
    glossary = glossary_markdown("# Glossary\n\n```{glossary}\nskip (跳跃)\n  An addition\n  around a block.\n\n"
                                 "stream\n  The running sum.\n```\n")
    assert glossary == "# Glossary\n\n- **skip (跳跃)**: An addition around a block.\n- **stream**: The running sum.\n"
    entries = bibliography_markdown(ROOT / "book" / "references.bib")
    assert "- **He et al. 2016.** Kaiming He" in entries and "{" not in entries
