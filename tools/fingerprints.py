"""What a notebook's results depend on, file by file, and the record of the seeds that held.

A run of a notebook depends on its code cells, on the ``helpers`` modules and package data
it loaded (the run reports them itself: :func:`helpers.provenance.loaded_files`), on the
pinned requirements, on the Python version and on the settings it ran with (the site's or
the sweep's claims-only environment). Nothing else of the tree can change its numbers, so:

* the site's execution cache (``tools/execute.py``) keeps a notebook's run while none of
  these changed, and runs it again when one did, whatever else of ``helpers`` changed;
* the seed sweep's record, ``benchmarks/sweep.json``, holds for every notebook the
  :class:`Dependencies` of its claims-only runs and the seeds whose claims held.
  ``make sweep-changed`` (CI) re-sweeps every notebook whose entry is missing, stale or not
  intact, and takes the others from the record, saying which and why.

Only the sweep (``tools/run_notebooks.py --seeds``) writes the record; an entry holds a
digest of each file, and a digest of the whole entry, so that an entry edited by hand (a
seed added, a file dropped) no longer matches and is swept again.

The record's digest of a Python file, and of a notebook's code cells, is of their code alone
(:func:`code_fingerprint`: the syntax tree less docstrings and comments), so that a doc
edit, a renamed comment or a reflowed line costs no re-sweep. The site's cache keeps the
digest of the bytes, since a page may show a helper's source (``helpers.source``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.toc import ROOT

RECORD = Path("benchmarks") / "sweep.json"  # relative to the book's root
SWEEP_SEEDS = tuple(range(1, 10))
PINS = "requirements.txt"
# The pins below this line in PINS are of tools that work around the notebooks (the test runner's
# plugins, the learner's JupyterLab extensions) and are never imported by a notebook's run, so a
# change to them does not make a recorded run stale (a test checks that no run imports them).
AROUND_RUNS = "# ---- Below: never imported by a notebook's run"


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def code_fingerprint(source: str) -> str:
    """SHA-256 of Python ``source``'s code: its syntax tree without docstrings, comments or
    layout; of the text itself where it does not parse (a notebook cell with a magic)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return sha256(source)
    return sha256(ast.dump(_without_docstrings(tree), annotate_fields=False, include_attributes=False))


def code_digest(notebook: Path, *, code_only: bool = False) -> str:
    """SHA-256 of a notebook's code cells, in order (its prose does not change its numbers);
    ``code_only``: of each cell's :func:`code_fingerprint` (nor do its comments)."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    return sha256(json.dumps([code_fingerprint(c) for c in cells] if code_only else cells))


def file_digests(files, root: Path = ROOT, *, code_only: bool = False) -> dict[str, str]:
    """``{path: SHA-256 of its bytes}`` for each path relative to ``root`` ("missing" if gone);
    ``code_only``: of a Python file's :func:`code_fingerprint` instead."""
    out = {}
    for name in sorted(set(files)):
        path = Path(root) / name
        if not path.is_file():
            out[name] = "missing"
        elif code_only and path.suffix == ".py":
            out[name] = code_fingerprint(path.read_text(encoding="utf-8"))
        else:
            out[name] = sha256(path.read_bytes())
    return out


def settings(mode: dict, root: Path = ROOT) -> dict[str, str]:
    """What a run depends on besides its code and files: the pins, the Python version and the
    environment the run was given (``mode``)."""
    return {"pins": sha256(run_pins(root)), "python": platform.python_version(),
            "mode": json.dumps(sorted(mode.items()))}


def run_pins(root: Path = ROOT) -> str:
    """The text of PINS above the line :data:`AROUND_RUNS` (all of it when there is none): the
    pins a notebook's run can depend on."""
    text = (Path(root) / PINS).read_text(encoding="utf-8")
    at = text.find("\n" + AROUND_RUNS)
    return text if at < 0 else text[: at + 1]


