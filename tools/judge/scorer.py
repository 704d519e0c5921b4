"""Score one notebook of a class: the book's notebook runs once here (trusted, with its
solutions), and at each exercise's checker cell every student's answer is checked by the
book's own checker, against that student's sandbox.

    python -m tools.judge.scorer BOOK_NOTEBOOK SUBMISSIONS.json RESULTS.json --seed N

``SUBMISSIONS.json`` maps each student to their hand-ins (:func:`score`); ``RESULTS.json`` gets, for each
student and exercise, the score (0 to 1), the checker's feedback lines and notes for review.

How a student's answer reaches the checker:

* **a function** becomes a *proxy* (:class:`tools.judge.proxy.Proxy`): the checker calls it as it would the
  student's function, the call goes to the sandbox with the case's arguments, and what comes
  back is data (:mod:`tools.judge.wire`): the result, and the arguments as the call left
  them, written back into the checker's copies, so "changed its argument in place" is seen.
  A raise, a time-out or a dead sandbox comes back as an exception at the student's own line
  (the proxy carries the student's source, compiled but never run here), so the feedback
  reads as it does in the notebook;
* **a prediction** is read from the sandbox as data and given to the checker as the value.

The expected answers (the checkers, their references, the measurements) stay in this
process: the sandbox never sees them. Hidden cases come from a generator seeded by the
class's seed and the exercise's label (:func:`hidden_seed`), so a regrade gives the same
grades. Each exercise is scored on its own: a cell of the student's that raises, or a
sandbox that dies, costs that exercise only.

Of the book's cells, only those the checker cells need run (:func:`tools.judge.cells.cells_needed`:
the cells that define, or change, the names they read, and every cell that seeds).
A checker cell that measures something runs once with placeholders (:class:`Slot`); if its
checker call received them as arguments, that call is repeated for each student with the
student's answer in their place, and the measurement is not repeated. A cell whose
measurement depends on the student's answer (chapter 5's gain) runs once per student.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import inspect
import io
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from tools.judge import keyfree, similar, wire
from tools.judge.cells import (
    cell_name,
    cells_needed,
    defined_names,
    exercise_cells,
    is_prediction,
    plain_source,
    read_hand_in,
    reasoning,
    setup_source,
    written_predictions,
)
from tools.judge.proxy import CELL_SECONDS, Proxy, Student
from tools.judge.sandbox import SandboxError

GRADING_MODULES = ("helpers.grading", "helpers.grading.predictions", "helpers.grading.choices",
                   "helpers.grading.chapter1", "helpers.grading.chapter2", "helpers.grading.chapter3",
                   "helpers.grading.chapter4", "helpers.grading.chapter5")


def hidden_seed(class_seed: int, label: str) -> int:
    """The seed of an exercise's hidden cases in a class: fixed by both."""
    return int.from_bytes(hashlib.sha256(f"{class_seed}:{label}".encode()).digest()[:8], "big")


class Slot:
    """A placeholder for a student's answer while a checker cell runs once for everyone."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<the student's {self.name}>"


@dataclass
class Recorder:
    """Wraps the grading modules' ``check_*`` functions: a call that gets a :class:`Slot` is
    recorded (and not run)."""

    calls: list = field(default_factory=list)
    saved: list = field(default_factory=list)

    def __enter__(self):
        import importlib

        from helpers.grading.base import Feedback

        for module_name in GRADING_MODULES:
            module = importlib.import_module(module_name)
            for name in [n for n in dir(module) if n.startswith("check_")]:
                original = getattr(module, name)
                if not callable(original):
                    continue

                def wrapper(*args, _original=original, **kwargs):
                    if any(isinstance(a, Slot) for a in [*args, *kwargs.values()]):
                        self.calls.append((_original, args, kwargs))
                        return Feedback("(recorded)", [], False)
                    return _original(*args, **kwargs)

                self.saved.append((module, name, original))
                setattr(module, name, wrapper)
        return self

    def __exit__(self, *exc):
        for module, name, original in reversed(self.saved):
            setattr(module, name, original)


@contextlib.contextmanager
def seeded_hidden_cases(seed: int):
    """Every chapter checker's hidden cases drawn from ``seed`` (not fresh entropy)."""
    import importlib

    modules = [importlib.import_module(f"helpers.grading.chapter{n}") for n in range(1, 6)]
    saved = [(m, m._rng) for m in modules if hasattr(m, "_rng")]
    generator = np.random.default_rng(seed)
    try:
        for module, _ in saved:
            module._rng = lambda: generator
        yield
    finally:
        for module, original in saved:
            module._rng = original


