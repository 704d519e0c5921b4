"""Chapter 3's real Add & Norm: the sublayers, the stability map, the gradient at each sum."""

import matplotlib
import numpy as np
import pytest
import torch
from torch.nn import functional as F

import helpers
from helpers.experiments.add_norm_stability import (
    ARCHITECTURES,
    AddNormMLP,
    StabilityMap,
    stability_map,
    sublayer_gradients,
)
from helpers.measure.skip_gradient import skip_path_gradients
from helpers.plots.add_norm_stability import stability_heatmap, sublayer_gradient_profiles
from helpers.plots.style import MIN_FONT_PT, smallest_font_pt
from helpers.seeding import isolated

matplotlib.use("agg")


def _digits(n=64):
    data = helpers.data.digits()
    return data.x_train[:n], data.y_train[:n]


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_recorded_forward_is_the_forward(architecture):
    x, _ = _digits(16)
    with isolated(0):
        net = AddNormMLP(architecture, blocks=3, width=8)
    logits, sums, top = net.recorded_forward(x)
    assert torch.allclose(logits, net(x)) and len(sums) == 3 and top.shape == (16, 8)


def test_the_sublayers_are_the_four_orders():
    x = torch.randn(5, 8)
    with isolated(1):
        post, pre, bare, rezero = (AddNormMLP(a, blocks=1, width=8) for a in ARCHITECTURES)
    for net, expected in (
        (post, lambda b, h: F.layer_norm(h + b.branch(h), (8,), b.norm.weight, b.norm.bias)),
        (pre, lambda b, h: h + b.branch(F.layer_norm(h, (8,), b.norm.weight, b.norm.bias))),
        (bare, lambda b, h: h + b.branch(h)),
        (rezero, lambda b, h: h),  # the gate starts closed: the identity
    ):
        assert torch.allclose(net.blocks[0](x), expected(net.blocks[0], x), atol=1e-6)


def test_the_initial_scale_multiplies_the_last_layer_of_each_branch():
    x, _ = _digits(32)
    with isolated(2):
        one = AddNormMLP("Post-LN", blocks=2, width=8)
    with isolated(2):
        four = AddNormMLP("Post-LN", blocks=2, width=8, scale=4.0)
    assert torch.allclose(four.blocks[1].fc2.weight, 4 * one.blocks[1].fc2.weight)
    assert torch.allclose(four.blocks[1].fc2.bias, 4 * one.blocks[1].fc2.bias)
    # the first sublayer sees the same stem output, so its correction is 4 times larger
    assert four.branch_ratios(x)[0] == pytest.approx(4 * one.branch_ratios(x)[0], rel=1e-5)
    with isolated(2):
        gate = AddNormMLP("ReZero", blocks=2, width=8)
    assert np.all(gate.branch_ratios(x) == 0)


def test_bad_nets_are_named():
    with pytest.raises(ValueError, match="architecture"):
        AddNormMLP("Mid-LN")
    with pytest.raises(ValueError, match="scale"):
        AddNormMLP("Post-LN", scale=0.0)
    with pytest.raises(ValueError, match="blocks"):
        AddNormMLP("Pre-LN", blocks=0)


def test_a_net_of_the_map_trains_as_it_would_alone():
    """The ReZero gate has a member axis in a stack: each member still trains on its own."""
    x, y = _digits(64)
    together = stability_map(x, y, rows=[("ReZero", 1.0)], lrs=[0.01, 0.05], seeds=[3], blocks=2, width=8,
                             epochs=2, progress=False)
    for lr in (0.01, 0.05):
        alone = stability_map(x, y, rows=[("ReZero", 1.0)], lrs=[lr], seeds=[3], blocks=2, width=8,
                              epochs=2, progress=False)
        assert np.allclose(together.final("ReZero", 1.0, lr), alone.final("ReZero", 1.0, lr), rtol=1e-5)


