"""Guards around a learner's code: a time limit, the course's references off limits, and
the learner's own line when something goes wrong.

* :class:`time_limit` stops a call after ``seconds`` with :class:`CaseTimeout`. It uses
  ``signal.setitimer`` and ``SIGALRM``, so it works on Unix in the main thread (where a
  notebook's cells run); elsewhere (Windows, another thread) it sets no limit and says
  why in ``time_limit.unavailable``. The alarm repeats every
  ``REPEAT_S`` seconds until the call ends, so a learner's bare ``except:`` that swallows
  one :class:`CaseTimeout` gets another. It cannot stop a single long call into C code
  (one huge matrix product), which runs to its end first; and like any asynchronous
  exception, it can leave half-done whatever the learner's code was in the middle of.
* :class:`off_limits` makes the course's reference functions raise while a learner's
  function runs, so a "solution" that calls the answer key fails (see its docstring).
* :func:`learner_frame` and :func:`describe_exception` say where a learner's function
  failed: the last traceback frame outside the ``helpers`` package and outside installed
  libraries, with its line number and source line (not a file name, which in a notebook
  is a temporary file).

None of this is a security boundary: it keeps honest mistakes and easy shortcuts from
passing, not a determined attacker.
"""

from __future__ import annotations

import os
import signal
import site
import sys
import sysconfig
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterable
from numbers import Real

DEFAULT_TIME_LIMIT = 5.0
"""Seconds one case of a check may take, unless the checker or the case says otherwise."""
REPEAT_S = 0.25
"""After the first alarm, another one this often until the call ends."""
OFF_LIMITS_PREFIX = "the course's reference "

_GRADING_DIR = os.path.dirname(os.path.realpath(__file__))
_HELPERS_DIR = os.path.dirname(_GRADING_DIR)