def score(book: Path, submissions: dict[str, dict], *, class_seed: int, lib: Path,
          cell_seconds: float = CELL_SECONDS) -> dict:
    """Run ``book`` once and score each student's hand-in in ``submissions``: ``{student:
    {"notebook": path, "predictions": path}}`` (a path may be ``None``; without the
    ``predictions`` key, predictions are read from the notebook itself). See the module."""
    from IPython.core.interactiveshell import InteractiveShell

    from helpers.grading import base
    from tools.classroom import find_exercises, outside_solutions

    nb = nbformat.read(book, as_version=4)
    exercises = find_exercises(nb)
    reasons: dict[tuple[str, str], str] = {}
    by_checker = {ex.checker: ex for ex in exercises}
    names = {ex.label: [n for j in ex.starters for n in defined_names(nb.cells[j].source)] for ex in exercises}
    all_names = [n for ex in exercises for n in names[ex.label]]
    kept = set(outside_solutions(nb))
    own = {j for ex in exercises for j in (*ex.starters, ex.checker)}
    setup = {f"<cell setup.{i}>": setup_source(c.source) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and i not in own and i in kept}
    setup = {name: source for name, source in setup.items() if source}
    refs = {ex.label: keyfree.checker_references(nb.cells[ex.checker].source) for ex in exercises}
    no_autograd = {label for label, found in refs.items() if keyfree.autograd_in(found)}
    students, results, answers, flagged = {}, {}, {}, _flag_patterns(refs, no_autograd)
    for who, handed in sorted(submissions.items()):
        if handed.get("peer"):  # another shard's student: read for the copy check, not graded here
            peer_nb, _ = read_hand_in(handed.get("notebook"), "the notebook")
            for ex in exercises if peer_nb is not None else []:
                own = exercise_cells(peer_nb, ex.label)
                if own is not None and not ("predictions" in handed and is_prediction(nb, ex)):
                    answers.setdefault(ex.label, {})[who] = own
            continue
        results[who] = {}
        own_nb, why_not = read_hand_in(handed.get("notebook"), "the notebook")
        early = "predictions" in handed
        guess_nb, guess_why = (read_hand_in(handed.get("predictions"), "the predictions handed in before the "
                                            "measurement") if early else (None, ""))
        cells, notes, fixed = dict(setup), [], {}
        for ex in exercises:
            from_guesses = early and is_prediction(nb, ex)
            theirs, why = (guess_nb, guess_why) if from_guesses else (own_nb, why_not)
            own = None if theirs is None else exercise_cells(theirs, ex.label)
            if own is None:
                why = why or "this exercise's cells are not in the notebook"
                results[who][ex.label] = {"score": 0.0, "lines": [why], "notes": [why]}
                continue
            if from_guesses:  # made before anything was measured: read as written, never run
                try:
                    for source in own:
                        fixed.update({n: {"value": wire.encode(v)} for n, v in written_predictions(source).items()})
                except ValueError as err:
                    why = (f"the predictions handed in before the measurement must be written down, not "
                           f"computed: {err}")
                    results[who][ex.label] = {"score": 0.0, "lines": [why], "notes": [why]}
                    continue
                reason = reasoning(theirs, ex.label)
                notes += [] if reason else [f"{ex.label}: no reasoning given with the prediction"]
                reasons[who, ex.label] = reason
                continue
            for k, source in enumerate(own):
                cells[cell_name(ex.label, k)] = source
                notes += [f"{ex.label}: {why}" for why in flagged(ex.label, source)]
            answers.setdefault(ex.label, {})[who] = own
        students[who] = Student(who, cells, lib, notes=notes, cell_seconds=cell_seconds, fixed=fixed)
    for ex in exercises:
        for who, alike in similar.copies(answers.get(ex.label, {}), references(nb, ex, kept, refs[ex.label]),
                                         [nb.cells[j].source for j in ex.starters]).items():
            if who in students:  # not a peer from another shard
                students[who].review(ex.label, f"its code is nearly the same as {', '.join(alike)}'s (syntax "
                                               "trees compared, names and layout aside); look at it")
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # grading leaves no session in the instructor's IPython history
    shell = InteractiveShell.instance(config=config)
    shell.display_pub.publish = lambda *a, **k: None
    quiet = io.StringIO()
    needed = cells_needed([c.source if c.cell_type == "code" else None for c in nb.cells], list(by_checker))
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or i not in needed:
                continue
            if i in by_checker:
                ex = by_checker[i]
                active = {w: s for w, s in students.items() if ex.label not in results[w]}
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    for who, outcome in _check(shell, cell.source, ex, names[ex.label], all_names, active,
                                               hidden_seed(class_seed, ex.label), base,
                                               ex.label in no_autograd).items():
                        results[who][ex.label] = outcome
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                outcome = shell.run_cell(cell.source, store_history=False)
            if not outcome.success:
                raise RuntimeError(f"{book.name}: the book's cell {i} failed while grading: {outcome.error_in_exec!r}")
            quiet.seek(0)
            quiet.truncate()
    finally:
        for student in students.values():
            student.close()
    for (who, label), reason in reasons.items():
        if label in results[who]:
            results[who][label]["lines"].insert(0, f"Your reasoning, handed in before the measurement: {reason}")
    for who, student in students.items():
        for label in results[who]:
            results[who][label].setdefault("notes", [])
            results[who][label]["notes"] += [n.split(": ", 1)[1] for n in student.notes if n.startswith(f"{label}: ")]
    return results


