"""Fixtures shared by the tests: the built site (built once per session, only if a test asks)."""

from __future__ import annotations

import pytest
from sitebuild import build_site


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """Path to the built HTML; the build must succeed with warnings as errors."""
    out = tmp_path_factory.mktemp("site")
    proc = build_site(out)
    log = f"{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"site build failed (warnings are errors):\n{log}"
    return out / "_build" / "html"