def test_the_map_records_every_cell_and_marks_divergence():
    x, y = _digits(256)
    smap = stability_map(x, y, rows=[("no norm", 8.0), ("Pre-LN", 1.0)], lrs=[0.01, 50.0], seeds=[0, 1],
                         blocks=3, width=8, epochs=3, progress=False)
    assert isinstance(smap, StabilityMap) and len(smap.runs) == 8
    assert [(r.architecture, r.lr, r.seed) for r in smap.runs[:4]] == [
        ("no norm", 0.01, 0), ("no norm", 50.0, 0), ("no norm", 0.01, 1), ("no norm", 50.0, 1)]
    assert np.all(np.isfinite(smap.final("Pre-LN", 1.0, 0.01)))
    assert smap.worst("no norm", 8.0, 50.0) == np.inf and smap.of("no norm", 8.0, 50.0)[0].outcome == "diverged"
    with pytest.raises(ValueError, match="no cell"):
        smap.worst("Post-LN", 1.0, 0.01)
    grid = smap.grid()
    assert grid.shape == (2, 2) and np.isnan(grid[0, 1]) and np.isfinite(grid[1, 0])
    fig = stability_heatmap(smap, title="A map")
    assert smallest_font_pt(fig) >= MIN_FONT_PT
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "diverged" in texts and "SGD" in fig.axes[0].get_xlabel()


def test_a_warm_up_column_trains_its_nets_as_fit_would_with_that_warm_up():
    x, y = _digits(64)
    smap = stability_map(x, y, rows=[("Post-LN", 2.0)], lrs=[0.05], warmup_lrs=[0.5], warmup_steps=3,
                         seeds=[4], blocks=2, width=8, epochs=2, progress=False)
    assert smap.columns() == [(0.05, False), (0.5, True)] and smap.warmup_steps == 3
    assert [r.warmup for r in smap.runs] == [0, 3]
    with isolated(4):
        net = AddNormMLP("Post-LN", blocks=2, width=8, scale=2.0)
    alone = helpers.training.fit(net, x, y, epochs=2, lr=0.5, seed=4, warmup_steps=3, progress=False)
    assert np.allclose(smap.final("Post-LN", 2.0, 0.5, warmup=True), alone.train_loss[-1], rtol=1e-5)
    # the constant-rate column is the map without warm-up columns
    plain = stability_map(x, y, rows=[("Post-LN", 2.0)], lrs=[0.05], seeds=[4], blocks=2, width=8, epochs=2,
                          progress=False)
    assert np.allclose(smap.final("Post-LN", 2.0, 0.05), plain.final("Post-LN", 2.0, 0.05), rtol=1e-5)
    assert plain.columns() == [(0.05, False)] and plain.warmup_steps == 0
    with pytest.raises(ValueError, match="no cell"):
        smap.worst("Post-LN", 2.0, 0.05, warmup=True)
    with pytest.raises(ValueError, match="no cell"):
        plain.final("Post-LN", 2.0, 0.5, warmup=True)
    assert smap.grid().shape == (1, 2)
    fig = stability_heatmap(smap, title="A map with a warm-up")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["0.05", "0.5\nwarm-up"] and "first 3 steps" in fig.axes[0].get_xlabel()
    assert smallest_font_pt(fig) >= MIN_FONT_PT


def test_bad_maps_are_named():
    x, y = _digits(8)
    with pytest.raises(ValueError, match="rows"):
        stability_map(x, y, rows=[("Post-LN", -1.0)], lrs=[0.1])
    with pytest.raises(ValueError, match="lrs"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[])
    with pytest.raises(ValueError, match="optimizer"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[0.1], optimizer="lion")
    with pytest.raises(TypeError, match="warmup_lrs"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[0.1], warmup_lrs="0.5", warmup_steps=2)
    with pytest.raises(ValueError, match="warmup_lrs"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[0.1], warmup_lrs=[-0.5], warmup_steps=2)
    with pytest.raises(ValueError, match="warmup_steps"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[0.1], warmup_lrs=[0.5])
    with pytest.raises(TypeError, match="warmup_steps"):
        stability_map(x, y, rows=[("Post-LN", 1.0)], lrs=[0.1], warmup_lrs=[0.5], warmup_steps=2.5)