@dataclass
class Dependencies:
    """Everything one notebook's run depends on, each part by its digest."""

    code: str
    files: dict[str, str]
    settings: dict[str, str]

    @classmethod
    def of_run(cls, notebook: Path, files, mode: dict, root: Path = ROOT, *, code_only: bool = False) -> Dependencies:
        """The dependencies of a run of ``notebook`` that loaded ``files`` (relative to ``root``);
        ``code_only``: by their code alone, as the sweep's record keeps them."""
        return cls(code_digest(notebook, code_only=code_only), file_digests(files, root, code_only=code_only),
                   settings(mode, root))

    def now(self, notebook: Path, mode: dict, root: Path = ROOT, *, code_only: bool = False) -> Dependencies:
        """The same files' digests as the tree holds them now."""
        return Dependencies.of_run(notebook, self.files, mode, root, code_only=code_only)

    def changes(self, other: Dependencies) -> list[str]:
        """What differs from ``other`` (the tree now), in words; empty when nothing does."""
        out = ["its code cells changed"] if self.code != other.code else []
        out += [f"{name} changed" for name, digest in self.files.items() if other.files.get(name) != digest]
        out += [f"the {key} changed" for key, value in self.settings.items() if other.settings.get(key) != value]
        return out

    def as_dict(self) -> dict:
        return {"code": self.code, "files": dict(sorted(self.files.items())), "settings": self.settings}


def entry_digest(entry: dict) -> str:
    """SHA-256 of a record entry's content (everything but the digest itself)."""
    return sha256(json.dumps({k: v for k, v in entry.items() if k != "digest"}, sort_keys=True))