def references(nb, ex, kept: list[int], keys) -> list[str]:
    """The course's reference code for exercise ``ex``: the book's solution cells and the
    source of each of its keys that ``helpers`` defines."""
    start = ex.starters[-1] + 1 if ex.starters else ex.checker
    found = [nb.cells[j].source for j in range(start, ex.checker) if j not in kept and nb.cells[j].cell_type == "code"]
    for key in keys:
        if (getattr(key, "__module__", "") or "").startswith("helpers."):
            with contextlib.suppress(OSError, TypeError):
                found.append(textwrap.dedent(inspect.getsource(inspect.unwrap(key))))
    return found


def _flag_patterns(refs: dict[str, list], no_autograd: set[str]):
    """A function saying which library versions of an exercise's answer (``refs``, by label)
    a student's cell names; for an exercise that puts autograd off limits, also its other
    routes (:data:`keyfree.AUTOGRAD_ROUTES`) and an attribute fetched by a computed name."""
    patterns = {}
    for label, found in refs.items():
        names = keyfree.library_names(found) | (set(keyfree.AUTOGRAD_ROUTES) if label in no_autograd else set())
        patterns[label] = [(n, re.compile(rf"\.{re.escape(n)}\b|\b{re.escape(n)}\s*\(")) for n in sorted(names)]

    def flagged(label: str, source: str) -> list[str]:
        found = [f"names {name}, a library's version of the answer; look at it"
                 for name, pattern in patterns.get(label, []) if pattern.search(source)]
        if label in no_autograd and _computed_getattr(source):
            found.append("fetches an attribute by a computed name (getattr); look at it")
        return found

    return flagged


def _computed_getattr(source: str) -> bool:
    """Whether ``source`` calls ``getattr`` with a name that is not written out."""
    try:
        tree = ast.parse(plain_source(source))
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
               and len(n.args) > 1 and not (isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str))
               for n in ast.walk(tree))