def test_skip_path_gradients_is_the_whole_gradient_when_the_branches_are_zero():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(6, dtype=torch.float64)
    x0 = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    s1 = x0 * 1.0  # branches that return 0: the sum is the input
    s2 = ln(s1) * 1.0
    top = ln(s2)
    w = torch.randn(4, 6, dtype=torch.float64)
    g_top = torch.autograd.grad((top * w).sum(), [s1, s2, top], retain_graph=True)
    along = skip_path_gradients([ln, ln], [s1, s2], w)
    assert torch.allclose(along[0], g_top[0]) and torch.allclose(along[1], g_top[1])
    # no norm on the path (Pre-LN): the top gradient itself, at every sum
    assert all(torch.equal(g, w) for g in skip_path_gradients([None, None], [s1, s2], w))
    # two features: LayerNorm passes almost nothing back
    tiny = skip_path_gradients([lambda v: F.layer_norm(v, (2,))], [torch.tensor([0.8, 0.3])], torch.tensor([1.0, 0.0]))
    assert tiny[0].norm() < 1e-3


def test_skip_path_gradients_rejects_bad_input():
    s = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="equal length"):
        skip_path_gradients([None], [s, s], s)
    with pytest.raises(TypeError, match="functions"):
        skip_path_gradients(["ln"], [s], s)
    with pytest.raises(ValueError, match="shape"):
        skip_path_gradients([None], [torch.zeros(2, 4)], s)
    with pytest.raises(TypeError, match="tensors"):
        skip_path_gradients([None], [s], s.numpy())


def test_sublayer_gradients_match_autograd_and_the_skip_path():
    x, y = _digits(32)
    post = sublayer_gradients(x, y, architecture="Post-LN", blocks=3, width=8, hidden=16, seeds=[0, 1])
    pre = sublayer_gradients(x, y, architecture="Pre-LN", blocks=3, width=8, hidden=16, seeds=[0])
    assert post.arriving.shape == (2, 3) and pre.arriving.shape == (1, 3)
    # the gradient reaching a sum is the one reaching the branch's output (autograd's hook)
    with isolated(0):
        net = AddNormMLP("Post-LN", blocks=3, width=8, hidden=16)
    profile = helpers.measure.gradient_profile(net, F.cross_entropy, x, y,
                                               layers=[(str(i), b.fc2) for i, b in enumerate(net.blocks)])
    assert np.allclose(post.arriving[0], profile.output, rtol=1e-5)
    # at the last sum both quantities are one; in Pre-LN the skips carry the top gradient itself
    assert np.allclose(post.skip_only[:, -1], post.arriving[:, -1], rtol=1e-6)
    assert np.allclose(pre.skip_only[0], pre.arriving[0, -1], rtol=1e-6)
    # what the skips alone bring is all that arrives at the last sublayer, and in Pre-LN less
    # than all further down (the branches add their share)
    for profile in (post, pre):
        assert profile.skip_share()[-1] == pytest.approx(1.0, rel=1e-6)
    assert np.all(pre.skip_share()[:-1] < 1)
    fig = sublayer_gradient_profiles([post, pre], title="Profiles")
    assert len(fig.axes[0].lines) == 4
    with pytest.raises(ValueError, match="architecture"):
        sublayer_gradients(x, y, architecture="Sandwich-LN")
    with pytest.raises(ValueError, match="batch"):
        sublayer_gradients(x[0], y, architecture="Post-LN")
    with pytest.raises(ValueError, match="at least one"):
        sublayer_gradient_profiles([], title="Nothing")
