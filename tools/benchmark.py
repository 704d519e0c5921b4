"""A record of speed: time every notebook and every stage of ``make test``; write benchmarks/speed.json.

    python -m tools.benchmark            # about 20 minutes on 2 cores; rebuilds _build from scratch

What is measured, on this machine:

* per notebook: a learner's "Run All Cells" in a real JupyterLab (``tests/test_lab.py``:
  fresh kernel, progress bars, live widgets, runs side by side; the budget is 30 s, :data:`RUN_ALL_BUDGET_S`) and a
  claims-only run (what one seed of the sweep costs, one process);
* ``make test`` from a cold cache (``_build`` removed): the whole session and its stages
  (the book's one execution, the site build from the cache, the tests of each file);
* a rebuild of the site after a prose-only edit (pages touched, code unchanged);
* CI's other stages: ``make test-coursework`` and ``make test-install``;
* the machine's speed index (``tools/speed_index.py``: a fixed workload of a few seconds on
  one thread), taken before and after the timings; every budget is stated in reference
  seconds (seconds here x the index), so that records from machines of different speeds
  compare, and the record says how each stage stands against its budget;
* CI's cost when every notebook is swept and when one chapter's notebooks changed (the
  sweep takes the others from ``benchmarks/sweep.json``);
* an extrapolation to the book's five chapters, today's chapters counted 5 / (chapters now)
  times: the stages that grow with the book are scaled (the coursework builds with them),
  the rest kept; the sweep is 9 seeds x the claims-only seconds, scaled by a timed sample
  of the sweep (two seeds; runs side by side are slower than alone). It also
  says how many claims-only seconds per seed a later chapter may cost for CI (``.ci/run``:
  ``make test``, ``make test-coursework``, ``make test-install``, ``make sweep``) to stay
  within 60 minutes; with all five chapters written, the seconds left for them to grow.

The record is committed, so a slowdown shows up in review as a diff of this file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from tools.run_notebooks import parse_seeds, timings
from tools.speed_index import machine, normalised
from tools.toc import ROOT, toc_files, toc_notebooks

RECORD = ROOT / "benchmarks" / "speed.json"
RUN_ALL_BUDGET_S = 30  # a learner's Run All in JupyterLab, per notebook (the site's cold execution: 60 s)
BOOK_CHAPTERS = 5
SWEEP_SEEDS = 9
CI_BUDGET_S = 60 * 60  # .ci/run when every notebook is swept (make test, test-coursework, test-install, sweep)
# Budgets in reference seconds (tools/speed_index.py): seconds on this machine x its speed index.
BUDGETS_REFERENCE_S = {"ci_every_notebook_swept": 60 * 60, "ci_one_chapter_changed": 40 * 60,
                       "make_test_cold": 20 * 60}


def _run(args, **env) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, env=dict(os.environ, **env))
    return round(time.perf_counter() - start, 1)


LAB_LINE = re.compile(r"Run All Cells in JupyterLab: ([\d.]+) s for \d+ code cells of (\S+), "
                      r"CPU ([\d.]+) s \(kernel and workers\), speed index ([\d.]+)")


def lab_rows(output: str) -> dict[str, dict]:
    """Each notebook's row from ``tests/test_lab.py``'s printout: the wall clock, the CPU seconds
    of the kernel and its workers, the speed index the test took (in CPU time) and their product,
    the reference CPU seconds that the test judges (it fails at twice :data:`RUN_ALL_BUDGET_S`)."""
    rows = {}
    for wall, name, cpu, index in LAB_LINE.findall(output):
        reference = normalised(float(cpu), float(index))
        rows[name] = {"wall_s": float(wall), "cpu_s": float(cpu), "speed_index": float(index),
                      "reference_cpu_s": round(reference, 1), "over_budget": reference > RUN_ALL_BUDGET_S}
    return rows


def jupyterlab_run_all() -> dict[str, dict]:
    """Each notebook's "Run All Cells" in a real JupyterLab, as ``tests/test_lab.py`` times and
    judges it (:func:`lab_rows`); the tests that failed are listed under ``"failed"``."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-k", "learner",
                           "tests/test_lab.py"],
                          cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, COURSE_LAB_NOTEBOOKS="all"))
    rows = lab_rows(proc.stdout)
    for name, row in rows.items():
        over = "  OVER BUDGET" if row["over_budget"] else ""
        print(f"{name:<45} {row['wall_s']:6.1f} s wall, {row['cpu_s']:6.1f} CPU s, "
              f"{row['reference_cpu_s']:6.1f} reference CPU s{over}", flush=True)
    if proc.returncode != 0:
        rows["failed"] = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.M) or [proc.stdout[-2000:]]
        print("failed:", *rows["failed"], sep="\n  ", flush=True)
    return rows


