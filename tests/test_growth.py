"""Chapter 5's growth of a gradient through N residual layers y = x + eps f(x), and its figures."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch import nn

from helpers.measure.growth import (
    GrowthRun,
    aligned_growth,
    backward_growth,
    backward_step,
    bank_branch,
    branch_masks,
    branch_vjp,
    he_branch,
    high_dim_growth,
    one_dimensional_growth,
)
from helpers.models.mlp import Block
from helpers.plots.growth import exponent_sweep, growth_by_layer, growth_grid, one_dimensional_spread


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One thread, as the notebooks run (helpers.seed_everything): these small products are
    many times slower when two threads contend for a busy machine's cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _block(w1, w2, eps=1.0):
    """The course's pre-activation block without norm, with the given branch weights."""
    block = Block(w1.shape[1], residual=True, norm="none", order="pre", init="he", branch_scale=eps).double()
    with torch.no_grad():
        block.fc1.weight.copy_(w1)
        block.fc2.weight.copy_(w2)
    assert not block.fc1.bias.any() and not block.fc2.bias.any()  # He init: biases start at 0
    return block


def test_he_branch_draws_blocks_variances():
    w1, w2 = he_branch(512, 256, generator=torch.Generator().manual_seed(0))
    assert w1.shape == (256, 512) and w2.shape == (512, 256)
    assert w1.var().item() == pytest.approx(2 / 512, rel=0.02)
    assert w2.var().item() == pytest.approx(2 / 256, rel=0.02)
    a, b = bank_branch(3, 7, 64), bank_branch(3, 7, 64)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])  # a layer of the bank can be drawn again
    assert not torch.equal(a[0], bank_branch(3, 8, 64)[0]) and not torch.equal(a[0], bank_branch(4, 7, 64)[0])


def test_the_vector_jacobian_product_is_autograds_through_the_blocks_branch():
    g = torch.Generator().manual_seed(1)
    w1, w2 = (w.double() for w in he_branch(32, generator=g))
    block = _block(w1, w2)
    x = torch.randn(5, 32, generator=g, dtype=torch.float64)
    v = torch.randn(5, 32, generator=g, dtype=torch.float64)
    by_hand = branch_vjp(v, branch_masks(x, w1), w1, w2)
    point = x.clone().requires_grad_()
    (block.branch(point) * v).sum().backward()  # the rows are independent: row i's grad is v_i J(x_i)
    torch.testing.assert_close(by_hand, point.grad, rtol=1e-12, atol=1e-12)
    # one point for all rows
    point = x[0].clone().requires_grad_()
    (block.branch(point) * v[2]).sum().backward()
    torch.testing.assert_close(branch_vjp(v, branch_masks(x[0], w1), w1, w2)[2], point.grad)
    step, gain = backward_step(v, branch_masks(x, w1), w1, w2, 0.3)
    torch.testing.assert_close(step, v + 0.3 * by_hand)
    torch.testing.assert_close(gain, by_hand.pow(2).sum(1) / v.pow(2).sum(1))


def test_the_growth_is_autograds_gradient_through_the_whole_stack():
    """Rebuild the stack from the bank as Blocks with branch_scale eps; backprop each v to the input."""
    eps, depth, width, seed = 0.4, 5, 16, 2
    [run] = backward_growth([(eps, depth)], width=width, vectors=3, seed=seed)
    stack = nn.Sequential(*(_block(*(w.double() for w in bank_branch(seed, layer, width)), eps=eps)
                            for layer in range(depth)))
    start = torch.Generator().manual_seed(seed)
    x = torch.randn(3, width, generator=start).double().requires_grad_()
    v = torch.randn(3, width, generator=start).double()
    (stack(x) * v).sum().backward()
    expected = x.grad.pow(2).sum(1) / v.pow(2).sum(1)
    np.testing.assert_allclose(run.log_growth[-1], np.log(expected.numpy()), rtol=1e-4, atol=1e-5)
    assert run.final == pytest.approx(expected.mean().item(), rel=1e-4)
    assert run.log_growth.shape == run.log_aligned.shape == (depth + 1, 3) and run.gains.shape == (depth,)
    assert np.all(run.log_growth[0] == 0) and run.growth[0] == 1


def test_no_branch_no_growth_and_the_aligned_growth_uses_the_measured_gains():
    zero, one = backward_growth([(0.0, 8), (1.0, 8)], width=32, vectors=4, seed=0)
    # 1 exactly in exact arithmetic; float32 norms round differently from one processor to the next
    np.testing.assert_allclose(zero.growth, 1.0, rtol=1e-5)
    np.testing.assert_allclose(zero.aligned, 1.0, rtol=1e-5)
    assert zero.gains.shape == (8,) and np.all(one.gains > 0)
    # the aligned growth is prod (1 + eps sqrt(q))^2: at least the growth when all gains are 1 or more
    per_layer = np.diff(one.log_aligned, axis=0)
    assert np.all(per_layer > 0) and np.all(per_layer < 2 * np.log1p(3.0))


