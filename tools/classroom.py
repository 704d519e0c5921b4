"""Grade a class: a thin layer over nbgrader that turns the book's exercises into graded cells.

    python -m tools.classroom grade SUBMISSIONS --chapter 1     # or: make grade SUBMISSIONS=...
    python -m tools.classroom release --chapter 1               # the notebooks to hand out

``SUBMISSIONS`` holds one folder per student, named by the student's id, with that
student's notebooks in it (named as in the student edition, e.g.
``04_vanishing_gradients.ipynb``, at any depth). The command writes an nbgrader course in
``_build/classroom`` (``--out``) and, in it:

* ``grades.csv``: one row per student and exercise: the points earned, the points
  possible, and a ``review`` column naming anything a person should look at (a cell of
  the student's own that touches the grading code, a notebook not submitted);
* ``feedback/<student>/ch<N>/<notebook>.html``: the student's notebook as graded, each
  checker's specific feedback under its exercise;
* ``gradebook.db``: nbgrader's gradebook, for its formgrader or ``nbgrader export``.

How the book becomes an nbgrader assignment (:func:`graded_notebook`): every exercise's
checker cell (the first code cell after its solution) becomes an autograded test cell
worth the points its text states (``**Points:** N``), with a hidden line
``helpers.grading.award(N)`` that shows the checker's feedback and returns
score × points, the share of the checker's cases passed times N: nbgrader's partial
credit. Every other code cell except the exercises' starter cells is marked read-only for
nbgrader, which puts its original source back before it grades; the solutions are
removed. So a student may change anything while learning, and the grader still runs the
book's own experiments and checkers, on a fresh kernel, whatever outputs the notebook
carries. Each cell may run ``--timeout`` seconds; a cell stopped by it, or that raises,
earns nothing, and the notebook goes on.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.environment import mode_environment
from tools.toc import ROOT, toc_notebooks

COURSE_ID = "residual-connections-measured"
OUT = ROOT / "_build" / "classroom"
TIMEOUT = 300  # seconds per cell; the longest cell of a section trains for under a minute
HIDDEN = "### BEGIN HIDDEN TESTS\nhelpers.grading.award({points})  # for the grader: score x points\n" \
         "### END HIDDEN TESTS"
META_LINE = re.compile(r"\*\*Goal:\*\* (?P<goal>.+?) · \*\*Level:\*\* (?P<level>.+?) · "
                       r"\*\*Time:\*\* about (?P<minutes>\d+) min · \*\*Points:\*\* (?P<points>\d+)")
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# What a student's own cell has no business touching while it is graded.
TAMPERING = re.compile(r"\bgrading\b|\baward\b|\bFeedback\b|\bLATEST\b")


START, END = "{solution-start}", "{solution-end}"


def _opens(cell, marker: str) -> bool:
    return cell.cell_type == "markdown" and marker in cell.source


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without solution cells and without outputs."""
    nb = nbformat.from_dict(nb)
    kept, inside = [], False
    for cell in nb.cells:
        if _opens(cell, START):
            if inside:
                raise ValueError("a solution-start cell opens inside another solution")
            inside = True
        if not inside and "solution" not in cell.get("metadata", {}).get("tags", []):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            kept.append(cell)
        if _opens(cell, END):
            if not inside:
                raise ValueError("a solution-end cell has no solution-start before it")
            inside = False
    if inside:
        raise ValueError("a solution-start cell is never closed by a solution-end cell")
    nb.cells = kept
    return nb


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook: its label and stated metadata, and where its cells are."""

    label: str
    title: str
    goal: str
    level: str
    minutes: int
    points: int
    starters: tuple[int, ...]  # the cells a student writes in
    checker: int  # the cell that runs the checker


def find_exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """The exercises of ``nb`` (with its solutions), in order.

    An exercise is a markdown cell with an ``{exercise}`` directive whose body has the line
    ``**Goal:** … · **Level:** … · **Time:** about N min · **Points:** N``; its starter cells
    are the code cells before its ``{solution-start}`` cell, and its checker cell is the
    first code cell after its ``{solution-end}`` cell. Raises ``ValueError`` naming the
    exercise when a part is missing."""
    found, cells = [], nb.cells
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown" or "```{exercise}" not in cell.source:
            continue
        head = cell.source[cell.source.index("```{exercise}"):]
        title = head.splitlines()[0].removeprefix("```{exercise}").strip()
        label = re.search(r":label: (\S+)", head)
        if label is None:
            raise ValueError(f"exercise {title!r} has no :label:")
        meta = META_LINE.search(head)
        if meta is None:
            raise ValueError(f"exercise {label[1]!r} lacks the line '**Goal:** … · **Level:** … · "
                             "**Time:** about N min · **Points:** N'")
        start = next((j for j in range(i + 1, len(cells)) if cells[j].cell_type == "markdown"
                      and START in cells[j].source), None)
        if start is None:
            raise ValueError(f"exercise {label[1]!r} has no solution")
        end = next(j for j in range(start, len(cells)) if cells[j].cell_type == "markdown" and END in cells[j].source)
        checker = next((j for j in range(end + 1, len(cells)) if cells[j].cell_type == "code"), None)
        if checker is None or "helpers.grading." not in cells[checker].source:
            raise ValueError(f"exercise {label[1]!r}: the first code cell after its solution must run a checker "
                             "from helpers.grading")
        starters = tuple(j for j in range(i + 1, start) if cells[j].cell_type == "code")
        if not starters:
            raise ValueError(f"exercise {label[1]!r} has no starter cell before its solution")
        found.append(Exercise(label[1], title, meta["goal"], meta["level"], int(meta["minutes"]),
                              int(meta["points"]), starters, checker))
    return found


def graded_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as an nbgrader source notebook: checker cells graded, the rest read-only, no solutions."""
    nb = nbformat.from_dict(nb)
    exercises = find_exercises(nb)
    starters = {j for ex in exercises for j in ex.starters}
    checkers = {ex.checker: ex for ex in exercises}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or i in starters:
            continue
        grader = {"schema_version": 3, "solution": False, "locked": True, "grade": False,
                  "grade_id": f"cell-{i:03d}"}
        if i in checkers:
            ex = checkers[i]
            grader.update(grade=True, grade_id=ex.label, points=ex.points)
            cell.source = cell.source.rstrip() + "\n" + HIDDEN.format(points=ex.points)
        cell.metadata["nbgrader"] = grader
    return strip_solutions(nb)