def _check(shell, source: str, ex, names: list[str], all_names: list[str], students: dict[str, Student],
           seed: int, base, no_autograd: bool) -> dict[str, dict]:
    """Each student's outcome at the checker cell ``source`` of exercise ``ex``."""
    ns = shell.user_ns
    saved = {n: ns[n] for n in names if n in ns}
    out = {}
    try:
        with Recorder() as recorder:
            for n in names:
                ns[n] = Slot(n)
            shell.run_cell(source, store_history=False)
        calls = recorder.calls
        for who, student in students.items():
            try:
                out[who] = _check_one(shell, source, ex, names, all_names, student, calls, seed, base, no_autograd)
            except Exception as err:  # a fault of the grader's with this answer: no points, and a person looks
                why = f"the grader could not check this answer ({type(err).__name__}: {str(err)[:300]})"
                out[who] = {"score": 0.0, "lines": [why], "notes": [why]}
    finally:
        for n in names:
            ns.pop(n, None)
        ns.update(saved)
        from helpers.grading.predictions import COUNTED

        COUNTED.clear()  # the book's own run of the cell, next, is judged afresh too
    return out


def _check_one(shell, source: str, ex, names: list[str], all_names: list[str], student: Student, calls: list,
               seed: int, base, no_autograd: bool) -> dict:
    """One student's outcome at exercise ``ex``'s checker cell (see :func:`_check`)."""
    from helpers.grading.predictions import COUNTED

    ns = shell.user_ns
    try:
        student.ready(all_names, ex.label)
        bound = _bind(student, names, all_names, ex.label, no_autograd)
    except SandboxError:
        bound = {n: None for n in names}
    prefix = [f"your cell raised {str(e.get('type', 'an error'))[:80]}: {str(e.get('message', ''))[:300]}"
              for c, e in student.errors.items() if c.startswith(f"<cell {ex.label}.") and isinstance(e, dict)]
    base.LATEST.clear()
    COUNTED.clear()  # the checker's "first prediction counts" is per kernel; here each student is judged afresh
    with seeded_hidden_cases(seed):
        if len(calls) == 1:
            checker, args, kwargs = calls[0]
            args = [bound[a.name] if isinstance(a, Slot) else a for a in args]
            kwargs = {k: bound[v.name] if isinstance(v, Slot) else v for k, v in kwargs.items()}
            try:
                checker(*args, **kwargs)
            except Exception as err:  # a checker's refusal of this answer: no points
                base.Feedback(ex.title, [f"the checker could not use this answer ({err})"], False)
        else:
            ns.update(bound)
            shell.run_cell(source, store_history=False)
    feedback = base.LATEST[0] if base.LATEST else None
    if feedback is None:
        return {"score": 0.0, "lines": [*prefix, "the checker gave no verdict"]}
    return {"score": float(feedback.score), "lines": [*prefix, *feedback.lines], "passed": bool(feedback.passed)}


def _bind(student: Student, names: list[str], all_names: list[str], label: str, no_autograd: bool) -> dict:
    """The student's answers of an exercise: functions as proxies (with autograd stopped where
    the exercise puts it off limits), the rest as data."""
    bound = {}
    for n in names:
        value = student.values.get(n, {})
        if isinstance(value, dict) and value.get("function"):
            bound[n] = Proxy(student, n, all_names, label, no_autograd=no_autograd).function()
        elif isinstance(value, dict) and "value" in value:
            try:
                bound[n] = wire.decode(value["value"])
            except wire.WireError:
                bound[n] = wire.Unreadable("value")
        else:
            bound[n] = None
    return bound


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", type=Path)
    parser.add_argument("submissions", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--lib", type=Path, required=True)
    parser.add_argument("--cell-seconds", type=float, default=CELL_SECONDS)
    args = parser.parse_args(argv)
    submissions = json.loads(args.submissions.read_text())
    results = score(args.book, submissions, class_seed=args.seed, lib=args.lib, cell_seconds=args.cell_seconds)
    args.results.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    sys.exit(main())
