"""Execute notebooks cold (a fresh kernel each, no cache) and time them.

    python tools/run_notebooks.py                 # benchmark: seconds per book notebook and the total
    python tools/run_notebooks.py --seeds 0-9     # re-run every notebook for COURSE_SEED = 0..9

The benchmark is not a timed test: it prints a table so that the budget (60 s per
notebook on 2 CPU cores) can be watched. With ``--seeds`` only the claims are checked:
the notebooks run two at a time, one process each, explorations draw a single frame, and
the exit status is 1 if any run fails (an assert, say).
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
from helpers.toc import ROOT, toc_notebooks  # noqa: E402


def execute(path: Path, seed: int | None = None, claims_only: bool = False) -> tuple[float, str | None]:
    """Run ``path`` top to bottom in a fresh kernel; return (seconds, error or None).

    ``claims_only``: the run only checks the asserts. It then stays in one process (the
    caller runs notebooks side by side instead) and explorations draw one frame.
    """
    env = {"COURSE_STATIC_BUILD": "1"}  # kernels keep Jupyter's inline matplotlib backend
    if seed is not None:
        env["COURSE_SEED"] = str(seed)
    if claims_only:
        env.update(COURSE_CLAIMS_ONLY="1", COURSE_WORKERS="1")
    os.environ.update(env)  # the kernel inherits this process's environment
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
        error = None
    except CellExecutionError as err:
        error = str(err).strip().splitlines()[-1]
    return time.perf_counter() - start, error


def _seed_run(args):
    path, seed = args
    return path, seed, *execute(path, seed=seed, claims_only=True)


def benchmark(paths) -> int:
    rows, failed = [], 0
    for path in paths:
        seconds, error = execute(path)
        failed += error is not None
        rows.append((str(path.relative_to(ROOT)), seconds, error or "ok"))
        print(f"{rows[-1][0]:<45} {seconds:7.1f} s  {rows[-1][2]}", flush=True)
    total = sum(r[1] for r in rows)
    print(f"{'total':<45} {total:7.1f} s   ({len(rows)} notebooks, {os.cpu_count()} CPU cores)")
    over = [r[0] for r in rows if r[1] > 60]
    if over:
        print("over the 60 s budget: " + ", ".join(over))
    return 1 if failed else 0


def seed_failures(paths, seed_list, workers: int = 2) -> list[str]:
    """Run every (notebook, seed) pair, claims only, ``workers`` at a time; print a line per run
    and return one line per run whose claims did not hold."""
    jobs = [(p, s) for s in seed_list for p in paths]
    failures = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for path, seed, seconds, error in pool.map(_seed_run, jobs):
            status = "ok" if error is None else f"FAILED: {error}"
            print(f"{path.relative_to(ROOT)} seed {seed}: {seconds:6.1f} s  {status}", flush=True)
            if error is not None:
                failures.append(f"{path.relative_to(ROOT)}, seed {seed}: {error}")
    return failures


def seeds(paths, seed_list) -> int:
    return 1 if seed_failures(paths, seed_list) else 0


def _parse_seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in _toc.yml")
    parser.add_argument("--seeds", type=_parse_seeds, help="e.g. 0-9 or 0,3,5")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or toc_notebooks(ROOT)
    return seeds(paths, args.seeds) if args.seeds else benchmark(paths)


if __name__ == "__main__":
    sys.exit(main())