def chapter_notebooks(chapter: int, root: Path = ROOT) -> list[Path]:
    """The notebooks of chapter ``chapter`` (``book/ch<N>/``), in reading order."""
    if isinstance(chapter, bool) or not isinstance(chapter, int) or chapter < 1:
        raise ValueError(f"chapter must be a chapter number (1, 2, ...), got {chapter!r}")
    found = [p for p in toc_notebooks(root) if p.parent.name == f"ch{chapter}"]
    if not found:
        raise ValueError(f"chapter {chapter} has no notebooks in _toc.yml")
    return found


def _nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = mode_environment("grading")  # seed 0, no progress bars, no warnings (helpers.environment)
    # nbgrader runs the `alembic` command of its own environment to set up the gradebook.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def _failures(result: subprocess.CompletedProcess) -> dict[str, str]:
    """The students nbgrader could not grade (their kernel died, say), each with the error its
    log names before it says so: a dead kernel where the log names one (the socket errors that
    follow a kernel's death come in varying order), else the last error."""
    failed, errors = {}, []
    for line in (result.stdout + result.stderr).splitlines():
        line = line.strip()
        if re.match(r"^[\w.]*(Error|Exception)\b.*:", line):
            errors.append(line)
        who = re.search(r"There was an error processing assignment '[^']*' for student '([^']+)'", line)
        if who:
            died = [e for e in errors if "Kernel died" in e or "DeadKernel" in e]
            reason = (died or errors or ["see nbgrader's log"])[-1]
            failed[who[1]] = f"could not be graded ({reason}), so no points; look at it"
            errors = []
    return failed


