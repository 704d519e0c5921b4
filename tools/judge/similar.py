"""Copies for a person to review: answers whose syntax trees are (nearly) the same as the
course's reference code or as another student's, as programming judges flag them.

An answer is read as a sequence of tokens from its syntax tree, with every name the answer
chooses (variables, arguments, its functions) renamed in order of first use and comments,
docstrings and layout gone, so that renaming and reformatting change nothing; attributes
(``np.outer``) and constants stay. Two answers are similar when the sets of their
:data:`K`-token runs, less the runs of the starter code every student was given, overlap by
at least :data:`THRESHOLD` (Jaccard). Answers with fewer than :data:`MIN_RUNS` runs of their
own are too short to tell a copy from the one way to write them, and are never flagged.
Nothing here changes a score: a person decides.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable

from tools.judge.cells import plain_source

K = 5
THRESHOLD = 0.9
MIN_RUNS = 25


def tokens(sources: Iterable[str]) -> list[str]:
    """The tokens of ``sources`` read as one answer (a source that does not parse adds none)."""
    names: dict[str, str] = {}
    out: list[str] = []

    def name(n: str) -> str:
        return names.setdefault(n, f"v{len(names)}")

    for source in sources:
        try:
            tree = ast.parse(plain_source(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
                body.pop(0)  # a docstring
        for node in ast.walk(tree):
            out.append(type(node).__name__)
            if isinstance(node, ast.Name):
                out.append(node.id if node.id in _GLOBAL else name(node.id))
            elif isinstance(node, ast.arg):
                out.append(name(node.arg))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(name(node.name))
            elif isinstance(node, ast.Attribute):
                out.append(node.attr)
            elif isinstance(node, ast.Constant):
                out.append(repr(node.value)[:40])
    return out


_GLOBAL = frozenset({"np", "numpy", "torch", "nn", "F", "math", "helpers", *dir(builtins)})  # kept as written


def runs(sources: Iterable[str], base: frozenset = frozenset()) -> frozenset:
    """The :data:`K`-token runs of ``sources``, less ``base`` (the starter code's)."""
    t = tokens(sources)
    return frozenset(tuple(t[i:i + K]) for i in range(len(t) - K + 1)) - base


def similarity(a: frozenset, b: frozenset) -> float:
    """Jaccard overlap of two sets of runs (0 when either is empty)."""
    return len(a & b) / len(a | b) if a and b else 0.0


def copies(answers: dict[str, list[str]], references: list[str], starter: list[str]) -> dict[str, list[str]]:
    """For each student of ``answers`` (their cells of one exercise), what their answer is
    similar to: ``"the course's reference code"`` and the other students, by id. Students with
    nothing similar are left out."""
    base = runs(starter)
    own = {who: runs(cells, base) for who, cells in answers.items()}
    own = {who: r for who, r in own.items() if len(r) >= MIN_RUNS}
    reference = [runs([source], base) for source in references]
    found: dict[str, list[str]] = {}
    for who, r in own.items():
        if any(similarity(r, ref) >= THRESHOLD for ref in reference):
            found.setdefault(who, []).append("the course's reference code")
    ids = sorted(own)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if similarity(own[a], own[b]) >= THRESHOLD:
                found.setdefault(a, []).append(b)
                found.setdefault(b, []).append(a)
    return found
