"""Execute the book's notebooks once, side by side, into the cache the site build reads.

    python tools/execute.py            # every notebook in _toc.yml, seed 0; exit 1 if one fails
    python tools/execute.py --build    # then the site, from the cache (`make site`)

This is the one execution of each notebook that ``make site`` and ``make test`` share.
It uses jupyter-cache (the cache that jupyter-book's ``execute_notebooks: cache`` reads)
and its ``local-parallel`` executor, one notebook per CPU core. A notebook whose cell
raises (a claim's ``assert``, say) is not cached, and its traceback is kept in the
cache's project records; the site build then executes it again and fails with it.

jupyter-cache keys an executed notebook by its code cells only, so a change to the
``helpers`` package would otherwise leave stale results in the cache. The cache is
therefore stamped with a fingerprint of everything outside the notebook that a run
depends on (the ``helpers`` sources, the pinned requirements and the Python version) and
emptied when that fingerprint changes. The kernels' environment is fixed
(:data:`SITE_ENVIRONMENT`), so a variable set in the caller's shell cannot leak in.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.toc import ROOT, toc_notebooks  # noqa: E402

CACHE = ROOT / "_build" / ".jupyter_cache"  # jupyter-book's default cache for ``jupyter-book build .``
FINGERPRINT_FILE = "course-fingerprint"
TIMEOUT = 600  # seconds per cell; a notebook's budget is 60 s in all
# The environment of a site build's kernels: seed 0, no progress bars, checkers that show what they
# test (not the hidden solution's result), every run in the kernel's own process (the notebooks
# run side by side instead; results are the same bit for bit).
SITE_ENVIRONMENT = {"COURSE_STATIC_BUILD": "1", "COURSE_SITE": "1", "COURSE_SEED": "0", "COURSE_WORKERS": "1"}


def fingerprint(root: Path = ROOT) -> str:
    """SHA-256 of what a notebook's outputs depend on besides its own code cells."""
    digest = hashlib.sha256()
    files = sorted((root / "helpers").rglob("*.py")) + [root / "requirements.txt"]
    for path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    digest.update(repr(sorted(SITE_ENVIRONMENT.items())).encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def open_cache(path: Path = CACHE):
    """The jupyter-cache at ``path``, emptied first if it was filled by other code or settings."""
    cache = read_cache(path)
    stamp = Path(path) / FINGERPRINT_FILE
    current = fingerprint()
    if not stamp.exists() or stamp.read_text() != current:
        cache.clear_cache()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    return cache


def read_cache(path: Path = CACHE):
    """The jupyter-cache at ``path``, as it is."""
    from jupyter_cache import get_cache

    return get_cache(str(path))


def execute_book(notebooks=None, cache_path: Path = CACHE) -> dict[Path, str | None]:
    """Execute every notebook not already cached; return {notebook: None, or its error}.

    Runs with :data:`SITE_ENVIRONMENT` (seed 0, as the site shows it), one notebook per
    CPU core. A notebook already in the cache for the current fingerprint is not re-run.
    """
    from jupyter_cache.executors import load_executor

    notebooks = [Path(p).resolve() for p in (notebooks or toc_notebooks(ROOT))]
    cache = open_cache(cache_path)
    for path in notebooks:
        cache.add_nb_to_project(str(path))
    logger = logging.getLogger("course.execute")
    logger.setLevel(logging.INFO)  # jupyter-cache then reports one line per notebook, not every worker event
    stale = [path for path in notebooks if cache.get_cached_project_nb(str(path)) is None]
    executor = load_executor("local-parallel", cache, logger=logger)
    with site_environment():  # the kernels inherit this process's environment
        executor.run_and_cache(filter_uris=[str(p) for p in notebooks], timeout=TIMEOUT, allow_errors=False)
    # Sphinx re-reads a page only when its source file is newer than its last build: mark each
    # notebook that was just run, so that `make site` shows its new outputs (after a change to
    # `helpers`, say) without re-reading the whole book.
    for path in stale:
        path.touch()
    return {path: notebook_error(cache, path) for path in notebooks}


@contextmanager
def site_environment():
    """Set :data:`SITE_ENVIRONMENT` for the duration; unset the claims-only switch and any
    ``MPLBACKEND`` (the kernels must keep Jupyter's inline backend, or no figure is shown)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_without_claims_only_switches(saved))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _without_claims_only_switches(environ) -> dict[str, str]:
    """``environ`` with :data:`SITE_ENVIRONMENT` set, and without the claims-only switch and any
    ``MPLBACKEND`` (the kernels must keep Jupyter's inline backend, or no figure is shown)."""
    env = {k: v for k, v in environ.items() if k not in ("COURSE_CLAIMS_ONLY", "MPLBACKEND")}
    env.update(SITE_ENVIRONMENT)
    return env


def build_book(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    """``jupyter-book build ROOT -W -n --keep-going ARGS`` (warnings are errors) in the site's
    environment, the notebooks read from the cache: the site, the PDF's single page and the
    site without solutions are all built this way."""
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    return subprocess.run([jupyter_book, "build", str(root), "-W", "-n", "--keep-going", *args], cwd=root,
                          capture_output=True, text=True, env=_without_claims_only_switches(os.environ),
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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    errors = execute_book(args.notebooks or None)
    for path, error in errors.items():
        status = "ok" if error is None else "FAILED\n" + error[-3000:]
        print(f"{path.relative_to(ROOT)}: {status}", flush=True)
    print(f"{len(errors)} notebooks in {time.perf_counter() - start:.1f} s")
    if any(errors.values()):
        return 1
    if args.build:
        result = build_book()
        print(result.stdout, end="")
        print(result.stderr, end="", file=sys.stderr)
        return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
