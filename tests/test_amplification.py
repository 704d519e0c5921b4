"""Amplification: how far one step of a given size moves a net's output."""

import numpy as np
import pytest
import torch

from helpers.experiments.amplification import amplification_by_depth
from helpers.measure.amplification import random_signs, relative_output_change, sign_directions
from helpers.plots.amplification import amplification_by_depth as plot_amplification


def test_known_answer_on_a_linear_map():
    w = torch.nn.Parameter(torch.eye(3))
    x = torch.tensor([1.0, 2.0, 2.0])  # ||W x|| = 3

    def f():
        return w @ x

    # every entry of W moves by 0.1: the output moves by 0.1 * (sum of x) in each of 3 rows
    change = relative_output_change(f, [w], [torch.ones(3, 3)], 0.1)
    assert change == pytest.approx(0.1 * 5 * np.sqrt(3) / 3)
    assert torch.equal(w.detach(), torch.eye(3))  # the parameters are put back


def test_directions_are_signs():
    w = torch.nn.Parameter(torch.zeros(2, 4))
    signs = random_signs([w], generator=torch.Generator().manual_seed(0))[0]
    assert set(signs.unique().tolist()) <= {-1.0, 1.0} and signs.shape == w.shape
    w.grad = torch.tensor([[3.0, -2.0, 0.0, 1e-6]] * 2)
    assert sign_directions([w])[0][0].tolist() == [-1.0, 1.0, 0.0, -1.0]
    assert sign_directions([torch.nn.Parameter(torch.ones(2))])[0].tolist() == [0.0, 0.0]  # no gradient


def test_bad_input_is_refused():
    w = torch.nn.Parameter(torch.ones(2))

    def f():
        return w * 1.0

    with pytest.raises(ValueError, match="size"):
        relative_output_change(f, [w], [torch.ones(2)], 0.0)
    with pytest.raises(ValueError, match="direction"):
        relative_output_change(f, [w], [torch.ones(3)], 0.1)
    with pytest.raises(TypeError, match="f must be callable"):
        relative_output_change(None, [w], [torch.ones(2)], 0.1)
    with pytest.raises(TypeError, match="params"):
        relative_output_change(f, [], [], 0.1)
    with pytest.raises(TypeError, match="generator"):
        random_signs([w], generator=0)
    zero = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match="not zero"):
        relative_output_change(lambda: zero * 1.0, [zero], [torch.ones(2)], 0.1)


def test_amplification_by_depth_runs_and_draws():
    results = amplification_by_depth((1, 2), ("Post-LN", "Pre-LN"), n_nets=1, batch=4)
    assert [r.design for r in results] == ["Post-LN", "Pre-LN"]
    for r in results:
        assert r.random.shape == (2,) and np.all(r.random > 0) and np.all(r.adam > 0)
    smaller = amplification_by_depth((2,), ("Post-LN",), n_nets=1, batch=4, step=5e-5)[0]
    assert smaller.adam[0] < results[0].adam[1]  # a smaller step moves the output less
    assert plot_amplification(results, title="A finding").axes
    with pytest.raises(ValueError, match="designs"):
        amplification_by_depth((2,), ("Sandwich-LN",))
    with pytest.raises(ValueError, match="step"):
        amplification_by_depth((2,), step=-1.0)
    with pytest.raises(ValueError, match="results"):
        plot_amplification([], title="A finding")
