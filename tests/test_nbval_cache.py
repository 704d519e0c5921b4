"""nbval runs the notebooks, and what it passes is the execution the site build reads.

``make test``'s first step is ``pytest -p tools.nbval_cache --nbval-lax book``: these tests run
that step on a small book of three notebooks, one whose claim fails, and check what nbval
reports and what the cache then holds.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from tools import execute
from tools.toc import ROOT

pytestmark = pytest.mark.slow

HOLDS = "import os, helpers\nSEED = int(os.environ['COURSE_SEED'])\nprint('seed', SEED)"


def _notebook(path, *sources):
    cells = [nbformat.v4.new_markdown_cell("# A page")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def small_book(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    (root / "book").mkdir()
    _notebook(root / "book" / "holds.ipynb", HOLDS, "assert SEED == 0, 'the claim fails'\n'shown'")
    _notebook(root / "book" / "breaks.ipynb", HOLDS, "assert SEED != 0, 'the claim fails for seed 0'", "print('after')")
    _notebook(root / "book" / "extra.ipynb", "raise RuntimeError('not in the book')")
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: book/holds\n"
                                   "- file: book/breaks\n")
    return root


def _nbval(root, cache, *more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    env["COURSE_SEED"] = "7"  # the caller's shell: the kernels must not see it
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tools.nbval_cache", "--nbval-lax", "-p",
                           "no:cacheprovider", "--book-cache", str(cache), "--book-root", str(root),
                           "--rootdir", str(root), *more, str(root / "book")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def first_run(small_book, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return _nbval(small_book, cache), cache


def test_a_failing_claim_fails_nbval_with_its_message(first_run):
    result, _ = first_run
    assert result.returncode == 1, result.stdout[-3000:]
    assert "the claim fails for seed 0" in result.stdout
    assert "breaks.ipynb::Cell 1 FAILED" in result.stdout or "1 failed" in result.stdout, result.stdout[-3000:]


def test_notebooks_outside_the_toc_are_not_run(first_run):
    result, _ = first_run
    assert "not in the book" not in result.stdout and "not in _toc.yml, not run" in result.stdout


def test_the_passing_run_is_the_cached_execution_in_the_site_environment(first_run, small_book):
    _, cache_path = first_run
    cache = execute.read_cache(cache_path)
    holds = (small_book / "book" / "holds.ipynb").resolve()
    assert execute.notebook_error(cache, holds) is None
    nb = execute.executed_notebook(holds, cache)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [1, 2]
    assert code[0].outputs[0].text == "seed 0\n"  # seed 0 although the shell said 7
    assert code[1].outputs[0].data["text/plain"] == "'shown'"
    record = cache.get_cache_record(cache.get_cached_project_nb(str(holds)).pk)
    assert record.data["executor"] == "nbval"
    assert any(f.startswith("helpers/") for f in record.data["course_dependencies"]["files"])
    assert execute.drop_stale(cache) == {}  # the site build would take it as it is


def test_the_failing_notebook_is_not_cached_and_keeps_its_traceback(first_run, small_book):
    _, cache_path = first_run
    cache = execute.read_cache(cache_path)
    error = execute.notebook_error(cache, (small_book / "book" / "breaks.ipynb").resolve())
    assert error and "the claim fails for seed 0" in error


def test_a_second_run_takes_the_passing_notebook_from_the_cache(first_run, small_book):
    _, cache_path = first_run
    again = _nbval(small_book, cache_path)
    assert "taken from the cache" in again.stdout and "holds.ipynb" in again.stdout
    assert "holds.ipynb::Cell" not in again.stdout.replace("taken from the cache", "")
    assert "the claim fails for seed 0" in again.stdout  # the failing one runs again


def test_a_run_with_every_notebook_in_the_cache_passes(tmp_path):
    """``make test`` after ``make site``: nothing to run is a pass, not pytest's exit 5, also
    with the notebooks spread over workers as ``make test`` does."""
    (tmp_path / "book").mkdir()
    _notebook(tmp_path / "book" / "holds.ipynb", HOLDS)
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: book/holds\n")
    first = _nbval(tmp_path, tmp_path / "cache")  # fills the cache
    assert first.returncode == 0, first.stdout[-3000:]
    again = _nbval(tmp_path, tmp_path / "cache", "-n", "2", "--dist", "loadfile")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "all 1 notebooks were taken from the cache" in again.stdout
