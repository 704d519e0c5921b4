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
