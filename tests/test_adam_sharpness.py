"""The curvature Adam sees (helpers.measure.adam_curvature) and section 5's measurement of it
(helpers.experiments.adam_sharpness)."""

import copy

import pytest
import torch
from torch import nn

from helpers.experiments.adam_sharpness import EPS, AdamSharpness, adam_preconditioner, adam_sharpness
from helpers.measure.adam_curvature import adam_threshold, top_preconditioned_eigenvalue


def test_adams_threshold_is_38_over_the_rate_for_beta1_09():
    assert adam_threshold(1e-3) == pytest.approx(38_000)
    assert adam_threshold(0.1, beta1=0.0) == pytest.approx(2 / 0.1)  # no momentum: gradient descent's 2/η
    with pytest.raises(ValueError, match="lr"):
        adam_threshold(0.0)
    with pytest.raises(ValueError, match="beta1"):
        adam_threshold(1e-3, beta1=1.0)
    with pytest.raises(TypeError, match="lr"):
        adam_threshold("0.1")


def _quadratic(a):
    """A model with one weight vector and the loss ½ Σ a_i w_i², whose Hessian is diag(a)."""
    layer = nn.Linear(len(a), 1, bias=False)

    def loss(m):
        return 0.5 * (a * m.weight[0] ** 2).sum()

    return layer, loss


def test_the_preconditioned_eigenvalue_of_a_quadratic_is_known():
    """Through P = diag(p) the quadratic bends by a_i / p_i: the largest of them, not the one of
    largest magnitude (-3 here) and not the Hessian's own largest (2)."""
    a = torch.tensor([0.5, -3.0, 1.0, 2.0, 0.1, -0.2])
    p = torch.tensor([[1.0, 1.0, 4.0, 0.5, 1.0, 2.0]])
    layer, loss = _quadratic(a)
    gen = torch.Generator().manual_seed(0)
    value = top_preconditioned_eigenvalue(layer, loss, [layer.weight], [p], generator=gen)
    assert value == pytest.approx(4.0, rel=1e-3)
    ones = [torch.ones(1, 6)]
    assert top_preconditioned_eigenvalue(layer, loss, [layer.weight], ones) == pytest.approx(2.0, rel=1e-3)
    before = layer.weight.detach().clone()
    top_preconditioned_eigenvalue(layer, loss, [layer.weight], [p])
    assert torch.equal(layer.weight, before)


def test_the_preconditioned_eigenvalue_does_not_depend_on_the_gradients_scale():
    """A loss multiplied by c: Adam takes the same steps (its preconditioner is c times larger),
    and the preconditioned sharpness is the same, where the Hessian's own eigenvalue is c times
    larger."""
    torch.manual_seed(0)
    x, y = torch.randn(16, 5), torch.randn(16, 1)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    c = 100.0

    def loss(m):
        return ((m(x) - y) ** 2).mean()

    def scaled_loss(m):
        return c * loss(m)

    values = {}
    for name, fn in (("loss", loss), ("scaled", scaled_loss)):
        model = copy.deepcopy(net)
        p = adam_preconditioner(model, fn, 3, lr=0.01)
        params = list(model.parameters())
        values[name] = (top_preconditioned_eigenvalue(model, fn, params, p),
                        top_preconditioned_eigenvalue(model, fn, params, [torch.ones_like(q) for q in params]))
    assert values["scaled"][0] == pytest.approx(values["loss"][0], rel=1e-3)
    assert values["scaled"][1] == pytest.approx(c * values["loss"][1], rel=1e-3)


def test_bad_preconditioners_are_refused():
    layer, loss = _quadratic(torch.ones(3))
    with pytest.raises(ValueError, match="one tensor per parameter"):
        top_preconditioned_eigenvalue(layer, loss, [layer.weight], [torch.ones(1, 3), torch.ones(1, 3)])
    with pytest.raises(ValueError, match="shape"):
        top_preconditioned_eigenvalue(layer, loss, [layer.weight], [torch.ones(3)])
    with pytest.raises(ValueError, match="positive"):
        top_preconditioned_eigenvalue(layer, loss, [layer.weight], [torch.zeros(1, 3)])
    with pytest.raises(ValueError, match="params"):
        top_preconditioned_eigenvalue(layer, loss, [], [])
    with pytest.raises(TypeError, match="generator"):
        top_preconditioned_eigenvalue(layer, loss, [layer.weight], [torch.ones(1, 3)], generator=1)


@pytest.mark.parametrize("steps", [0, 3])
def test_the_preconditioner_is_the_one_adams_next_step_divides_by(steps):
    """After ``steps`` steps with a warm-up, the preconditioner equals the sqrt(v_hat) + eps that
    torch.optim.Adam computes at its next step, from the gradient at the same parameters."""
    torch.manual_seed(1)
    x, y = torch.randn(32, 4), torch.randn(32, 2)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    twin = copy.deepcopy(model)

    def loss_fn(m):
        return ((m(x) - y) ** 2).mean()

    got = adam_preconditioner(model, loss_fn, steps, lr=0.01, warmup=4)
    opt = torch.optim.Adam(twin.parameters(), lr=0.01)
    for k in range(1, steps + 2):
        for group in opt.param_groups:
            group["lr"] = 0.01 * min(1.0, k / 4)
        opt.zero_grad()
        loss_fn(twin).backward()
        if k == steps + 1:
            for p, q in zip(model.parameters(), twin.parameters()):
                assert torch.allclose(p, q, atol=1e-7)  # the same parameters, so the same gradient
        opt.step()
    for p, g in zip(twin.parameters(), got):
        expected = (opt.state[p]["exp_avg_sq"] / (1 - 0.999 ** (steps + 1))).sqrt() + EPS
        assert torch.allclose(g, expected, rtol=1e-5, atol=1e-12)
    with pytest.raises(ValueError, match="steps"):
        adam_preconditioner(model, loss_fn, -1, lr=0.01)


def test_adam_sharpness_measures_each_architecture():
    result = adam_sharpness(2, seed=0, n_nets=2, steps=2, warmup=4)
    assert [r.architecture for r in result] == ["post", "deepnorm"]
    assert all(isinstance(r, AdamSharpness) and r.values.shape == (2,) and r.typical > 0 for r in result)
    assert result[0].threshold == pytest.approx(38 / 5e-3)
    assert result[0].warmup_threshold == pytest.approx(38 / (5e-3 * 3 / 4))
    again = adam_sharpness(2, ("deepnorm",), seed=0, n_nets=2, steps=2, warmup=4)
    assert list(again[0].values) == list(result[1].values)  # the same nets, the same numbers
    with pytest.raises(ValueError, match="architectures"):
        adam_sharpness(2, ("pre",))
