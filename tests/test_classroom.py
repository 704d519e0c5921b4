"""Grading a class with ``tools/classroom.py`` (nbgrader underneath): the book's exercises become
graded cells, and a folder of submissions becomes a gradebook with the expected points."""

from __future__ import annotations

import copy
import csv
import subprocess
from pathlib import Path

import nbformat
import pytest

from tools.classroom import HIDDEN, _failures, find_exercises, grade, graded_notebook
from tools.toc import ROOT, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
new_code, new_md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


def test_a_dead_kernel_is_named_even_when_socket_errors_follow_it():
    log = ("[AutogradeApp | ERROR] Kernel died while waiting for execute reply.\n"
           "nbclient.exceptions.DeadKernelError: Kernel died\n"
           "zmq.error.ZMQError: Socket operation on non-socket\n"
           "[AutogradeApp | ERROR] There was an error processing assignment 'ch1' for student 'crash'\n"
           "ValueError: something else\n"
           "[AutogradeApp | ERROR] There was an error processing assignment 'ch1' for student 'odd'\n"
           "[AutogradeApp | ERROR] There was an error processing assignment 'ch1' for student 'bare'\n")
    failed = _failures(subprocess.CompletedProcess([], 1, stdout=log, stderr=""))
    assert set(failed) == {"crash", "odd", "bare"}
    assert "DeadKernelError: Kernel died" in failed["crash"] and "ZMQError" not in failed["crash"]
    assert "ValueError: something else" in failed["odd"] and "see nbgrader's log" in failed["bare"]


def _exercise(label: str, title: str, points: int) -> str:
    return (f"```{{exercise}} {title}\n:label: {label}\n\n**Goal:** practise · **Level:** ★☆☆ easy · "
            f"**Time:** about 5 min · **Points:** {points}\n\nDo it.\n```")


def _solution(label: str, code: str) -> list:
    return [new_md(f"```{{solution-start}} {label}\n:class: dropdown\n```"), new_code(code),
            new_md("```{solution-end}\n```")]


FACTOR = "def my_per_layer_factor(norms):\n    return None"
FACTOR_SOLVED = ("def my_per_layer_factor(norms):\n"
                 "    return math.exp(-np.polyfit(np.arange(len(norms)), np.log(norms), 1)[0])")
GUESS = "my_guess = None  # your prediction"


def _tiny_book(root: Path) -> Path:
    """A one-notebook chapter in the book's format, with the course's own checkers."""
    (root / "book" / "ch1").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/ch1/index\nchapters:\n  - file: book/ch1/01_tiny\n")
    (root / "book" / "ch1" / "index.md").write_text("# Tiny\n")
    nb = nbformat.v4.new_notebook(cells=[
        new_code("import math\n\nimport numpy as np\n\nimport helpers"),
        new_md(_exercise("ex-factor", "Fit the factor", 2)), new_code(FACTOR),
        *_solution("ex-factor", FACTOR_SOLVED),
        new_code("helpers.grading.check_per_layer_factor(my_per_layer_factor)"),
        new_md(_exercise("ex-guess", "Predict a half", 1)), new_code(GUESS),
        *_solution("ex-guess", "my_guess = 0.5"),
        new_code("measured = 1 / 2\nhelpers.grading.check_prediction('Predict a half', my_guess, measured, rtol=0.1)"),
    ])
    path = root / "book" / "ch1" / "01_tiny.ipynb"
    nbformat.write(nb, path)
    return path


def _submission(release: nbformat.NotebookNode, folder: Path, *, factor=FACTOR, guess=GUESS, edit=None) -> None:
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        if cell.source == FACTOR:
            cell.source = factor
        elif cell.source == GUESS:
            cell.source = guess
    if edit:
        edit(nb)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "01_tiny.ipynb")


def _forge(nb):
    """Replace the checker cell with a printed pass, and forge its output."""
    cell = next(c for c in nb.cells if "check_per_layer_factor" in c.source)
    cell.source = 'print("Per-layer factor: all checks passed.")'
    cell.outputs = [nbformat.v4.new_output("stream", text="Per-layer factor: all checks passed.\n")]


def _tamper(nb):
    nb.cells.insert(1, new_code("helpers.grading.award = lambda points: points"))


