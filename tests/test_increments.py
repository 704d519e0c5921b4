"""One SGD step's loss change, and the incremental-explosion experiment of chapter 5."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from helpers.experiments.increments import RULES, branch_scale, incremental_explosion, make_net
from helpers.measure.increments import one_step_change, probe_loss


def test_one_step_change_takes_the_step_and_matches_first_order_for_a_quadratic():
    """L = 0.5 ||w||^2: g = w, the step gives exactly L(w - ηw) - L(w) = -η||w||² + η²||w||²/2."""
    layer = nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, -2.0, 2.0]]))
    step = one_step_change(layer, lambda m: 0.5 * (m.weight ** 2).sum(), [[layer.weight]], lr=0.1)
    assert step.grad_sq == pytest.approx(9.0)
    assert step.first_order == pytest.approx(-0.9)
    assert step.change == pytest.approx(-0.9 + 0.01 * 9 / 2, rel=1e-5)
    assert torch.allclose(layer.weight, torch.tensor([[0.9, -1.8, 1.8]]))
    assert step.per_group.tolist() == pytest.approx([9.0])


def test_groups_count_their_own_parameters_and_others_stay_fixed():
    net = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    frozen = net[1].weight.detach().clone()
    x, u = torch.randn(8, 4), torch.randn(8, 2)
    step = one_step_change(net, lambda m: probe_loss(m(x), u), [[net[0].weight], [net[0].bias]], lr=1e-3)
    assert len(step.per_group) == 2 and step.grad_sq == pytest.approx(step.per_group.sum())
    assert torch.equal(net[1].weight, frozen)


def test_bad_arguments_are_named():
    net = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="lr"):
        one_step_change(net, lambda m: m.weight.sum(), [[net.weight]], lr=0.0)
    with pytest.raises(ValueError, match="groups"):
        one_step_change(net, lambda m: m.weight.sum(), [], lr=0.1)
    with pytest.raises(ValueError, match="scalar"):
        one_step_change(net, lambda m: m.weight, [[net.weight]], lr=0.1)
    with pytest.raises(ValueError, match="shape"):
        probe_loss(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="rule"):
        branch_scale("1/N^2", 4)
    with pytest.raises(ValueError, match="depth"):
        incremental_explosion((0,), ("plain",))


def test_rules_set_the_branch_scale_and_the_skip():
    assert branch_scale("1/sqrt(N)", 16) == 0.25 and branch_scale("1/N", 8) == 0.125
    assert set(RULES) == {"plain", "1", "1/sqrt(N)", "1/N"}
    plain, res = make_net("plain", 3, 16, 0), make_net("1/sqrt(N)", 3, 16, 0)
    assert not plain.blocks[0].residual and res.blocks[0].residual
    assert res.blocks[0].branch_scale == pytest.approx(3 ** -0.5)


def test_the_experiment_measures_every_rule_and_depth_on_its_own_nets():
    runs = incremental_explosion((2, 4), ("plain", "1/N"), seed=1, n_inits=2, width=16, batch=8)
    assert [(r.rule, r.depth) for r in runs] == [("plain", 2), ("plain", 4), ("1/N", 2), ("1/N", 4)]
    for r in runs:
        assert len(r.steps) == 2 and len(r.stream) == r.depth + 1 and len(r.per_block) == r.depth
        assert math.isfinite(r.change) and r.first_order == pytest.approx(r.lr * r.grad_sq)
    again = incremental_explosion((2,), ("plain",), seed=1, n_inits=2, width=16, batch=8)
    assert again[0].grad_sq == runs[0].grad_sq, "the same seed draws the same nets"
    other = incremental_explosion((2,), ("plain",), seed=2, n_inits=2, width=16, batch=8)
    assert other[0].grad_sq != runs[0].grad_sq
    assert np.all(runs[3].per_block < runs[1].per_block.mean() * 10)


def test_adams_first_step_moves_every_parameter_by_about_lr_as_torch_does():
    """L = 0.5 ||w||²: Adam's first step is -lr g / (|g| + 1e-8) = -lr sign(w), and to first
    order ΔL = -lr ||g||_1; torch.optim.Adam's first step lands on the same weights."""
    layer = nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, -2.0, 2.0]]))
    twin = nn.Linear(3, 1, bias=False)
    twin.load_state_dict(layer.state_dict())
    step = one_step_change(layer, lambda m: 0.5 * (m.weight ** 2).sum(), [[layer.weight]], lr=0.1,
                           optimizer="adam")
    assert step.optimizer == "adam" and step.grad_l1 == pytest.approx(5.0) and step.grad_sq == pytest.approx(9.0)
    assert step.first_order == pytest.approx(-0.5)
    assert torch.allclose(layer.weight, torch.tensor([[0.9, -1.9, 1.9]]))
    adam = torch.optim.Adam(twin.parameters(), lr=0.1)
    (0.5 * (twin.weight ** 2).sum()).backward()
    adam.step()
    assert torch.allclose(layer.weight, twin.weight)
    with pytest.raises(ValueError, match="optimizer"):
        one_step_change(layer, lambda m: m.weight.sum(), [[layer.weight]], lr=0.1, optimizer="lion")
    with pytest.raises(ValueError, match="optimizer"):
        incremental_explosion((2,), ("plain",), optimizer="rmsprop")


def test_step_theories_know_their_answers():
    from helpers.experiments.increments import adam_step_theory, sgd_step_theory

    # ε = 1/√N: N ε² (1 + ε²)^(N - 1) = (1 + 1/N)^(N - 1); 1.33 times larger at 32 blocks than at 4
    assert sgd_step_theory("1/sqrt(N)", 4) == pytest.approx(1.25 ** 3)
    assert sgd_step_theory("1/sqrt(N)", 32) / sgd_step_theory("1/sqrt(N)", 4) == pytest.approx(1.3291, abs=1e-3)
    # ε = 1: N 2^(N - 1), 16,384 times larger at 16 blocks than at 4
    assert sgd_step_theory("1", 16) / sgd_step_theory("1", 4) == pytest.approx(16384)
    assert sgd_step_theory("plain", 8) == 8.0 and adam_step_theory("plain", 8) == 8.0
    # Adam: N ε (1 + ε²)^((N - 1)/2): √N for ε = 1/√N (times the stream's factor), about 1 for ε = 1/N
    assert adam_step_theory("1/sqrt(N)", 4) == pytest.approx(2 * 1.25 ** 1.5)
    assert adam_step_theory("1/N", 8) == pytest.approx((1 + 1 / 64) ** 3.5)
    with pytest.raises(ValueError, match="rule"):
        sgd_step_theory("1/N^2", 4)


def test_the_adam_column_uses_the_same_nets_and_reports_l1_first_order():
    sgd = incremental_explosion((2,), ("1/N",), seed=1, n_inits=2, width=16, batch=8)
    adam = incremental_explosion((2,), ("1/N",), seed=1, n_inits=2, width=16, batch=8, lr=1e-7, optimizer="adam")
    assert adam[0].optimizer == "adam" and sgd[0].optimizer == "sgd"
    assert adam[0].grad_sq == pytest.approx(sgd[0].grad_sq), "the same nets, the same gradient"
    l1 = np.mean([s.grad_l1 for s in adam[0].steps])
    assert adam[0].first_order == pytest.approx(1e-7 * l1, rel=1e-4)
    assert adam[0].change == pytest.approx(adam[0].first_order, rel=0.2)  # float32 losses of a tiny net
    assert adam[0].theory == pytest.approx((1 + 1 / 4) ** 0.5) and sgd[0].stream_growth > 0
