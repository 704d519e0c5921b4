"""nbval runs the book's notebooks, and each run it passes goes into the cache the site reads.

    pytest -p tools.nbval_cache --nbval-lax -n 2 --dist loadfile book   # `make test`'s first step

nbval (a pytest plugin) runs every code cell of every notebook as a test, in one fresh kernel per
notebook, and fails a cell that raises: a claim's ``assert`` that stops holding fails ``make
test`` with its traceback. This plugin makes that run *the* execution of the notebook, so that
``make test`` runs each notebook once for seed 0 and the site build runs none:

* each kernel starts in the site's environment (:data:`tools.execute.SITE_ENVIRONMENT`: seed 0,
  no progress bars, the static explorers), whatever the caller's shell holds;
* after a notebook's last cell, when every cell passed, the kernel is asked which ``helpers``
  files the run loaded (as :mod:`tools.execute` asks it), and the notebook, with the outputs nbval
  collected, goes into the jupyter-cache with that record; a notebook with a failing cell is not
  cached, and its traceback is kept in the cache's project records, as ``tools.execute`` keeps
  it;
* a notebook whose run is already in the cache, with nothing it loaded changed, is not run again
  (it is reported as taken from the cache): on a clean clone, as in CI, nbval runs them all;
  when every notebook is in the cache (``make test`` after ``make site``) the step passes.

With ``-n 2 --dist loadfile`` (pytest-xdist) two notebooks run side by side, each on its own
worker; writes to the cache are serialised by a file lock.
"""

from __future__ import annotations

import ast
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from tools.toc import ROOT, toc_notebooks

LOCK_NAME = "nbval.lock"


def pytest_addoption(parser):
    group = parser.getgroup("nbval_cache", "the book's notebooks into the site's jupyter-cache")
    group.addoption("--book-cache", default=None,
                    help="the jupyter-cache to fill (default: the site build's, _build/.jupyter_cache)")
    group.addoption("--book-root", default=None,
                    help="the book whose _toc.yml lists the notebooks to run (default: this repository)")


def pytest_configure(config):
    if not (config.getoption("nbval", False) or config.getoption("nbval_lax", False)):
        return
    from tools import execute

    cache = Path(config.getoption("book_cache") or execute.CACHE)
    root = Path(config.getoption("book_root") or ROOT)
    config.pluginmanager.register(BookCache(cache, root), "book_cache")


@contextmanager
def _environment(env: dict):
    """``os.environ`` is ``env`` inside (a kernel started here inherits it), as before after."""
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


@contextmanager
def _locked(cache: Path):
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / LOCK_NAME, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _outputs(outs) -> list:
    """nbval's collected outputs of a cell as nbformat outputs."""
    made = []
    for out in outs:
        kind = out["output_type"]
        if kind == "stream":
            made.append(nbformat.v4.new_output("stream", name=out["name"], text=out["text"]))
        elif kind == "display_data":
            made.append(nbformat.v4.new_output("display_data", data=out["data"], metadata=out.get("metadata", {})))
        elif kind == "execute_result":
            made.append(nbformat.v4.new_output("execute_result", data=out["data"], metadata=out.get("metadata", {}),
                                               execution_count=out.get("execution_count")))
        elif kind == "error":
            made.append(nbformat.v4.new_output("error", ename=out["ename"], evalue=out["evalue"],
                                               traceback=out["traceback"]))
    return made


def loaded_files(kernel, timeout: float = 60) -> list[str]:
    """Ask nbval's kernel, silently (no cell, no output), which ``helpers`` files its run loaded."""
    from tools.execute import LOADED_FILES

    msg_id = kernel.kc.execute("", silent=True, store_history=False, user_expressions={"files": LOADED_FILES})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = kernel.kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            answer = reply["content"]["user_expressions"]["files"]
            if answer.get("status") != "ok":
                raise RuntimeError(f"the kernel could not say what it loaded: {answer}")
            return ast.literal_eval(answer["data"]["text/plain"])
    raise RuntimeError("the kernel did not say what it loaded in time")


