"""Run independent jobs (training runs, loss surfaces) side by side, one per CPU core.

The course's nets are tiny, so one PyTorch thread per run is fastest
(:func:`helpers.seeding.seed_everything`); a second core is better used for a second run.
:func:`run_all` calls ``fn(**job)`` for every job, in worker processes when more than one
core is free, and returns the results in the order of ``jobs``. Every job that trains
seeds itself and runs on one PyTorch thread (in a worker or here), so the results are the
same, bit for bit, in parallel or one after another. How an experiment is split into jobs
is the experiment's choice and never depends on the number of workers or cores: the
machine decides only how many jobs run at once.

Workers are started with ``spawn`` (the default on Windows and macOS), which works from a
Jupyter kernel as long as ``fn`` lives in an importable module (a ``helpers`` function,
not a lambda typed into a notebook). Starting one costs seconds (it imports PyTorch and
``helpers``), so the pool is kept for the next call and shut down when the process
exits. ``$COURSE_WORKERS`` caps the number of workers; ``COURSE_WORKERS=1`` runs
everything in the calling process.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import pickle
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

import torch
from tqdm.auto import tqdm

from ._checks import positive_int
from .environment import show_progress

WORKERS_VARIABLE = "COURSE_WORKERS"


def available_cores() -> int:
    """The number of CPU cores this process may run on (respects container limits)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return os.cpu_count() or 1


def default_workers() -> int:
    """``$COURSE_WORKERS`` if set, else the number of available cores."""
    raw = os.environ.get(WORKERS_VARIABLE)
    if raw is None or not raw.strip():
        return available_cores()
    try:
        return positive_int(WORKERS_VARIABLE, int(raw))
    except ValueError as err:
        raise ValueError(f"${WORKERS_VARIABLE} must be a positive integer, got {raw!r}") from err


def _init_worker() -> None:
    """One PyTorch thread per worker; Ctrl-C (Jupyter's interrupt button signals the whole
    process group) is the calling process's to handle, so workers ignore it and finish
    their current job instead of dying with a traceback."""
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def one_thread():
    """Run the body with one PyTorch thread, as every worker does, and restore the caller's count.

    A job run here must give the numbers it gives in a worker: with several threads, PyTorch
    may split a matrix product's sums differently, and they round differently."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_pool: ProcessPoolExecutor | None = None
_pool_workers = 0


def _executor(workers: int) -> ProcessPoolExecutor:
    """The process pool of ``workers`` workers, started on first use and kept for later calls."""
    global _pool, _pool_workers
    if _pool is None or _pool_workers != workers:
        shutdown_pool()
        _pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_init_worker)
        _pool_workers = workers
    return _pool


def shutdown_pool() -> None:
    """Stop the kept worker processes (done automatically when the process exits)."""
    global _pool, _pool_workers
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
    _pool, _pool_workers = None, 0


atexit.register(shutdown_pool)


def run_all(fn, jobs, *, workers: int | None = None, progress: bool | None = None,
            description: str = "runs") -> list:
    """``[fn(**job) for job in jobs]``, computed by up to ``workers`` processes at once.

    ``workers`` defaults to :func:`default_workers`; with one worker (or one job) the jobs
    run here, in order. A progress bar counts finished jobs in JupyterLab and is silent in
    a static build. An exception in a job is raised here, with the worker's traceback.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    jobs = list(jobs)
    if not all(isinstance(job, dict) for job in jobs):
        raise TypeError("jobs must be a list of dicts of keyword arguments for fn")
    workers = default_workers() if workers is None else positive_int("workers", workers)
    workers = min(workers, len(jobs)) if jobs else 1
    show = show_progress(progress)
    if workers > 1:
        try:
            pickle.dumps(fn)
        except (pickle.PicklingError, AttributeError, TypeError) as err:
            raise TypeError(f"fn must be a function importable from a module (not a lambda or a function "
                            f"defined in a notebook) to run in worker processes; got {fn!r}") from err
    results: list = [None] * len(jobs)
    with tqdm(total=len(jobs), desc=description, disable=not show, leave=False) as bar:
        if workers == 1:
            with one_thread():  # as in a worker, so that a job's numbers do not depend on where it ran
                for i, job in enumerate(jobs):
                    results[i] = fn(**job)
                    bar.update()
            return results
        pool = _executor(workers)
        futures: dict = {}
        try:
            futures = {pool.submit(fn, **job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()  # re-raises a job's exception here
                bar.update()
        except BrokenProcessPool:
            shutdown_pool()  # a worker died (killed, out of memory): start afresh next time
            raise
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results
