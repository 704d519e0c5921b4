"""Score one notebook of a class: the book's notebook runs once here (trusted, with its
solutions), and at each exercise's checker cell every student's answer is checked by the
book's own checker, against that student's sandbox.

    python -m tools.judge.scorer BOOK_NOTEBOOK SUBMISSIONS.json RESULTS.json --seed N

``SUBMISSIONS.json`` maps each student to their hand-ins (:func:`score`); ``RESULTS.json`` gets, for each
student and exercise, the score (0 to 1), the checker's feedback lines and notes for review.

How a student's answer reaches the checker:

* **a function** becomes a *proxy* (:class:`Proxy`): the checker calls it as it would the
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

A checker cell that measures something runs once with placeholders (:class:`Slot`); if its
checker call received them as arguments, that call is repeated for each student with the
student's answer in their place, and the measurement is not repeated. A cell whose
measurement depends on the student's answer (chapter 5's gain) runs once per student.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import functools
import hashlib
import io
import json
import linecache
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import numpy as np
import torch

from tools.judge import keyfree, wire
from tools.judge.sandbox import Sandbox, SandboxError

CELL_SECONDS = 30.0  # seconds one of a student's cells may run in the sandbox (they define, not train)
CALL_BACKSTOP = 120.0  # seconds the sandbox's own clock allows a call (the checker's limit stops it first)
GRADING_MODULES = ("helpers.grading", "helpers.grading.predictions", "helpers.grading.choices",
                   "helpers.grading.chapter1", "helpers.grading.chapter2", "helpers.grading.chapter3",
                   "helpers.grading.chapter4", "helpers.grading.chapter5")
_IDENT = re.compile(r"^[A-Za-z_]\w{0,79}$")
REASONING_PROMPT = "**Your reasoning** (a line or two, before you see any measurement):"


def hidden_seed(class_seed: int, label: str) -> int:
    """The seed of an exercise's hidden cases in a class: fixed by both."""
    return int.from_bytes(hashlib.sha256(f"{class_seed}:{label}".encode()).digest()[:8], "big")


def cell_name(label: str, k: int) -> str:
    """The file name a student's k-th cell of exercise ``label`` runs under (here and in the sandbox)."""
    return f"<cell {label}.{k}>"


def defined_names(source: str) -> list[str]:
    """The top-level names a cell defines: functions, classes and assigned variables."""
    try:
        tree = ast.parse(_plain(source))
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def _plain(source: str) -> str:
    return "\n".join("" if re.match(r"^\s*[%!]", line) else line for line in source.splitlines())


def setup_source(source: str) -> str:
    """What a book's cell gives a student's sandbox: its imports, definitions and constants
    (``SEED = 0``), not its experiments, so that a student's function finds the names the
    notebook gave it; ``""`` when there is none."""
    try:
        body = ast.parse(_plain(source)).body
    except SyntaxError:
        return ""

    def constant(node) -> bool:
        return all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.USub, ast.Load))
                   for n in ast.walk(node))

    kept = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))
            or (isinstance(node, ast.Assign) and constant(node.value))]
    return ast.unparse(kept) if kept else ""


def shadow(source: str, filename: str, name: str):
    """The student's function ``name`` compiled from ``source`` without running any of it
    (no decorators, defaults or annotations, which run at definition): its source and line
    numbers are the student's, for the checker's "not implemented yet" and its messages."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        tree = ast.parse(_plain(source))
    except SyntaxError:
        return None
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
                None)
    if node is None:
        return None
    node.decorator_list, node.returns = [], None
    arguments = node.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            arg.annotation = None
    arguments.defaults = [ast.Constant(None) for _ in arguments.defaults]
    arguments.kw_defaults = [None if d is None else ast.Constant(None) for d in arguments.kw_defaults]
    scope: dict = {}
    exec(compile(ast.fix_missing_locations(ast.Module([node], [])), filename, "exec"), scope)  # noqa: S102 (a def only)
    return scope[name]


def _raise_at(err: BaseException, where: dict | None, cells: dict[str, str]):
    """Raise ``err`` from the student's own line, as the sandbox reported it."""
    if not where or where.get("cell") not in cells or not _IDENT.match(str(where.get("name", ""))):
        raise err
    line = where.get("line")
    if not isinstance(line, int) or not 1 <= line <= len(cells[where["cell"]].splitlines()) + 1:
        raise err
    scope = {"_err": err}
    code = "\n" * max(line - 2, 0) + f"def {where['name']}():\n" + (" raise _err" if line > 1 else "")
    if line == 1:  # the def itself is line 1: raise from it
        code = f"def {where['name']}(): raise _err"
    exec(compile(code, where["cell"], "exec"), scope)  # noqa: S102 (our two lines)
    scope[where["name"]]()


