"""What runs inside a student's sandbox (:mod:`tools.judge.sandbox`): the student's own cells,
then the grader's calls of the student's functions, answered as data (:mod:`tools.judge.wire`).

Run as ``python -I worker.py LIB SITE FD``: ``LIB`` holds the key-free ``helpers``
(:mod:`tools.judge.keyfree`), ``SITE`` the installed packages. Requests come pickled on
standard input (from the grader: trusted); answers go out as wire frames on file
descriptor ``FD``. Whatever the student's code prints goes to ``/dev/null``: nothing a student
prints reaches the grader or a feedback file.

Requests (dicts, ``op`` says which):

* ``setup``: ``cells``, a list of ``(name, source)``; each runs in one shared namespace, on
  its own and for at most ``seconds``, so that one that raises or hangs leaves the others run;
  within a cell, statement by statement (a line that raises leaves the later definitions made;
  the first error is reported; ``SystemExit`` ends the cell).
  Answers ``{"errors": {name: text}}``.
* ``values``: ``names``; answers each name's value as data, ``{"function": true}`` for a
  callable, ``{"missing": true}`` when the cells did not define it.
* ``call``: ``name``, ``args``, ``kwargs``, ``time_limit`` (seconds): calls the student's
  function; answers its result, the arguments as the call left them (a model as its state),
  and what it raised or that it ran out of time. With ``no_autograd`` (an exercise that asks
  for a backward pass by hand), the call runs under saved-tensor hooks that stop it the
  moment it records an autograd graph (``backward``, ``torch.autograd.grad`` or
  ``.functional``, a graph's nodes called by hand, the engine itself; ``torch.func``'s
  reverse-mode transforms refuse to run under such hooks): it answers ``{"autograd": true}``.

This file imports only the standard library, NumPy and PyTorch before the student's cells run.
"""

from __future__ import annotations

import ast
import os
import pickle
import re
import signal
import site
import sys
import traceback

_CELL = re.compile(r"^<cell [\w.-]+>$")
_MAGIC = re.compile(r"^\s*[%!]")


class _Timeout(BaseException):
    pass


class _Autograd(BaseException):  # not an Exception: a student's ``except Exception`` lets it through
    pass


_TORCH_FUNC_REFUSES = "don't yet support saved tensor hooks"
_RECORDED = []  # a graph was recorded during this call (even where the student caught the stop)


def _graph_recorded(*_):
    _RECORDED.append(True)
    raise _Autograd()


def _alarm(signum, frame):
    raise _Timeout()


