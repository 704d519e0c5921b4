"""The student edition's answer tables: the course's answer keys, replaced by the answers they gave.

Some functions of ``helpers`` answer an exercise (:data:`KEYS`): the course's backward pass
(``backprop_by_hand``, which chapter 2 asks a learner to write), its DeepNorm conversion
(chapter 5), and the references that the checkers compute their expected answers and usual
mistakes with (``chapter3._layer_norm``, ``chapter4._variant``, ...). The book keeps them, since
its lessons run them. The student edition's wheel does not: :func:`build` rewrites each key's
body in the wheel's copy of ``helpers`` into a look-up (:func:`tools.answer_lookup.answer`) in
a table of the calls that the student edition makes, and any other call raises
:class:`~tools.answer_lookup.NotInTable`. So a learner can get from the wheel what the notebooks
already show (a lesson's results, the checker's cases and their answers) and not the function.

The table is recorded (:func:`record`) from two sources:

* every checker of a function exercise, called once with a wrong answer: a checker builds its
  cases, their answers and its usual mistakes before it calls the learner's function. The
  student edition's "hidden" cases come from :data:`STUDENT_SEED` (the wheel's
  ``grading.chapter1._rng`` is rewritten to use it), so that they are in the table; in the
  student's own process they were never hidden (the class grader's are: :mod:`tools.judge`);
* the notebooks that call a key in their lessons (:func:`notebooks_to_record`), run from the
  top as the site runs them, with every key wrapped by a recorder.

``python -m tools.answer_tables`` records into ``_build/answer-tables`` (again only when the
notebooks, ``helpers``, the pins, this recorder or the look-up changed, :func:`fingerprint`);
``make student`` does so before it builds. :mod:`tools.answer_scan` checks the result by
behaviour.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import inspect
import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import numpy as np

from tools.answer_lookup import ARRAYS, TABLE, call_key, flatten, module_leaves
from tools.toc import ROOT, toc_notebooks

KEYS = (
    "helpers.measure.backprop:backprop_by_hand",
    "helpers.measure.backprop:backprop_by_autograd",
    "helpers.grading.chapter1:_residual_reference",
    "helpers.grading.chapter1:_error_rate_reference",
    "helpers.grading.chapter2:_two_layer_autograd",
    "helpers.grading.chapter2:_gradients",
    "helpers.grading.chapter3:_layer_norm",
    "helpers.grading.chapter4:_variant",
    "helpers.models.transformer:apply_deepnorm_",
    "helpers.models.transformer:deepnorm_constants",
    "helpers.models.deepnorm:scale_deepnorm_",
    "helpers.measure.paths:path_length_counts",
    "helpers.measure.paths:enumerate_path_lengths",
    "helpers.measure.gradients:per_layer_factor",
    "helpers.grading.chapter1:_clearly_best",
    "helpers.grading.chapter1:_means_and_margins",
)
"""The answer keys the student edition holds as tables (``module:function``)."""
STILL_IN_THE_WHEEL: dict[str, str] = {}
"""Functions of ``helpers`` that answer an exercise and are still computed in the student
edition (``module:function`` -> why), which the scan of the wheel allows: none. A table
answers only the inputs it recorded, up to :data:`~tools.answer_lookup.RTOL`, so a lesson
tool that an exercise asks for can be a table only if every processor computes the lesson's
inputs alike. Chapter 1, section 4's gradient profiles are computed in float64 for that
(:mod:`helpers.experiments.gradient_flow`), so ``per_layer_factor`` is a table. Sections 2 and
3 pick each depth's learning rate with ``best_setting`` from trained nets' errors, which
another processor changes (with :data:`OTHER_PROCESSOR`, section 2's differed in 13 of its 15
settings); so section 2's exercise asks whether a rate is *clearly* best, which no lesson
computes, rather than for ``best_setting``."""
OTHER_PROCESSOR = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPAT", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
"""Environment variables under which PyTorch and MKL compute as a processor without AVX2 does
(their portable kernels; an ARM laptop has other kernels again): random draws and sums differ
from the recording machine's in their last digits. The student edition's tests run the
lessons and checkers a learner runs under them, against a table recorded without them."""
STUDENT_SEED = 20_26_11_26
"""The seed of the student edition's "hidden" cases (module docstring)."""
OUT = ROOT / "_build" / "answer-tables"
LOOKUP = Path(__file__).with_name("answer_lookup.py")
TIMEOUT = 600  # seconds per cell
RECORDING_KERNELS = 2  # notebooks recorded side by side (each in its own kernel)


def _split(key: str) -> tuple[str, str]:
    module, _, name = key.partition(":")
    return module, name