def test_stacks_share_the_bank_and_a_seed_repeats_its_numbers():
    a = backward_growth([(0.5, 4), (0.25, 16)], width=32, seed=3)
    b = backward_growth([(0.25, 16)], width=32, seed=3)
    np.testing.assert_array_equal(a[1].log_growth, b[0].log_growth)
    c = backward_growth([(0.25, 16)], width=32, seed=4)
    assert not np.array_equal(b[0].log_growth, c[0].log_growth)


def test_huge_growth_neither_overflows_nor_loses_its_size():
    [run] = backward_growth([(1.0, 256)], width=64, vectors=4, seed=0)
    assert math.isfinite(math.log(run.final)) and run.final > 1e50
    assert run.aligned_final > run.final


def test_in_high_dimension_the_growth_is_about_one_plus_eps_squared_per_layer():
    runs = backward_growth([(0.25, 16), (0.5, 16)], width=256, vectors=16, seed=0)
    for run in runs:
        assert 1 / 1.5 < run.final / high_dim_growth(run.eps, run.depth) < 1.5
        assert 0.8 < np.mean(run.gains) < 1.2  # He init: E ||v J||^2 = ||v||^2


def test_the_formulas():
    assert high_dim_growth(0.5, 4) == pytest.approx(1.25 ** 4)
    assert aligned_growth(0.5, 4) == pytest.approx(1.5 ** 8)
    assert high_dim_growth(1 / math.sqrt(10 ** 6), 10 ** 6) == pytest.approx(math.e, rel=1e-5)
    assert aligned_growth(1e-6, 10 ** 6) == pytest.approx(math.e ** 2, rel=1e-5)
    assert high_dim_growth(0.3, 0) == aligned_growth(0.3, 0) == 1.0


def test_one_dimensional_stacks():
    growth, slopes = one_dimensional_growth(0.2, 6, stacks=20_000, generator=torch.Generator().manual_seed(0))
    assert growth.shape == (20_000,) and slopes.shape == (20_000, 6)
    np.testing.assert_allclose(growth, np.prod((1 + 0.2 * slopes) ** 2, axis=1), rtol=1e-10)
    assert abs(slopes.mean()) < 0.02 and (slopes ** 2).mean() == pytest.approx(1.0, rel=0.05)
    assert growth.mean() == pytest.approx(high_dim_growth(0.2, 6), rel=0.05)
    still, _ = one_dimensional_growth(0.0, 3, stacks=10)
    np.testing.assert_array_equal(still, 1.0)


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: backward_growth([]), ValueError, "settings must not be empty"),
    (lambda: backward_growth([0.5]), TypeError, r"settings\[0\] must be a pair"),
    (lambda: backward_growth([(-0.1, 4)]), ValueError, r"settings\[0\] eps"),
    (lambda: backward_growth([(0.1, 0)]), ValueError, r"settings\[0\] depth"),
    (lambda: backward_growth([(0.1, 4)], width=1), ValueError, "width"),
    (lambda: backward_growth([(0.1, 4)], vectors=0), ValueError, "vectors"),
    (lambda: backward_growth([(0.1, 4)], seed=-1), ValueError, "seed"),
    (lambda: high_dim_growth(float("nan"), 3), ValueError, "eps"),
    (lambda: aligned_growth(0.1, 2.5), TypeError, "depth"),
    (lambda: one_dimensional_growth(0.1, 4, stacks=0), ValueError, "stacks"),
    (lambda: he_branch(0), ValueError, "width"),
    (lambda: branch_vjp(torch.zeros(2, 3), (torch.zeros(4), torch.zeros(4)), torch.zeros(4, 4),
                        torch.zeros(4, 4)), ValueError, "shapes do not fit"),
])
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.fixture(scope="module")
def runs():
    return backward_growth([(1 / n, n) for n in (4, 16)] + [(n ** -0.5, n) for n in (4, 16)], width=32,
                           vectors=4, seed=0)


def test_the_figures_have_titles_and_labelled_axes(runs):
    by_rule = {"ε = 1/N": runs[:2], "ε = 1/√N": runs[2:]}
    figures = [
        growth_grid(by_rule, title="the grid"),
        exponent_sweep({0.5: runs[2:], 0.75: runs[:2]}, title="the boundary"),
        growth_by_layer(runs[3], title="one stack"),
        one_dimensional_spread(np.array([0.5, 1.0, 3.0]), eps=0.25, depth=16, high_dim=2.6, title="1-D"),
    ]
    for fig in figures:
        titles = [t.get_text() for t in fig.texts] + [ax.get_title() for ax in fig.axes]
        assert any(titles)
        assert all(ax.get_xlabel() for ax in fig.axes)
        plt.close(fig)


def test_the_figures_refuse_what_they_cannot_draw(runs):
    with pytest.raises(TypeError, match="panels"):
        growth_grid([], title="t")
    with pytest.raises(TypeError, match="GrowthRun"):
        growth_grid({"a": [1, 2]}, title="t")
    with pytest.raises(TypeError, match="runs_by_exponent"):
        exponent_sweep({}, title="t")
    with pytest.raises(ValueError, match="positive growths"):
        one_dimensional_spread(np.array([0.0, 1.0]), eps=0.1, depth=4, high_dim=1.0, title="t")
    with pytest.raises(ValueError, match="title"):
        growth_by_layer(runs[0], title="")
    assert isinstance(runs[0], GrowthRun)
