"""Chapter 3's add-vs-concat nets, the cost of a step, and the gradient through a skip split in two."""

import numpy as np
import pytest
import torch

from helpers.measure.cost import saved_tensor_bytes, seconds_per_step, stream_gradient_norms
from helpers.measure.skip_gradient import skip_gradient_parts
from helpers.models.joins import JOINS, JoinedMLP


def _data(n=32, features=64, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, features, generator=g), torch.randint(0, classes, (n,), generator=g)


@pytest.mark.parametrize("join", JOINS)
def test_each_join_has_the_widths_and_parameters_it_promises(join):
    torch.manual_seed(0)
    model = JoinedMLP(3, 8, join=join)
    x, y = _data()
    states = model.representations(x)
    widths = [h.shape[-1] for h in states]
    assert widths == ([8, 16, 32, 64] if join == "concat-grow" else [8] * 4)
    assert model(x).shape == (32, 10)
    branch = sum(2 * (w * w + w) for w in ([8, 16, 32] if join == "concat-grow" else [8] * 3))
    project = 3 * (16 * 8 + 8) if join == "concat-project" else 0
    head = (64 if join == "concat-grow" else 8) * 10 + 10
    assert sum(p.numel() for p in model.parameters()) == (64 * 8 + 8) + branch + project + head


def test_add_and_concat_compute_what_they_say():
    torch.manual_seed(0)
    x, _ = _data(4)
    for join, expected in (("add", lambda m, h: h + m.branch(0, h)), ("none", lambda m, h: m.branch(0, h)),
                           ("concat-grow", lambda m, h: torch.cat([h, m.branch(0, h)], -1)),
                           ("concat-project", lambda m, h: m.project[0](torch.cat([h, m.branch(0, h)], -1)))):
        model = JoinedMLP(1, 8, join=join, norm="layer")
        h0, h1 = model.representations(x)
        assert torch.allclose(h1, expected(model, h0)), join


def test_bad_options_raise_naming_the_argument():
    with pytest.raises(ValueError, match="join must be one of"):
        JoinedMLP(2, join="stack")
    with pytest.raises(ValueError, match="blocks must be >= 1"):
        JoinedMLP(0)
    with pytest.raises(ValueError, match="norm must be one of"):
        JoinedMLP(2, norm="batch")


def test_the_gradient_through_a_skip_is_the_upstream_plus_the_branchs_part():
    torch.manual_seed(0)
    model = JoinedMLP(1, 12, join="add").double()
    x, g = torch.randn(5, 12, dtype=torch.float64), torch.randn(5, 12, dtype=torch.float64)
    parts = skip_gradient_parts(lambda h: model.branch(0, h), x, g)
    assert parts.max_error < 1e-12
    assert torch.equal(parts.skip_path, g)  # the identity path passes dL/dH unchanged
    ln = torch.nn.LayerNorm(12, dtype=torch.float64)
    after_norm = skip_gradient_parts(lambda h: model.branch(0, h), x, g, norm=ln)
    assert after_norm.max_error < 1e-12 and not torch.allclose(after_norm.skip_path, g)
    zero = skip_gradient_parts(lambda h: 0 * h, x, g)
    assert zero.branch_share == 0 and torch.allclose(zero.autograd, g)


def test_skip_gradient_parts_rejects_mismatched_shapes():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="branch must keep x's shape"):
        skip_gradient_parts(lambda h: h[:, :2], x, torch.randn(3, 4))
    with pytest.raises(ValueError, match="upstream must have x's shape"):
        skip_gradient_parts(lambda h: h, x, torch.randn(3, 5))
    with pytest.raises(TypeError, match="must be tensors"):
        skip_gradient_parts(lambda h: h, x.numpy(), torch.randn(3, 4))


def test_saved_tensor_bytes_counts_what_autograd_keeps():
    x = torch.randn(10, 20, requires_grad=True)
    w = torch.randn(20, 30, requires_grad=True)
    # x @ w saves x and w; relu saves its output; sum saves nothing
    expected = (10 * 20 + 20 * 30 + 10 * 30) * 4
    assert saved_tensor_bytes(lambda: torch.relu(x @ w).sum()) == expected
    assert saved_tensor_bytes(lambda: (x * 2).sum()) == 0  # multiplying by a number keeps nothing
    with pytest.raises(ValueError, match="scalar"):
        saved_tensor_bytes(lambda: x @ w)