class BookCache:
    """The plugin's state: which notebooks run, each one's cells' results, and the cache."""

    def __init__(self, cache: Path, root: Path):
        from helpers.environment import mode_environment

        self.cache_path, self.root = cache, root
        self.env = mode_environment("site")  # no MPLBACKEND: the kernels keep Jupyter's inline backend
        self.book = {p.resolve() for p in toc_notebooks(root)}
        self.started: dict[Path, float] = {}
        self.failures: dict[Path, list[str]] = {}
        self._wrap_kernel_start()

    def _wrap_kernel_start(self):
        from nbval.plugin import IPyNbFile

        if getattr(IPyNbFile.setup, "_in_site_environment", False):
            return
        setup, env = IPyNbFile.setup, self.env

        def setup_in_site_environment(collector):
            with _environment(env):
                setup(collector)

        setup_in_site_environment._in_site_environment = True
        IPyNbFile.setup = setup_in_site_environment

    def _cache(self):
        from tools.execute import read_cache

        return read_cache(self.cache_path)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        from tools.execute import drop_stale

        with _locked(self.cache_path):
            cache = self._cache()
            for uri, why in drop_stale(cache).items():
                print(f"\nnbval will run {uri} again: {why}")
            keep, cached, outside = [], set(), set()
            for item in items:
                path = Path(str(item.path)).resolve()
                if not str(path).endswith(".ipynb"):
                    keep.append(item)
                elif path not in self.book:
                    outside.add(path)
                else:
                    cache.add_nb_to_project(str(path))
                    if cache.get_cached_project_nb(str(path)) is not None:
                        cached.add(path)
                    else:
                        keep.append(item)
        dropped = [item for item in items if item not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
        for path in sorted(cached):
            print(f"\ntaken from the cache (run before, nothing it loaded changed): {path}")
        for path in sorted(outside):
            print(f"\nnot in _toc.yml, not run: {path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """No notebook to run because every one is in the cache (``make test`` after ``make
        site``) is a pass, not pytest's "no tests collected"."""
        if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED or getattr(session.config, "workerinput", None):
            return
        with _locked(self.cache_path):
            cache = self._cache()
            if all(cache.get_cached_project_nb(str(path)) is not None for path in self.book):
                print(f"\nall {len(self.book)} notebooks were taken from the cache: nothing to run")
                session.exitstatus = pytest.ExitCode.OK

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        path = Path(str(item.path)).resolve()
        if path not in self.book:
            return
        self.started.setdefault(path, time.perf_counter())
        if report.failed:
            self.failures.setdefault(path, []).append(f"{item.name}: {report.longreprtext}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        """After a notebook's last cell (its kernel still running): cache the run, or its failure."""
        path = Path(str(item.path)).resolve()
        if path not in self.book or (nextitem is not None and nextitem.parent is item.parent):
            return
        from tools.execute import SITE_ENVIRONMENT, record_run
        from tools.fingerprints import Dependencies

        notebook = item.parent
        failures = self.failures.get(path)
        nb = run = None
        if not failures:
            try:
                nb = self._executed(notebook)
                run = Dependencies.of_run(path, loaded_files(notebook.kernel), SITE_ENVIRONMENT)
            except Exception as error:  # the kernel died or could not say what it loaded
                failures = [f"after the last cell: {error!r}"]
        seconds = time.perf_counter() - self.started.get(path, time.perf_counter())
        with _locked(self.cache_path):
            cache = self._cache()
            cache.add_nb_to_project(str(path))
            record_run(cache, path, nb, "\n\n".join(failures) if failures else None, seconds, run, executor="nbval")
        if not failures:
            path.touch()  # Sphinx re-reads a page whose source is newer than its last build

    @staticmethod
    def _executed(notebook) -> nbformat.NotebookNode:
        """The notebook as nbval ran it: each code cell with the outputs nbval collected."""
        nb = nbformat.read(str(notebook.path), as_version=4)
        ran = {child.cell_num: child.test_outputs for child in notebook.session.items if child.parent is notebook}
        count = 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            if ran.get(count) is None:
                raise RuntimeError(f"cell {count} was not run")
            cell.outputs = _outputs(ran[count])
            count += 1
            cell.execution_count = count
        return nb
