"""Fixtures shared by the tests: the book's one execution and the site built from it.

With ``COURSE_TIMINGS=path.json`` set, the session also writes how long each stage took
(the execution, the site build, and the tests of each file), for ``make benchmark``.

With ``COURSE_RECORD=1`` (``make test-coursework``), every coursework test that passes is
written into ``benchmarks/coursework.json`` with the digest of what it depends on; with
``CHANGED=1`` (``make test-coursework-changed``, CI) a coursework test whose entry still holds
is skipped, saying so (``tools/coursework_record.py``). Other test commands write no record.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import matplotlib
import pytest
from sitebuild import build_site, execute_notebooks

from tools.toc import ROOT, toc_notebooks

os.environ.setdefault("COURSE_STATIC_BUILD", "1")  # no progress bars in what the tests run
matplotlib.use("Agg")  # the test process draws off-screen (the notebooks' kernels keep their inline backend)

STAGES: dict[str, float] = {}
FILES: dict[str, float] = defaultdict(float)


@pytest.fixture(autouse=True)
def _predictions_judged_afresh():
    """Each test's predictions are judged as in a fresh kernel, where the first one counts."""
    from helpers.grading.predictions import COUNTED

    COUNTED.clear()


def _timed(stage: str, fn):
    start = time.perf_counter()
    result = fn()
    STAGES[stage] = round(time.perf_counter() - start, 1)
    return result


@pytest.fixture(scope="session")
def executed():
    """{notebook: None, or the error it raised}, for seed 0, from the one execution of the book."""
    from tools.execute import CACHE, notebook_error, read_cache

    proc = _timed("execute_notebooks_s", execute_notebooks)
    if proc.returncode not in (0, 1):  # 1: a notebook failed (reported per notebook below)
        pytest.fail(f"tools/execute.py broke:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    cache = read_cache(CACHE)
    return {str(p.relative_to(ROOT)): notebook_error(cache, p) for p in toc_notebooks(ROOT)}


@pytest.fixture(scope="session")
def site_build(executed):
    """The finished ``jupyter-book build`` (from the cache that ``executed`` filled)."""
    return _timed("site_build_s", lambda: build_site(fresh=True))


@pytest.fixture(scope="session")
def site(site_build):
    """Path to the built HTML; the build must succeed with warnings as errors."""
    log = f"{site_build.stdout[-6000:]}\n{site_build.stderr[-3000:]}"
    assert site_build.returncode == 0, f"site build failed (warnings are errors):\n{log}"
    return ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def student_archive(executed, tmp_path_factory) -> Path:
    """The student edition's archive (``make student``), built once from the book's execution."""
    from tools.student import make_student_edition

    assert not any(executed.values()), f"a notebook failed: {executed}"
    return make_student_edition(tmp_path_factory.mktemp("edition"))


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (Debian's package), launched so that it makes no request of its own."""
    from playwright.sync_api import sync_playwright

    from tools.pdf import CHROMIUM, launch_chromium

    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium); .ci/run installs it")
    with sync_playwright() as pw:
        chrome = launch_chromium(pw)
        yield chrome
        chrome.close()


COURSEWORK_PASSED: dict[str, float] = {}


def _recording() -> bool:
    """Whether a maintainer asked for the records to be written (``make test-coursework``,
    ``make sweep``: ``COURSE_RECORD=1``); other test commands leave the tree as it was."""
    return os.environ.get("COURSE_RECORD", "").strip() == "1"


def _changed_only() -> bool:
    return os.environ.get("CHANGED", "").strip().lower() in {"1", "yes", "true"}


def pytest_collection_modifyitems(config, items):
    """With ``CHANGED=1``, skip each coursework test that the record vouches for, and print why
    each of the others runs."""
    if not _changed_only():
        return
    from tools.coursework_record import read_record, vouched, why_run

    record = read_record(ROOT)
    for item in items:
        if item.get_closest_marker("coursework") is None:
            continue
        why = why_run(item.nodeid, record, ROOT)
        if why is None:
            item.add_marker(pytest.mark.skip(reason=vouched(item.nodeid, record)))
        else:
            print(f"\n{item.nodeid} runs: {why}", end="")


def pytest_runtest_logreport(report):
    if report.when == "call":
        FILES[report.nodeid.split("::")[0]] += report.duration
        if report.passed and "coursework" in report.keywords:
            COURSEWORK_PASSED[report.nodeid] = report.duration


def pytest_sessionstart(session):
    from tools.coursework_record import snapshot

    session.config._course_start = time.perf_counter()
    session.config._course_tree = snapshot(ROOT)  # what the coursework tests that pass ran on


def pytest_sessionfinish(session, exitstatus):
    """Record the coursework tests that passed; with ``COURSE_TIMINGS``, write the timings. Under
    pytest-xdist each worker times the fixtures it set up and leaves them beside the target; the
    controller, which gets every test's report, merges them in."""
    if COURSEWORK_PASSED and _recording() and getattr(session.config, "workerinput", None) is None:
        from tools.coursework_record import update_record
        from tools.speed_index import machine

        update_record(COURSEWORK_PASSED, today=time.strftime("%Y-%m-%d"), machine=machine(),
                      tree=session.config._course_tree, root=ROOT)
    target = os.environ.get("COURSE_TIMINGS")
    if not target:
        return
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if worker is not None:
        Path(f"{target}.{worker}").write_text(json.dumps(STAGES), encoding="utf-8")
        return
    for part in sorted(Path(target).parent.glob(f"{Path(target).name}.gw*")):
        for stage, seconds in json.loads(part.read_text(encoding="utf-8")).items():
            STAGES[stage] = max(STAGES.get(stage, 0.0), seconds)
        part.unlink()
    record = {"session_s": round(time.perf_counter() - session.config._course_start, 1),
              "fixtures": STAGES, "test_calls_by_file_s": {k: round(v, 1) for k, v in sorted(FILES.items())}}
    Path(target).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
