import random

import numpy as np
import pytest
import torch

from helpers.seeding import default_seed, generator, isolated, seed_everything


def test_seed_everything_makes_python_numpy_and_torch_repeat():
    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    seed_everything(3)
    first = draw()
    seed_everything(3)
    assert draw() == first
    seed_everything(4)
    assert draw() != first


def test_default_seed_reads_the_environment(monkeypatch):
    monkeypatch.delenv("COURSE_SEED", raising=False)
    assert default_seed() == 0
    monkeypatch.setenv("COURSE_SEED", "7")
    assert default_seed() == 7
    assert seed_everything() == 7


def test_bad_seeds_are_rejected(monkeypatch):
    monkeypatch.setenv("COURSE_SEED", "seven")
    with pytest.raises(ValueError, match="COURSE_SEED"):
        default_seed()
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(TypeError, match="seed"):
        generator(1.5)


def test_seed_everything_sets_one_thread_unless_told_otherwise():
    before = torch.get_num_threads()
    try:
        seed_everything(0)
        assert torch.get_num_threads() == 1
        seed_everything(0, threads=2)
        assert torch.get_num_threads() == 2
        seed_everything(0, threads=None)
        assert torch.get_num_threads() == 2
        with pytest.raises(ValueError, match="threads"):
            seed_everything(0, threads=0)
    finally:
        torch.set_num_threads(before)


def test_runs_with_different_seeds_share_no_net():
    from helpers.seeding import seeds_of_run

    assert seeds_of_run(0, 3) == (0, 1, 2)
    assert seeds_of_run(1, 3) == (3, 4, 5)
    all_nets = [s for seed in range(10) for s in seeds_of_run(seed, 3)]
    assert len(set(all_nets)) == 30
    with pytest.raises(ValueError, match="n must be"):
        seeds_of_run(1, 0)
    with pytest.raises(TypeError, match="seed"):
        seeds_of_run("1", 3)


def test_isolated_draws_from_its_seed_and_restores_the_callers_state():
    torch.manual_seed(7)
    expected_next = torch.rand(2)
    torch.manual_seed(7)
    with isolated(3):
        first = torch.rand(2)
    with isolated(3):
        assert torch.equal(torch.rand(2), first)
    assert torch.equal(torch.rand(2), expected_next)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        with isolated(-1):
            pass