class Recorder:
    """Wraps each key of :data:`KEYS` so that its calls and answers are written down."""

    def __init__(self):
        self.calls: dict[str, dict[str, list[dict]]] = {key: {} for key in KEYS}
        self.arrays: list[np.ndarray] = []

    def _store(self, array) -> str:
        self.arrays.append(np.asarray(array))
        return str(len(self.arrays) - 1)

    def _before(self, path: str, value: np.ndarray) -> list[str]:
        """A floating-point state entry's value before the call, kept so that the look-up can
        replay the change relative to a learner's argument (:func:`tools.answer_lookup.replayed`)."""
        floating = path.startswith("state:") and np.issubdtype(np.asarray(value).dtype, np.floating)
        return [self._store(value)] if floating else []

    def wrap(self, key: str, fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def recording(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            structure, floats = call_key(arguments)
            before = {p: [(path, np.array(_numpy(v), copy=True)) for path, v in module_leaves(m)]
                      for p, m in arguments.items() if is_module(m)}
            result = fn(*args, **kwargs)
            self._add(key, structure, floats, arguments, before, result)
            return result

        return recording

    def _add(self, key, structure, floats, arguments, before, result) -> None:
        from tools.answer_lookup import close

        entries = self.calls[key].setdefault(structure, [])
        if any(close(e["floats"], floats) for e in entries):
            return
        changes = {}
        for parameter, old in before.items():
            now = dict(module_leaves(arguments[parameter]))
            changed = [[path, self._store(_numpy(now[path])), *self._before(path, value)] for path, value in old
                       if not _same(value, _numpy(now[path]))]
            if changed:
                changes[parameter] = changed
        same = next((p for p, a in arguments.items() if a is result and result is not None), None)
        if same is not None:
            encoded, leaves = ["argument", same], []
        else:
            found: list = []
            encoded = flatten(result, found, exact_whole=False)
            leaves = [self._store(a) for a in found]
        entries.append({"floats": floats, "result": encoded, "leaves": leaves, "changes": changes})

    def start(self) -> Recorder:
        """Wrap every key wherever ``helpers`` holds it (its module, and each module that imported
        it by name), and draw the checkers' hidden cases from :data:`STUDENT_SEED`."""
        wrapped = {}
        for key in KEYS:
            module, name = _split(key)
            fn = getattr(importlib.import_module(module), name)
            wrapped[id(fn)] = self.wrap(key, fn)
        for chapter in range(1, 6):
            importlib.import_module(f"helpers.grading.chapter{chapter}")
        for module_name, module in list(sys.modules.items()):
            if module_name == "helpers" or module_name.startswith("helpers."):
                for attr, value in list(vars(module).items()):
                    if id(value) in wrapped:
                        setattr(module, attr, wrapped[id(value)])
                if "_rng" in vars(module) and module_name.startswith("helpers.grading.chapter"):
                    module._rng = student_rng
        return self

    def save(self, folder: Path) -> Path:
        """Write the table (:data:`~tools.answer_lookup.TABLE` and
        :data:`~tools.answer_lookup.ARRAYS`) into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / TABLE).write_text(json.dumps(self.calls, separators=(",", ":")), encoding="utf-8")
        np.savez_compressed(folder / ARRAYS, **{str(i): a for i, a in enumerate(self.arrays)})
        return folder


def student_rng() -> np.random.Generator:
    """The student edition's hidden cases: the same on every call (module docstring)."""
    return np.random.default_rng(STUDENT_SEED)


def is_module(value) -> bool:
    """Whether ``value`` is a PyTorch module (imported only when asked)."""
    import torch

    return isinstance(value, torch.nn.Module)


def _numpy(value):
    import torch

    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "USO" or b.dtype.kind in "USO":
        return a.shape == b.shape and bool(np.all(a == b))
    return np.array_equal(a, b, equal_nan=True)


def merge(parts: list[Path], out: Path) -> Path:
    """One table in ``out`` from the tables in ``parts`` (calls met twice are kept once)."""
    from tools.answer_lookup import close

    calls: dict[str, dict[str, list[dict]]] = {key: {} for key in KEYS}
    arrays: list[np.ndarray] = []
    for part in parts:
        table = json.loads((part / TABLE).read_text(encoding="utf-8"))
        with np.load(part / ARRAYS, allow_pickle=False) as data:
            for key, by_structure in table.items():
                for structure, entries in by_structure.items():
                    kept = calls.setdefault(key, {}).setdefault(structure, [])
                    for entry in entries:
                        if any(close(k["floats"], entry["floats"]) for k in kept):
                            continue

                        def moved(name: str) -> str:
                            arrays.append(data[name])
                            return str(len(arrays) - 1)

                        entry["leaves"] = [moved(n) for n in entry["leaves"]]
                        entry["changes"] = {p: [[path, *map(moved, names)] for path, *names in changes]
                                            for p, changes in entry["changes"].items()}
                        kept.append(entry)
    recorder = Recorder()
    recorder.calls, recorder.arrays = calls, arrays
    return recorder.save(out)


# ---- what to record

def function_checkers():
    """The checkers of function exercises: ``check_…(fn)`` with no other required argument
    (of :func:`tools.judge.keyfree.course_checkers`)."""
    from tools.judge.keyfree import course_checkers

    def required(fn) -> list:
        return [p for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    return [fn for fn in course_checkers() if len(required(fn)) == 1]


def record_checkers(folder: Path) -> Path:
    """The table of every function checker's cases (module docstring), in ``folder``."""
    recorder = Recorder().start()

    def wrong_answer(*args, **kwargs):
        return 0.0

    for checker in function_checkers():
        checker(wrong_answer)
    return recorder.save(folder)


def _names_a_key(tree: ast.AST, skip: set[str]) -> bool:
    names = {_split(k)[1] for k in KEYS if not _split(k)[0].startswith("helpers.grading")}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in skip:
            continue
        if isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr in names:
            return True
    return False


def _calls_a_key(source: str, skip: set[str]) -> bool:
    """Whether code outside the functions ``skip`` names a key of the lessons (not a checker's)."""
    tree = ast.parse(source)
    kept = [n for n in tree.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in skip)]
    return _names_a_key(ast.Module(kept, []), skip)


def helpers_files_calling_keys(root: Path = ROOT) -> set[str]:
    """The files of ``helpers`` (not its checkers) whose code calls a key outside the key itself."""
    keys = {_split(k)[1] for k in KEYS}
    found = set()
    for path in sorted((root / "helpers").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("helpers/grading/"):
            continue
        if _calls_a_key(path.read_text(encoding="utf-8"), keys):
            found.add(relative)
    return found


def notebooks_to_record(root: Path = ROOT) -> list[Path]:
    """The book's notebooks whose lessons call a key: in a code cell, or through a ``helpers``
    file that their last recorded run loaded (:mod:`tools.fingerprints`)."""
    from tools.fingerprints import read_record
    from tools.run_notebooks import CHECKER_CALL

    loaded = {name: set(entry["dependencies"]["files"]) for name, entry in read_record(root)["notebooks"].items()}
    calling = helpers_files_calling_keys(root)
    chosen = []
    for path in toc_notebooks(root):
        name = path.relative_to(root).as_posix()
        if name not in loaded:
            raise RuntimeError(f"{name} has no run on record (benchmarks/sweep.json): run `make sweep-changed`")
        nb = nbformat.read(path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and not CHECKER_CALL.search(c.source))
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        if loaded[name] & calling or _calls_a_key(code, set()):
            chosen.append(path)
    return chosen


def run_as_the_site_does(path: Path, *, first: str = "", last: str = "", env: dict | None = None):
    """The notebook at ``path`` run from the top as the site runs it (its folder, the site's
    mode and ``env``), with the code ``first`` before its cells and ``last`` after them; returns it."""
    from nbclient import NotebookClient

    from helpers.environment import mode_environment

    nb = nbformat.read(path, as_version=4)
    nb.cells = [*([nbformat.v4.new_code_cell(first)] if first else []), *nb.cells,
                *([nbformat.v4.new_code_cell(last)] if last else [])]
    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute(
        env={**mode_environment("site"), **(env or {})})
    return nb


def record_notebook(path: Path, folder: Path) -> Path:
    """Run the notebook at ``path`` as the site runs it, keys recorded; the table in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    run_as_the_site_does(path, first=(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                                      "import tools.answer_tables as _answer_tables\n"
                                      "_recorder = _answer_tables.Recorder().start()"),
                         last=f"_recorder.save({str(folder)!r})")
    return folder


def fingerprint(notebooks: list[Path], root: Path = ROOT) -> str:
    """What the table depends on: the notebooks chosen and their code, every file of ``helpers``,
    the pins a run depends on, the recorder and the look-up."""
    from tools.fingerprints import code_digest, run_pins, sha256

    parts = [f"{p.relative_to(root).as_posix()}:{code_digest(p)}" for p in notebooks]
    parts.append(f"pins:{sha256(run_pins(root))}")
    for path in sorted((root / "helpers").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            parts.append(f"{path.relative_to(root).as_posix()}:{sha256(path.read_bytes())}")
    for path in (Path(__file__), LOOKUP):
        parts.append(f"{path.name}:{sha256(path.read_bytes())}")
    return sha256("\n".join(parts))


def record(out: Path = OUT, root: Path = ROOT, *, force: bool = False) -> Path:
    """The student edition's table in ``out`` (module docstring); nothing is run again when
    what it depends on (:func:`fingerprint`) has not changed since the last recording."""
    notebooks = notebooks_to_record(root)
    digest = fingerprint(notebooks, root)
    stamp = out / "fingerprint.txt"
    if not force and stamp.exists() and stamp.read_text(encoding="utf-8").strip() == digest \
            and (out / TABLE).exists():
        return out
    parts = out / "parts"
    if parts.exists():
        shutil.rmtree(parts)
    folders = [record_checkers_in_subprocess(parts / "checkers")]
    with ThreadPoolExecutor(max_workers=RECORDING_KERNELS) as pool:  # the table is merged in a fixed order
        folders += list(pool.map(lambda path: record_notebook(path, parts / f"{path.parent.name}-{path.stem}"),
                                 notebooks))
    merge(folders, out)
    stamp.write_text(digest + "\n", encoding="utf-8")
    return out


def record_checkers_in_subprocess(folder: Path) -> Path:
    """:func:`record_checkers` in a fresh process (the recorder wraps ``helpers`` for good)."""
    import subprocess

    subprocess.run([sys.executable, "-m", "tools.answer_tables", "--checkers-only", str(folder)], cwd=ROOT,
                   check=True)
    return folder


# ---- the wheel's copy

LOOKUP_BODY = ('"""The course\'s answer, looked up (the student edition holds no answer key)."""\n'
               "return __import__(__name__.partition('.')[0] + '._answers', fromlist=['answer'])"
               ".answer({key!r}, locals())")


class _Lookup(ast.NodeTransformer):
    """Replace the bodies of the named top-level functions with a look-up of their answer."""

    def __init__(self, module: str, names: set[str]):
        self.module, self.names, self.done = module, names, set()

    def visit_Module(self, node: ast.Module):
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in self.names:
                key = f"{self.module}:{statement.name}"
                statement.body = ast.parse(LOOKUP_BODY.format(key=key)).body
                self.done.add(statement.name)
        return node


class _FixedSeed(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef):
        if node.name == "_rng":
            node.body = ast.parse(f'"""The student edition\'s hidden cases: the same on every call."""\n'
                                  f"return np.random.default_rng({STUDENT_SEED})").body
        return node


def build(target: Path, table: Path = OUT) -> Path:
    """Rewrite the copy of ``helpers`` at ``target`` (a folder named ``helpers``) as the student
    edition has it: every key a look-up in ``table``'s recording, with its lookup module
    (``_answers.py``) and data beside it, and the hidden cases from :data:`STUDENT_SEED`."""
    target, table = Path(target), Path(table)
    if not (table / TABLE).exists():
        raise FileNotFoundError(f"no answer table in {table}: run `python -m tools.answer_tables` first")
    by_module: dict[str, set[str]] = {}
    for key in KEYS:
        module, name = _split(key)
        by_module.setdefault(module, set()).add(name)
    for module, names in sorted(by_module.items()):
        path = target.joinpath(*module.split(".")[1:]).with_suffix(".py")
        rewrite = _Lookup(module, names)
        tree = rewrite.visit(ast.parse(path.read_text(encoding="utf-8")))
        if names - rewrite.done:
            raise ValueError(f"{module} does not define {sorted(names - rewrite.done)} at its top level")
        path.write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    seeded = target / "grading" / "chapter1.py"
    seeded.write_text(ast.unparse(_FixedSeed().visit(ast.parse(seeded.read_text(encoding="utf-8")))) + "\n",
                      encoding="utf-8")
    shutil.copyfile(LOOKUP, target / "_answers.py")
    for name in (TABLE, ARRAYS):
        shutil.copyfile(table / name, target / name)
    return target


def student_copy(out: Path, table: Path = OUT, root: Path = ROOT) -> Path:
    """``out/helpers``: a copy of ``root``'s ``helpers`` as the student edition's wheel has it
    (:func:`build`); returns ``out``, the folder to put first on ``sys.path``."""
    out = Path(out)
    if (out / "helpers").exists():
        shutil.rmtree(out / "helpers")
    shutil.copytree(Path(root) / "helpers", out / "helpers", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    build(out / "helpers", table)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="record again even if nothing changed")
    parser.add_argument("--checkers-only", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.checkers_only:
        record_checkers(Path(args.checkers_only))
        return 0
    out = record(force=args.force)
    size = sum(p.stat().st_size for p in (out / TABLE, out / ARRAYS))
    print(f"answer table: {out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
