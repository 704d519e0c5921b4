"""Grade a class: the book's exercises, scored the way programming judges do.

    python -m tools.classroom grade SUBMISSIONS --chapter 1 [--section 04]   # or: make grade ...
    python -m tools.classroom release OUT --chapter 1                        # the notebooks to hand out
    python -m tools.classroom predictions OUT --chapter 1                    # the first hand-in: predictions

``SUBMISSIONS`` holds one folder per student, named by the student's id, with that
student's notebooks in it (at any depth), or a learning-management system's flat download,
one file per student and notebook with the student's id first (:func:`collect`). The
command writes, in ``_build/classroom`` (``--out``):

* ``grades.csv``: one row per student and exercise: the points earned, the points
  possible, and a ``review`` column naming anything a person should look at (a notebook or
  exercise not submitted, a cell that names a library's version of the answer);
* ``totals.csv``: one row per student; ``lms.csv``: the totals as Canvas's gradebook imports
  them (each student by the Canvas user id of its download, or by a folder's name as the
  login); ``moodle.csv``, for a Moodle download: Moodle's grading worksheet;
* ``feedback/<student>/ch<N>/<notebook>.html``: each exercise's points and the checker's
  specific feedback;
* ``class.json``: the seed of the checkers' hidden cases for each hand-in round, drawn when
  the round is first graded, so a regrade gives the same grades and a resubmission (a new
  ``--round``) meets new hidden cases.

How it grades (:mod:`tools.judge`): each student's notebook runs in a sandbox that sees
only that notebook's exercise cells and a copy of ``helpers`` without checkers or answer
keys (no book, no solutions, no other student, no network; limits on time, memory,
processes and output). The book's own notebook runs once, outside, and at each exercise
its checker calls the student's function through the sandbox and gets data back, or takes
the student's prediction as data; the score is the share of the checker's cases passed
times the exercise's points (``**Points:** N`` in its text). Each exercise counts on its
own: a cell that raises or a sandbox that dies costs that exercise only.

:func:`graded_notebook` and :func:`release` make the notebooks handed out (nbgrader's
release: no solutions, the checker cells read-only).
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.environment import mode_environment
from tools.toc import ROOT, toc_notebooks

COURSE_ID = "residual-connections-measured"
OUT = ROOT / "_build" / "classroom"
TIMEOUT = 300  # seconds per cell when nbgrader runs a notebook
META_LINE = re.compile(r"\*\*Goal:\*\* (?P<goal>.+?) · \*\*Level:\*\* (?P<level>.+?) · "
                       r"\*\*Time:\*\* about (?P<minutes>\d+) min · \*\*Points:\*\* (?P<points>\d+)")
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
FEEDBACK_LINE = 2000  # characters of one feedback line kept in a feedback file


START, END = "{solution-start}", "{solution-end}"


def _opens(cell, marker: str) -> bool:
    return cell.cell_type == "markdown" and marker in cell.source


def outside_solutions(nb: nbformat.NotebookNode) -> list[int]:
    """The indices of ``nb``'s cells that are not solutions: not between a
    ``{solution-start}`` and a ``{solution-end}`` cell (both included), nor tagged ``solution``.
    Raises ``ValueError`` for markers that do not pair up."""
    kept, inside = [], False
    for i, cell in enumerate(nb.cells):
        if _opens(cell, START):
            if inside:
                raise ValueError("a solution-start cell opens inside another solution")
            inside = True
        if not inside and "solution" not in cell.get("metadata", {}).get("tags", []):
            kept.append(i)
        if _opens(cell, END):
            if not inside:
                raise ValueError("a solution-end cell has no solution-start before it")
            inside = False
    if inside:
        raise ValueError("a solution-start cell is never closed by a solution-end cell")
    return kept


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without solution cells (:func:`outside_solutions`) and without outputs."""
    nb = nbformat.from_dict(nb)
    nb.cells = [nb.cells[i] for i in outside_solutions(nb)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
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


SHOWN_SOURCE = re.compile(r"\bshow_source\(([^)]*)\)")
KEY_LEFT_OUT = ("*The book prints the course's `{name}` here. This edition leaves it out: it is the answer "
                "to one of the exercises.*")


def printed_key(source: str) -> str | None:
    """The name of the answer key a code cell prints (``show_source(key)``), if it prints one:
    a function of ``helpers``, at a module's top level, that a checker puts off limits
    (:func:`tools.judge.keyfree.course_keys`)."""
    from tools.judge.keyfree import course_keys

    shown = {re.split(r"\s*\.\s*", arg.strip())[-1] for match in SHOWN_SOURCE.finditer(source)
             for arg in match[1].split(",") if arg.strip() and not _is_method(arg)}
    keys = sorted(shown & {f.__name__ for f in course_keys() if _top_level_in_helpers(f)})
    return keys[0] if keys else None


def _is_method(arg: str) -> bool:
    """``Class.method``: a dotted name whose last-but-one part is capitalised (a class)."""
    parts = [p.strip() for p in arg.split(".")]
    return len(parts) >= 2 and parts[-2][:1].isupper()


def _top_level_in_helpers(fn) -> bool:
    """A function that a module of ``helpers`` defines at its top level: the course's models'
    methods (``EncoderLayer.forward``) are lessons the book prints, and PyTorch's are PyTorch's."""
    return (getattr(fn, "__module__", "") or "").startswith("helpers.") and fn.__qualname__ == fn.__name__


def graded_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as an nbgrader source notebook: checker cells graded, the rest read-only, no
    solutions, and no cell that prints an answer key (:func:`printed_key`: a note in its place)."""
    nb = nbformat.from_dict(nb)
    for i, cell in enumerate(nb.cells):
        key = printed_key(cell.source) if cell.cell_type == "code" else None
        if key:
            nb.cells[i] = nbformat.v4.new_markdown_cell(KEY_LEFT_OUT.format(name=key), id=cell.get("id"))
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


PREDICTIONS_SUFFIX = "_predictions.ipynb"
PREDICTIONS_INTRO = (
    "# Predictions: {title}\n\n"
    "Hand this in **before** you run or read this section's measurements. For each exercise, write "
    "your prediction in its cell (the value only; nothing here is checked yet) and a line of "
    "reasoning below it. Your instructor grades these predictions against the section's "
    "measurement; the section's own notebook, handed in later, is graded for everything else.")


def predictions_notebook(nb: nbformat.NotebookNode, title: str, plain=None) -> nbformat.NotebookNode | None:
    """The first hand-in of a section: its prediction exercises (the text, the cell to fill
    in and a cell for the reasoning), nothing measured; ``None`` for a section without one.
    ``plain(text)`` turns the exercise's MyST into the markdown JupyterLab shows."""
    from tools.judge.cells import REASONING_PROMPT, is_prediction

    plain = plain or (lambda text: text)
    cells = [nbformat.v4.new_markdown_cell(PREDICTIONS_INTRO.format(title=title))]
    for ex in find_exercises(nb):
        if not is_prediction(nb, ex):
            continue
        text = next(c.source for c in reversed(nb.cells[:ex.starters[0]]) if c.cell_type == "markdown")
        cells.append(nbformat.v4.new_markdown_cell(plain(text)))
        cells += [nbformat.v4.new_code_cell(nb.cells[j].source) for j in ex.starters]
        cells.append(nbformat.v4.new_markdown_cell(REASONING_PROMPT + "\n\n"))
        end = nbformat.v4.new_markdown_cell(f"*(The end of {ex.title!r}: leave this cell as it is.)*")
        end.metadata["nbgrader"] = {"schema_version": 3, "solution": False, "locked": True, "grade": False,
                                    "grade_id": ex.label}
        cells.append(end)
    if len(cells) == 1:
        return None
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata.update({k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")})
    return out


def write_predictions(chapter: int, out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Write the predictions hand-in of each section of ``chapter`` that asks for one
    (``<section>_predictions.ipynb``) into ``out_dir``; return their paths."""
    from tools.plain_markdown import book_markdown, glued_numbers
    from tools.toc import page_title

    plain = book_markdown(glued_numbers(root, strict=False), root,
                          missing=lambda notebook, name: "(measured on the page)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in chapter_notebooks(chapter, root):
        nb = predictions_notebook(nbformat.read(path, as_version=4), page_title(path),
                                  lambda text, here=path.name: plain(text, here, {}))
        if nb is not None:
            written.append(out_dir / (path.stem + PREDICTIONS_SUFFIX))
            nbformat.write(nb, written[-1])
    return written


def _notebook_of(filename: str, names: set[str]) -> str | None:
    """The section notebook a submitted file is: its own name, or its name at the end of a
    name an LMS made (``smithjane_1234_5678_04_vanishing_gradients.ipynb``, ``… -1.ipynb``)."""
    base = re.sub(r"(?:[ _-]\d+|\s*\(\d+\))(?=\.ipynb$)", "", filename)
    return next((n for n in sorted(names, key=len, reverse=True) if base == n or base.endswith("_" + n)
                 or base.endswith("-" + n)), None)


def _regular(path: Path) -> bool:
    """A regular file itself: not a link (to another student's work), a pipe or a device."""
    return stat.S_ISREG(os.lstat(path).st_mode)


def _own_notebooks(folder: Path) -> list[Path]:
    """The ``.ipynb`` files in ``folder`` at any depth that are regular files inside it: links,
    and folders reached through a link, are not followed."""
    return [Path(top) / name for top, _, files in os.walk(folder, followlinks=False)
            for name in files if name.endswith(".ipynb") and _regular(Path(top) / name)]


CANVAS_FILE = re.compile(r"^(?P<name>[A-Za-z0-9]+?)(?:_LATE)?_(?P<id>\d+)_\d+_(?P<file>.+)$")
"""A file of Canvas's "Download Submissions": ``sortablename[_LATE]_userid_submissionid_file``."""
MOODLE_ENTRY = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_(?P<file>.*)$")
"""A file (or, downloaded in folders, a folder) of Moodle's "Download all submissions":
``Full Name_participantid_assignsubmission_file_[file]``."""


@dataclass(frozen=True)
class LmsId:
    """Who a student is in the learning-management system the submissions came from."""

    system: str  # "canvas" (a user id) or "moodle" (a participant id of the assignment)
    number: str
    name: str


def lms_student(entry: str) -> tuple[str, LmsId] | None:
    """``(student id, LmsId)`` for a file or folder name that Canvas's or Moodle's download
    made, or None. The student id keeps the LMS's number, so that two students of one name
    stay two students (``smithjane_1234`` and ``smithjane_5678``)."""
    moodle = MOODLE_ENTRY.match(entry)
    if moodle:
        plain = re.sub(r"[^A-Za-z0-9]+", "", moodle["name"]) or "participant"
        return f"{plain}_{moodle['id']}", LmsId("moodle", moodle["id"], moodle["name"])
    canvas = CANVAS_FILE.match(entry)
    if canvas:
        return f"{canvas['name']}_{canvas['id']}", LmsId("canvas", canvas["id"], canvas["name"])
    return None


def lms_ids(submissions: Path) -> dict[str, LmsId]:
    """``{student id: LmsId}`` for the students of a Canvas or Moodle download in ``submissions``;
    raises ``ValueError`` when one LMS number stands for two students or one student for two
    numbers (two students' work would be graded as one)."""
    found: dict[str, LmsId] = {}
    for entry in sorted(p.name for p in Path(submissions).iterdir() if not p.is_symlink()):
        known = lms_student(entry)
        if known is None:
            continue
        student, lms = known
        if found.get(student, lms) != lms:
            raise ValueError(f"{entry}: the student id {student!r} stands for two people in the download")
        found[student] = lms
    numbers: dict[tuple[str, str], str] = {}
    for student, lms in found.items():
        other = numbers.setdefault((lms.system, lms.number), student)
        if other != student:
            raise ValueError(f"{lms.system} id {lms.number} belongs to two students in the download: "
                             f"{other!r} and {student!r}")
    return found


def collect(submissions: Path, names: set[str]) -> dict[str, dict[str, Path]]:
    """Who submitted which notebook: ``{student: {notebook file name: path}}``.

    ``submissions`` holds either one folder per student (named by the student's id, the
    notebooks at any depth) or the flat download of a learning-management system: one file
    per student and notebook, the student's id first, then ``_``, ending in the notebook's
    name (Canvas: ``smithjane_1234_5678_04_vanishing_gradients.ipynb``, the student
    ``smithjane_1234``; Moodle: ``Jane Smith_4321_assignsubmission_file_04_....ipynb``, files or
    folders, the student ``JaneSmith_4321``: :func:`lms_student`). Only regular files
    inside the submission's own folder are read (a link, a pipe or a device is not a
    submission: it could point at another student's notebook or block the grader). Raises ``ValueError``
    for an empty folder or an id with characters other than letters, digits, ``_ . -``."""
    submissions = Path(submissions)
    lms_ids(submissions)  # refuses a download in which two students would be graded as one
    found: dict[str, dict[str, Path]] = {}
    for folder in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.is_symlink()):
        known = lms_student(folder.name)  # Moodle's download in folders
        student = known[0] if known else folder.name
        if not STUDENT_ID.match(student):
            raise ValueError(f"student folder {folder.name!r}: a student id is letters, digits, '_', '.' or '-'")
        if student in found:
            raise ValueError(f"two folders hold the work of {student!r}")
        found[student] = {}
        for path in sorted(_own_notebooks(folder)):
            name = _notebook_of(path.name, names)
            if name and name not in found[student] and ".ipynb_checkpoints" not in path.parts:
                found[student][name] = path
    for path in sorted(p for p in submissions.glob("*.ipynb") if _regular(p)):
        name = _notebook_of(path.name, names)
        if not name or path.name == name:
            continue
        known = lms_student(path.name)
        student = known[0] if known else path.name.split("_", 1)[0]
        if STUDENT_ID.match(student):
            found.setdefault(student, {}).setdefault(name, path)
    if not found:
        raise ValueError(f"submissions must hold one folder per student or one notebook file per student; "
                         f"{submissions} has neither")
    return found


@dataclass(frozen=True)
class Row:
    student: str
    notebook: str
    exercise: str
    points: float
    max_points: float
    review: str


def class_seed(course: Path, round_: int = 1) -> int:
    """The seed of the hidden cases of hand-in round ``round_``: drawn when the round is first
    graded and kept in ``course/class.json``, so that a regrade of the round draws the same
    cases and a new round (a resubmission) draws new ones, which a table of the last round's
    cases cannot answer."""
    if isinstance(round_, bool) or not isinstance(round_, int) or round_ < 1:
        raise ValueError(f"round must be a whole number, at least 1, got {round_!r}")
    path = Path(course) / "class.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    rounds = record.get("rounds", {"1": record["seed"]} if "seed" in record else {})
    if str(round_) not in rounds:
        rounds[str(round_)] = secrets.randbits(32)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rounds": rounds}, indent=1) + "\n", encoding="utf-8")
    return int(rounds[str(round_)])


def _score(book: Path, students: dict[str, dict], work: Path, seed: int, cell_seconds: float) -> dict:
    """Score one notebook for the class in a fresh process (:mod:`tools.judge.scorer`)."""
    from tools.judge import keyfree

    nb = nbformat.read(book, as_version=4)
    refs = [f for ex in find_exercises(nb) for f in keyfree.checker_references(nb.cells[ex.checker].source)]
    lib = keyfree.build(refs, work / "lib")
    work.mkdir(parents=True, exist_ok=True)
    (work / "submissions.json").write_text(json.dumps(students), encoding="utf-8")
    env = mode_environment("grading")  # seed 0, no progress bars (helpers.environment)
    result = subprocess.run([sys.executable, "-m", "tools.judge.scorer", str(book), str(work / "submissions.json"),
                             str(work / "results.json"), "--seed", str(seed), "--lib", str(lib),
                             "--cell-seconds", str(cell_seconds)],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"grading {book.name} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return json.loads((work / "results.json").read_text(encoding="utf-8"))


def _feedback_html(student: str, notebook: str, exercises: list[Exercise], outcomes: dict) -> str:
    parts = [f"<!doctype html><html lang='en'><meta charset='utf-8'><title>{html.escape(notebook)}: "
             f"feedback for {html.escape(student)}</title><body><h1>{html.escape(notebook)}</h1>"]
    for ex in exercises:
        outcome = outcomes.get(ex.label, {"score": 0.0, "lines": ["not submitted"]})
        points = round(float(outcome["score"]) * ex.points, 2)
        lines = "".join(f"<li>{html.escape(str(line)[:FEEDBACK_LINE])}</li>" for line in outcome["lines"][:40])
        parts.append(f"<h2>{html.escape(ex.title)}: {points:g} of {ex.points} points</h2><ul>{lines}</ul>")
    return "".join(parts) + "</body></html>\n"


def grade(submissions: Path, chapter: int, course: Path = OUT, *, section: str | None = None,
          root: Path = ROOT, jobs: int = 2, cell_seconds: float = 30.0, predictions: Path | None = None,
          round_: int = 1, shard: tuple[int, int] | None = None) -> list[Row]:
    """Grade every student's notebooks of ``chapter`` (or only its notebook ``section``, a
    file name or its leading number) in ``submissions`` (see :func:`collect`); write, under
    ``course``, ``grades.csv`` (a row per student and exercise), ``totals.csv`` (a row per
    student), ``lms.csv`` (Canvas's gradebook import), ``moodle.csv`` (for a Moodle download, its
    grading worksheet), and
    ``feedback/<student>/ch<N>/<notebook>.html``; return the rows of ``grades.csv``.

    Each notebook is scored by :mod:`tools.judge` (each submission in its own sandbox);
    ``jobs`` notebooks at a time, which changes how long it takes, not the grades; each of a
    student's cells may run ``cell_seconds`` in the sandbox (they define functions and
    predictions; the experiments run outside).

    ``predictions``: a folder of the first hand-ins (:func:`write_predictions`, collected as
    ``submissions`` are); then every prediction is read from there, made before the
    measurement could be seen, and a student who handed none in gets no points for it.

    ``round_``: the hand-in round (:func:`class_seed`): grade a resubmission as a new round, so
    that its hidden cases are new.

    ``shard=(k, n)``: grade only the ``k``-th of ``n`` shares of the students (1-based), into
    ``course/shards/k-of-n`` (:func:`merge` joins the shards into the files one run writes).
    Every shard needs the round's seed drawn first, in ``course/class.json``
    (``python -m tools.classroom seed COURSE --round R``), so that all shards draw the same
    hidden cases."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number, at least 1, got {jobs!r}")
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder, got {submissions}")
    course = Path(course).resolve()
    books = chapter_notebooks(chapter, root)
    if section is not None:
        chosen = [p for p in books if p.stem == section or p.name == section or p.stem.split("_")[0] == section]
        if not chosen:
            raise ValueError(f"section must be one of chapter {chapter}'s notebooks "
                             f"({', '.join(p.stem for p in books)}), got {section!r}")
        books = chosen
    exercises = {p.name: find_exercises(nbformat.read(p, as_version=4)) for p in books}
    found = collect(submissions, set(exercises))
    early = None if predictions is None else collect(predictions, {p.stem + PREDICTIONS_SUFFIX for p in books})
    for student in early or {}:
        found.setdefault(student, {})
    peers = {}
    if shard is None:
        seed = class_seed(course, round_)
    else:
        k, n = shard
        if not (isinstance(k, int) and isinstance(n, int) and 1 <= k <= n):
            raise ValueError(f"shard must be (k, n) with 1 <= k <= n, got {shard!r}")
        seed = _drawn_seed(course, round_)
        peers = found  # the whole class: each shard checks its students' code against everyone's
        found = {s: found[s] for i, s in enumerate(sorted(found)) if i % n == k - 1}
        course = course / "shards" / f"{k}-of-{n}"
        course.mkdir(parents=True, exist_ok=True)
    if (course / "feedback").exists():
        shutil.rmtree(course / "feedback")
    from concurrent.futures import ThreadPoolExecutor

    def one(book: Path) -> dict:
        who = {}
        for student, files in found.items():
            handed = {"notebook": str(files[book.name]) if book.name in files else None}
            if early is not None:
                guess = early.get(student, {}).get(book.stem + PREDICTIONS_SUFFIX)
                handed["predictions"] = str(guess) if guess else None
            if any(handed.values()):
                who[student] = handed
        for student, files in peers.items():
            if student not in found and book.name in files:
                who[student] = {"notebook": str(files[book.name]), "peer": True}
                if early is not None:  # as for the shard's own: predictions come from the first hand-in
                    who[student]["predictions"] = None
        return _score(book, who, course / "judge" / book.stem, seed, cell_seconds) if who else {}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        scored = dict(zip([b.name for b in books], pool.map(one, books)))
    rows = []
    for student in sorted(found):
        for name, exs in exercises.items():
            outcomes = scored[name].get(student, {})
            for ex in exs:
                outcome = outcomes.get(ex.label)
                notes = ["not submitted"] if outcome is None else list(outcome.get("notes", []))
                points = 0.0 if outcome is None else round(float(outcome["score"]) * ex.points, 2)
                rows.append(Row(student, Path(name).stem, ex.label, points, float(ex.points), "; ".join(notes)))
            if outcomes:
                path = course / "feedback" / student / f"ch{chapter}" / f"{Path(name).stem}.html"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(_feedback_html(student, Path(name).stem, exs, outcomes), encoding="utf-8")
    ids = {**lms_ids(submissions), **(lms_ids(predictions) if predictions is not None else {})}
    ids = {s: lms for s, lms in ids.items() if s in found}
    assignment = f"Chapter {chapter}" + (f", {books[0].stem}" if section else "")
    _write_tables(course, rows, assignment, ids)
    if shard is not None:  # what merge needs besides the tables
        (course / "shard.json").write_text(json.dumps({"assignment": assignment, "shard": list(shard), "ids": {
            s: [lms.system, lms.number, lms.name] for s, lms in ids.items()}}, indent=1) + "\n", encoding="utf-8")
    return rows


def _drawn_seed(course: Path, round_: int) -> int:
    path = Path(course) / "class.json"
    rounds = json.loads(path.read_text(encoding="utf-8")).get("rounds", {}) if path.exists() else {}
    if str(round_) not in rounds:
        raise ValueError(f"no seed drawn for round {round_} in {path}: run `python -m tools.classroom seed {course} "
                         f"--round {round_}` once before the shards, so that they all draw the same hidden cases")
    return int(rounds[str(round_)])


def merge(course: Path, shards: int) -> list[Row]:
    """Join the ``shards`` shards of a graded class (``grade(..., shard=(k, shards))``, each in
    ``course/shards/k-of-shards``) into the files one run writes in ``course``: the same
    ``grades.csv``, ``totals.csv``, ``lms.csv``, ``moodle.csv`` and feedback. Raises
    ``ValueError`` when a shard is missing or two shards graded one student."""
    course = Path(course)
    rows, ids, assignments = [], {}, set()
    if (course / "feedback").exists():
        shutil.rmtree(course / "feedback")
    for k in range(1, shards + 1):
        part = course / "shards" / f"{k}-of-{shards}"
        if not (part / "shard.json").is_file():
            raise ValueError(f"shard {k} of {shards} is missing or unfinished: no {part / 'shard.json'}")
        meta = json.loads((part / "shard.json").read_text(encoding="utf-8"))
        assignments.add(meta["assignment"])
        ids.update({s: LmsId(*v) for s, v in meta["ids"].items()})
        with open(part / "grades.csv", newline="", encoding="utf-8") as f:
            mine = [Row(r["student"], r["notebook"], r["exercise"], float(r["points"]), float(r["max_points"]),
                        r["review"]) for r in csv.DictReader(f)]
        twice = {r.student for r in mine} & {r.student for r in rows}
        if twice:
            raise ValueError(f"shards graded the same students twice: {sorted(twice)[:5]}")
        rows += mine
        if (part / "feedback").is_dir():
            shutil.copytree(part / "feedback", course / "feedback", dirs_exist_ok=True)
    if len(assignments) != 1:
        raise ValueError(f"the shards graded different assignments: {sorted(assignments)}")
    rows.sort(key=lambda r: r.student)  # stable: each student's rows keep their order, as in one run
    _write_tables(course, rows, assignments.pop(), ids)
    return rows


def _write_tables(course: Path, rows: list[Row], assignment: str, ids: dict[str, LmsId]) -> None:
    with open(course / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook", "exercise", "points", "max_points", "review"])
        writer.writerows([r.student, r.notebook, r.exercise, f"{r.points:g}", f"{r.max_points:g}", r.review]
                         for r in rows)
    totals: dict[str, list[float]] = {}
    for r in rows:
        total = totals.setdefault(r.student, [0.0, 0.0])
        total[0] += r.points
        total[1] += r.max_points
    with open(course / "totals.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "points", "max_points"])
        writer.writerows([s, f"{p:g}", f"{m:g}"] for s, (p, m) in totals.items())
    most = max((m for _, m in totals.values()), default=0.0)
    # Canvas's gradebook import: it finds each student by the Canvas user id ("ID", from its
    # download) or, for a folder named by the student's login, by "SIS Login ID"; a column
    # whose name Canvas does not know becomes a new assignment.
    with open(course / "lms.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{assignment} ({most:g} points)"])
        for s, (p, _) in totals.items():
            lms = ids.get(s)
            if lms is None:
                writer.writerow([s, "", "", s, "", f"{p:g}"])
            elif lms.system == "canvas":
                writer.writerow([lms.name, lms.number, "", "", "", f"{p:g}"])
    # Moodle's assignment grading worksheet ("Upload grading worksheet"): it finds each
    # student by "Identifier", the participant id of its download.
    moodle = [(s, ids[s], p, m) for s, (p, m) in totals.items() if s in ids and ids[s].system == "moodle"]
    if moodle:
        with open(course / "moodle.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["Identifier", "Full name", "Grade", "Maximum Grade"])
            writer.writerows([f"Participant {lms.number}", lms.name, f"{p:g}", f"{m:g}"] for _, lms, p, m in moodle)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submissions", type=Path)
    g.add_argument("--chapter", type=int, required=True)
    g.add_argument("--section", help="grade one notebook of the chapter (its file name or number, e.g. 04)")
    g.add_argument("--out", type=Path, default=OUT, help=f"the course folder (default {OUT.relative_to(ROOT)})")
    g.add_argument("--jobs", type=int, default=2, help="notebooks scored at once (default %(default)s)")
    g.add_argument("--predictions", type=Path, help="the first hand-ins (predictions made before the measurement)")
    g.add_argument("--round", type=int, default=1, dest="round_",
                   help="the hand-in round: a resubmission is a new round, with new hidden cases (default 1)")
    g.add_argument("--shard", help="grade only share K of N of the students (K/N, e.g. 3/10); then `merge`")
    m = commands.add_parser("merge", help="join the shards of a graded class into the files one run writes")
    m.add_argument("--out", type=Path, default=OUT, help=f"the course folder (default {OUT.relative_to(ROOT)})")
    m.add_argument("--shards", type=int, required=True)
    d = commands.add_parser("seed", help="draw a round's seed for hidden cases once, before grading it in shards")
    d.add_argument("out", type=Path, nargs="?", default=OUT)
    d.add_argument("--round", type=int, default=1, dest="round_")
    w = commands.add_parser("predictions", help="write a chapter's predictions hand-ins (before the measurement)")
    w.add_argument("out_dir", type=Path)
    w.add_argument("--chapter", type=int, required=True)
    r = commands.add_parser("release", help="write a chapter's notebooks as handed out")
    r.add_argument("out_dir", type=Path)
    r.add_argument("--chapter", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "release":
        files = release(args.chapter, args.out_dir)
        print(f"wrote {len(files)} notebooks to {args.out_dir}")
        return
    if args.command == "merge":
        merge(args.out, args.shards)
        print(f"merged {args.shards} shards into {args.out}")
        return
    if args.command == "seed":
        class_seed(args.out, args.round_)
        print(f"round {args.round_}'s seed is in {args.out / 'class.json'}")
        return
    if args.command == "predictions":
        files = write_predictions(args.chapter, args.out_dir)
        print(f"wrote {len(files)} predictions hand-ins to {args.out_dir}")
        return
    shard = None
    if args.shard:
        k, _, n = args.shard.partition("/")
        if not (k.isdigit() and n.isdigit()):
            parser.error(f"--shard must be K/N, e.g. 3/10, got {args.shard!r}")
        shard = (int(k), int(n))
    grade(args.submissions, args.chapter, args.out, section=args.section, jobs=args.jobs,
          predictions=args.predictions, round_=args.round_, shard=shard)
    if shard:
        print(f"graded shard {args.shard} into {args.out / 'shards'}; when all are done: "
              f"python -m tools.classroom merge --out {args.out} --shards {shard[1]}")
        return
    print((args.out / "totals.csv").read_text(encoding="utf-8"), end="")
    print(f"grades: {args.out / 'grades.csv'}; grade book import: {args.out / 'lms.csv'}; "
          f"feedback: {args.out / 'feedback'}")


if __name__ == "__main__":
    main()