def test_concat_grow_keeps_far_more_than_add_and_the_stream_gradients_are_measured():
    x, y = _data(64)
    torch.manual_seed(0)
    add, grow = JoinedMLP(4, 16, join="add"), JoinedMLP(4, 16, join="concat-grow")

    def step_bytes(m):
        return saved_tensor_bytes(lambda: torch.nn.functional.cross_entropy(m(x), y))
    assert step_bytes(grow) > 4 * step_bytes(add)
    norms = stream_gradient_norms(add, x, y)
    assert norms.shape == (5,) and np.all(norms > 0)
    assert all(p.grad is None for p in add.parameters())  # left clean
    assert seconds_per_step(add, x, y, repeats=2) > 0
    with pytest.raises(TypeError, match="representations"):
        stream_gradient_norms(torch.nn.Linear(64, 10), x, y)


def test_compare_joins_measures_and_trains_each_join():
    import helpers
    from helpers.experiments.joins import compare_joins

    data = helpers.data.digits()
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    runs = compare_joins(data, joins=("add", "concat-project", "concat-grow"), blocks=3, grow_blocks=2, seeds=(0, 1),
                         width=8, epochs=1, progress=False)
    assert torch.equal(torch.rand(1), before)
    joins = ("add", "concat-project", "concat-grow")
    assert [(r.join, r.seed) for r in runs] == [(j, s) for j in joins for s in (0, 1)]
    by = {(r.join, r.seed): r for r in runs}
    assert by["concat-project", 0].params > by["add", 0].params and by["concat-grow", 0].blocks == 2
    assert by["concat-project", 0].saved_bytes > by["add", 0].saved_bytes
    assert all(len(r.losses) == 1 and 0 <= r.test_error <= 1 and r.input_gradient_ratio > 0 for r in runs)
    with pytest.raises(ValueError, match="joins must be among"):
        compare_joins(data, joins=("stack",))
    # several learning rates: one net drawn and measured, a copy trained at each rate
    both = compare_joins(data, joins=("add",), blocks=3, width=8, epochs=1, lrs=(0.001, 0.01), progress=False)
    assert [r.lr for r in both] == [0.001, 0.01] and both[0].seconds_per_step == both[1].seconds_per_step
    alone = compare_joins(data, joins=("add",), blocks=3, width=8, epochs=1, lrs=(0.01,), progress=False)[0]
    assert np.allclose(alone.losses, both[1].losses)


def test_the_projection_starts_where_it_is_told_and_the_twins_share_their_weights():
    from helpers.models.joins import init_projection_
    from helpers.seeding import isolated

    x = torch.randn(8, 64)
    nets = {}
    for join, start in (("add", "random"), ("concat-project", "sum"), ("concat-project", "skip"),
                        ("concat-project", "random")):
        with isolated(3):
            nets[join, start] = JoinedMLP(4, 8, join=join, norm="layer", project_init=start)
    add, same, keep, rand = nets.values()
    assert torch.equal(add(x), same(x))  # P = [I, I] computes h + F(h): the add net, to the last bit
    h = keep.representations(x)
    assert all(torch.equal(h[0], s) for s in h)  # P = [I, 0] passes the stream unchanged
    assert torch.equal(rand.stem.weight, add.stem.weight) and torch.equal(rand.head.weight, add.head.weight)
    assert not torch.allclose(rand.project[0].weight[:, :8], torch.eye(8))
    eye = torch.eye(8)
    assert torch.equal(same.project[0].weight, torch.cat([eye, eye], 1))
    assert torch.equal(keep.project[0].weight, torch.cat([eye, torch.zeros(8, 8)], 1))
    with pytest.raises(ValueError, match="project_init must be one of"):
        JoinedMLP(2, 8, join="concat-project", project_init="identity")
    with pytest.raises(TypeError, match="project_init must be a str"):
        init_projection_(torch.nn.Linear(16, 8), None)
    with pytest.raises(ValueError, match="layer must map 2 w -> w"):
        init_projection_(torch.nn.Linear(8, 8), "sum")


