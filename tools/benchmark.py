"""A record of speed: time every notebook and every stage of ``make test``; write benchmarks/speed.json.

    python tools/benchmark.py            # about 10 minutes on 2 cores; rebuilds _build from scratch

What is measured, on this machine:

* per notebook: a learner's cold run (fresh kernel, progress bars, runs side by side; the
  budget is 60 s) and a claims-only run (what one seed of the sweep costs, one process);
* ``make test`` from a cold cache (``_build`` removed): the whole session and its stages
  (the book's one execution, the site build from the cache, the tests of each file);
* a rebuild of the site after a prose-only edit (pages touched, code unchanged);
* an extrapolation to a book of five chapters of three notebooks each: the stages that grow
  with the number of notebooks are scaled by 15 / (notebooks now), the rest kept; the
  sweep is 9 seeds x 15 notebooks of the mean claims-only time, two at a time.

The record is committed, so a slowdown shows up in review as a diff of this file.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import timings  # noqa: E402

from helpers.parallel import available_cores  # noqa: E402
from helpers.toc import ROOT, toc_files, toc_notebooks  # noqa: E402

RECORD = ROOT / "benchmarks" / "speed.json"
BOOK_NOTEBOOKS = 15  # five chapters of about three section notebooks
SWEEP_SEEDS = 9


def _run(args, **env) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, env=dict(os.environ, **env))
    return round(time.perf_counter() - start, 1)


def cold_test_session() -> dict:
    """``make test``'s pytest session from an empty ``_build``, with its stage timings."""
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    out = ROOT / "_build" / "test-timings.json"
    out.parent.mkdir(parents=True)
    lint = _run([sys.executable, "-m", "ruff", "check", "."])
    wall = _run([sys.executable, "-m", "pytest", "-q", "-m", "not sweep", "tests"], COURSE_TIMINGS=str(out))
    record = json.loads(out.read_text())
    return {"lint_s": lint, "pytest_wall_s": wall, **record}


def prose_rebuild_s() -> float:
    """``make site`` after every page's file was touched (so Sphinx re-reads them all) but no code changed."""
    for path in toc_files(ROOT):
        path.touch()
    _run([sys.executable, str(ROOT / "tools" / "execute.py")])
    return _run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "-W", "-n", "--keep-going"],
                COURSE_STATIC_BUILD="1", COURSE_SEED="0")


def extrapolate(record: dict, notebooks_now: int) -> dict:
    scale = BOOK_NOTEBOOKS / notebooks_now
    test = record["make_test_cold"]
    grows = test["fixtures"].get("execute_notebooks_s", 0) + test["fixtures"].get("site_build_s", 0)
    browser = sum(v for k, v in test["test_calls_by_file_s"].items() if k.endswith("test_site.py"))
    fixed = test["lint_s"] + test["pytest_wall_s"] - grows - browser
    claims = [row["seconds"] for row in record["notebooks"]["claims_only"].values()]
    sweep = SWEEP_SEEDS * BOOK_NOTEBOOKS * (sum(claims) / len(claims)) / available_cores()
    make_test = fixed + scale * (grows + browser)
    return {
        "notebooks": BOOK_NOTEBOOKS,
        "how": "execution, site build and page checks scale with the notebooks; the rest is kept; "
               "sweep = 9 seeds x notebooks x mean claims-only time / cores",
        "make_test_cold_min": round(make_test / 60, 1),
        "make_site_cold_min": round(scale * grows / 60, 1),
        "sweep_min": round(sweep / 60, 1),
        "ci_min": round((make_test + sweep) / 60, 1),
    }


def main() -> int:
    notebooks = toc_notebooks(ROOT)
    print("learner's cold run, one notebook at a time:", flush=True)
    learner = timings(notebooks, learner=True)
    print("claims only (one seed of the sweep):", flush=True)
    claims = timings(notebooks, claims_only=True, learner=False)
    print("make test from a cold cache:", flush=True)
    record = {
        "date": date.today().isoformat(),
        "machine": {"cores": available_cores(), "python": platform.python_version(), "system": platform.platform()},
        "budget_s_per_notebook": 60,
        "notebooks": {"learner_cold": learner, "claims_only": claims},
        "make_test_cold": cold_test_session(),
    }
    print("rebuild after a prose-only edit:", flush=True)
    record["make_site_after_prose_edit_s"] = prose_rebuild_s()
    record["five_chapters_estimate"] = extrapolate(record, len(notebooks))
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