ENDPOINTS = "def my_per_layer_factor(norms):\n    return (norms[-1] / norms[0]) ** (-1 / (len(norms) - 1))"
STUDENTS = {  # name: (what they submit, the points expected for ex-factor and ex-guess)
    "full": (dict(factor=FACTOR_SOLVED, guess="my_guess = 0.5"), (2, 1)),
    "untouched": (dict(), (0, 0)),
    # exact on the four geometric cases, wrong on the three noisy ones: 4/7 of 2 points
    "partial": (dict(factor=ENDPOINTS, guess="my_guess = 0.52"), (1.14, 1)),
    "gaming": (dict(factor="def my_per_layer_factor(norms):\n    return helpers.measure.per_layer_factor(norms)",
                    guess="my_guess = '0.5'"), (0, 0)),
    "loop": (dict(factor="def my_per_layer_factor(norms):\n    while True:\n        pass",
                  guess="while True:\n    pass"), (0, 0)),
    "raises": (dict(factor="1 / 0\n" + FACTOR_SOLVED, guess="raise SystemExit"), (0, 0)),
    "crash": (dict(factor=FACTOR_SOLVED, guess="import os\nos._exit(1)"), (0, 0)),
    "forged": (dict(edit=_forge), (0, 0)),
    "tamper": (dict(edit=_tamper), None),  # points unknown: what counts is the note for review
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_exercise_of_the_book_can_be_graded(path):
    nb = nbformat.read(path, as_version=4)
    exercises = find_exercises(nb)
    assert exercises, f"{path.name} has no exercise"
    graded = graded_notebook(nb)
    tests = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata.nbgrader.grade_id for c in tests] == [ex.label for ex in exercises]
    for cell, ex in zip(tests, exercises):
        assert cell.source.endswith(HIDDEN.format(points=ex.points)) and 1 <= ex.points <= 5
        assert 1 <= ex.minutes <= 60 and ex.level.split()[-1] in {"easy", "medium", "hard"} and ex.goal
    starters = [c for c in graded.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    assert len(starters) == sum(len(ex.starters) for ex in exercises), "only starter cells stay editable"
    assert "{solution-start}" not in "".join(c.source for c in graded.cells)


def test_find_exercises_names_what_is_missing():
    nb = nbformat.v4.new_notebook(cells=[new_md("```{exercise} E\n:label: e\n\nDo it.\n```"), new_code("x = 1")])
    with pytest.raises(ValueError, match="'e' lacks the line"):
        find_exercises(nb)
    nb.cells[0].source = _exercise("e", "E", 1)
    with pytest.raises(ValueError, match="'e' has no solution"):
        find_exercises(nb)
    nb.cells += [*_solution("e", "x = 2"), new_code("print(x)")]
    with pytest.raises(ValueError, match="must run a checker"):
        find_exercises(nb)


@pytest.mark.slow
@pytest.mark.coursework
def test_a_class_is_graded_into_a_gradebook_with_the_expected_points(tmp_path):
    root = tmp_path / "book"
    _tiny_book(root)
    course = tmp_path / "course"
    from tools.classroom import release

    handed_out = nbformat.read(release(1, tmp_path / "release", course, root=root)[0], as_version=4)
    assert "award" not in "".join(c.source for c in handed_out.cells), "the hidden lines are not handed out"
    submissions = tmp_path / "submissions"
    for name, (kwargs, _) in STUDENTS.items():
        _submission(handed_out, submissions / name, **kwargs)
    (submissions / "absent").mkdir()

    rows = grade(submissions, 1, course, timeout=10, root=root)

    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        table = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    assert len(table) == len(rows) == 2 * (len(STUDENTS) + 1)
    for name, (_, expected) in STUDENTS.items():
        if expected is None:
            continue
        got = tuple(float(table[name, ex]["points"]) for ex in ("ex-factor", "ex-guess"))
        assert got == pytest.approx(expected, abs=0.01), (name, got)
    assert table["full", "ex-factor"]["max_points"] == "2" and table["full", "ex-guess"]["max_points"] == "1"
    assert "could not be graded" in table["crash", "ex-factor"]["review"]
    assert "Kernel died" in table["crash", "ex-factor"]["review"]
    assert "mentions the grading code" in table["tamper", "ex-factor"]["review"]
    assert "not submitted" in table["absent", "ex-factor"]["review"]
    assert not table["full", "ex-factor"]["review"] and not table["forged", "ex-factor"]["review"]

    def feedback(name: str) -> str:
        return (course / "feedback" / name / "ch1" / "01_tiny.html").read_text(encoding="utf-8")

    assert "Per-layer factor: all checks passed" in feedback("full")
    assert "not implemented yet" in feedback("untouched") and "no prediction yet" in feedback("untouched")
    assert "off limits" in feedback("gaming") and "str" in feedback("gaming")
    assert "took longer than" in feedback("loop") and "CellTimeoutError" in feedback("loop")
    assert "ZeroDivisionError" in feedback("raises")
    assert "not implemented yet" in feedback("forged"), "the grader runs the book's checker, not the forgery"

    # The chapter gains a section after the class was graded: nbgrader keeps the graded
    # assignment, and the instructor is told what to do rather than shown nbgrader's traceback.
    from tools.classroom import prepare

    nbformat.write(nbformat.v4.new_notebook(cells=[new_md("# More"), new_code("x = 1")]),
                   root / "book" / "ch1" / "02_more.ipynb")
    with open(root / "_toc.yml", "a", encoding="utf-8") as toc:
        toc.write("  - file: book/ch1/02_more\n")
    with pytest.raises(RuntimeError, match="sections were added or removed after submissions"):
        prepare(1, course, timeout=10, root=root)