def test_compare_joins_trains_each_start_of_the_projection_together():
    import helpers
    from helpers.experiments.joins import compare_joins

    data = helpers.data.digits()
    runs = compare_joins(data, joins=("add", "concat-project"), blocks=3, width=8, epochs=1, lrs=(0.001, 0.01),
                         project_inits=("sum", "skip", "random"), progress=False)
    assert [(r.name, r.lr) for r in runs] == [
        (name, lr) for name in ("add", "concat-project [I, I]", "concat-project [I, 0]", "concat-project")
        for lr in (0.001, 0.01)]
    by = {(r.name, r.lr): r for r in runs}
    # along the merges the gradient arrives unchanged wherever the skip part starts as I
    for name in ("add", "concat-project [I, I]", "concat-project [I, 0]"):
        assert by[name, 0.01].skip_gradient_ratio == pytest.approx(1.0, abs=1e-5)
    assert by["concat-project", 0.01].skip_gradient_ratio < 1
    # the twin of add starts where add starts: its first epoch at a small rate matches add's
    # closely (only P, which add lacks, moves it away), and the random start's does not
    twin, add, random = (by[name, 0.001].losses[0] for name in ("concat-project [I, I]", "add", "concat-project"))
    assert twin == pytest.approx(add, rel=0.02) and abs(random - add) > 5 * abs(twin - add), (twin, add, random)
    alone = compare_joins(data, joins=("concat-project",), blocks=3, width=8, epochs=1, lrs=(0.01,),
                          project_inits=("skip",), progress=False)[0]
    assert np.allclose(alone.losses, by["concat-project [I, 0]", 0.01].losses, rtol=1e-5)
    with pytest.raises(ValueError, match="project_inits must not repeat"):
        compare_joins(data, joins=("add",), project_inits=("sum", "sum"))
    with pytest.raises(ValueError, match=r"project_inits\[i\] must be one of"):
        compare_joins(data, joins=("add",), project_inits=("eye",))


def test_the_joins_figures_show_each_start_and_refuse_bad_runs():
    import matplotlib.pyplot as plt

    import helpers.plots.joins as joins
    from helpers.experiments.joins import JoinRun

    def run(join, start, lr, losses, params=10, memory=100, time=1.0):
        return JoinRun(join, 0, lr, 3, params, memory, time, 1.0, 0.5, np.array(losses), 0.1, start)

    runs = [run("add", "random", lr, [2.0, 1.0 / lr]) for lr in (0.01, 0.1, 1.0)]
    runs += [run("concat-project", "sum", lr, [2.0, loss], 20, 150, 2.0)
             for lr, loss in ((0.01, 0.5), (0.1, 0.3), (1.0, float("nan")))]
    best = [runs[1], runs[4], run("concat-grow", "random", 0.1, [2.0, 0.2], 100, 300, 3.0)]
    fig = joins.joins_trained(best, runs, title="Start from the identity")
    curves, sweep, cost = fig.axes[:3]
    assert curves.get_yscale() == "log" and sweep.get_xscale() == "log"
    assert sorted(round(p.get_width(), 3) for p in cost.patches) == [1.5, 2.0, 2.0, 3.0, 3.0, 10.0]
    assert any(line.get_marker() == "x" for line in sweep.get_lines())  # the diverged run is marked
    plt.close(fig)
    fig = joins.loss_curves(runs[3:], by="rate", title="One net, each rate")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["learning rate 0.01", "learning rate 0.1", "learning rate 1 (diverged)"]
    plt.close(fig)
    with pytest.raises(ValueError, match="add"):
        joins.joins_trained(best[1:], runs, title="No reference")
    with pytest.raises(TypeError, match="runs must be a non-empty list"):
        joins.loss_curves([1, 2], title="Not runs")
    with pytest.raises(ValueError, match="by must be"):
        joins.loss_curves(runs, by="seed", title="Bad")


def test_compare_joins_gives_each_net_its_own_grid_of_rates():
    import helpers
    from helpers.experiments.joins import compare_joins, run_name

    data = helpers.data.digits()
    grids = {"add": (0.01, 0.02), "concat-project [I, 0]": (0.001,), "concat-project": (0.002, 0.005, 0.01)}
    runs = compare_joins(data, joins=("add", "concat-project"), blocks=2, width=8, epochs=1, lrs=grids,
                         project_inits=("skip", "random"), progress=False)
    assert [(r.name, r.lr) for r in runs] == [(name, lr) for name, rates in grids.items() for lr in rates]
    assert run_name("concat-project", "sum") == "concat-project [I, I]" and run_name("add", "sum") == "add"
    with pytest.raises(ValueError, match=r"missing \['concat-project \[I, I\]'\]"):
        compare_joins(data, joins=("concat-project",), lrs={"concat-project": (0.01,)}, project_inits=("sum",))
    with pytest.raises(ValueError, match=r"lrs\['add'\] must not be empty"):
        compare_joins(data, joins=("add",), lrs={"add": ()})
