"""Execute the book's notebooks once, side by side, into the cache the site build reads.

    python -m tools.execute            # every notebook in _toc.yml, seed 0; exit 1 if one fails
    python -m tools.execute --build    # then the site, from the cache (`make site`)

This is the one execution of each notebook that ``make site`` and ``make test`` share. It
fills jupyter-cache (the cache that jupyter-book's ``execute_notebooks: cache`` reads), one
notebook per CPU core, each in a fresh kernel. A notebook whose cell raises (a claim's
``assert``, say) is not cached, and its traceback is kept in the cache's project records; the
site build then executes it again and fails with it.

jupyter-cache keys an executed notebook by its code cells only. What else a run depended on
is asked of the run itself: when its last cell has run, the kernel reports the ``helpers``
modules and package data it loaded (:func:`helpers.provenance.loaded_files`), and the cache
record keeps their digests (``tools/fingerprints.py``). When the cache is opened, a record
is dropped when one of its files, the pins, the Python version or the settings changed, and
only then: a change to a chapter-5 helper re-executes the notebooks that loaded it, not the
book. The kernels' environment is fixed (:data:`SITE_ENVIRONMENT`), so a variable set in the
caller's shell cannot leak in.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from helpers.environment import MODES, mode_environment
from helpers.parallel import available_cores
from tools.fingerprints import Dependencies
from tools.toc import ROOT, toc_notebooks

CACHE = ROOT / "_build" / ".jupyter_cache"  # jupyter-book's default cache for ``jupyter-book build .``
TIMEOUT = 600  # seconds per cell; a notebook's budget is 60 s in all
# The environment of a site build's kernels: seed 0, no progress bars, checkers that show what they
# test (not the hidden solution's result), every run in the kernel's own process (the notebooks
# run side by side instead; results are the same bit for bit).
SITE_ENVIRONMENT = MODES["site"]
KERNEL_LOG = "kernels.log"  # beside the cache: what the kernels printed themselves (start-up warnings)
BUILD_LOG = "site-build.log"  # beside the cache: the last site build's whole output
# Asked of a kernel after its notebook's last cell: what the run loaded.
LOADED_FILES = "__import__('helpers.provenance', fromlist=['loaded_files']).loaded_files()"


class RecordingClient(NotebookClient):
    """An nbclient that, once the notebook's last cell has run, asks the kernel which ``helpers``
    files the run loaded (a silent request: no cell, no output, no execution count)."""

    loaded_files: list[str] | None = None

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        result = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        if cell_index == len(self.nb.cells) - 1:
            msg_id = self.kc.execute("", silent=True, store_history=False, user_expressions={"files": LOADED_FILES})
            reply = await self.async_wait_for_reply(msg_id)
            answer = reply["content"]["user_expressions"]["files"]
            if answer.get("status") != "ok":
                raise RuntimeError(f"the kernel could not say what it loaded: {answer}")
            self.loaded_files = ast.literal_eval(answer["data"]["text/plain"])
        return result


def execute_one(path: str, env: dict, log: str | None = None) -> dict:
    """Run the notebook at ``path`` in a fresh kernel with environment ``env``; return
    ``{"nb", "seconds", "files", "error"}`` (``error`` a traceback, or None). The kernel's own
    output (its start-up warnings, its shutdown) goes to the file ``log``, not the terminal."""
    nb = nbformat.read(path, as_version=4)
    client = RecordingClient(nb, timeout=TIMEOUT, kernel_name="python3", allow_errors=False, record_timing=False,
                             resources={"metadata": {"path": str(Path(path).parent)}})
    start = time.perf_counter()
    error = None
    with open(log or os.devnull, "a", encoding="utf-8") as chatter:
        try:
            client.execute(env=env, stdout=chatter, stderr=chatter)  # env: the kernel's whole environment
        except Exception:  # a cell raised or timed out, the kernel died, or it could not say what it loaded
            error = traceback.format_exc()
    return {"nb": nb, "seconds": time.perf_counter() - start, "files": client.loaded_files, "error": error}


def drop_stale(cache, root: Path = ROOT) -> dict[str, str]:
    """Remove every cached run whose recorded files, pins, Python or settings changed (or that
    has no record of them); return ``{notebook: why}`` for each one removed."""
    dropped = {}
    for record in cache.list_cache_records():
        data = record.data or {}
        uri = record.uri
        if "course_dependencies" not in data:
            why = "no record of what it loaded"
        elif not Path(uri).is_file():
            why = "the notebook is gone"
        else:
            then = Dependencies(**data["course_dependencies"])
            why = "; ".join(then.changes(then.now(Path(uri), SITE_ENVIRONMENT, root)))
        if why:
            cache.remove_cache(record.pk)
            dropped[uri] = why
    return dropped


def open_cache(path: Path = CACHE, root: Path = ROOT):
    """The jupyter-cache at ``path``, without the runs that are stale (:func:`drop_stale`)."""
    cache = read_cache(path)
    for uri, why in drop_stale(cache, root).items():
        print(f"re-executing {_name(uri, root)}: {why}", flush=True)
    return cache


def _name(uri, root: Path = ROOT) -> str:
    path = Path(uri)
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def read_cache(path: Path = CACHE):
    """The jupyter-cache at ``path``, as it is."""
    from jupyter_cache import get_cache

    return get_cache(str(path))


def record_run(cache, path: Path, nb, error: str | None, seconds: float, deps: Dependencies | None,
               **data) -> None:
    """Record one run of the notebook at ``path`` in the jupyter-cache ``cache``: its traceback
    (``error``, None when every cell passed) and, when it passed, the executed notebook ``nb``
    with the seconds it took, what it depended on (``deps``) and any other ``data``."""
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.cache.db import NbProjectRecord

    NbProjectRecord.set_traceback(str(path), error, cache.db)
    if error is None:
        bundle = CacheBundleIn(nb, str(path), data={"execution_seconds": seconds,
                                                    "course_dependencies": deps.as_dict(), **data})
        cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)


def execute_book(notebooks=None, cache_path: Path = CACHE, root: Path = ROOT) -> dict[Path, str | None]:
    """Execute every notebook not already cached; return {notebook: None, or its error}.

    Runs with :data:`SITE_ENVIRONMENT` (seed 0, as the site shows it), one notebook per
    CPU core. A notebook already in the cache, with nothing it loaded changed, is not re-run.
    """
    notebooks = [Path(p).resolve() for p in (notebooks or toc_notebooks(root))]
    cache = open_cache(cache_path, root)
    for path in notebooks:
        cache.add_nb_to_project(str(path))
    stale = [path for path in notebooks if cache.get_cached_project_nb(str(path)) is None]
    env = mode_environment("site")  # no MPLBACKEND: the kernels keep Jupyter's inline backend
    log = Path(cache_path).parent / KERNEL_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    with ProcessPoolExecutor(max_workers=max(1, min(available_cores(), len(stale)))) as pool:
        runs = {path: pool.submit(execute_one, str(path), env, str(log)) for path in stale}
        for i, (path, future) in enumerate(runs.items(), start=1):
            run = future.result()
            deps = None if run["error"] else Dependencies.of_run(path, run["files"], SITE_ENVIRONMENT, root)
            record_run(cache, path, run["nb"], run["error"], run["seconds"], deps)
            status = "ok" if run["error"] is None else "FAILED"
            print(f"[{i}/{len(stale)}] executed {_name(path, root)} in {run['seconds']:.1f} s: {status}", flush=True)
    # Sphinx re-reads a page only when its source file is newer than its last build: mark each
    # notebook that was just run, so that `make site` shows its new outputs (after a change to
    # `helpers`, say) without re-reading the whole book.
    for path in stale:
        path.touch()
    return {path: notebook_error(cache, path) for path in notebooks}


def build_book(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """``jupyter-book build ROOT -W -n --keep-going ARGS`` (warnings are errors) in the site's
    environment, the notebooks read from the cache: the site, the PDF's single page and the
    site without solutions are all built this way."""
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    return subprocess.run([jupyter_book, "build", str(root), "-W", "-n", "--keep-going", *args], cwd=root,
                          capture_output=True, text=True, env=mode_environment("site"),
                          timeout=1500)


def executed_notebook(path: Path, cache=None):
    """The notebook at ``path`` with the outputs of its cached run (``KeyError`` if none matches
    its current code)."""
    import nbformat

    cache = read_cache() if cache is None else cache
    return cache.merge_match_into_notebook(nbformat.read(path, as_version=4))[1]


def notebook_error(cache, path: Path) -> str | None:
    """None if ``path`` is in the cache (executed without error), else why not (its traceback)."""
    record = cache.get_project_record(str(path))
    if record.traceback:
        return record.traceback
    if cache.get_cached_project_nb(str(path)) is None:
        return "not executed (no cached run and no traceback)"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in _toc.yml")
    parser.add_argument("--build", action="store_true",
                        help="then build the site from the cache (build_book), as `make site` does")
    parser.add_argument("--all", action="store_true", dest="every_page",
                        help="with --build: write every page again, not only those that changed")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    errors = execute_book(args.notebooks or None)
    for path, error in errors.items():
        if error is not None:
            print(f"{path.relative_to(ROOT)} FAILED:\n{error[-3000:]}", flush=True)
    failed = sum(error is not None for error in errors.values())
    print(f"{len(errors)} notebooks executed or taken from the cache in {time.perf_counter() - start:.1f} s"
          f"{f', {failed} FAILED' if failed else ''} (the kernels' own output: {_name(CACHE.parent / KERNEL_LOG)})")
    if failed:
        return 1
    if args.build:
        print("building the site (warnings are errors) ...", flush=True)
        result = build_book(*(["--all"] if args.every_page else []))
        log = CACHE.parent / BUILD_LOG
        log.write_text(result.stdout + result.stderr, encoding="utf-8")
        if result.returncode != 0:
            problems = [line for line in (result.stdout + result.stderr).splitlines()
                        if re.search(r"WARNING|ERROR|Error|Exception", line)]
            print("\n".join(problems[-60:]) or (result.stdout + result.stderr)[-4000:], file=sys.stderr)
            print(f"the site build FAILED: the whole log is in {_name(log)}", file=sys.stderr)
            return result.returncode
        print(f"built the site: open {_name(ROOT / '_build' / 'html' / 'index.html')} (the build's log: {_name(log)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