def _library_dirs() -> tuple[str, ...]:
    """Where the standard library and installed packages live (user site-packages too)."""
    paths = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    try:
        paths += [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # an old virtualenv's site module
        pass
    return tuple(sorted({os.path.realpath(p) for p in paths if p}))


_LIBRARY_DIRS = _library_dirs()


class CaseTimeout(BaseException):
    """Raised inside a learner's function when its case runs past the time limit.

    A ``BaseException`` (like ``KeyboardInterrupt``), so a learner's ``except Exception``
    does not swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"took longer than {seconds:g} s")
        self.seconds = seconds


class ReferenceOffLimitsError(RuntimeError):
    """Raised by a course reference function called while a learner's function is checked."""


def off_limits_message(name: str) -> str:
    """What a learner sees when their function calls the course's reference ``name``."""
    return f"{OFF_LIMITS_PREFIX}{name} is off limits inside this exercise; write your own"


def check_seconds(name: str, value) -> float:
    """``value`` as a float number of seconds > 0 (``math.inf``: no limit); raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__} {value!r}")
    value = float(value)
    if not value > 0:  # also rejects NaN
        raise ValueError(f"{name} must be > 0 seconds (math.inf for no limit), got {value}")
    return value


def time_limit_unavailable() -> str | None:
    """Why :class:`time_limit` cannot set a limit here, or ``None`` if it can."""
    if not (hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")):
        return "this system has no SIGALRM timer (Windows)"
    if threading.current_thread() is not threading.main_thread():
        return "the check runs outside Python's main thread"
    return None


class time_limit:
    """Context manager: raise :class:`CaseTimeout` in the code it wraps after ``seconds``.

    ``seconds`` is a number > 0; ``math.inf`` sets no limit. Where no limit can be set,
    nothing is raised and ``unavailable`` says why. A timer and ``SIGALRM`` handler
    that were set before (a test runner's, say) are put back on exit, with the time that
    was left on the timer.
    """

    def __init__(self, seconds: float):
        self.seconds = check_seconds("seconds", seconds)
        self.unavailable: str | None = None
        self._armed = False

    def __enter__(self) -> time_limit:
        if self.seconds == float("inf"):
            return self
        self.unavailable = time_limit_unavailable()
        if self.unavailable:
            return self
        self._start = time.monotonic()
        self._old_handler = signal.signal(signal.SIGALRM, self._on_alarm)
        self._armed = True
        self._old_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds, REPEAT_S)
        return self

    def _on_alarm(self, signum, frame) -> None:
        # Never raise inside the checker's own code (its cleanup, its comparisons): only in
        # the learner's code or the libraries it calls; the repeating alarm catches it there.
        if self._armed and not _in_dir(frame.f_code.co_filename if frame else "", _GRADING_DIR):
            raise CaseTimeout(self.seconds)

    def __exit__(self, *exc) -> bool:
        if not self._armed:
            return False
        self._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        old = self._old_handler
        signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)
        delay, interval = self._old_timer
        if delay > 0:  # someone else's timer was running: give it back what was left
            left = delay - (time.monotonic() - self._start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), interval)
        return False


class off_limits:
    """Context manager: the given reference functions raise while it is active.

    On entry, every module namespace in ``sys.modules`` (which includes a notebook's
    ``__main__``) and every extra namespace in ``namespaces`` (say, a learner function's
    ``__globals__``) that holds one of ``functions`` under any name gets a stand-in that
    raises :class:`ReferenceOffLimitsError` with :func:`off_limits_message`. Plain Python
    functions also have their code swapped for one that raises, which catches the copies
    that no namespace shows (a default argument, a closure, a list). Everything is put back
    on exit, however the block ends; a name the block re-bound meanwhile is left alone.
    The change is process-wide: another thread that calls a reference meanwhile fails too.
    """

    def __init__(self, functions: Iterable[Callable], namespaces: Iterable[dict | None] = ()):
        if isinstance(functions, (str, bytes)) or not isinstance(functions, Iterable):
            raise TypeError(f"functions must be an iterable of functions, got {type(functions).__name__}")
        self.functions = tuple(functions)
        for i, fn in enumerate(self.functions):
            if not callable(fn) or not isinstance(getattr(fn, "__name__", None), str):
                raise TypeError(f"functions[{i}] must be a named function, got {type(fn).__name__} {fn!r}")
        if isinstance(namespaces, dict) or not isinstance(namespaces, Iterable):
            raise TypeError(f"namespaces must be an iterable of dicts, got {type(namespaces).__name__}")
        self.namespaces = tuple(ns for ns in namespaces if ns is not None)
        for i, ns in enumerate(self.namespaces):
            if not isinstance(ns, dict):
                raise TypeError(f"namespaces[{i}] must be a dict or None, got {type(ns).__name__}")
        self._bindings: list[tuple[dict, str, Callable, Callable]] = []
        self._codes: list[tuple[types.FunctionType, types.CodeType]] = []

    def __enter__(self) -> off_limits:
        try:
            stubs = {id(fn): (fn, _stub(fn)) for fn in self.functions}
            for ns in _namespaces(self.namespaces):
                for name, value in list(ns.items()):
                    hit = stubs.get(id(value))
                    if hit is not None and hit[0] is value:
                        ns[name] = hit[1]
                        self._bindings.append((ns, name, value, hit[1]))
            for fn, _ in stubs.values():
                if isinstance(fn, types.FunctionType) and not fn.__closure__:
                    self._codes.append((fn, fn.__code__))
                    fn.__code__ = _blocked_code(fn.__code__, off_limits_message(fn.__name__))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        while self._codes:
            fn, code = self._codes.pop()
            fn.__code__ = code
        while self._bindings:
            ns, name, original, stub = self._bindings.pop()
            if ns.get(name) is stub:
                ns[name] = original
        return False


def _stub(fn: Callable) -> Callable:
    message = off_limits_message(fn.__name__)

    def stub(*args, **kwargs):
        raise ReferenceOffLimitsError(message)

    stub.__name__ = stub.__qualname__ = fn.__name__
    stub.__doc__ = message
    return stub


def _blocked_template(*args, **kwargs):
    raise RuntimeError("__off_limits_message__")


def _blocked_code(code: types.CodeType, message: str) -> types.CodeType:
    """The code of :func:`_blocked_template`, named like ``code`` and raising ``message``.

    It raises a builtin ``RuntimeError`` because it runs with the reference's own module
    globals, where ``ReferenceOffLimitsError`` is not defined."""
    template = _blocked_template.__code__
    consts = tuple(message if c == "__off_limits_message__" else c for c in template.co_consts)
    names = {"co_name": code.co_name}
    if sys.version_info >= (3, 11):
        names["co_qualname"] = code.co_qualname
    return template.replace(co_consts=consts, **names)


def _module_dict(module) -> dict | None:
    try:
        return getattr(module, "__dict__", None)
    except Exception:  # a lazy module that fails to load when touched
        return None


def _namespaces(extra: tuple[dict, ...]) -> list[dict]:
    """Every loaded module's namespace, then ``extra``, each once."""
    seen, found = set(), []
    for ns in [_module_dict(m) for m in list(sys.modules.values())] + list(extra):
        if isinstance(ns, dict) and id(ns) not in seen:
            seen.add(id(ns))
            found.append(ns)
    return found


def _in_dir(filename: str, directory: str) -> bool:
    """Whether ``filename`` lies under ``directory`` (a real path)."""
    if not filename or filename.startswith("<"):
        return False
    try:
        return os.path.commonpath([os.path.realpath(filename), directory]) == directory
    except ValueError:  # different drives on Windows
        return False


def _is_library(filename: str) -> bool:
    if filename.startswith("<frozen") or filename.startswith("<__array_function__"):
        return True
    return any(_in_dir(filename, d) for d in _LIBRARY_DIRS)


def learner_frame(tb: types.TracebackType | None) -> traceback.FrameSummary | None:
    """The frame of ``tb`` that is the learner's: the last one outside ``helpers`` and
    outside the standard library and installed packages (failing that, the last one
    outside ``helpers``; failing that, the last one); ``None`` for an empty traceback."""
    frames = traceback.extract_tb(tb)
    outside = [f for f in frames if not _in_dir(f.filename, _HELPERS_DIR)]
    own = [f for f in outside if not _is_library(f.filename)]
    for candidates in (own, outside, frames):
        if candidates:
            return candidates[-1]
    return None


def where(err: BaseException) -> str:
    """`` (in NAME, line N: SOURCE)`` for the learner's frame of ``err``'s traceback, or ``""``."""
    if not isinstance(err, BaseException):
        raise TypeError(f"err must be an exception, got {type(err).__name__}")
    frame = learner_frame(err.__traceback__)
    if frame is None:
        return ""
    source = f": {frame.line.strip()}" if frame.line else ""
    return f" (in {frame.name}, line {frame.lineno}{source})"


def describe_exception(err: BaseException) -> str:
    """One line for a learner: what ``err`` is and where in their code it was raised."""
    if not isinstance(err, BaseException):
        raise TypeError(f"err must be an exception, got {type(err).__name__}")
    message = str(err)
    if isinstance(err, RuntimeError) and message.startswith(OFF_LIMITS_PREFIX):
        return message + where(err)
    if isinstance(err, SystemExit):
        return ("raised SystemExit (it called sys.exit(), exit() or quit()); a checked function must "
                "return its answer, not stop Python" + where(err))
    if isinstance(err, NotImplementedError):
        return "not implemented yet (it raises NotImplementedError): replace the `raise` with your code" + where(err)
    return f"raised {type(err).__name__}" + (f": {message}" if message else "") + where(err)
