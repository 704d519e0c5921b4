"""Execute notebooks in fresh kernels (no cache): time them, or check their claims for many seeds.

    python tools/run_notebooks.py                      # seconds per notebook, as a learner runs it
    python tools/run_notebooks.py --seeds 1-9          # the seed sweep: claims only, every notebook
    python tools/run_notebooks.py --seeds 1-9 --chapter 3

The timing runs each notebook as a learner's "Run All" does (progress bars on, runs side by
side on every core); it prints a table against the budget of 60 s a notebook. With
``--seeds`` only the claims are checked: every (notebook, seed) pair runs in one pool, one
process each, explorations draw a single frame, figures are not rendered, and the exit
status is 1 if any run fails (an assert, say).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.parallel import available_cores  # noqa: E402
from helpers.toc import ROOT, toc_notebooks  # noqa: E402

BUDGET_S = 60
# A sweep run checks the asserts and nothing else: no progress bars, one process per run (the
# sweep runs notebooks side by side instead), one frame per exploration, no figure rendered.
CLAIMS_ONLY = {"COURSE_STATIC_BUILD": "1", "COURSE_CLAIMS_ONLY": "1", "COURSE_WORKERS": "1",
               "MPLBACKEND": "agg"}
COURSE_VARIABLES = ("COURSE_STATIC_BUILD", "COURSE_SITE", "COURSE_CLAIMS_ONLY", "COURSE_WORKERS", "COURSE_SEED",
                    "MPLBACKEND")


def chapter_notebooks(chapter: int | None = None, root: Path = ROOT) -> list[Path]:
    """The book's notebooks in reading order; only chapter ``chapter``'s (``book/ch<N>/``) if given."""
    paths = toc_notebooks(root)
    if chapter is None:
        return paths
    chosen = [p for p in paths if p.parent.name == f"ch{chapter}"]
    if not chosen:
        raise ValueError(f"chapter {chapter} has no notebooks in _toc.yml")
    return chosen


def execute(path: Path, seed: int | None = None, *, claims_only: bool = False,
            learner: bool = False) -> tuple[float, str | None]:
    """Run ``path`` top to bottom in a fresh kernel; return (seconds, error or None).

    ``learner``: as in JupyterLab (progress bars, runs side by side); otherwise as the site
    build runs it. ``claims_only``: only the asserts matter (see :data:`CLAIMS_ONLY`).
    """
    env = {k: v for k, v in os.environ.items() if k not in COURSE_VARIABLES}
    if not learner:
        env["COURSE_STATIC_BUILD"] = "1"
    if claims_only:
        env.update(CLAIMS_ONLY)
    if seed is not None:
        env["COURSE_SEED"] = str(seed)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute(env=env)  # the kernel's whole environment
        error = None
    except CellExecutionError as err:
        error = str(err).strip().splitlines()[-1]
    return time.perf_counter() - start, error


def _seed_run(args):
    path, seed = args
    return path, seed, *execute(path, seed=seed, claims_only=True)


def seed_failures(paths, seed_list, workers: int | None = None, root: Path = ROOT) -> list[str]:
    """Run every (notebook, seed) pair, claims only, ``workers`` at a time (default: one per
    core); print a line per run and return one line per run whose claims did not hold."""
    jobs = [(Path(p), s) for s in seed_list for p in paths]
    workers = workers or available_cores()
    failures = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for path, seed, seconds, error in pool.map(_seed_run, jobs):
            name = path.relative_to(root) if path.is_relative_to(root) else path
            status = "ok" if error is None else f"FAILED: {error}"
            print(f"{name} seed {seed}: {seconds:6.1f} s  {status}", flush=True)
            if error is not None:
                failures.append(f"{name}, seed {seed}: {error}")
    return failures


def timings(paths, *, claims_only: bool = False, learner: bool = True) -> dict[str, dict]:
    """{notebook: {"seconds": ..., "error": ...}}, one notebook after another, printed as they finish."""
    rows = {}
    for path in paths:
        seconds, error = execute(path, claims_only=claims_only, learner=learner)
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
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or chapter_notebooks(args.chapter)
    if args.seeds:
        return 1 if seed_failures(paths, args.seeds) else 0
    rows = timings(paths)
    total = sum(r["seconds"] for r in rows.values())
    print(f"{'total':<45} {total:7.1f} s   ({len(rows)} notebooks, {available_cores()} CPU cores)")
    return 1 if any(r["error"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