def cold_test_session() -> dict:
    """``make test`` (the README's command) from an empty ``_build``, with its stage timings."""
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    out = ROOT / "_build" / "test-timings.json"
    out.parent.mkdir(parents=True)
    wall = _run(["make", "test"], COURSE_TIMINGS=str(out))
    return {"make_test_s": wall, **json.loads(out.read_text())}


def prose_rebuild_s() -> float:
    """``make site`` after every page's file was touched (so Sphinx re-reads them all) but no code changed."""
    for path in toc_files(ROOT):
        path.touch()
    return _run(["make", "site"])


def sweep_sample(seeds: str = "1-2") -> dict:
    """``make sweep`` for two seeds, timed: runs side by side on two cores are slower than one
    run alone (they share memory bandwidth), so the sweep is extrapolated from this."""
    return {"seeds": len(parse_seeds(seeds)), "wall_s": _run(["make", "sweep", f"SEEDS={seeds}"])}


def other_ci_stages() -> dict[str, float]:
    """CI's stages besides ``make test`` and the sweep, each timed as CI runs it."""
    return {"make_test_coursework_s": _run(["make", "test-coursework"]),
            "make_test_install_s": _run(["make", "test-install"])}


def extrapolate(record: dict, chapters_now: int) -> dict:
    """The five-chapter book, with today's chapters counted ``5 / chapters_now`` times."""
    scale = BOOK_CHAPTERS / chapters_now
    cores = record["machine"]["cores"]
    test = record["make_test_cold"]
    grows = test["fixtures"].get("execute_notebooks_s", 0) + test["fixtures"].get("site_build_s", 0)
    pages = sum(v for k, v in test["test_calls_by_file_s"].items() if k.endswith("test_site.py"))
    fixed = test["make_test_s"] - grows - pages
    per_seed = sum(row["seconds"] for row in record["notebooks"]["claims_only"].values())  # one process each
    make_test = fixed + scale * (grows + pages)
    others = record.get("other_ci_stages", {})
    coursework = scale * others.get("make_test_coursework_s", 0) + others.get("make_test_install_s", 0)
    # The sweep's wall time per claims-only second, from a timed sample of the sweep (1 / cores
    # if runs side by side were as fast as runs alone).
    sample = record.get("sweep_sample")
    wall_per_s = sample["wall_s"] / (sample["seeds"] * per_seed) if sample else 1 / cores
    sweep = SWEEP_SEEDS * scale * per_seed * wall_per_s
    # What a later chapter may cost (claims only, one process, per seed) for CI to stay in its budget.
    # (per_seed is already the claims-only cost of all of today's chapters together.)
    room = (CI_BUDGET_S - make_test - coursework) / wall_per_s / SWEEP_SEEDS - per_seed
    return {
        "chapters": BOOK_CHAPTERS,
        "how": f"today's chapters counted {scale:g} times: the execution, site build, page checks and "
               "coursework builds scale; lint, unit tests and the student install do not; "
               "sweep = 9 seeds x claims-only seconds x the sweep's measured wall seconds per claims-only "
               "second (1 / cores if unmeasured)",
        "make_test_cold_min": round(make_test / 60, 1),
        "make_site_cold_min": round(scale * grows / 60, 1),
        "coursework_and_install_min": round(coursework / 60, 1),
        "sweep_wall_s_per_claims_only_s": round(wall_per_s, 3),
        "sweep_min": round(sweep / 60, 1),
        "ci_min": round((make_test + coursework + sweep) / 60, 1),
        "ci_budget_min": CI_BUDGET_S / 60,
        "claims_only_s_per_seed_now": round(per_seed, 1),
        # With every chapter written, what is left is headroom for the chapters to grow.
        "claims_only_s_per_seed_left": round(room, 1),
        "claims_only_s_per_seed_allowed_per_later_chapter":
            round(room / (BOOK_CHAPTERS - chapters_now), 1) if chapters_now < BOOK_CHAPTERS else None,
    }


