"""Build the site once per test session (shared by the site and browser tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.toc import ROOT


def build_site(out: Path) -> subprocess.CompletedProcess:
    """``jupyter-book build`` with warnings as errors, into ``out``; returns the finished process."""
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    env = dict(os.environ, COURSE_STATIC_BUILD="1")
    return subprocess.run(
        [jb, "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
        capture_output=True, text=True, env=env, timeout=1500,
    )