def _start(lib: str, site_dir: str, answer_fd: int):
    """Point imports at the key-free ``helpers``; silence the student's output."""
    site.addsitedir(site_dir)
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                        and "editable" not in getattr(f, "__name__", "").lower()]
    sys.path.insert(0, lib)
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(answer_fd, "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdin = open(os.devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    return requests, answers


def _read(stream, header):
    head = stream.read(header.size)
    if len(head) < header.size:
        return None
    (length,) = header.unpack(head)
    return pickle.loads(stream.read(length))


def _where(err: BaseException) -> dict | None:
    """The student's own frame of ``err``: the last one in one of their cells."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if _CELL.match(f.filename or "")]
    if not frames:
        return None
    f = frames[-1]
    return {"cell": f.filename, "line": int(f.lineno or 0), "name": str(f.name)[:80]}


def _raised(err: BaseException) -> dict:
    return {"type": type(err).__name__[:80], "message": str(err)[:2000], "where": _where(err),
            "exit": isinstance(err, SystemExit), "not_implemented": isinstance(err, NotImplementedError)}


def _state(value, wire, torch, depth: int = 0):
    """An argument after the call: a model as its parameters, buffers and number attributes;
    a list, tuple or dict element by element (so a list of models comes back as models)."""
    if isinstance(value, torch.nn.Module):
        numbers = {}
        for prefix, module in value.named_modules():
            for key, attr in vars(module).items():
                if not key.startswith("_") and key != "training" and isinstance(attr, (bool, int, float)):
                    numbers[f"{prefix}.{key}" if prefix else key] = attr
        return {"module": wire.encode({k: v for k, v in value.state_dict().items()}), "numbers": wire.encode(numbers)}
    if depth < 4 and isinstance(value, (list, tuple)):
        return {"items": [_state(v, wire, torch, depth + 1) for v in value]}
    if depth < 4 and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"entries": [[k, _state(v, wire, torch, depth + 1)] for k, v in value.items()]}
    return {"value": wire.encode(value)}


def _call(ns: dict, request: dict, wire, torch) -> dict:
    fn = ns.get(request["name"])
    if not callable(fn):
        return {"missing": True}
    args, kwargs = request["args"], request["kwargs"]
    hooks = torch.autograd.graph.saved_tensors_hooks
    guard = hooks(_graph_recorded, _graph_recorded) if request.get("no_autograd") else None
    _RECORDED.clear()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, float(request["time_limit"]), 0.25)
    try:
        try:
            if guard is None:
                result = fn(*args, **kwargs)
            else:
                with guard:
                    result = fn(*args, **kwargs)
                    hooks_now = torch._C._autograd._top_saved_tensors_default_hooks(False)
                    if _RECORDED or hooks_now != (_graph_recorded,) * 2:
                        raise _Autograd()  # a graph was recorded, or the hooks were taken off
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        return {"timeout": True}
    except _Autograd:
        return {"autograd": True}
    except RuntimeError as err:  # torch.func's reverse mode refuses to run under the hooks
        if guard is not None and _TORCH_FUNC_REFUSES in str(err):
            return {"autograd": True}
        return {"raised": _raised(err)}
    except KeyboardInterrupt as err:
        return {"raised": _raised(err)}
    except BaseException as err:
        return {"raised": _raised(err)}
    same = next((i for i, a in enumerate(args) if result is a), None)
    return {"result": {"arg": same} if same is not None else {"value": wire.encode(result)},
            "args": [_state(a, wire, torch) for a in args],
            "kwargs": {k: _state(v, wire, torch) for k, v in kwargs.items()}}


def _values(ns: dict, names: list[str], wire) -> dict:
    out = {}
    for name in names:
        if name not in ns:
            out[name] = {"missing": True}
        elif callable(ns[name]):
            out[name] = {"function": True}
        else:
            out[name] = {"value": wire.encode(ns[name])}
    return out


def _run_cells(ns: dict, cells, seconds: float) -> dict:
    errors = {}
    signal.signal(signal.SIGALRM, _alarm)
    for name, source in cells:
        source = "\n".join("" if _MAGIC.match(line) else line for line in source.splitlines())
        try:
            statements = ast.parse(source, name).body
        except SyntaxError as err:
            errors[name] = _raised(err)
            continue
        signal.setitimer(signal.ITIMER_REAL, seconds, 0.25)
        try:
            try:
                for statement in statements:  # one at a time: a line that fails leaves the later ones run
                    try:
                        code = compile(ast.Module([statement], []), name, "exec")
                        exec(code, ns)  # noqa: S102 (the student's own code, in its sandbox)
                    except (_Timeout, SystemExit):
                        raise
                    except BaseException as err:
                        errors.setdefault(name, _raised(err))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Timeout:
            errors[name] = {"type": "TimeoutError", "message": f"the cell took longer than {seconds:g} s",
                            "where": None, "exit": False, "not_implemented": False}
        except BaseException as err:
            errors.setdefault(name, _raised(err))
    return errors


def main(lib: str, site_dir: str, answer_fd: int) -> None:
    requests, answers = _start(lib, site_dir, answer_fd)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import wire  # this folder's copy of tools/judge/wire.py

    torch.set_num_threads(1)
    ns: dict = {"__name__": "__main__"}
    while True:
        request = _read(requests, wire.HEADER)
        if request is None:
            return
        op = request.get("op")
        if op == "setup":
            answer = {"errors": _run_cells(ns, request["cells"], float(request["seconds"]))}
        elif op == "values":
            answer = _values(ns, request["names"], wire)
        elif op == "call":
            answer = _call(ns, request, wire, torch)
        else:
            answer = {"unknown": str(op)}
        try:
            wire.write_message(answers, answer)
        except Exception as err:  # too long, say: the grader reads it as no answer
            wire.write_message(answers, {"unsendable": f"{type(err).__name__}: {str(err)[:200]}"})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