class SandboxStopped(RuntimeError):
    """The student's sandbox stopped while answering (it exited, crashed or ran out of memory)."""


def _exception(raised: dict) -> BaseException:
    name, message = str(raised.get("type", "Exception")), str(raised.get("message", ""))[:2000]
    if raised.get("exit"):
        return SystemExit(message)
    if raised.get("not_implemented"):
        return NotImplementedError(message)
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except Exception:
            pass
    safe = name if _IDENT.match(name) else "Exception"
    return type(safe, (Exception,), {})(message)


def _has_unreadable(value) -> bool:
    if isinstance(value, wire.Unreadable):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_unreadable(v) for v in value)
    if isinstance(value, dict):
        return any(_has_unreadable(v) for v in value.values())
    return False


def _write_back(target, state: dict, depth: int = 0) -> None:
    """Make the checker's copy of an argument what the student's call left in the sandbox."""
    if not isinstance(state, dict) or depth > 4:
        return
    if "module" in state and isinstance(target, torch.nn.Module):
        values = wire.decode(state["module"])
        own = target.state_dict()
        with torch.no_grad():
            for key, value in values.items() if isinstance(values, dict) else ():
                if key in own and isinstance(value, torch.Tensor) and value.shape == own[key].shape:
                    own[key].copy_(value.to(own[key].dtype))
        numbers = wire.decode(state.get("numbers", {"dict": []}))
        modules = dict(target.named_modules())
        for key, value in numbers.items() if isinstance(numbers, dict) else ():
            prefix, _, attr = str(key).rpartition(".")
            module = modules.get(prefix)
            if module is not None and isinstance(vars(module).get(attr), (bool, int, float)) \
                    and isinstance(value, (bool, int, float)):
                setattr(module, attr, value)
        return
    if "items" in state and isinstance(target, (list, tuple)) and isinstance(state["items"], list):
        items = state["items"]
        if isinstance(target, list) and len(items) != len(target) and not any("module" in i for i in items
                                                                              if isinstance(i, dict)):
            value = [wire.decode(i["value"]) for i in items if isinstance(i, dict) and "value" in i]
            if len(value) == len(items) and not _has_unreadable(value):
                target[:] = value
            return
        for element, item in zip(target, items):
            _write_back(element, item, depth + 1)
        if isinstance(target, list):
            for k, item in enumerate(items[:len(target)]):
                if isinstance(item, dict) and "value" in item and not isinstance(target[k], (torch.Tensor, np.ndarray)):
                    value = wire.decode(item["value"])
                    if not _has_unreadable(value):
                        target[k] = value
        return
    if "entries" in state and isinstance(target, dict) and isinstance(state["entries"], list):
        entries = {k: v for k, v in state["entries"] if isinstance(k, str)}
        for key in [k for k in target if k not in entries]:
            del target[key]
        for key, item in entries.items():
            if key in target and (isinstance(target[key], (torch.nn.Module, torch.Tensor, np.ndarray, list, dict))):
                _write_back(target[key], item, depth + 1)
            elif isinstance(item, dict) and "value" in item:
                value = wire.decode(item["value"])
                if not _has_unreadable(value):
                    target[key] = value
        return
    if "value" not in state:
        return
    value = wire.decode(state["value"])
    with contextlib.suppress(Exception):
        if isinstance(target, torch.Tensor) and isinstance(value, torch.Tensor) and value.shape == target.shape:
            with torch.no_grad():
                target.copy_(value.to(target.dtype))
        elif isinstance(target, np.ndarray) and isinstance(value, np.ndarray) and value.shape == target.shape:
            target[...] = value


