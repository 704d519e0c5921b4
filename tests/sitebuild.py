"""The book's one execution and its site build, shared by the notebook, site and browser tests.

``make test`` and ``make site`` share them: ``tools/execute.py`` runs every notebook once
(seed 0, side by side) into ``_build/.jupyter_cache``, and the site is built from that
cache into ``_build/html`` without executing anything again.
"""

from __future__ import annotations

import subprocess
import sys

from tools.execute import build_book
from tools.toc import ROOT


def execute_notebooks() -> subprocess.CompletedProcess:
    """``python -m tools.execute``: run every notebook not yet cached for the current code."""
    return subprocess.run([sys.executable, "-m", "tools.execute"], cwd=ROOT,
                          capture_output=True, text=True, timeout=3000)


def build_site(*, fresh: bool = True) -> subprocess.CompletedProcess:
    """``jupyter-book build .`` with warnings as errors, into ``_build/html``.

    ``fresh`` re-reads every page (``--all``), so a warning of a page that did not change
    since the last build is raised again; notebooks still come from the cache.
    """
    return build_book(*(["--all"] if fresh else []))
