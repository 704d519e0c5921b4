"""A student's functions and answers as the checkers meet them: the student's sandbox
(:class:`Student`), a stand-in for each function that calls it there (:class:`Proxy`), and
what a call sends back, written into the checker's own objects (:func:`write_back`)."""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import keyword
import linecache
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from tools.judge import keyfree, wire
from tools.judge.cells import defined_names, plain_source
from tools.judge.sandbox import Sandbox, SandboxError

CELL_SECONDS = 30.0  # seconds one of a student's cells may run in the sandbox (they define, not train)
SETUP_GRACE_SECONDS = 30.0  # beyond two cells' time, for a sandbox to start and import what the notebook does
MAX_LIVE = 8
"""Sandboxes alive at once in one scorer (about 170 MB each): past that, the one used least
recently is closed, and started again (its cells run anew) when its student is next checked,
so that memory stays bounded whatever the class's size."""
_LIVE: dict[int, Student] = {}  # id(student) -> student, least recently used first
CALL_BACKSTOP = 120.0  # seconds the sandbox's own clock allows a call (the checker's limit stops it first)
_IDENT = re.compile(r"^[A-Za-z_]\w{0,79}$")


def shadow(source: str, filename: str, name: str):
    """The student's function ``name`` compiled from ``source`` without running any of it
    (no decorators, defaults or annotations, which run at definition): its source and line
    numbers are the student's, for the checker's "not implemented yet" and its messages."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        tree = ast.parse(plain_source(source))
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


def raise_at(err: BaseException, where: dict | None, cells: dict[str, str]):
    """Raise ``err`` from the student's own line, as the sandbox reported it."""
    name = str((where or {}).get("name", ""))
    if not where or where.get("cell") not in cells or not _IDENT.match(name) or keyword.iskeyword(name):
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


AUTOGRAD = ("your function used PyTorch's autograd (it recorded a graph to differentiate), which this "
            "exercise puts off limits: compute the backward pass yourself")
UNSAID = "(in a graded class the grader does not pass on what your code said: it could repeat a hidden case)"


@functools.cache
def _key_messages() -> frozenset[str]:
    """What the stub of each of the course's keys raises in the sandbox (:data:`keyfree.MESSAGE`)."""
    return frozenset(keyfree.MESSAGE.format(name=f.__name__) for f in keyfree.course_keys())


def mirrored_exception(raised: dict) -> BaseException:
    """The exception the student's function raised, as the checker sees it: the built-in
    exception of that type (``Exception`` for a class of the student's own), with the message
    :data:`UNSAID`. Nothing the student's code chose reaches the feedback: a message, or a class
    named on the spot, could carry a hidden case's inputs back to the student (a function that
    raises its arguments), to be answered from a table at the next hand-in. The one message
    passed on is the grader's own, from a stubbed key (:mod:`tools.judge.keyfree`), naming one
    of the course's keys."""
    name, message = str(raised.get("type", "Exception")), str(raised.get("message", ""))
    if name == "RuntimeError" and message in _key_messages():
        return RuntimeError(message)
    if raised.get("exit"):
        return SystemExit(UNSAID)
    if raised.get("not_implemented"):
        return NotImplementedError(UNSAID)
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(UNSAID)
        except Exception:
            pass
    return Exception(UNSAID)


def has_unreadable(value) -> bool:
    if isinstance(value, wire.Unreadable):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_unreadable(v) for v in value)
    if isinstance(value, dict):
        return any(has_unreadable(v) for v in value.values())
    return False