def prepare(chapter: int, course: Path = OUT, *, timeout: int = TIMEOUT, root: Path = ROOT) -> str:
    """Write the nbgrader course for ``chapter`` under ``course`` and generate its release
    (unless both are up to date); return the assignment's name (``ch<N>``)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise ValueError(f"timeout must be a whole number of seconds, at least 1, got {timeout!r}")
    course = Path(course).resolve()
    assignment = f"ch{chapter}"
    files = {course / "source" / assignment / path.name:
             nbformat.writes(graded_notebook(nbformat.read(path, as_version=4))) + "\n"
             for path in chapter_notebooks(chapter, root)}
    files[course / "nbgrader_config.py"] = (
        "c = get_config()  # noqa: F821 (written by tools/classroom.py)\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.Execute.timeout = {timeout}\n"
        "# Only the checker cells are read-only in the handed-out notebooks: a learner may change an\n"
        "# experiment, and the grader puts every read-only cell's source back before it grades.\n"
        "c.LockCells.lock_readonly_cells = False\n")
    released = course / "release" / assignment
    up_to_date = (course / "gradebook.db").exists() and all(
        path.exists() and path.read_text(encoding="utf-8") == text and
        (path.suffix != ".ipynb" or (released / path.name).exists()) for path, text in files.items())
    if up_to_date and len(list((course / "source" / assignment).glob("*.ipynb"))) == len(files) - 1:
        return assignment
    if (course / "source" / assignment).exists():
        shutil.rmtree(course / "source" / assignment)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    result = _nbgrader(course, "generate_assignment", assignment, "--force", "--create", check=False)
    if result.returncode != 0:
        if "because there are submissions associated with it" in result.stdout + result.stderr:
            raise RuntimeError(
                f"chapter {chapter}'s sections were added or removed after submissions were collected in "
                f"{course}, and nbgrader will not change the notebooks of an assignment with submissions. "
                f"Grade the new version in a new course folder, or remove {course} (its gradebook and "
                "feedback) to start over.")
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return assignment


def release(chapter: int, out_dir: Path, course: Path = OUT, *, root: Path = ROOT) -> list[Path]:
    """The notebooks of ``chapter`` as handed out (nbgrader's release: no solutions, no
    hidden lines), copied into ``out_dir``."""
    assignment = prepare(chapter, course, root=root)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted((Path(course) / "release" / assignment).glob("*.ipynb")):
        shutil.copyfile(path, out_dir / path.name)
        written.append(out_dir / path.name)
    return written


def _collect(submissions: Path, course: Path, assignment: str, names: set[str]) -> dict[str, list[str]]:
    """Copy each student's notebooks into nbgrader's ``submitted/``; return what to review."""
    review: dict[str, list[str]] = {}
    submitted = course / "submitted"
    if submitted.exists():
        shutil.rmtree(submitted)
    students = sorted(p for p in Path(submissions).iterdir() if p.is_dir())
    if not students:
        raise ValueError(f"submissions must hold one folder per student; {submissions} has none")
    for folder in students:
        if not STUDENT_ID.match(folder.name):
            raise ValueError(f"student folder {folder.name!r}: a student id is letters, digits, '_', '.' or '-'")
        notes = review.setdefault(folder.name, [])
        dest = submitted / folder.name / assignment
        dest.mkdir(parents=True)
        for name in sorted(names):
            found = sorted(folder.rglob(name))
            if not found:
                notes.append(f"{name} not submitted")
                continue
            shutil.copyfile(found[0], dest / name)
            notes += [f"{name}: {note}" for note in _tampering(found[0])]
    return review


def _tampering(path: Path) -> list[str]:
    """Cells of the student's own (not read-only for the grader) that touch the grading code."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # a file that is not a notebook is graded as missing by nbgrader
        return [f"could not be read as a notebook ({type(err).__name__})"]
    return [f"cell {i} mentions the grading code; look at it" for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and not cell.get("metadata", {}).get("nbgrader", {}).get("locked")
            and TAMPERING.search(cell.source)]