def static_imports(module: Path, root: Path = ROOT) -> set[str]:
    """The ``helpers`` source files that ``module`` imports at its top level: any run that
    loaded ``module`` loaded them too, so a record that lists one without the other was edited."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    package = module.relative_to(root).parent.parts
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "helpers":
                parts = node.module.split(".")
            else:
                continue
            names.append(parts)
            names += [parts + [alias.name] for alias in node.names]  # `from . import plots`
        elif isinstance(node, ast.Import):
            names += [a.name.split(".") for a in node.names if a.name.split(".")[0] == "helpers"]
    found = set()
    for parts in names:
        for i in range(1, len(parts) + 1):  # importing a.b.c imports a and a.b first
            for candidate in (Path(root, *parts[:i]).with_suffix(".py"), Path(root, *parts[:i], "__init__.py")):
                if candidate.is_file():
                    found.add(candidate.relative_to(root).as_posix())
    return found


def integrity_problems(name: str, entry: dict, root: Path = ROOT) -> list[str]:
    """Why a record entry cannot be trusted as written by the sweep; empty when it can."""
    problems = []
    if entry.get("digest") != entry_digest(entry):
        problems.append("its digest does not match its content (edited by hand?)")
    files = set(entry.get("dependencies", {}).get("files", {}))
    for module in sorted(f for f in files if f.endswith(".py") and (Path(root) / f).is_file()):
        missing = static_imports(Path(root) / module, root) - files
        if missing:
            problems.append(f"{module} imports {', '.join(sorted(missing))}, which the entry does not list")
    if not (Path(root) / name).is_file():
        problems.append("the notebook no longer exists")
    return problems


def read_record(root: Path = ROOT) -> dict:
    path = Path(root) / RECORD
    if not path.is_file():
        return {"notebooks": {}}
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class SweepPlan:
    """Which notebooks the sweep must run, and why; which it may take from the record."""

    run: dict[str, str] = field(default_factory=dict)  # notebook -> why
    taken: dict[str, str] = field(default_factory=dict)  # notebook -> what the record says

    def report(self) -> str:
        lines = [f"taken from {RECORD}: {name} ({why})" for name, why in self.taken.items()]
        lines += [f"to sweep: {name} ({why})" for name, why in self.run.items()]
        return "\n".join(lines)


def plan_sweep(notebooks, mode: dict, seeds=SWEEP_SEEDS, root: Path = ROOT) -> SweepPlan:
    """For each notebook: take it from the record if its entry is intact, every file it lists is
    unchanged and its seeds cover ``seeds``; else say why it must be swept."""
    record = read_record(root).get("notebooks", {})
    plan = SweepPlan()
    for path in notebooks:
        name = Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        entry = record.get(name)
        if entry is None:
            plan.run[name] = "not in the record"
            continue
        problems = integrity_problems(name, entry, root)
        if problems:
            plan.run[name] = "; ".join(problems)
            continue
        then = Dependencies(**entry["dependencies"])
        changes = then.changes(then.now(Path(root) / name, mode, root, code_only=True))
        missing = sorted(set(seeds) - set(entry["seeds"]))
        if changes:
            plan.run[name] = "; ".join(changes)
        elif missing:
            plan.run[name] = f"seeds {missing} not swept"
        else:
            plan.taken[name] = (f"unchanged since seeds {entry['seeds'][0]}-{entry['seeds'][-1]} held on "
                                f"{entry['date']}, {len(then.files)} helpers files")
    return plan


def tree_state(notebooks, mode: dict, root: Path = ROOT) -> dict:
    """What runs of ``notebooks`` could depend on, as the tree holds it now: each notebook's code
    digest, every file of ``helpers`` by its digest, and the settings; taken before a sweep."""
    helpers = [p.relative_to(root).as_posix() for p in sorted((Path(root) / "helpers").rglob("*")) if p.is_file()
               and "__pycache__" not in p.parts]
    return {"code": {Path(n).resolve().relative_to(Path(root).resolve()).as_posix():
                     code_digest(Path(n), code_only=True) for n in notebooks},
            "files": file_digests(helpers, root, code_only=True), "settings": settings(mode, root)}


def edited_since(state: dict, notebook: Path, files, mode: dict, root: Path = ROOT) -> list[str]:
    """What of a run's dependencies (``notebook``, the ``files`` it loaded) differs between
    ``state`` (:func:`tree_state`, taken before the run) and the tree now, in words."""
    name = Path(notebook).resolve().relative_to(Path(root).resolve()).as_posix()
    then = Dependencies(state["code"].get(name, "missing"), {f: state["files"].get(f, "missing") for f in files},
                        state["settings"])
    return then.changes(Dependencies.of_run(Path(root) / name, files, mode, root, code_only=True))


def update_record(results: dict, mode: dict, *, today: str, machine: dict, root: Path = ROOT) -> Path:
    """Write the seeds that held into the record: ``results`` is ``{notebook path: {"seeds": [...],
    "files": [...], "seconds": {seed: s}, "numbers": {seed: {name: value}}}}`` for notebooks whose
    every swept seed held (``numbers``: what each seed's run glued for its ledger entries, which
    the claims ledger shows as a spread). An entry whose dependencies are unchanged gains the new
    seeds and their numbers; any other is replaced. Entries of notebooks that no longer exist are
    dropped."""
    path = Path(root) / RECORD
    record = read_record(root)
    # a notebook that was renamed or removed leaves no entry behind
    entries = {name: entry for name, entry in record.get("notebooks", {}).items() if (Path(root) / name).exists()}
    for notebook, result in results.items():
        name = Path(notebook).resolve().relative_to(Path(root).resolve()).as_posix()
        deps = Dependencies.of_run(Path(root) / name, result["files"], mode, root, code_only=True).as_dict()
        old = entries.get(name)
        seeds = set(result["seeds"])
        numbers = {str(k): v for k, v in result.get("numbers", {}).items()}
        if old and old.get("dependencies") == deps and not integrity_problems(name, old, root):
            seeds |= set(old["seeds"])
            numbers = {**old.get("numbers", {}), **numbers}
        entry = {"dependencies": deps, "seeds": sorted(seeds), "date": today, "machine": machine,
                 "claims_only_s": {str(k): v for k, v in sorted(result["seconds"].items())},
                 "numbers": dict(sorted(numbers.items(), key=lambda item: int(item[0])))}
        entry["digest"] = entry_digest(entry)
        entries[name] = entry
    record["notebooks"] = dict(sorted(entries.items()))
    record["about"] = ("Written by the seed sweep only (tools/run_notebooks.py --seeds): for each notebook, what "
                       "its claims-only runs depended on and the seeds whose claims held. make sweep-changed "
                       "re-sweeps a notebook whose entry is missing, stale or edited.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path