@dataclass
class Student:
    """One student's notebook and, while it is scored, their sandbox."""

    name: str
    cells: dict[str, str]  # cell name -> source: the setup cells, then their own
    lib: Path
    errors: dict[str, dict] = field(default_factory=dict)
    values: dict[str, dict] = field(default_factory=dict)
    sandbox: Sandbox | None = None
    notes: list[str] = field(default_factory=list)
    cell_seconds: float = CELL_SECONDS
    alone: bool = False  # their cells together stopped the sandbox: each exercise's cells run on their own
    label: str = ""  # the exercise whose cells the sandbox holds, when alone

    def ready(self, names: list[str], label: str = "") -> Sandbox:
        """The student's sandbox with their cells run (started again after a crash). When all
        their cells together stop the sandbox (one calls ``os._exit``, say), each exercise
        gets a sandbox of the notebook's setup and that exercise's cells only."""
        fresh = self.sandbox is None or self.sandbox.process.poll() is not None
        if not fresh and not (self.alone and label != self.label):
            return self.sandbox
        self.close()
        if not self.alone:
            try:
                return self._start(self.cells, names)
            except SandboxError:
                self.close()
                self.alone = True
        self.label = label
        own = {c: s for c, s in self.cells.items() if c.startswith("<cell setup.") or c.startswith(f"<cell {label}.")}
        try:
            return self._start(own, names)
        except SandboxError:
            self.close()
            self.errors = {c: {"type": "SandboxStopped", "message": "this cell stopped the sandbox (it exited, "
                               "crashed or ran out of memory)"} for c in own if not c.startswith("<cell setup.")}
            self.values = {}
            raise

    def _start(self, cells: dict[str, str], names: list[str]) -> Sandbox:
        self.sandbox = Sandbox(self.lib)
        timeout = self.cell_seconds * len(cells) + 60
        answer = self.sandbox.ask({"op": "setup", "cells": list(cells.items()), "seconds": self.cell_seconds}, timeout)
        self.errors = answer.get("errors", {}) if isinstance(answer, dict) else {}
        values = self.sandbox.ask({"op": "values", "names": names}, 30.0)
        self.values = values if isinstance(values, dict) else {}
        return self.sandbox

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


class Proxy:
    """Stands in for a student's function: each call runs in the student's sandbox."""

    def __init__(self, student: Student, name: str, names: list[str], label: str):
        self.student, self.name, self.names, self.label = student, name, names, label

    def function(self):
        source = next((s for c, s in self.student.cells.items() if self.name in defined_names(s)), "")
        filename = next((c for c, s in self.student.cells.items() if s == source), "<cell unknown>")
        original = shadow(source, filename, self.name)

        def call(*args, **kwargs):
            return self(*args, **kwargs)

        if original is not None:
            functools.update_wrapper(call, original)
        else:
            call.__name__ = call.__qualname__ = self.name
        return call

    def _raise(self, err: BaseException):
        """Raise ``err`` from the first line of the student's function (where no line is known)."""
        for cell, source in self.student.cells.items():
            match = re.search(rf"^def {re.escape(self.name)}\b", source, re.M)
            if match:
                line = source.count("\n", 0, match.start()) + 1
                _raise_at(err, {"cell": cell, "line": line, "name": self.name}, self.student.cells)
        raise err

    def __call__(self, *args, **kwargs):
        from helpers.grading.sandbox import CaseTimeout

        request = {"op": "call", "name": self.name, "args": args, "kwargs": kwargs, "time_limit": CALL_BACKSTOP}
        try:
            sandbox = self.student.ready(self.names, self.label)
            answer = sandbox.ask(request, CALL_BACKSTOP + 10)
        except CaseTimeout as err:  # the checker's own time limit: the sandbox is stopped, a new one next time
            self.student.close()
            self._raise(CaseTimeout(err.seconds))
        except (SandboxError, wire.WireError, OSError) as err:
            self.student.close()
            self._raise(CaseTimeout(CALL_BACKSTOP) if str(err) == "timeout" else SandboxStopped(str(err)))
        if not isinstance(answer, dict):
            raise SandboxStopped("it answered with something that is not data")
        if answer.get("timeout"):
            self.student.close()
            self._raise(CaseTimeout(CALL_BACKSTOP))
        if "missing" in answer:
            raise NameError(f"name {self.name!r} is not defined (did its cell run without errors?)")
        if "raised" in answer:
            raised = answer["raised"] if isinstance(answer["raised"], dict) else {}
            _raise_at(_exception(raised), raised.get("where"), self.student.cells)
        if "unsendable" in answer:
            return wire.unreadable("answer too large to receive")
        for target, state in zip(args, answer.get("args", [])):
            _write_back(target, state)
        for key, state in (answer.get("kwargs") or {}).items():
            if key in kwargs:
                _write_back(kwargs[key], state)
        result = answer.get("result", {})
        if isinstance(result, dict) and isinstance(result.get("arg"), int) and 0 <= result["arg"] < len(args):
            return args[result["arg"]]
        return wire.decode(result.get("value")) if isinstance(result, dict) else None


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


