"""The record of the coursework tests that passed, and what each depended on (``make
test-coursework``; CI runs ``make test-coursework-changed``).

The coursework tests (a graded class, every chapter graded with its own solutions in the
sandbox, the student edition, the PDF, the site without solutions) take
about 20 minutes on two cores, and CI has an hour for everything. Like the seed sweep's record
(:mod:`tools.fingerprints`), ``benchmarks/coursework.json`` keeps, for each coursework test that
passed, one SHA-256 of every file it could depend on (and, to say which changed, the files'
digests at the record's last update), the pins and Python version, the date and
the machine. ``make test-coursework-changed`` runs a test again only when its entry is missing,
edited by hand (its digest no longer matches) or stale (a file it depends on changed, appeared
or went), and says for each test it skips what the record vouches for.

What a test depends on is taken broadly, so that no change can slip past: every file of the
book's tree (``book``, ``helpers``, ``tools``, ``tests`` and the top-level configuration),
except the project's own documents (:data:`NOT_INPUTS`). A chapter's grading test does not
depend on the other chapters' notebooks and pages. The record is written only by pytest, for
a test whose setup and call passed, with the tree as it was when the session started. A pass
on one machine does not prove a pass on a slower one, which is what the tests' own time
limits are for.
"""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

from tools.fingerprints import entry_digest, file_digests, sha256
from tools.toc import ROOT

RECORD = Path("benchmarks") / "coursework.json"  # relative to the book's root
TREES = ("book", "helpers", "tools", "tests")
TOP = ("Makefile", "_config.yml", "_toc.yml", "pyproject.toml", "requirements.txt")
NOT_INPUTS = ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "CITATION.cff", "LICENSE", "LICENSE-CONTENT",
              "benchmarks/", ".ci/")
"""The project's documents and records: no coursework test reads them (README.md's commands are
run by CI; ``tests/test_readme.py``, which checks its tables, is not a coursework test)."""
IGNORED = re.compile(r"(^|/)(__pycache__|\.[^/]*|[^/]*\.egg-info)(/|$)|\.pyc$")
"""Caches and tools' litter, never tracked: Python's, and every hidden file or folder (``.ruff_cache``,
``.ipynb_checkpoints``, ``.pytest_cache``), which the tests create as they run."""
CHAPTER_TEST = re.compile(r"^tests/test_classroom\.py::\w+\[(\d+)\]$")


def tree_files(root: Path = ROOT) -> list[str]:
    """Every file a coursework test could read, relative to ``root``, sorted."""
    root = Path(root)
    files = [name for name in TOP if (root / name).is_file()]
    for tree in TREES:
        files += [p.relative_to(root).as_posix() for p in (root / tree).rglob("*") if p.is_file()]
    return sorted(f for f in files if not IGNORED.search(f) and not f.startswith(NOT_INPUTS))


def inputs(nodeid: str, root: Path = ROOT, files: list[str] | None = None) -> list[str]:
    """The files the coursework test ``nodeid`` depends on: :func:`tree_files` (or ``files``), and for
    a chapter's grading test (``test_classroom.py::...[N]``) without the other chapters' folders."""
    files = tree_files(root) if files is None else sorted(files)
    chapter = CHAPTER_TEST.match(nodeid)
    if chapter:
        own = f"book/ch{chapter.group(1)}/"
        files = [f for f in files if not re.match(r"book/ch\d+/", f) or f.startswith(own)]
    return files


def settings(root: Path = ROOT) -> dict[str, str]:
    """The pins (all of them: the coursework runs nbgrader, Playwright and JupyterLab too) and the
    Python version."""
    return {"pins": sha256((Path(root) / "requirements.txt").read_bytes()), "python": platform.python_version()}


def inputs_digest(digests: dict[str, str]) -> str:
    return sha256(json.dumps(dict(sorted(digests.items()))))


def read_record(root: Path = ROOT) -> dict:
    path = Path(root) / RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"tests": {}}


def why_run(nodeid: str, record: dict, root: Path = ROOT) -> str | None:
    """Why ``nodeid`` must run (in words), or None when its entry in ``record`` vouches for it."""
    entry = record.get("tests", {}).get(nodeid)
    if entry is None:
        return "not in the record"
    if entry.get("digest") != entry_digest(entry):
        return "its entry's digest does not match its content (edited by hand?)"
    if entry.get("settings") != settings(root):
        return "the pins or the Python version changed"
    now = file_digests(inputs(nodeid, root), root)
    if entry.get("inputs") == inputs_digest(now):
        return None
    # which files: against the tree as the record's last update saw it (the entry keeps one digest)
    then = record.get("files", {})
    changed = sorted(f for f in now if then.get(f) != now[f]) + sorted(set(then) - set(now) - set(tree_files(root)))
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"a file it depends on changed since it passed ({shown or 'since an earlier update of the record'})"


def vouched(nodeid: str, record: dict) -> str:
    entry = record["tests"][nodeid]
    return (f"vouched for by {RECORD}: passed on {entry['date']} in {entry['seconds']:.0f} s (speed index "
            f"{entry['machine'].get('speed_index', '?')}), and none of its {entry['n_files']} files changed since")


def snapshot(root: Path = ROOT) -> dict[str, str]:
    """``{file: SHA-256}`` of :func:`tree_files` now: taken when a test session starts, so that an
    entry records the tree its test ran on, not one edited while it ran."""
    return file_digests(tree_files(root), root)


def update_record(passed: dict[str, float], *, today: str, machine: dict, tree: dict[str, str],
                  root: Path = ROOT) -> Path:
    """Write an entry for each test in ``passed`` (``{nodeid: seconds}``), with the digests of its
    inputs in ``tree`` (:func:`snapshot`, taken before the tests ran); other entries stay."""
    record = read_record(root)
    tests = dict(record.get("tests", {}))
    for nodeid, seconds in passed.items():
        digests = {f: tree[f] for f in inputs(nodeid, root, files=tree)}
        entry = {"inputs": inputs_digest(digests), "n_files": len(digests), "settings": settings(root),
                 "date": today, "machine": machine, "seconds": round(seconds, 1)}
        entry["digest"] = entry_digest(entry)
        tests[nodeid] = entry
    record = {"about": "Written by pytest only (tests/conftest.py) for each coursework test that passed: the "
                       "digests of the files it depends on. make test-coursework-changed (CI) runs a test again "
                       "when its entry is missing, stale or edited (tools/coursework_record.py).",
              "tests": dict(sorted(tests.items())),
              "files": dict(sorted(tree.items()))}
    path = Path(root) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path
