"""The book's one execution and its site build, shared by the notebook, site and browser tests.

``make test`` and ``make site`` share them: ``tools/execute.py`` runs every notebook once
(seed 0, side by side) into ``_build/.jupyter_cache``, and the site is built from that
cache into ``_build/html`` without executing anything again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.toc import ROOT

TOOLS = ROOT / "tools"


def _bin(name: str) -> str:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or name


def execute_notebooks() -> subprocess.CompletedProcess:
    """``python tools/execute.py``: run every notebook not yet cached for the current code."""
    return subprocess.run([sys.executable, str(TOOLS / "execute.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=3000)


def build_site(*, fresh: bool = True) -> subprocess.CompletedProcess:
    """``jupyter-book build .`` with warnings as errors, into ``_build/html``.

    ``fresh`` re-reads every page (``--all``), so a warning of a page that did not change
    since the last build is raised again; notebooks still come from the cache.
    """
    env = dict(os.environ, COURSE_STATIC_BUILD="1", COURSE_SITE="1", COURSE_SEED="0")
    args = [_bin("jupyter-book"), "build", str(ROOT), "-W", "-n", "--keep-going"] + (["--all"] if fresh else [])
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=env, timeout=1500)
