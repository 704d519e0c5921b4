"""helpers.parallel: jobs side by side give the same results, in order, as one after another."""

import pytest
import torch

import helpers
from helpers.experiments import run_degradation, train_twins_for_seeds
from helpers.measure.paths import path_length_counts
from helpers.parallel import default_workers, run_all


def test_run_all_keeps_the_order_of_the_jobs():
    jobs = [dict(n=n) for n in (5, 1, 3, 2)]
    serial = run_all(path_length_counts, jobs, workers=1, progress=False)
    parallel = run_all(path_length_counts, jobs, workers=2, progress=False)
    assert [len(r) for r in serial] == [6, 2, 4, 3]
    assert all((a == b).all() for a, b in zip(serial, parallel))
    assert run_all(path_length_counts, [], progress=False) == []


def test_parallel_training_is_bit_for_bit_the_serial_one():
    data = helpers.data.digits()
    serial = train_twins_for_seeds(data, 6, (0, 1), epochs=1, workers=1)
    parallel = train_twins_for_seeds(data, 6, (0, 1), epochs=1, workers=2)
    for one, other in zip(serial, parallel):
        for kind in ("plain", "residual"):
            a, b = one[kind][0].state_dict(), other[kind][0].state_dict()
            assert all(torch.equal(a[k], b[k]) for k in a), kind
            assert one[kind][1].train_error == other[kind][1].train_error
    assert not torch.equal(serial[0]["plain"][0].head.weight, serial[1]["plain"][0].head.weight)


def test_degradation_result_does_not_depend_on_the_number_of_workers():
    data = helpers.data.digits()
    one, two = (run_degradation(data, depths=(4, 6), seeds=(0,), epochs=1, workers=w, progress=False)
                for w in (1, 2))
    for key in one.train_error:
        assert (one.train_error[key] == two.train_error[key]).all()
        assert (one.curves[key] == two.curves[key]).all()


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


def test_twins_trained_one_net_per_job_are_the_twins_trained_together():
    """train_twins_for_seeds splits each seed's pair into two jobs; the nets are the same, bit for bit."""
    from helpers.experiments.twins import train_twin

    data = helpers.data.digits()
    together = {}
    helpers.seed_everything(3)
    residual = helpers.models.DeepMLP(6, 32, kind="residual", in_features=data.n_features, n_classes=data.n_classes)
    plain = residual.twin()
    for model in (plain, residual):
        helpers.training.fit(model, data.x_train, data.y_train, epochs=1, lr=0.05, seed=3, progress=False)
        together[model.kind] = model
    for kind in ("plain", "residual"):
        alone, _ = train_twin(data, 6, kind, seed=3, epochs=1)
        a, b = alone.state_dict(), together[kind].state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), kind
    with pytest.raises(ValueError, match="kind"):
        train_twin(data, 6, "dense", seed=3, epochs=1)
