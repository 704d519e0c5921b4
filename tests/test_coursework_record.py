"""The coursework record (tools/coursework_record.py): an entry vouches for a test only while
nothing it depends on changed, and an edited entry vouches for nothing."""

from __future__ import annotations

import json

import pytest

from tools.coursework_record import RECORD, inputs, read_record, snapshot, update_record, vouched, why_run

GRADE_CH1 = ("tests/test_classroom.py::"
             "test_every_exercise_of_a_chapter_gives_the_books_solution_full_marks_in_the_sandbox[1]")
PDF = "tests/test_pdf.py::test_the_pdf_has_every_page_of_the_book_its_figures_and_typeset_math"
MACHINE = {"speed_index": 0.8}


def _tree(root):
    for name, text in {"requirements.txt": "torch==2.13.0\n", "_toc.yml": "root: x\n", "README.md": "read me\n",
                       "book/ch1/01_a.ipynb": "{}", "book/ch2/01_b.ipynb": "{}", "book/intro.md": "# hi\n",
                       "helpers/__init__.py": "", "tools/classroom.py": "", "tests/test_classroom.py": "",
                       "helpers/__pycache__/x.cpython-311.pyc": "junk", "benchmarks/sweep.json": "{}"}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_an_entry_vouches_until_a_file_it_depends_on_changes(tmp_path):
    _tree(tmp_path)
    update_record({GRADE_CH1: 60.0, PDF: 90.0}, today="2026-11-27", machine=MACHINE, tree=snapshot(tmp_path),
                  root=tmp_path)
    record = read_record(tmp_path)
    assert why_run(GRADE_CH1, record, tmp_path) is None and why_run(PDF, record, tmp_path) is None
    assert "passed on 2026-11-27 in 60 s" in vouched(GRADE_CH1, record)
    assert why_run("tests/test_lab.py::test_other", record, tmp_path) == "not in the record"

    # the project's documents, the records and caches are no test's input
    (tmp_path / "README.md").write_text("changed\n")
    (tmp_path / "benchmarks" / "sweep.json").write_text('{"x": 1}')
    (tmp_path / "helpers" / "__pycache__" / "x.cpython-311.pyc").write_text("other junk")
    assert why_run(PDF, record, tmp_path) is None
    # another chapter's notebook is not an input of chapter 1's grading, but is the PDF's
    (tmp_path / "book" / "ch2" / "01_b.ipynb").write_text('{"cells": []}')
    assert why_run(GRADE_CH1, record, tmp_path) is None
    assert "book/ch2/01_b.ipynb" in why_run(PDF, record, tmp_path)
    # a helpers file, a new file, a file gone, the pins: each makes the entry stale
    (tmp_path / "helpers" / "__init__.py").write_text("x = 1\n")
    assert "helpers/__init__.py" in why_run(GRADE_CH1, record, tmp_path)
    (tmp_path / "helpers" / "__init__.py").write_text("")
    assert why_run(GRADE_CH1, record, tmp_path) is None
    (tmp_path / "tools" / "new.py").write_text("")
    assert "tools/new.py" in why_run(GRADE_CH1, record, tmp_path)
    (tmp_path / "tools" / "new.py").unlink()
    (tmp_path / "tools" / "classroom.py").unlink()
    assert why_run(GRADE_CH1, record, tmp_path) is not None
    (tmp_path / "tools" / "classroom.py").write_text("")
    (tmp_path / "requirements.txt").write_text("torch==2.14.0\n")
    assert why_run(GRADE_CH1, record, tmp_path) == "the pins or the Python version changed"


def test_an_entry_edited_by_hand_vouches_for_nothing(tmp_path):
    _tree(tmp_path)
    update_record({PDF: 90.0}, today="2026-11-27", machine=MACHINE, tree=snapshot(tmp_path), root=tmp_path)
    path = tmp_path / RECORD
    record = json.loads(path.read_text())
    record["tests"][PDF]["date"] = "2026-12-01"
    assert "edited by hand" in why_run(PDF, record, tmp_path)
    # a later update keeps the other entries as they were
    update_record({GRADE_CH1: 5.0}, today="2026-11-28", machine=MACHINE, tree=snapshot(tmp_path), root=tmp_path)
    kept = read_record(tmp_path)
    assert set(kept["tests"]) == {PDF, GRADE_CH1} and why_run(PDF, kept, tmp_path) is None


def test_an_entry_records_the_tree_its_test_ran_on(tmp_path):
    """A file edited while the tests ran is not vouched for: the entry holds the tree as the
    session found it."""
    _tree(tmp_path)
    before = snapshot(tmp_path)
    (tmp_path / "helpers" / "__init__.py").write_text("edited during the run\n")
    update_record({PDF: 90.0}, today="2026-11-27", machine=MACHINE, tree=before, root=tmp_path)
    assert "helpers/__init__.py" in why_run(PDF, read_record(tmp_path), tmp_path)
    (tmp_path / "helpers" / "__init__.py").write_text("")
    assert why_run(PDF, read_record(tmp_path), tmp_path) is None


def test_the_inputs_are_the_books_tree_without_its_documents(tmp_path):
    _tree(tmp_path)
    files = inputs(PDF, tmp_path)
    assert "book/ch2/01_b.ipynb" in files and "requirements.txt" in files and "helpers/__init__.py" in files
    assert not any(f.startswith(("README", "benchmarks/")) or "__pycache__" in f for f in files)
    assert "book/ch2/01_b.ipynb" not in inputs(GRADE_CH1, tmp_path)
    assert "book/intro.md" in inputs(GRADE_CH1, tmp_path)


def test_every_committed_entry_is_as_pytest_wrote_it():
    """An entry of benchmarks/coursework.json edited by hand would vouch for nothing; the
    committed record holds none (a stale entry is fine: CI runs that test again)."""
    from tools.fingerprints import entry_digest
    from tools.toc import ROOT

    record = read_record(ROOT)
    edited = [name for name, entry in record.get("tests", {}).items() if entry.get("digest") != entry_digest(entry)]
    assert not edited, edited


def test_no_input_is_a_file_git_ignores():
    """A cache or build output that a test run leaves in the trees (.ruff_cache, __pycache__) is
    not an input: a fresh checkout would not have it, and its entry would never match there."""
    import subprocess

    from tools.coursework_record import tree_files
    from tools.toc import ROOT

    files = tree_files(ROOT)
    check = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(files),
                           capture_output=True, text=True)
    if check.returncode not in (0, 1):  # 1: none ignored
        pytest.skip(f"not a git checkout: {check.stderr.strip()}")
    assert not check.stdout.split(), check.stdout.split()[:5]
