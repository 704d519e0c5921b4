"""A changed helper re-sweeps and re-executes the notebooks that loaded it, and only those.

These tests build a small copy of the book in a temporary folder: the real ``helpers``
package and ``tools``, the real pins, and two notebooks, one that loads
``helpers/measure/paths.py`` and one that loads ``helpers/measure/tuning.py``. They run the
real tools on it in a subprocess (so that its kernels and sweep runs import the copy), then
edit a real file of the copy and run them again. Nothing is monkeypatched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.environment import MODES
from tools import fingerprints
from tools.toc import ROOT

pytestmark = pytest.mark.slow
PATHS_NB = "book/a/uses_paths.ipynb"
TUNING_NB = "book/b/uses_tuning.ipynb"
CELLS = {PATHS_NB: "import os\nimport helpers\nfrom helpers.measure import path_length_counts\n"
                   "assert len(path_length_counts(3)) == 4\n"
                   "helpers.glue(by_seed=int(os.environ['COURSE_SEED']) + 0.5, other=1)",
         TUNING_NB: "import helpers\nfrom helpers.measure import best_setting\n"
                    "assert best_setting({1: [0.5], 2: [0.2]}) == 2"}


LEDGER = {"id": "9.1", "kind": "claim", "number": {"key": "by_seed"}}  # the number a ledger row shows


def _notebook(path: Path, source: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {path.stem}"),
                                         nbformat.v4.new_code_cell(source, metadata={"ledger": LEDGER})])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture()
def book(tmp_path) -> Path:
    """A two-notebook book with copies of the real helpers, tools and pins."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "helpers", tmp_path / "helpers", ignore=ignore)
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=ignore)
    shutil.copy(ROOT / "requirements.txt", tmp_path / "requirements.txt")
    (tmp_path / "intro.md").write_text("# A small book\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                       "  - file: book/a/uses_paths\n  - file: book/b/uses_tuning\n")
    for name, source in CELLS.items():
        _notebook(tmp_path / name, source)
    return tmp_path


def _tool(book: Path, *args: str) -> str:
    """Run ``tools/<args>`` in the small book, importing its own copy of helpers; return its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    env["PYTHONPATH"] = str(book)
    proc = subprocess.run([sys.executable, *args], cwd=book, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _edit(book: Path, name: str) -> None:
    """An edit of ``name``'s code (a new module-level name), which changes no result."""
    path = book / name
    path.write_text(path.read_text() + "\n_EDITED = True\n")


def _edit_prose(book: Path, name: str) -> None:
    """An edit of ``name``'s docstrings and comments alone."""
    path = book / name
    text = path.read_text()
    start = text.index('"""') + 3
    path.write_text(text[:start] + "Reworded. " + text[start:] + "\n# a comment added\n")


def test_a_changed_helper_re_sweeps_only_the_notebooks_that_loaded_it(book):
    out = _tool(book, "-m", "tools.run_notebooks", "--seeds", "1-2", "--changed")
    assert f"to sweep: {PATHS_NB} (not in the record)" in out and f"to sweep: {TUNING_NB} (not in the record)" in out
    record = json.loads((book / fingerprints.RECORD).read_text())["notebooks"]
    assert set(record) == {PATHS_NB, TUNING_NB}
    # The run itself said what it loaded: each notebook its own module, not the other's.
    assert "helpers/measure/paths.py" in record[PATHS_NB]["dependencies"]["files"]
    assert "helpers/measure/tuning.py" not in record[PATHS_NB]["dependencies"]["files"]
    assert "helpers/measure/tuning.py" in record[TUNING_NB]["dependencies"]["files"]
    assert record[PATHS_NB]["seeds"] == [1, 2]
    # Each seed's run noted the number its ledger row shows (and only that one), for the ledger's spread.
    assert record[PATHS_NB]["numbers"] == {"1": {"by_seed": 1.5}, "2": {"by_seed": 2.5}}
    assert record[TUNING_NB]["numbers"] == {"1": {}, "2": {}}

    out = _tool(book, "-m", "tools.run_notebooks", "--seeds", "3", PATHS_NB)  # more seeds: the numbers add up
    numbers = json.loads((book / fingerprints.RECORD).read_text())["notebooks"][PATHS_NB]["numbers"]
    assert numbers == {"1": {"by_seed": 1.5}, "2": {"by_seed": 2.5}, "3": {"by_seed": 3.5}}

    out = _tool(book, "-m", "tools.run_notebooks", "--seeds", "1-2", "--changed")
    assert "nothing to sweep" in out and out.count("taken from") == 2

    _edit(book, "helpers/measure/paths.py")
    out = _tool(book, "-m", "tools.run_notebooks", "--seeds", "1-2", "--changed")
    assert f"to sweep: {PATHS_NB} (helpers/measure/paths.py changed)" in out
    assert f"taken from {fingerprints.RECORD}: {TUNING_NB}" in out
    assert f"{PATHS_NB} seed 1" in out and f"{TUNING_NB} seed 1" not in out
    # `make sweep` with no arguments still runs everything (and records it).
    out = _tool(book, "-m", "tools.run_notebooks", "--seeds", "1")
    assert f"{PATHS_NB} seed 1" in out and f"{TUNING_NB} seed 1" in out

    # A renamed notebook leaves no entry under its old name once the sweep records again.
    (book / TUNING_NB).rename(book / TUNING_NB.replace(".ipynb", "_renamed.ipynb"))
    _tool(book, "-m", "tools.run_notebooks", "--seeds", "1", PATHS_NB)
    assert set(json.loads((book / fingerprints.RECORD).read_text())["notebooks"]) == {PATHS_NB}


def test_a_stale_or_hand_edited_record_entry_is_swept_again(book):
    _tool(book, "-m", "tools.run_notebooks", "--seeds", "1-2")
    path = book / fingerprints.RECORD
    pristine = json.loads(path.read_text())
    plan = fingerprints.plan_sweep([book / PATHS_NB, book / TUNING_NB], MODES["claims-only"], (1, 2), book)
    assert plan.run == {} and set(plan.taken) == {PATHS_NB, TUNING_NB}

    def plan_after(edit) -> dict:
        record = json.loads(json.dumps(pristine))
        edit(record["notebooks"])
        path.write_text(json.dumps(record))
        return fingerprints.plan_sweep([book / PATHS_NB, book / TUNING_NB], MODES["claims-only"], (1, 2, 3), book).run

    # A seed written in by hand: the entry's digest no longer matches.
    def add_seed(entries):
        entries[TUNING_NB]["seeds"].append(3)
    assert "edited by hand" in plan_after(add_seed)[TUNING_NB]

    # A file dropped and the digest recomputed: the modules listed still import it.
    def drop_file(entries):
        entry = entries[PATHS_NB]
        del entry["dependencies"]["files"]["helpers/_checks.py"]
        entry["digest"] = fingerprints.entry_digest(entry)
    assert "helpers/measure/paths.py imports helpers/_checks.py" in plan_after(drop_file)[PATHS_NB]

    # A stale entry: the notebook's code changed since its seeds held.
    path.write_text(json.dumps(pristine))
    _notebook(book / TUNING_NB, CELLS[TUNING_NB] + "\nassert True")
    plan = fingerprints.plan_sweep([book / PATHS_NB, book / TUNING_NB], MODES["claims-only"], (1, 2), book)
    assert plan.run == {TUNING_NB: "its code cells changed"} and list(plan.taken) == [PATHS_NB]
    # And seeds beyond those recorded are swept.
    plan = fingerprints.plan_sweep([book / PATHS_NB], MODES["claims-only"], (1, 2, 3), book)
    assert plan.run == {PATHS_NB: "seeds [3] not swept"}


def test_a_changed_helper_re_executes_only_the_notebooks_that_loaded_it(book):
    out = _tool(book, "-m", "tools.execute")
    assert f"executed {PATHS_NB}" in out and f"executed {TUNING_NB}" in out and "2 notebooks" in out
    assert "] executed" not in _tool(book, "-m", "tools.execute"), "no notebook runs again"  # all cached

    _edit(book, "helpers/measure/tuning.py")
    out = _tool(book, "-m", "tools.execute")
    assert f"re-executing {TUNING_NB}: helpers/measure/tuning.py changed" in out
    assert f"executed {TUNING_NB}" in out and f"executed {PATHS_NB}" not in out

    (book / "helpers" / "digits.npz").write_bytes(b"not the data")  # package data no notebook read
    assert "] executed" not in _tool(book, "-m", "tools.execute"), "no notebook runs again"


def test_a_doc_edit_keeps_the_sweep_record_and_a_code_edit_does_not(book):
    """The record fingerprints code, not prose: rewording a docstring or a comment of a helper,
    or a comment in a notebook's code cell, re-sweeps nothing; a change of code re-sweeps."""
    _tool(book, "-m", "tools.run_notebooks", "--seeds", "1", "--changed")
    mode, notebooks = MODES["claims-only"], [book / PATHS_NB, book / TUNING_NB]
    assert fingerprints.plan_sweep(notebooks, mode, (1,), book).run == {}
    _edit_prose(book, "helpers/measure/paths.py")
    _notebook(book / TUNING_NB, CELLS[TUNING_NB] + "  # a comment")
    assert fingerprints.plan_sweep(notebooks, mode, (1,), book).run == {}
    _edit(book, "helpers/measure/paths.py")
    assert fingerprints.plan_sweep(notebooks, mode, (1,), book).run == {PATHS_NB: "helpers/measure/paths.py changed"}
    assert fingerprints.code_fingerprint("x = 1  # one") == fingerprints.code_fingerprint('"""Doc."""\nx = (1)')
    assert fingerprints.code_fingerprint("x = 1") != fingerprints.code_fingerprint("x = 2")


def test_the_committed_sweep_record_is_intact():
    """Every entry of benchmarks/sweep.json was written by the sweep: its digest matches its
    content and it lists every module that its modules import. (Whether an entry is current is
    for ``make sweep-changed`` to decide: a stale entry is swept again, never trusted.)"""
    record = fingerprints.read_record(ROOT)["notebooks"]
    problems = {name: fingerprints.integrity_problems(name, entry) for name, entry in record.items()}
    assert not any(problems.values()), problems
    assert all(entry["seeds"] for entry in record.values())


def test_a_run_reports_the_package_data_it_read():
    code = ("import helpers.provenance as p, helpers.data as d\n"
            "assert 'helpers/digits.npz' not in p.loaded_files()\n"
            "d.digits()\n"
            "assert 'helpers/digits.npz' in p.loaded_files() and 'helpers/data.py' in p.loaded_files()")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_package_file_names_what_is_wrong():
    from helpers.provenance import package_file

    with pytest.raises(FileNotFoundError, match="no data file 'nothing.npz'"):
        package_file("nothing.npz")
    with pytest.raises(ValueError, match="name must be a file name inside the helpers package"):
        package_file("../requirements.txt")


def test_the_sweep_starts_the_runs_the_record_timed_longest(tmp_path):
    from tools.run_notebooks import longest_first

    record = {"notebooks": {"book/short.ipynb": {"claims_only_s": {"1": 2.0, "2": 4.0}},
                            "book/long.ipynb": {"claims_only_s": {"1": 40.0}}}}
    (tmp_path / fingerprints.RECORD).parent.mkdir()
    (tmp_path / fingerprints.RECORD).write_text(json.dumps(record))
    names = ("short.ipynb", "new.ipynb", "long.ipynb")
    jobs = [(tmp_path / "book" / name, seed) for seed in (1, 2) for name in names]
    ordered = [(path.name, seed) for path, seed in longest_first(jobs, tmp_path)]
    assert ordered == [("long.ipynb", 1), ("long.ipynb", 2), ("short.ipynb", 1), ("short.ipynb", 2),
                       ("new.ipynb", 1), ("new.ipynb", 2)]
    assert sorted(ordered) == sorted((p.name, s) for p, s in jobs)  # the same runs, reordered


def test_a_pin_below_the_marker_leaves_recorded_runs_valid_and_one_above_does_not(book):
    """Tools that work around the notebooks (nbval, pytest-xdist) are pinned below
    fingerprints.AROUND_RUNS: adding or bumping one does not make a run stale; a pin the runs
    can import does."""
    _tool(book, "-m", "tools.run_notebooks", "--seeds", "1")
    notebooks = [book / PATHS_NB, book / TUNING_NB]
    pins = book / fingerprints.PINS
    text = pins.read_text()
    assert fingerprints.AROUND_RUNS in text
    pins.write_text(text + "some-test-plugin==1.0\n")
    assert fingerprints.plan_sweep(notebooks, MODES["claims-only"], (1,), book).run == {}
    before, _, after = text.partition(fingerprints.AROUND_RUNS)
    pins.write_text(before.replace("numpy==", "numpy==0.0.0 # ") + fingerprints.AROUND_RUNS + after)
    stale = fingerprints.plan_sweep(notebooks, MODES["claims-only"], (1,), book).run
    assert set(stale) == {PATHS_NB, TUNING_NB} and all("pins" in why for why in stale.values())


def test_no_run_imports_a_package_pinned_below_the_marker():
    """What is pinned below the marker must stay out of the notebooks' runs: import every module
    of ``helpers`` (as the notebooks' runs do between them) and look for those packages."""
    _, _, below = (ROOT / fingerprints.PINS).read_text().partition(fingerprints.AROUND_RUNS)
    names = [line.split("==")[0].strip().lower().replace("-", "_") for line in below.splitlines()
             if "==" in line and not line.lstrip().startswith("#")]
    assert "nbval" in names and "pytest_xdist" in names
    modules = {"pytest_xdist": "xdist", "beautifulsoup4": "bs4"}  # distributions whose import names differ
    probe = ("import importlib, pkgutil, sys, helpers\n"
             "for m in pkgutil.walk_packages(helpers.__path__, 'helpers.'):\n"
             "    importlib.import_module(m.name)\n"
             "print(' '.join(sorted({n.split('.')[0] for n in sys.modules})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=True).stdout.split()
    imported = [n for n in names if modules.get(n, n) in loaded]
    assert not imported, f"pinned below the marker but imported by helpers: {imported}"


def test_a_notebook_or_helper_edited_during_a_sweep_is_not_recorded(book):
    """The sweep takes the tree's state before it runs; a run whose notebook or loaded helpers
    file changed meanwhile held for the old version, so it must not be recorded for the new."""
    mode = MODES["claims-only"]
    notebook = book / PATHS_NB
    before = fingerprints.tree_state([notebook], mode, book)
    loaded = ["helpers/measure/paths.py"]
    assert fingerprints.edited_since(before, notebook, loaded, mode, book) == []
    _edit(book, "helpers/measure/paths.py")
    assert fingerprints.edited_since(before, notebook, loaded, mode, book) == ["helpers/measure/paths.py changed"]
    _edit(book, "helpers/measure/paths.py")  # still not what the run loaded
    _notebook(notebook, CELLS[PATHS_NB] + "\nassert True")
    assert "its code cells changed" in fingerprints.edited_since(before, notebook, loaded, mode, book)
    assert fingerprints.edited_since(before, book / TUNING_NB, [], mode, book) == ["its code cells changed"]


def test_executing_the_book_prints_a_line_per_notebook_and_keeps_the_kernels_chatter_in_a_log(book):
    """``make site``'s first step on a newcomer's terminal: one line per notebook and a summary;
    the kernels' own warnings (running over TCP, an interrupt at shutdown) go to a log file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    env["PYTHONPATH"] = str(book)
    proc = subprocess.run([sys.executable, "-m", "tools.execute"], cwd=book, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = (proc.stdout + proc.stderr).splitlines()
    assert [line for line in lines if "executed book/" in line] and len(lines) == 3, lines
    assert not [line for line in lines if "WARNING" in line or "ERROR" in line], lines
    assert "kernels.log" in lines[-1] and (book / "_build" / "kernels.log").is_file()