@dataclass(frozen=True)
class Row:
    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    review: str


def _rows(course: Path, assignment: str, review: dict[str, list[str]],
          exercises: dict[str, list[Exercise]], failed: dict[str, str]) -> list[Row]:
    from nbgrader.api import Gradebook, MissingEntry

    rows = []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in sorted(review):
            try:
                submission = None if student in failed else gradebook.find_submission(assignment, student)
            except MissingEntry:
                submission = None
            if submission is None:  # nbgrader could not grade it at all: no points, and a note saying why
                why = failed.get(student, "could not be graded (see nbgrader's log), so no points; look at it")
                rows += [Row(student, name, ex.label, 0.0, float(ex.points), "; ".join([*review[student], why]))
                         for name, exs in sorted(exercises.items()) for ex in exs]
                continue
            for notebook in sorted(submission.notebooks, key=lambda n: n.name):
                for grade in sorted(notebook.grades, key=lambda g: g.name):
                    notes = [n for n in review[student] if n.startswith(f"{notebook.name}.ipynb")]
                    rows.append(Row(student, notebook.name, grade.name, float(grade.score or 0.0),
                                    float(grade.max_score), "; ".join(notes)))
    return rows


def grade(submissions: Path, chapter: int, course: Path = OUT, *, timeout: int = TIMEOUT,
          root: Path = ROOT) -> list[Row]:
    """Grade every student's notebooks of ``chapter`` in ``submissions``; write ``grades.csv``
    and the feedback under ``course``; return the rows of ``grades.csv``. ``root``: the book
    (a folder with ``_toc.yml``)."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of student folders, got {submissions}")
    course = Path(course).resolve()
    for stale in ("autograded", "feedback"):  # the gradebook is kept: nbgrader overwrites its grades
        if (course / stale).exists():
            shutil.rmtree(course / stale)
    assignment = prepare(chapter, course, timeout=timeout, root=root)
    exercises = {p.stem: find_exercises(nbformat.read(p, as_version=4)) for p in chapter_notebooks(chapter, root)}
    review = _collect(submissions, course, assignment, {f"{name}.ipynb" for name in exercises})
    # One run for the class; a student whose notebook nbgrader cannot grade at all (the kernel
    # died) has no submission in the gradebook afterwards, and _rows says so.
    failed = _failures(_nbgrader(course, "autograde", assignment, "--create", "--force", check=False))
    _nbgrader(course, "generate_feedback", assignment, "--force")
    rows = _rows(course, assignment, review, exercises, failed)
    with open(course / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook", "exercise", "points", "max_points", "review"])
        writer.writerows([r.student, r.notebook, r.exercise, f"{r.points:g}", f"{r.max_points:g}", r.review]
                         for r in rows)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade a folder of student folders")
    g.add_argument("submissions", type=Path)
    g.add_argument("--chapter", type=int, required=True)
    g.add_argument("--out", type=Path, default=OUT, help=f"the nbgrader course (default {OUT.relative_to(ROOT)})")
    g.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds a cell may run (default %(default)s)")
    r = commands.add_parser("release", help="write a chapter's notebooks as handed out")
    r.add_argument("out_dir", type=Path)
    r.add_argument("--chapter", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "release":
        files = release(args.chapter, args.out_dir)
        print(f"wrote {len(files)} notebooks to {args.out_dir}")
        return
    rows = grade(args.submissions, args.chapter, args.out, timeout=args.timeout)
    totals: dict[str, list[float]] = {}
    for row in rows:
        total = totals.setdefault(row.student, [0.0, 0.0])
        total[0] += row.points
        total[1] += row.max_points
    for student, (points, most) in totals.items():
        print(f"{student}: {points:g} / {most:g}")
    print(f"grades: {args.out / 'grades.csv'}; feedback: {args.out / 'feedback'}")


if __name__ == "__main__":
    main()
