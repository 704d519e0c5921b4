"""Reading a notebook's cells for the judge: what a student's cells define, what of the
book's cells a sandbox needs, and where each exercise's cells lie in a hand-in."""

from __future__ import annotations

import ast
import operator
import re

import nbformat

MODULES = frozenset({"helpers", "np", "numpy", "torch", "nn", "F", "plt", "math", "random", "matplotlib"})
REASONING_PROMPT = "**Your reasoning** (a line or two, before you see any measurement):"


def cell_name(label: str, k: int) -> str:
    """The file name a student's k-th cell of exercise ``label`` runs under (here and in the sandbox)."""
    return f"<cell {label}.{k}>"


def defined_names(source: str) -> list[str]:
    """The top-level names a cell defines: functions, classes and assigned variables."""
    try:
        tree = ast.parse(plain_source(source))
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


def plain_source(source: str) -> str:
    return "\n".join("" if re.match(r"^\s*[%!]", line) else line for line in source.splitlines())


def setup_source(source: str) -> str:
    """What a book's cell gives a student's sandbox: its imports, definitions and constants
    (``SEED = 0``), not its experiments, so that a student's function finds the names the
    notebook gave it; ``""`` when there is none."""
    try:
        body = ast.parse(plain_source(source)).body
    except SyntaxError:
        return ""

    def constant(node) -> bool:
        return all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.USub, ast.Load))
                   for n in ast.walk(node))

    kept = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))
            or (isinstance(node, ast.Assign) and constant(node.value))]
    return ast.unparse(kept) if kept else ""


def exercise_bounds(nb, label: str) -> tuple[int, int] | None:
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


def exercise_cells(nb, label: str) -> list[str] | None:
    """A handed-in notebook's cells of exercise ``label``: its code cells that nbgrader did not
    lock, between the bounds of :func:`exercise_bounds`; ``None`` when its end cell is missing."""
    bounds = exercise_bounds(nb, label)
    if bounds is None:
        return None
    return [c.source for c in nb.cells[bounds[0] + 1:bounds[1]] if c.cell_type == "code"
            and not c.get("metadata", {}).get("nbgrader", {}).get("locked")]


def read_hand_in(path, what: str):
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
    bounds = exercise_bounds(nb, label)
    if bounds is None:
        return ""
    text = " ".join(c.source.replace(REASONING_PROMPT, "").strip() for c in nb.cells[bounds[0] + 1:bounds[1]]
                    if c.cell_type == "markdown" and c.source.startswith(REASONING_PROMPT))
    return " ".join(text.split())[:1000]


def reads_and_writes(source: str) -> tuple[set[str], set[str]]:
    """The names a cell reads and those it binds or may change, over-approximated: every
    name it loads; every name it assigns, imports or defines at its top level, and every
    name whose item or attribute it sets or whose method it calls (``runs.append(…)``; not
    the course's modules, :data:`MODULES`, whose functions return results rather than
    change the module). A cell that does not parse reads and writes everything (``{"*"}``)."""
    try:
        tree = ast.parse(plain_source(source))
    except SyntaxError:
        return {"*"}, {"*"}
    reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def root(node):
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node.id if isinstance(node, ast.Name) else None

    writes = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            writes.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            writes |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.add(root(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and root(node.func) not in MODULES:
            writes.add(root(node.func))
    return reads, writes - {None}


def cells_needed(sources: list[str | None], targets: list[int]) -> set[int]:
    """The code cells (indices into ``sources``, ``None`` for a markdown cell) that the cells
    ``targets`` depend on, through the names they read (:func:`reads_and_writes`), with the
    targets themselves and every cell that calls a function named ``seed`` (which sets a
    global state no name shows), with what those depend on."""
    facts = [None if s is None else reads_and_writes(s) for s in sources]
    seeding = {i for i, s in enumerate(sources) if s is not None and re.search(r"\bseed\(", s)}
    needed = set(targets) | seeding
    for target in sorted(set(targets) | seeding):
        names = set(facts[target][0])
        for i in range(target - 1, -1, -1):
            if facts[i] is None:
                continue
            reads, writes = facts[i]
            if "*" in writes or writes & names or "*" in names:
                needed.add(i)
                names |= reads
    return needed


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.Pow: operator.pow}


def _written(node: ast.AST):
    """The value of an expression made only of numbers, strings, ``None``, dicts, lists and
    tuples of them, and arithmetic on numbers; ``ValueError`` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, type(None))):
        return node.value
    if isinstance(node, ast.Dict):
        return {_written(k): _written(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_written(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _written(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _written(node.left), _written(node.right)
        if all(isinstance(v, (int, float)) for v in (left, right)) and not (
                isinstance(node.op, ast.Pow) and abs(right) > 1000):
            try:
                return _ARITHMETIC[type(node.op)](left, right)
            except (ArithmeticError, ValueError):
                pass
    raise ValueError(ast.unparse(node)[:80])


def written_predictions(source: str) -> dict:
    """The names a prediction cell of the first hand-in sets, and their values, when it only
    writes them down: ``name = value``, the value numbers (arithmetic on numbers allowed),
    strings, ``None`` and dicts or lists of them. A prediction is made before anything is
    measured, so a cell that calls, imports or reads a name is refused with ``ValueError``
    saying what it does (nothing of it runs)."""
    try:
        tree = ast.parse(plain_source(source))
    except SyntaxError as err:
        raise ValueError(f"the cell does not parse ({err.msg}, line {err.lineno})") from None
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else None
        if targets is None or not all(isinstance(t, ast.Name) for t in targets):
            raise ValueError(f"line {node.lineno} does more than write a prediction down: "
                             f"{ast.unparse(node).splitlines()[0][:80]}")
        try:
            value = _written(node.value)
        except ValueError as err:
            raise ValueError(f"line {node.lineno} computes its prediction ({err}); write the number down") from None
        found.update({t.id: value for t in targets})
    return found