def _outside_solutions(nb) -> list[int]:
    """The indices of ``nb``'s cells outside its solutions (``{solution-start}`` to ``{solution-end}``)."""
    from tools.classroom import END, START

    kept, inside = [], False
    for i, cell in enumerate(nb.cells):
        opens = cell.cell_type == "markdown" and START in cell.source
        inside = inside or opens
        if not inside:
            kept.append(i)
        if cell.cell_type == "markdown" and END in cell.source:
            inside = False
    return kept


def _bounds(nb, label: str) -> tuple[int, int] | None:
    """Where exercise ``label``'s cells lie in a handed-in notebook: after the last cell before
    its end cell that nbgrader marked (a read-only cell, or the previous exercise's end), up to
    its end cell (the checker, or a predictions hand-in's closing cell), found by its grade id.
    The exercise's text may be plain markdown (the student edition's), so the id is the anchor."""
    def grade_id(cell):
        return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")

    cells = nb.cells
    stop = next((i for i, c in enumerate(cells) if grade_id(c) == label), None)
    if stop is None:
        return None
    start = max((i for i in range(stop) if grade_id(cells[i])), default=-1)
    return start, stop


def _starters(nb, label: str) -> list[str] | None:
    """A handed-in notebook's cells of exercise ``label``: its code cells that nbgrader did not
    lock, between the bounds of :func:`_bounds`; ``None`` when its end cell is missing."""
    bounds = _bounds(nb, label)
    if bounds is None:
        return None
    return [c.source for c in nb.cells[bounds[0] + 1:bounds[1]] if c.cell_type == "code"
            and not c.get("metadata", {}).get("nbgrader", {}).get("locked")]


def _read(path, what: str):
    """A submitted notebook, or ``None`` and why not."""
    if not path:
        return None, f"{what}: not handed in"
    try:
        return nbformat.read(path, as_version=4), ""
    except Exception as err:
        return None, f"{what} could not be read ({type(err).__name__})"


def is_prediction(nb, ex) -> bool:
    """Whether exercise ``ex`` of the book's ``nb`` asks for a prediction: its cells define no function."""
    return not any(re.search(r"^\s*def\s", nb.cells[j].source, re.M) for j in ex.starters)


def reasoning(nb, label: str) -> str:
    """The student's line of reasoning for prediction ``label`` in a predictions hand-in: the
    markdown cell that starts with :data:`REASONING_PROMPT`, within the exercise's bounds."""
    bounds = _bounds(nb, label)
    if bounds is None:
        return ""
    text = " ".join(c.source.replace(REASONING_PROMPT, "").strip() for c in nb.cells[bounds[0] + 1:bounds[1]]
                    if c.cell_type == "markdown" and c.source.startswith(REASONING_PROMPT))
    return " ".join(text.split())[:1000]