def write_back(target, state: dict, depth: int = 0) -> None:
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
            if len(value) == len(items) and not has_unreadable(value):
                target[:] = value
            return
        for element, item in zip(target, items):
            write_back(element, item, depth + 1)
        if isinstance(target, list):
            for k, item in enumerate(items[:len(target)]):
                if isinstance(item, dict) and "value" in item and not isinstance(target[k], (torch.Tensor, np.ndarray)):
                    value = wire.decode(item["value"])
                    if not has_unreadable(value):
                        target[k] = value
        return
    if "entries" in state and isinstance(target, dict) and isinstance(state["entries"], list):
        entries = {k: v for k, v in state["entries"] if isinstance(k, str)}
        for key in [k for k in target if k not in entries]:
            del target[key]
        for key, item in entries.items():
            if key in target and (isinstance(target[key], (torch.nn.Module, torch.Tensor, np.ndarray, list, dict))):
                write_back(target[key], item, depth + 1)
            elif isinstance(item, dict) and "value" in item:
                value = wire.decode(item["value"])
                if not has_unreadable(value):
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
    fixed: dict[str, dict] = field(default_factory=dict)  # values read without running (first hand-in)

    def ready(self, names: list[str], label: str = "") -> Sandbox:
        """The student's sandbox with their cells run (started again after a crash, or after
        it was closed to keep at most :data:`MAX_LIVE` alive). When all their cells together
        stop the sandbox (one calls ``os._exit``, say), each exercise gets a sandbox of the
        notebook's setup and that exercise's cells only."""
        fresh = self.sandbox is None or self.sandbox.process.poll() is not None
        if not fresh and not (self.alone and label != self.label):
            _LIVE[id(self)] = _LIVE.pop(id(self), self)  # the most recently used
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
        except SandboxError as err:
            self.close()
            self.flag(label, "its cells ran past the time limit of the whole notebook's setup "
                             f"({self.setup_seconds:.0f} s)" if str(err) == "timeout" else str(err))
            self.errors = {c: {"type": "SandboxStopped", "message": "this cell stopped the sandbox (it exited, "
                               "crashed or ran out of memory)"} for c in own if not c.startswith("<cell setup.")}
            self.values = {}
            raise

    @property
    def setup_seconds(self) -> float:
        """The wall-clock time the grader allows all of a student's cells together, whatever
        their number: the sandbox's own per-cell clock can be stopped by the student's code."""
        return 2 * self.cell_seconds + SETUP_GRACE_SECONDS

    def flag(self, label: str, why: str) -> None:
        """Note for a person to review that this student's exercise ``label`` hit a limit."""
        self.review(label, f"hit a limit of the sandbox: {why}; look at it")

    def review(self, label: str, note: str) -> None:
        """Note ``note`` on this student's exercise ``label`` for a person to review (once)."""
        if f"{label}: {note}" not in self.notes:
            self.notes.append(f"{label}: {note}")

    def _start(self, cells: dict[str, str], names: list[str]) -> Sandbox:
        while len(_LIVE) >= MAX_LIVE:
            _LIVE[next(iter(_LIVE))].close()
        self.sandbox = Sandbox(self.lib)
        _LIVE[id(self)] = self
        answer = self.sandbox.ask({"op": "setup", "cells": list(cells.items()), "seconds": self.cell_seconds},
                                  self.setup_seconds)
        self.errors = answer.get("errors", {}) if isinstance(answer, dict) else {}
        values = self.sandbox.ask({"op": "values", "names": names}, 30.0)
        self.values = {**(values if isinstance(values, dict) else {}), **self.fixed}
        return self.sandbox

    def close(self) -> None:
        _LIVE.pop(id(self), None)
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


@contextlib.contextmanager
def _clock_paused():
    """Stop the checker's case clock (:class:`helpers.grading.sandbox.time_limit`, an interval
    timer) inside, and give it back what it had left: how long a student's function took must
    not depend on how long the machine took to start their sandbox (under load, it used to
    turn "took longer than 5 s" into "the sandbox stopped" for the same answer)."""
    left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left or interval:
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), interval)


class Proxy:
    """Stands in for a student's function: each call runs in the student's sandbox."""

    def __init__(self, student: Student, name: str, names: list[str], label: str, *, no_autograd: bool = False):
        self.student, self.name, self.names, self.label = student, name, names, label
        self.no_autograd = no_autograd  # the exercise asks for a backward pass by hand

    def function(self):
        filename, source = next(((c, s) for c, s in self.student.cells.items() if self.name in defined_names(s)),
                                ("<cell unknown>", ""))
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
                raise_at(err, {"cell": cell, "line": line, "name": self.name}, self.student.cells)
        raise err

    def __call__(self, *args, **kwargs):
        from helpers.grading.sandbox import CaseTimeout

        request = {"op": "call", "name": self.name, "args": args, "kwargs": kwargs, "time_limit": CALL_BACKSTOP,
                   "no_autograd": self.no_autograd}
        try:
            with _clock_paused():  # starting a sandbox is the grader's time, not the student's
                sandbox = self.student.ready(self.names, self.label)
            answer = sandbox.ask(request, CALL_BACKSTOP + 10)
        except CaseTimeout as err:  # the checker's own time limit: the sandbox is stopped, a new one next time
            self.student.close()
            self._raise(CaseTimeout(err.seconds))
        except (SandboxError, wire.WireError, OSError) as err:
            self.student.close()
            if "memory" in str(err):
                self.student.flag(self.label, str(err))
            self._raise(CaseTimeout(CALL_BACKSTOP) if str(err) == "timeout" else SandboxStopped(str(err)))
        if not isinstance(answer, dict):
            raise SandboxStopped("it answered with something that is not data")
        if answer.get("timeout"):
            self.student.close()
            self._raise(CaseTimeout(CALL_BACKSTOP))
        if answer.get("autograd"):
            self.student.review(self.label, "used PyTorch's autograd, off limits in this exercise; look at it")
            self._raise(RuntimeError(AUTOGRAD))
        if "missing" in answer:
            raise NameError(f"name {self.name!r} is not defined (did its cell run without errors?)")
        if "raised" in answer:
            raised = answer["raised"] if isinstance(answer["raised"], dict) else {}
            raise_at(mirrored_exception(raised), raised.get("where"), self.student.cells)
        if "unsendable" in answer:
            return wire.unreadable("answer too large to receive")
        for target, state in zip(args, answer.get("args", [])):
            write_back(target, state)
        for key, state in (answer.get("kwargs") or {}).items():
            if key in kwargs:
                write_back(kwargs[key], state)
        result = answer.get("result", {})
        if isinstance(result, dict) and isinstance(result.get("arg"), int) and 0 <= result["arg"] < len(args):
            return args[result["arg"]]
        return wire.decode(result.get("value")) if isinstance(result, dict) else None
