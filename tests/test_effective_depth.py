"""Chapter 3's trained nets: which blocks switch off, the gradient along the merges, the
init-scale profile, and their figures."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import helpers
from helpers import plots
from helpers.experiments import effective_depth, rank_agreement, scale_profile
from helpers.experiments.effective_depth import carve_validation, decay_sweep
from helpers.experiments.joins import JoinRun
from helpers.measure.cost import stream_gradient_norms
from helpers.models import JoinedMLP
from helpers.plots.style import MIN_FONT_PT, smallest_font_pt


@pytest.fixture(scope="module")
def nets():
    data = helpers.data.digits()
    torch.manual_seed(7)
    before = torch.rand(1)
    torch.manual_seed(7)
    runs = effective_depth(data, weight_decay=5e-3, seeds=[0, 1], depth=8, epochs=2, progress=False)
    assert torch.equal(torch.rand(1), before), "the caller's random state is left alone"
    return data, runs


def test_effective_depth_chooses_on_validation_and_scores_on_test(nets):
    data, runs = nets
    _, x_val, y_val = carve_validation(data)
    assert [r.seed for r in runs] == [0, 1]
    for run in runs:
        assert run.ratios.shape == run.initial_ratios.shape == run.lesion.shape == (3,)
        assert run.cheap == [i for i in range(3) if run.lesion[i] < run.threshold]
        assert run.effective_depth == 3 - len(run.cheap)
        expected = helpers.measure.error_rate(run.model, data.x_test, data.y_test, skip=run.cheap)
        assert run.joint_error == expected and run.joint_cost == pytest.approx(expected - run.test_error)
        # the lesion is the rise of the *validation* loss when one block is deleted
        run.model.eval()
        with torch.no_grad():
            loss = torch.nn.functional.cross_entropy(run.model(x_val), y_val)
            without = torch.nn.functional.cross_entropy(run.model(x_val, skip=[1]), y_val)
        assert run.lesion[1] == pytest.approx(float(without - loss), abs=1e-6)


def test_the_same_seed_draws_the_same_net(nets):
    data, runs = nets
    again = effective_depth(data, weight_decay=5e-3, seeds=[0], depth=8, epochs=2, progress=False)[0]
    assert np.allclose(again.initial_ratios, runs[0].initial_ratios)
    assert np.allclose(again.ratios, runs[0].ratios, atol=1e-5)


def test_carve_validation_holds_out_a_share_of_each_class():
    data = helpers.data.digits()
    train, x_val, y_val = carve_validation(data, 0.2)
    assert len(train.x_train) + len(x_val) == len(data.x_train) and torch.equal(train.x_test, data.x_test)
    for c in range(10):
        n = int((data.y_train == c).sum())
        assert int((y_val == c).sum()) == round(0.2 * n)
    # the two sides are the training images, each exactly once: as multisets of rows, train +
    # validation equals the original training set
    def rows(x):
        return sorted(tuple(r.tolist()) for r in x)
    assert rows(torch.cat([train.x_train, x_val])) == rows(data.x_train)
    again = carve_validation(data, 0.2)
    assert torch.equal(again[1], x_val)  # a fixed split
    with pytest.raises(ValueError, match="fraction"):
        carve_validation(data, 1.0)
    with pytest.raises(TypeError, match="DataSplit"):
        carve_validation((data.x_train, data.y_train))


def test_fit_with_a_weight_decay_per_net_trains_each_as_it_would_alone():
    from helpers.models.mlp import DeepMLP
    from helpers.seeding import isolated
    from helpers.training import fit

    data = helpers.data.digits()
    x, y = data.x_train[:300], data.y_train[:300]

    def net(seed):
        with isolated(seed):
            return DeepMLP(8, 16, kind="residual", norm="batch", order="pre")

    alone = [net(3), net(4)]
    fit(alone[0], x, y, epochs=2, lr=0.05, seed=3, weight_decay=5e-3, progress=False)
    fit(alone[1], x, y, epochs=2, lr=0.05, seed=4, weight_decay=1e-4, progress=False)
    together = [net(3), net(4), net(3)]
    fit(together, x, y, weight_decay=[5e-3, 1e-4, 0.0], seed=[3, 4, 3], epochs=2, lr=0.05, progress=False)
    for a, b in zip(alone, together):
        for p, q in zip(a.state_dict().values(), b.state_dict().values()):
            assert torch.allclose(p.float(), q.float(), atol=1e-5)
    # the third net differs from the first only in its decay, and that shows
    assert not torch.allclose(together[0].head.weight, together[2].head.weight, atol=1e-4)
    with pytest.raises(ValueError, match="weight_decay must be one value or one per net"):
        fit(together, x, y, weight_decay=[0.0, 1e-4], epochs=1, lr=0.05)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        fit(together, x, y, weight_decay=[0.0, -1.0, 0.0], epochs=1, lr=0.05)


def test_decay_sweep_gives_each_decay_the_same_starting_nets():
    data = helpers.data.digits()
    runs = decay_sweep(data, weight_decays=[1e-4, 1e-2], seeds=[5], depth=6, epochs=1, progress=False)
    assert list(runs) == [1e-4, 1e-2] and [len(g) for g in runs.values()] == [1, 1]
    weak, strong = runs[1e-4][0], runs[1e-2][0]
    assert np.allclose(weak.initial_ratios, strong.initial_ratios) and weak.weight_decay == 1e-4
    with pytest.raises(ValueError, match="repeat"):
        decay_sweep(data, weight_decays=[1e-3, 1e-3])


def test_bad_options_are_named():
    data = helpers.data.digits()
    with pytest.raises(ValueError, match="weight_decay"):
        effective_depth(data, weight_decay=-1.0)
    with pytest.raises(ValueError, match="threshold"):
        effective_depth(data, weight_decay=0.0, threshold=0.0)
    with pytest.raises(ValueError, match="seeds"):
        effective_depth(data, weight_decay=0.0, seeds=[])
    with pytest.raises(ValueError, match="fraction"):
        effective_depth(data, weight_decay=0.0, validation=0.0)


def test_rank_agreement_is_spearmans():
    assert rank_agreement([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert rank_agreement([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank_agreement([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)  # ranks, not values
    with pytest.raises(ValueError, match="same length"):
        rank_agreement([1, 2, 3], [1, 2])


@pytest.mark.parametrize("join", ["add", "none"])
def test_the_gradient_along_the_merges_alone(join):
    torch.manual_seed(0)
    model = JoinedMLP(4, 8, join=join, norm="layer")
    x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
    along = stream_gradient_norms(model, x, y, through_branches=False)
    whole = stream_gradient_norms(model, x, y)
    if join == "add":  # the identity passes the last block's gradient down unchanged
        assert np.allclose(along, along[-1], rtol=1e-6) and along[-1] == pytest.approx(whole[-1])
    else:  # a plain net has no path that skips its branches
        assert along[0] == 0.0
    assert whole[0] > 0 and not np.allclose(whole, along)


def test_the_projections_of_concat_shrink_the_gradient_along_the_merges():
    torch.manual_seed(0)
    model = JoinedMLP(12, 16, join="concat-project", norm="layer")
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    along = stream_gradient_norms(model, x, y, through_branches=False)
    # each projection's first half is a 16 x 16 Xavier matrix: about sqrt(2/3) per block
    assert along[0] / along[-1] < 0.2
    h = model.representations(x, through_branches=False)
    assert all(not s.requires_grad or s.grad_fn is not None for s in h)


def test_scale_profile_is_the_swept_net_at_initialisation():
    data = helpers.data.digits()
    x, y = data.x_train[:64], data.y_train[:64]
    small, large = (scale_profile(x, y, scale=s, depth=8) for s in (0.5, 2.0))
    assert small.stream_rms.shape == (4,) and small.ratios.shape == (3,) and small.weight_grads.shape == (8,)
    assert large.ratios[0] == pytest.approx(4 * small.ratios[0], rel=1e-5)  # the first block's branch is 4x
    assert large.weight_grads[0] > small.weight_grads[0]
    normed = [scale_profile(x, y, scale=s, depth=8, setting="LayerNorm") for s in (0.5, 2.0)]
    assert np.allclose(normed[0].ratios, normed[1].ratios, rtol=1e-3)  # the norm undoes the scale
    with pytest.raises(ValueError, match="setting must be one of"):
        scale_profile(x, y, scale=1.0, setting="dropout")


def test_chapter_3_training_figures(nets):
    from helpers.experiments import init_scale_sweep

    data, runs = nets
    fig = plots.switched_off({"5e-3": runs}, threshold=0.02, title="Blocks switch off")
    top, bottom = fig.axes[:2]
    assert top.get_yscale() == "log" and bottom.get_yscale() == "symlog"
    plt.close(fig)
    from helpers.plots.effective_depth import decay_trend, switched_off_on_validation

    fig = switched_off_on_validation({"5e-3": runs}, threshold=0.02, title="Blocks switch off")
    assert "validation" in fig.axes[1].get_ylabel()
    plt.close(fig)
    costs = {5e-3: np.array([[0.0, 0.01, 0.03]] * 2), 1e-4: np.array([[0.0, 0.02, 0.08]] * 2)}
    fig = decay_trend({5e-3: runs, 1e-4: runs}, costs, title="Decay turns redundant blocks idle")
    left, right = fig.axes[:2]
    assert left.get_xscale() == "log" and "points" in right.get_ylabel()
    assert "k" in right.get_xlabel() and smallest_font_pt(fig) >= MIN_FONT_PT
    # one mean line per decay, in points: 8 points at k = 2 for 1e-4
    means = [line.get_ydata() for line in right.get_lines() if len(line.get_ydata()) == 3]
    assert any(np.allclose(m, [0, 2, 8]) for m in means) and len(means) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="> 0"):
        decay_trend({0.0: runs}, {0.0: costs[5e-3]}, title="No log axis")
    with pytest.raises(ValueError, match="same weight decays"):
        decay_trend({5e-3: runs}, {1e-4: costs[1e-4]}, title="Other decays")
    with pytest.raises(ValueError, match="counts"):
        decay_trend({5e-3: runs, 1e-4: runs}, {5e-3: costs[5e-3], 1e-4: np.zeros((2, 4))}, title="Ragged")
    with pytest.raises(ValueError, match="non-empty"):
        switched_off_on_validation({}, threshold=0.02, title="Nothing")
    fig = plots.deletion_frame(runs[0].ratios, [1], error=0.2, intact=0.1, title="One deleted")
    assert "10.0 % intact, 20.0 % with 1 deleted" in fig.axes[0].get_xlabel()
    plt.close(fig)
    made = [JoinRun(j, 0, 0.01, 3, p, b, t, 1.0, 0.5, np.array(losses), 0.1)
            for j, p, b, t, losses in (("add", 10, 100, 1.0, [2.0, 1.0]), ("concat-project", 20, 150, 2.0, [2.0, 1.5]),
                                       ("none", 10, 100, 1.0, [2.3, float("nan")]))]
    fig = plots.joins_compared(made, title="Add wins")
    widths = sorted(round(p.get_width(), 3) for p in fig.axes[1].patches)
    assert widths == [1.5, 2.0, 2.0]  # concat-project's memory, time and parameters relative to add
    assert len(fig.axes[0].get_lines()) == 2  # the diverged run has no curve
    plt.close(fig)
    with pytest.raises(ValueError, match="add"):
        plots.joins_compared(made[1:], title="No reference")
    sweep = init_scale_sweep(data.x_train[:128], data.y_train[:128], scales=[0.5, 8.0],
                             settings=["baseline", "LayerNorm"], seeds=[0], depth=6, width=8, epochs=2,
                             progress=False)
    fig = plots.scale_sweep([r for r in sweep if r.setting == "baseline"], title="Large scales diverge")
    assert fig.axes[0].get_xscale() == "log"
    plt.close(fig)
    fig = plots.divergence_map(sweep, title="Where training diverges")
    cells = [t.get_text() for t in fig.axes[0].texts]
    assert len(cells) == 4
    for r in sweep:
        if r.outcome == "diverged":
            assert "diverged" in cells
    plt.close(fig)
    profile = scale_profile(data.x_train[:64], data.y_train[:64], scale=1.0, depth=8)
    fig = plots.scale_profile_frame(profile, title="The stream")
    assert [ax.get_yscale() for ax in fig.axes[:2]] == ["log", "log"]
    plt.close(fig)
