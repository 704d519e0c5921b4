"""The copy of ``helpers`` a student's sandbox imports: no checkers, and no answer keys.

The answer keys of an exercise are the functions its checker puts off limits while it
runs a learner's function (the ``off_limits=`` of its :func:`~helpers.grading.base.run_cases`
call, found in the checker's source by :func:`references`). :func:`build` copies the
package without ``helpers/grading`` (the checkers and their hidden-case code) and rewrites
each key that ``helpers`` defines so that its body only raises; the rest of ``helpers``
(models, data, measurements an exercise may use) is there as the student edition has it.

PyTorch's own versions of an answer (``torch.nn.functional.layer_norm``, autograd) cannot
be taken out of PyTorch; a student's cell that names one is flagged for a person to review
(:func:`library_names`).
"""

from __future__ import annotations

import ast
import inspect
import shutil
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from tools.toc import ROOT

PACKAGE = ROOT / "helpers"
MESSAGE = "the course's reference {name} is not available while grading: write your own"


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _flatten(values: Iterable) -> list[Callable]:
    found = []
    for value in values:
        if isinstance(value, (tuple, list)):
            found += _flatten(value)
        elif callable(value):
            found.append(value)
    return found


def references(checker: Callable) -> list[Callable]:
    """The functions ``checker`` puts off limits (its ``off_limits=`` arguments, names resolved
    in its module), unwrapped, in order, each once."""
    if not callable(checker):
        raise TypeError(f"checker must be a function, got {type(checker).__name__}")
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(checker)))
    except (OSError, TypeError):
        return []
    names = [name for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "off_limits"
             for name in _names(node.value)]
    scope = getattr(checker, "__globals__", {})
    found = _flatten(scope[name] for name in names if name in scope)
    return list(dict.fromkeys(inspect.unwrap(f) for f in found))


def checker_references(source: str) -> list[Callable]:
    """The keys of the checker a checker cell's ``source`` calls (``helpers.grading.check_…(``
    or ``helpers.grading.<module>.check_…(``, :data:`tools.run_notebooks.CHECKER_CALL`);
    ``[]`` for a cell that calls none."""
    import importlib

    from tools.run_notebooks import CHECKER_CALL

    call = CHECKER_CALL.search(source)
    if call is None:
        return []
    module = importlib.import_module("helpers.grading" + (f".{call['module']}" if call["module"] else ""))
    checker = getattr(module, call["name"], None)
    return references(checker) if callable(checker) else []


def course_checkers() -> list[Callable]:
    """Every exercise checker of the course: the ``check_…`` functions that
    ``helpers.grading.chapterN`` defines, chapter by chapter, by name."""
    import importlib

    found = []
    for chapter in range(1, 6):
        module = importlib.import_module(f"helpers.grading.chapter{chapter}")
        found += [fn for name, fn in sorted(vars(module).items())
                  if name.startswith("check_") and inspect.isfunction(fn) and fn.__module__ == module.__name__]
    return found


def course_keys() -> list[Callable]:
    """The keys of every exercise checker of the course (:func:`course_checkers`)."""
    return list(dict.fromkeys(key for checker in course_checkers() for key in references(checker)))


def _defined_in_helpers(fn: Callable) -> tuple[str, str] | None:
    module = getattr(fn, "__module__", "") or ""
    if not module.startswith("helpers.") or module.startswith("helpers.grading"):
        return None
    return module, fn.__qualname__


AUTOGRAD_ROUTES = ("backward", "grad", "vjp", "jvp", "jacrev", "jacfwd", "jacobian", "hessian", "grad_fn",
                   "make_dual", "forward_ad", "saved_tensors_hooks", "_execution_engine", "_C")
"""Names of PyTorch's other ways to a gradient: a cell of an exercise that puts autograd off
limits (:func:`autograd_in`) and names one is flagged for review. The sandbox stops every
reverse-mode route as it runs (:mod:`tools.judge.worker`); the forward-mode ones, like finite
differences, cost one pass per parameter, which a hidden case too large for them rules out."""


def autograd_in(refs: Iterable[Callable]) -> bool:
    """Whether the keys ``refs`` include PyTorch's autograd (the exercise asks for a backward
    pass by hand)."""
    return any((getattr(f, "__module__", "") or "").startswith("torch.autograd") for f in refs)


def library_names(refs: Iterable[Callable]) -> set[str]:
    """The names of the keys that ``helpers`` does not define (PyTorch's), for review flags."""
    return {getattr(f, "__name__", "") for f in refs
            if not (getattr(f, "__module__", "") or "").startswith("helpers")} - {""}


class _Stub(ast.NodeTransformer):
    """Replace the bodies of the named functions (qualified names) with a ``raise``."""

    def __init__(self, qualnames: set[str]):
        self.qualnames, self.stack, self.done = qualnames, [], set()

    def _visit_scope(self, node):
        self.stack.append(node.name)
        qualname = ".".join(self.stack)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and qualname in self.qualnames:
            raise_ = ast.parse(f"raise RuntimeError({MESSAGE.format(name=node.name)!r})").body
            node.body, node.decorator_list = raise_, node.decorator_list
            self.done.add(qualname)
        else:
            self.generic_visit(node)
        self.stack.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope


def build(refs: Iterable[Callable], out: Path, package: Path = PACKAGE) -> Path:
    """Write ``out/helpers``: ``package`` without ``grading/`` and with every key of ``refs``
    that it defines stubbed; return ``out``. Raises ``ValueError`` for a key its module's
    source does not define."""
    out = Path(out)
    target = out / "helpers"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("grading", "__pycache__", "*.pyc"))
    by_module: dict[str, set[str]] = {}
    for ref in refs:
        where = _defined_in_helpers(inspect.unwrap(ref))
        if where:
            by_module.setdefault(where[0], set()).add(where[1])
    for module, qualnames in sorted(by_module.items()):
        path = target.joinpath(*module.split(".")[1:]).with_suffix(".py")
        if not path.exists():
            path = path.with_suffix("") / "__init__.py"
        stub = _Stub(qualnames)
        tree = stub.visit(ast.parse(path.read_text(encoding="utf-8")))
        missing = qualnames - stub.done
        if missing:
            raise ValueError(f"{module} does not define {sorted(missing)}: the keys to take out")
        path.write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    return out