def chapter_of(notebook: str) -> str:
    return Path(notebook).parent.name


def ci_scenarios(record: dict, installs_s: float = 240.0) -> dict:
    """CI's wall time on this machine, from clean clone to the end (``installs_s``: apt and pip,
    about 4 minutes), when every notebook is swept and when one chapter's notebooks changed
    (the sweep runs only those; the rest come from ``benchmarks/sweep.json``); each also in
    reference seconds against its budget."""
    index = record["machine"]["speed_index"]
    est = record["five_chapters_estimate"]
    fixed = installs_s + 60 * (est["make_test_cold_min"] + est["coursework_and_install_min"])
    per_second = est["sweep_wall_s_per_claims_only_s"] * SWEEP_SEEDS
    claims = record["notebooks"]["claims_only"]
    by_chapter: dict[str, float] = {}
    for name, row in claims.items():
        by_chapter[chapter_of(name)] = by_chapter.get(chapter_of(name), 0.0) + row["seconds"]
    every = fixed + per_second * sum(by_chapter.values())
    worst = max(by_chapter, key=by_chapter.get)
    one = fixed + per_second * by_chapter[worst]
    out = {"installs_s_assumed": installs_s,
           "ci_every_notebook_swept_min": round(every / 60, 1),
           "ci_one_chapter_changed_min": round(one / 60, 1), "the_costliest_chapter": worst,
           "ci_nothing_changed_min": round(fixed / 60, 1)}
    for key, seconds in (("ci_every_notebook_swept", every), ("ci_one_chapter_changed", one),
                         ("make_test_cold", 60 * est["make_test_cold_min"])):
        out[f"{key}_reference_min"] = round(normalised(seconds, index) / 60, 1)
        out[f"{key}_budget_reference_min"] = BUDGETS_REFERENCE_S[key] / 60
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep-timed", metavar="SEEDS:SECONDS",
                        help="a whole `make sweep` just timed on this machine (e.g. 9:2100), instead of a sample")
    args = parser.parse_args(argv)
    notebooks = toc_notebooks(ROOT)
    print("this machine's speed:", flush=True)
    about = machine()
    print(about, flush=True)
    print("a learner's Run All Cells in JupyterLab, one notebook at a time:", flush=True)
    learner = jupyterlab_run_all()
    print("claims only (one seed of the sweep):", flush=True)
    claims = timings(notebooks, claims_only=True, learner=False)
    print("make test from a cold cache:", flush=True)
    record = {
        "date": date.today().isoformat(),
        "machine": about,
        "budget_reference_s_per_notebook": {"site_cold": 60, "jupyterlab_run_all": RUN_ALL_BUDGET_S},
        "notebooks": {"jupyterlab_run_all": learner, "claims_only": claims},
        "make_test_cold": cold_test_session(),
    }
    print("rebuild after a prose-only edit:", flush=True)
    record["make_site_after_prose_edit_s"] = prose_rebuild_s()
    if args.sweep_timed:
        seeds, seconds = args.sweep_timed.split(":")
        record["sweep_sample"] = {"seeds": int(seeds), "wall_s": float(seconds), "how": "a whole make sweep"}
    else:
        print("a sample of the seed sweep (seeds 1-2):", flush=True)
        record["sweep_sample"] = sweep_sample()
    print("CI's coursework and install stages:", flush=True)
    record["other_ci_stages"] = other_ci_stages()
    # The index again at the end: a machine whose speed drifted during the record says so.
    record["machine"]["speed_index_after"] = machine()["speed_index"]
    chapters = len({p.parent for p in notebooks})
    record["five_chapters_estimate"] = extrapolate(record, chapters)
    record["ci"] = ci_scenarios(record)
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))
    for key, budget in BUDGETS_REFERENCE_S.items():
        spent = record["ci"][f"{key}_reference_min"]
        verdict = "OVER BUDGET" if spent > budget / 60 else "within budget"
        print(f"{key}: {spent} reference minutes (budget {budget / 60:g}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