def score(book: Path, submissions: dict[str, dict], *, class_seed: int, lib: Path,
          cell_seconds: float = CELL_SECONDS) -> dict:
    """Run ``book`` once and score each student's hand-in in ``submissions``: ``{student:
    {"notebook": path, "predictions": path}}`` (a path may be ``None``; without the
    ``predictions`` key, predictions are read from the notebook itself). See the module."""
    from IPython.core.interactiveshell import InteractiveShell

    from helpers.grading import base
    from tools.classroom import find_exercises

    nb = nbformat.read(book, as_version=4)
    exercises = find_exercises(nb)
    reasons: dict[tuple[str, str], str] = {}
    by_checker = {ex.checker: ex for ex in exercises}
    names = {ex.label: [n for j in ex.starters for n in defined_names(nb.cells[j].source)] for ex in exercises}
    all_names = [n for ex in exercises for n in names[ex.label]]
    kept = set(_outside_solutions(nb))
    own = {j for ex in exercises for j in (*ex.starters, ex.checker)}
    setup = {f"<cell setup.{i}>": setup_source(c.source) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and i not in own and i in kept}
    setup = {name: source for name, source in setup.items() if source}
    students, results, flagged = {}, {}, _flag_patterns(nb, exercises)
    for who, handed in sorted(submissions.items()):
        results[who] = {}
        own_nb, why_not = _read(handed.get("notebook"), "the notebook")
        early = "predictions" in handed
        guess_nb, guess_why = _read(handed.get("predictions"), "the predictions handed in before the measurement") \
            if early else (None, "")
        cells, notes = dict(setup), []
        for ex in exercises:
            from_guesses = early and is_prediction(nb, ex)
            theirs, why = (guess_nb, guess_why) if from_guesses else (own_nb, why_not)
            own = None if theirs is None else _starters(theirs, ex.label)
            if own is None:
                why = why or "this exercise's cells are not in the notebook"
                results[who][ex.label] = {"score": 0.0, "lines": [why], "notes": [why]}
                continue
            for k, source in enumerate(own):
                cells[cell_name(ex.label, k)] = source
                notes += [f"{ex.label}: {why}" for why in flagged(ex.label, source)]
            if from_guesses:
                reason = reasoning(theirs, ex.label)
                notes += [] if reason else [f"{ex.label}: no reasoning given with the prediction"]
                reasons[who, ex.label] = reason
        students[who] = Student(who, cells, lib, notes=notes, cell_seconds=cell_seconds)
    shell = InteractiveShell.instance()
    shell.display_pub.publish = lambda *a, **k: None
    quiet = io.StringIO()
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if i in by_checker:
                ex = by_checker[i]
                active = {w: s for w, s in students.items() if ex.label not in results[w]}
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    for who, outcome in _check(shell, cell.source, ex, names[ex.label], all_names, active,
                                               hidden_seed(class_seed, ex.label), base).items():
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


def _flag_patterns(nb, exercises):
    """A function saying which library versions of an exercise's answer a student's cell names."""
    import helpers.grading as grading

    patterns = {}
    for ex in exercises:
        call = re.search(r"helpers\.grading\.(?:\w+\.)?(check_\w+)", nb.cells[ex.checker].source)
        checker = getattr(grading, call[1], None) if call else None
        refs = keyfree.references(checker) if callable(checker) else []
        patterns[ex.label] = [(n, re.compile(rf"\.{re.escape(n)}\b|\b{re.escape(n)}\s*\("))
                              for n in sorted(keyfree.library_names(refs))]

    def flagged(label: str, source: str) -> list[str]:
        return [f"names {name}, a library's version of the answer; look at it"
                for name, pattern in patterns.get(label, []) if pattern.search(source)]

    return flagged


def _check(shell, source: str, ex, names: list[str], all_names: list[str], students: dict[str, Student],
           seed: int, base) -> dict[str, dict]:
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
                student.ready(all_names, ex.label)
                bound = _bind(student, names, all_names, ex.label)
            except SandboxError:
                bound = {n: None for n in names}
            prefix = [f"your cell raised {str(e.get('type', 'an error'))[:80]}: {str(e.get('message', ''))[:300]}"
                      for c, e in student.errors.items() if c.startswith(f"<cell {ex.label}.") and isinstance(e, dict)]
            base.LATEST.clear()
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
                out[who] = {"score": 0.0, "lines": [*prefix, "the checker gave no verdict"]}
            else:
                out[who] = {"score": float(feedback.score), "lines": [*prefix, *feedback.lines],
                            "passed": bool(feedback.passed)}
    finally:
        for n in names:
            ns.pop(n, None)
        ns.update(saved)
    return out


def _bind(student: Student, names: list[str], all_names: list[str], label: str) -> dict:
    """The student's answers of an exercise: functions as proxies, the rest as data."""
    bound = {}
    for n in names:
        value = student.values.get(n, {})
        if isinstance(value, dict) and value.get("function"):
            bound[n] = Proxy(student, n, all_names, label).function()
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
