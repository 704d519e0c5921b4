"""Which functions of a copy of ``helpers`` answer an exercise, by behaviour.

:func:`answering_functions` hands every function of the copy whose signature takes an
exercise's arguments to the book's checker of that exercise, hidden cases drawn from a seed
that is not the student edition's (:data:`tools.answer_tables.STUDENT_SEED`), so that an answer
table cannot pass them: what passes computes the answer. The student edition's test runs it on
the wheel's copy (nothing may pass but :data:`tools.answer_tables.STILL_IN_THE_WHEEL`) and on
the book's own ``helpers`` (its keys must pass: the scan can find one).

What it does not see: methods (the course's models' ``forward``, which the lessons print and
train with), a function that answers only once adapted (``single_block_lesions`` gives each
block's error; the exercise asks which block matters most), arguments other than those of the
checker's first call, and a function slower than :data:`SCAN_SECONDS` a case.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import io
import pickle
import shutil
import sys
import warnings
from pathlib import Path

from tools.answer_lookup import module_leaves, set_leaves
from tools.answer_tables import STUDENT_SEED, function_checkers, is_module
from tools.toc import ROOT

SCAN_SECONDS = 0.5  # seconds per case a candidate gets (an answer key answers the checkers' cases in milliseconds)


def _first_arguments(checker) -> tuple:
    """The positional arguments of the first call that ``checker`` makes of a learner's function."""
    seen = []

    def probe(*args, **kwargs):
        seen.append(args)
        raise NotImplementedError

    checker(probe)
    if not seen:
        raise RuntimeError(f"{checker.__name__} never called the function it checks")
    return seen[0]


def helpers_functions(folder: Path = ROOT / "helpers") -> list[tuple[str, str]]:
    """``(module, name)`` of every function that a module of the package at ``folder`` (a copy of
    ``helpers``, under whatever folder name) defines at its top level; modules named ``helpers.…``."""
    found = []
    for path in sorted(Path(folder).rglob("*.py")):
        parts = ("helpers", *path.relative_to(folder).with_suffix("").parts)
        module = ".".join(parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(module, n.name) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return found


def _binds(module: str, name: str, args: tuple) -> bool:
    """Whether ``module.name`` takes ``args``; a module of the copy that does not import raises."""
    fn = getattr(importlib.import_module(module), name)
    try:
        inspect.signature(fn).bind(*args)
    except (TypeError, ValueError):
        return False
    return True


def load_as(helpers_dir: Path, alias: str, work: Path):
    """The ``helpers`` package at ``helpers_dir`` imported under the name ``alias`` (a copy in
    ``work``), beside the book's own ``helpers``: the package imports itself only relatively."""
    if alias in sys.modules:
        raise ValueError(f"alias {alias!r} is already imported")
    target = Path(work) / alias
    shutil.copytree(helpers_dir, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    sys.path.insert(0, str(work))
    try:
        return importlib.import_module(alias)
    finally:
        sys.path.remove(str(work))


def answering_functions(package: str, *, seed: int = 0, checkers=None) -> dict[str, list[str]]:
    """``{checker: [module:function, ...]}``: the functions of the copy of ``helpers`` imported as
    ``package`` (:func:`load_as`) that pass a function exercise's checker (all of them, or those
    named in ``checkers``), its hidden cases drawn from ``seed``.

    Each function of the copy whose signature takes the exercise's arguments is handed to the
    book's checker, which judges it against the book's references on its shown cases and on hidden
    cases a table cannot hold (``seed`` is not :data:`STUDENT_SEED`). A function still running at
    :data:`SCAN_SECONDS` fails that case and the rest (an answer key answers the checkers' small
    cases in milliseconds)."""
    from helpers.grading import sandbox
    from tools.judge.scorer import seeded_hidden_cases

    if seed == STUDENT_SEED:
        raise ValueError("seed must not be the student edition's own (STUDENT_SEED): its cases are in the table")
    copy = Path(importlib.import_module(package).__file__).parent  # its own files: the copy's, not the book's
    functions = [(package + module.removeprefix("helpers"), name) for module, name in helpers_functions(copy)]
    found: dict[str, list[str]] = {}
    # Every module of the copy is imported first, outside any time limit: an import that a limit
    # cut short (scipy.stats, which one imports, takes over 0.5 s on a busy machine) would leave
    # half-initialised modules behind, and every later import of them would fail.
    for module in sorted({module for module, _ in functions}):
        importlib.import_module(module)
    # The question is what a function computes, not whether it may be called: no reference is off
    # limits (the book's guard would block PyTorch's autograd, with which some keys compute).
    limit, sandbox.DEFAULT_TIME_LIMIT = sandbox.DEFAULT_TIME_LIMIT, SCAN_SECONDS
    guard, sandbox.off_limits = sandbox.off_limits, _nothing_off_limits
    try:
        for checker in function_checkers():
            if checkers is not None and checker.__name__ not in checkers:
                continue
            args = _first_arguments(checker)
            for module, name in functions:
                if not _binds(module, name, args):
                    continue
                fn = _gives_up_when_slow(_in_copy(getattr(importlib.import_module(module), name), package),
                                         sandbox.CaseTimeout)
                with seeded_hidden_cases(seed), warnings.catch_warnings(), \
                        contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    warnings.simplefilter("ignore")
                    try:
                        feedback = checker(fn)
                    except Exception:  # a candidate that breaks the checker itself does not answer it
                        continue
                if feedback.passed:
                    found.setdefault(checker.__name__, []).append(f"{module.replace(package, 'helpers', 1)}:{name}")
    finally:
        sandbox.DEFAULT_TIME_LIMIT, sandbox.off_limits = limit, guard
    return found


class _nothing_off_limits(contextlib.nullcontext):
    """:class:`helpers.grading.sandbox.off_limits` that leaves every function callable."""

    functions = ()

    def __init__(self, functions=(), namespaces=()):
        super().__init__(self)


def _moved(value, source: str, target: str):
    """``value`` copied with the classes of package ``source`` replaced by those of ``target``."""
    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if module == source or module.startswith(source + "."):
                module = target + module[len(source):]
            return super().find_class(module, name)

    return Unpickler(io.BytesIO(pickle.dumps(value))).load()


def _in_copy(fn, package: str):
    """``fn``, of the copy imported as ``package``, called on copies of its arguments made of the
    copy's classes (a model the book's checker built is the copy's model for it), what it leaves in
    a model argument written back, and its answer made of the book's classes again."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        moved_args, moved_kwargs = _moved(args, "helpers", package), _moved(kwargs, "helpers", package)
        result = fn(*moved_args, **moved_kwargs)
        for original, moved in [*zip(args, moved_args), *((kwargs[k], moved_kwargs[k]) for k in kwargs)]:
            if is_module(original):
                set_leaves(original, module_leaves(moved))
        same = next((i for i, a in enumerate(moved_args) if a is result and result is not None), None)
        return args[same] if same is not None else _moved(result, package, "helpers")

    return call


def _gives_up_when_slow(fn, timeout: type[BaseException]):
    """``fn``, which raises ``timeout`` at once on every call after one that timed out."""
    slow = []

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if slow:
            raise slow[0]
        try:
            return fn(*args, **kwargs)
        except timeout as err:
            slow.append(err)
            raise

    return call
