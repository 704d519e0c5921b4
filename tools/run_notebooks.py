"""Execute notebooks in fresh kernels (no cache): time them, or check their claims for many seeds.

    python -m tools.run_notebooks                      # seconds per notebook, as a learner runs it
    python -m tools.run_notebooks --seeds 1-9          # the seed sweep: claims only, every notebook
    python -m tools.run_notebooks --seeds 1-9 --chapter 3
    python -m tools.run_notebooks --seeds 1-9 --changed  # only what changed since benchmarks/sweep.json

The timing runs each notebook as a learner's "Run All" does (progress bars on, runs side by
side on every core); it prints a table against the budget of 60 s a notebook. With
``--seeds`` only the claims are checked: every (notebook, seed) pair runs in one pool, one
process each, explorations draw a single frame, figures are not rendered, and the exit
status is 1 if any run fails (an assert, say). A sweep writes, for every notebook whose claims
held, what its runs loaded and the seeds into ``benchmarks/sweep.json`` (``tools/fingerprints.py``);
``--changed`` sweeps only the notebooks that record cannot vouch for, and says why.

A sweep run is a fresh process, but not a fresh Jupyter kernel: starting a kernel and
importing PyTorch, matplotlib and ``helpers`` cost 5-9 s on two cores, and the sweep makes
over two hundred runs. So a server process imports them once (``multiprocessing``'s
``forkserver`` with :data:`PRELOAD`) and every run is a fork of it that has run nothing yet,
which executes the notebook's code cells in order in a new IPython shell (the shell a Jupyter
kernel runs cells in) and stops at the first error, as ``nbclient`` does.
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.forkserver
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from helpers.environment import MODES, mode_environment
from helpers.parallel import available_cores
from tools.toc import ROOT, toc_notebooks

BUDGET_S = 60
# A sweep run checks the asserts and nothing else (helpers.environment's claims-only mode).
CLAIMS_ONLY = MODES["claims-only"]
CHECKER_CALL = re.compile(r"\bhelpers\.grading\.(?:(?P<module>\w+)\.)?(?P<name>check_\w+)\(")
"""A call of an exercise checker, ``helpers.grading.check_...(`` or, for one not re-exported by
:mod:`helpers.grading`, ``helpers.grading.<module>.check_...(``."""
# What every notebook imports, loaded once by the sweep's server process (see the module's docstring),
# and what a run imports to read its notebook: nbformat alone costs about 2 s (its JSON-schema
# validator builds a URI grammar on import), which was most of a run's overhead. Only ``helpers``
# itself of the course's package: a module the server loaded would be in every run's record of what
# it loaded (helpers.provenance), so each run imports the modules it uses.
PRELOAD = ["IPython", "numpy", "torch", "matplotlib.pyplot", "tqdm.auto", "ipywidgets", "helpers",
           "nbformat", "nbclient"]


def chapter_notebooks(chapter: int | None = None, root: Path = ROOT) -> list[Path]:
    """The book's notebooks in reading order; only chapter ``chapter``'s (``book/ch<N>/``) if given."""
    paths = toc_notebooks(root)
    if chapter is None:
        return paths
    chosen = [p for p in paths if p.parent.name == f"ch{chapter}"]
    if not chosen:
        raise ValueError(f"chapter {chapter} has no notebooks in _toc.yml")
    return chosen


def execute(path: Path, seed: int | None = None, *, learner: bool = False) -> tuple[float, str | None]:
    """Run ``path`` top to bottom in a fresh kernel, as the site build does
    (:func:`tools.execute.execute_one`); return (seconds, the error's last line or None).

    ``learner``: as in JupyterLab (progress bars, runs side by side); otherwise as the site
    build runs it. (The sweep's claims-only runs are :func:`run_cells`.)
    """
    from tools.execute import execute_one

    env = mode_environment("learner" if learner else "site")
    if seed is not None:
        env["COURSE_SEED"] = str(seed)
    run = execute_one(str(path), env)
    return run["seconds"], run["error"].strip().splitlines()[-1] if run["error"] else None


def ledger_keys(nb) -> set[str]:
    """The glued names that the notebook's ledger entries show as their claims' numbers."""
    keys = set()
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("ledger")
        for entry in meta if isinstance(meta, list) else [meta] if isinstance(meta, dict) else []:
            if isinstance(entry.get("number"), dict) and "key" in entry["number"]:
                keys.add(entry["number"]["key"])
    return keys


def run_cells(path: Path, seed: int) -> tuple[float, str | None, list[str], dict]:
    """Run ``path``'s code cells in order in a new IPython shell in this process, claims only,
    with ``$COURSE_SEED`` = ``seed`` and the notebook's folder as the working directory;
    return (seconds, None, files, numbers) or, at the first failing cell, (seconds, ``"code cell
    N: ErrorName: message"``, [], {}) with N the cell's index in the notebook. ``files`` are the
    ``helpers`` files the run loaded (:func:`helpers.provenance.loaded_files`); ``numbers`` the
    values the run glued under the names its ledger entries show (:func:`ledger_keys`). A cell that
    calls a checker (``helpers.grading.check_...`` or ``helpers.grading.<module>.check_...``)
    fails the run when its feedback says the hidden solution before it did not pass.

    Meant for a process of its own (the sweep forks one per run): it changes the process's
    environment, working directory and output, and leaves its variables behind."""
    os.environ.update(CLAIMS_ONLY, COURSE_SEED=str(seed))
    os.environ.pop("COURSE_SITE", None)
    import matplotlib
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    matplotlib.use("agg")
    from matplotlib import pyplot
    config = Config()
    config.HistoryManager.enabled = False  # no history database written by runs side by side
    nb = nbformat.read(path, as_version=4)
    keys, numbers = ledger_keys(nb), {}
    import helpers.reporting

    stores = helpers.reporting._myst_glue  # myst-nb's glue, or None (helpers.reporting's docstring)

    def store(name, value, **options):  # a glued number, noted for the record, then stored as always
        if name in keys:
            numbers[name] = value
        if stores is not None:
            stores(name, value, **options)

    helpers.reporting._myst_glue = store
    os.chdir(path.parent)
    # What the cells print or display goes nowhere: only the first error is kept.
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
    shell = InteractiveShell.instance(config=config)
    start = time.perf_counter()
    for number, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        result = shell.run_cell(cell.source, store_history=False)
        pyplot.close("all")  # as Jupyter's inline backend does after each cell
        if not result.success:
            error = result.error_before_exec or result.error_in_exec
            return time.perf_counter() - start, f"code cell {number}: {type(error).__name__}: {error}", [], {}
        # A checker's cell ends with its feedback: the hidden solution before it must pass, for
        # every seed (a checker that compares with this seed's nets could fail on another).
        if CHECKER_CALL.search(cell.source) and getattr(result.result, "passed", True) is False:
            return (time.perf_counter() - start,
                    f"code cell {number}: the hidden solution fails its checker: {result.result}", [], {})
    from helpers.provenance import loaded_files

    return time.perf_counter() - start, None, loaded_files(), numbers


def _seed_run(args):
    path, seed = args
    return path, seed, *run_cells(path, seed)


def _claims_runs(jobs, workers: int):
    """(path, seed, seconds, error, files, numbers) of :func:`run_cells` for each (path, seed) of ``jobs``, in
    order, ``workers`` at a time, each run a fork of a ``forkserver`` with :data:`PRELOAD` (its
    server starts with the sweep's environment, so that matplotlib, say, is imported with the
    same settings as in a run)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    saved = dict(os.environ)
    os.environ.update(CLAIMS_ONLY)
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, max_tasks_per_child=1) as pool:
        yield from pool.map(_seed_run, jobs)


def longest_first(jobs, root: Path = ROOT) -> list[tuple[Path, int]]:
    """``jobs`` ((notebook, seed) pairs) with the notebooks the record says take longest first,
    each notebook's seeds in order, the notebooks the record does not know last: a pool that
    starts the long runs first ends with short ones on every core, not one long run on one
    core while the others wait (what the record last timed is a guess of the cost, never a
    result: the order changes no number)."""
    from tools.fingerprints import read_record

    root = Path(root).resolve()
    entries = read_record(root).get("notebooks", {})

    def expected(job):
        path, seed = job
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        seconds = list(entries.get(name, {}).get("claims_only_s", {}).values())
        return (-(sum(seconds) / len(seconds)) if seconds else 0.0, seed, name)

    return sorted(jobs, key=expected)


def sweep(paths, seed_list, workers: int | None = None, root: Path = ROOT) -> tuple[list[str], dict]:
    """Run every (notebook, seed) pair, claims only, ``workers`` at a time (default: one per
    core), each in a fresh process (:func:`run_cells`); print a line per run. Return one line per
    run whose claims did not hold, and ``{notebook: {"seeds", "files", "seconds", "numbers"}}`` for every
    notebook whose claims held for all of ``seed_list`` (what :func:`fingerprints.update_record`
    writes)."""
    jobs = longest_first([(Path(p).resolve(), s) for s in seed_list for p in paths], root)
    workers = workers or available_cores()
    failures, runs = [], {}
    for path, seed, seconds, error, files, numbers in _claims_runs(jobs, workers):
        name = path.relative_to(root) if path.is_relative_to(root) else path
        status = "ok" if error is None else f"FAILED: {error}"
        print(f"{name} seed {seed}: {seconds:6.1f} s  {status}", flush=True)
        if error is not None:
            failures.append(f"{name}, seed {seed}: {error}")
        runs.setdefault(path, []).append((seed, seconds, error, files, numbers))
    held = {path: {"seeds": sorted(r[0] for r in rs), "files": sorted({f for r in rs for f in r[3]}),
                   "seconds": {r[0]: round(r[1], 1) for r in rs}, "numbers": {r[0]: r[4] for r in rs}}
            for path, rs in runs.items() if all(r[2] is None for r in rs)}
    return failures, held


def seed_failures(paths, seed_list, workers: int | None = None, root: Path = ROOT) -> list[str]:
    """The lines of :func:`sweep` for the runs whose claims did not hold."""
    return sweep(paths, seed_list, workers, root)[0]


def sweep_and_record(paths, seed_list, *, changed_only: bool = False, record: bool = True,
                     root: Path = ROOT) -> list[str]:
    """The seed sweep as ``make sweep`` and CI run it: with ``changed_only``, first take from the
    record (``benchmarks/sweep.json``, :func:`fingerprints.plan_sweep`) every notebook whose
    claims held for ``seed_list`` and whose dependencies have not changed since, saying which
    and why; sweep the rest; write the seeds that held into the record (unless not ``record``).
    Returns the failures."""
    from datetime import date

    from tools.fingerprints import edited_since, plan_sweep, tree_state, update_record
    from tools.speed_index import machine

    if changed_only:
        plan = plan_sweep(paths, CLAIMS_ONLY, seed_list, root)
        print(plan.report(), flush=True)
        paths = [Path(root) / name for name in plan.run]
        if not paths:
            print("nothing to sweep: every notebook's claims are in the record for these seeds", flush=True)
            return []
    about = machine()
    print(f"sweeping {len(paths)} notebooks for seeds {seed_list} on {about['processor']} "
          f"(speed index {about['speed_index']})", flush=True)
    before = tree_state(paths, CLAIMS_ONLY, root)
    failures, held = sweep(paths, seed_list, root=root)
    # A notebook, helpers file or pin edited while the sweep ran: its runs held for what was
    # there before, so they are not recorded against what is there now.
    for notebook in list(held):
        edits = edited_since(before, Path(notebook), held[notebook]["files"], CLAIMS_ONLY, root)
        if edits:
            del held[notebook]
            failures.append(f"{notebook}: edited while it was swept ({', '.join(edits)}); sweep it again")
    if held and record:
        path = update_record(held, CLAIMS_ONLY, today=date.today().isoformat(), machine=about, root=root)
        print(f"recorded {len(held)} notebooks in {path}", flush=True)
    return failures


def timings(paths, *, claims_only: bool = False, learner: bool = True) -> dict[str, dict]:
    """{notebook: {"seconds": ..., "error": ...}}, one notebook after another, printed as they finish.

    ``claims_only``: each run as the sweep makes it (:func:`run_cells`, seed 0), alone."""
    rows = {}
    runs = _claims_runs([(Path(p).resolve(), 0) for p in paths], workers=1) if claims_only else None
    for path in paths:
        if claims_only:
            _, _, seconds, error, _, _ = next(runs)
        else:
            seconds, error = execute(path, learner=learner)
        name = str(path.relative_to(ROOT))
        rows[name] = {"seconds": round(seconds, 1), "error": error}
        over = "  OVER BUDGET" if seconds > BUDGET_S and not claims_only else ""
        print(f"{name:<45} {seconds:7.1f} s  {error or 'ok'}{over}", flush=True)
    return rows


def parse_seeds(text: str) -> list[int]:
    """``"1-9"`` -> [1, ..., 9]; ``"0,3,5"`` -> [0, 3, 5]."""
    try:
        if "-" in text:
            lo, hi = text.split("-")
            seeds = list(range(int(lo), int(hi) + 1))
        else:
            seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must look like 1-9 or 0,3,5, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"seeds must be non-negative and not empty, got {text!r}")
    return seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in _toc.yml")
    parser.add_argument("--seeds", type=parse_seeds, help="check the claims for these seeds, e.g. 1-9 or 0,3,5")
    parser.add_argument("--chapter", type=int, help="only this chapter's notebooks")
    parser.add_argument("--changed", action="store_true",
                        help="with --seeds: skip each notebook that benchmarks/sweep.json vouches for")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or chapter_notebooks(args.chapter)
    if args.seeds:
        return 1 if sweep_and_record(paths, args.seeds, changed_only=args.changed) else 0
    rows = timings(paths)
    total = sum(r["seconds"] for r in rows.values())
    print(f"{'total':<45} {total:7.1f} s   ({len(rows)} notebooks, {available_cores()} CPU cores)")
    return 1 if any(r["error"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
