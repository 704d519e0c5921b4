"""Root pytest configuration: notebooks run as in a site build, and only the book's own notebooks are collected."""

import os
from pathlib import Path

os.environ.setdefault("COURSE_STATIC_BUILD", "1")  # no progress bars in executed notebooks
# No MPLBACKEND here: the kernels that nbval and the site build start inherit this
# environment, and they must keep Jupyter's inline backend or no figure is displayed.
# The test process itself draws off-screen:
import matplotlib  # noqa: E402

matplotlib.use("Agg")

from helpers.toc import ROOT, toc_notebooks  # noqa: E402

_BOOK_NOTEBOOKS = {p.resolve() for p in toc_notebooks(ROOT)}


def pytest_ignore_collect(collection_path: Path, config):
    """Collect a notebook only if it is in _toc.yml (and never from the build or student edition)."""
    if collection_path.suffix == ".ipynb":
        return collection_path.resolve() not in _BOOK_NOTEBOOKS
    if collection_path.name in {"_build", "student-edition", ".venv"}:
        return True
    return None
