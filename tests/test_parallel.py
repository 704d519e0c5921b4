"""helpers.parallel: jobs side by side give the same results, in order, as one after another."""

import pytest

import helpers
from helpers.experiments import run_degradation
from helpers.measure.paths import path_length_counts
from helpers.parallel import default_workers, run_all


def test_run_all_keeps_the_order_of_the_jobs():
    jobs = [dict(n=n) for n in (5, 1, 3, 2)]
    serial = run_all(path_length_counts, jobs, workers=1, progress=False)
    parallel = run_all(path_length_counts, jobs, workers=2, progress=False)
    assert [len(r) for r in serial] == [6, 2, 4, 3]
    assert all((a == b).all() for a, b in zip(serial, parallel))
    assert run_all(path_length_counts, [], progress=False) == []


def test_degradation_result_does_not_depend_on_the_number_of_workers():
    data = helpers.data.digits()
    one, two = (run_degradation(data, depths=(4, 6), seeds=(0,), lrs=(0.02, 0.05), epochs=1, workers=w,
                                progress=False) for w in (1, 2))
    for key in one.train_error:
        assert (one.train_error[key] == two.train_error[key]).all()
        assert (one.curves[key] == two.curves[key]).all()
        assert (one.updates[key] == two.updates[key]).all()


def test_four_workers_from_the_environment_give_the_same_numbers_as_one(monkeypatch):
    """More workers than cores (COURSE_WORKERS=4 on a 2-core machine) and one worker in a
    process with several PyTorch threads: the same nets, the same numbers, bit for bit."""
    import torch

    data = helpers.data.digits()
    args = dict(depths=(4, 6, 8), seeds=(1,), lrs=(0.01, 0.02, 0.05), epochs=1, progress=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        one = run_degradation(data, workers=1, **args)
        assert torch.get_num_threads() == 2  # the caller's thread count is put back
    finally:
        torch.set_num_threads(before)
    monkeypatch.setenv("COURSE_WORKERS", "4")
    four = run_degradation(data, **args)
    for key in one.train_error:
        assert (one.train_error[key] == four.train_error[key]).all()
        assert (one.test_error[key] == four.test_error[key]).all()


def test_a_failing_job_raises_here():
    with pytest.raises(ValueError, match="n"):
        run_all(path_length_counts, [dict(n=2), dict(n=0)], workers=2, progress=False)


def test_bad_arguments_are_named(monkeypatch):
    with pytest.raises(TypeError, match="fn must be callable"):
        run_all(42, [dict(n=1)])
    with pytest.raises(TypeError, match="jobs"):
        run_all(path_length_counts, [(1,)])
    with pytest.raises(TypeError, match="importable"):
        run_all(lambda n: n, [dict(n=1), dict(n=2)], workers=2)
    with pytest.raises(ValueError, match="workers"):
        run_all(path_length_counts, [dict(n=1)], workers=0)
    monkeypatch.setenv("COURSE_WORKERS", "many")
    with pytest.raises(ValueError, match="COURSE_WORKERS"):
        default_workers()
    monkeypatch.setenv("COURSE_WORKERS", "3")
    assert default_workers() == 3


def test_the_worker_pool_is_kept_between_calls_and_restarted_for_another_size():
    import helpers.parallel as parallel

    jobs = [dict(n=n) for n in (2, 3)]
    run_all(path_length_counts, jobs, workers=2, progress=False)
    first = parallel._pool
    run_all(path_length_counts, jobs, workers=2, progress=False)
    assert parallel._pool is first is not None  # the same workers, no second start-up
    with pytest.raises(ValueError, match="n"):  # a failing job leaves the pool usable
        run_all(path_length_counts, [dict(n=0), dict(n=1)], workers=2, progress=False)
    assert parallel._pool is first
    run_all(path_length_counts, [dict(n=2), dict(n=3), dict(n=4)], workers=3, progress=False)
    assert parallel._pool is not first
    parallel.shutdown_pool()
    assert parallel._pool is None
