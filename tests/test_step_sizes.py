"""One step's output change, ||ΔF||, under SGD and Adam (chapter 5, section 5)."""

import numpy as np
import pytest
import torch
from torch import nn

from helpers.experiments.step_sizes import ModelUpdate, depth_slope, model_updates, sublayer_parameters
from helpers.measure.output_update import output_change


def test_output_change_of_a_linear_map_is_known():
    """F(w) = w · x with x = (1, 1, 1) and L = F: g = x; SGD moves F by -lr ||x||² = -3 lr,
    Adam's first step by -lr ||x||_1 = -3 lr too; per unit of lr both are 3."""
    for optimizer in ("sgd", "adam"):
        layer = nn.Linear(3, 1, bias=False)
        with torch.no_grad():
            layer.weight.copy_(torch.tensor([[1.0, 2.0, -1.0]]))
        x = torch.ones(1, 3)
        r = output_change(layer, lambda m, x=x: m(x).sum(), lambda m, x=x: m(x), [layer.weight], 0.01, optimizer)
        assert r.change == pytest.approx(3.0, rel=1e-4) and r.output == pytest.approx(2.0)
        assert r.grad_rms == pytest.approx(1.0)
    # with gradients of different sizes Adam moves every weight by lr, SGD by lr times the gradient
    layer = nn.Linear(2, 1, bias=False)
    x = torch.tensor([[3.0, 0.5]])
    sgd = output_change(layer, lambda m: m(x).sum(), lambda m: m(x), [layer.weight], 1e-3, "sgd")
    layer = nn.Linear(2, 1, bias=False)
    adam = output_change(layer, lambda m: m(x).sum(), lambda m: m(x), [layer.weight], 1e-3, "adam")
    assert sgd.change == pytest.approx(9.25, rel=1e-3) and adam.change == pytest.approx(3.5, rel=1e-3)


def test_bad_input_is_named():
    layer = nn.Linear(2, 1)
    with pytest.raises(ValueError, match="optimizer"):
        output_change(layer, lambda m: m.weight.sum(), lambda m: m.weight, [layer.weight], 0.1, "lion")
    with pytest.raises(ValueError, match="lr"):
        output_change(layer, lambda m: m.weight.sum(), lambda m: m.weight, [layer.weight], -1.0)
    with pytest.raises(ValueError, match="params"):
        output_change(layer, lambda m: m.weight.sum(), lambda m: m.weight, [], 0.1)
    with pytest.raises(TypeError, match="model"):
        output_change("net", lambda m: 0, lambda m: 0, [layer.weight], 0.1)
    with pytest.raises(ValueError, match="architectures"):
        model_updates((2,), ("sandwich",))
    with pytest.raises(TypeError, match="net"):
        sublayer_parameters(layer)


def test_model_updates_cover_the_grid_on_shared_nets():
    updates = model_updates((2, 3), seed=1, n_nets=2)
    assert [(u.depth, u.architecture, u.optimizer) for u in updates] == [
        (d, a, o) for d in (2, 3) for a in ("post", "deepnorm") for o in ("sgd", "adam")]
    assert all(isinstance(u, ModelUpdate) and u.changes.shape == (2,) and np.all(u.changes > 0) for u in updates)
    # SGD and Adam start from the same nets and gradient
    assert np.array_equal(updates[0].grad_rms, updates[1].grad_rms)
    assert np.isfinite(depth_slope(updates, "deepnorm", "adam"))
    with pytest.raises(ValueError, match="two depths"):
        depth_slope(updates[:4], "post", "sgd")


def test_a_hessian_vector_product_of_a_quadratic_is_known():
    """L = ½ Σ a_i w_i² has the Hessian diag(a), so H·1 = a."""
    from helpers.measure.curvature import hessian_vector_product

    layer = nn.Linear(4, 1, bias=False)
    a = torch.tensor([[0.5, -3.0, 1.0, 2.0]])

    def loss(m):
        return 0.5 * (a * m.weight ** 2).sum()

    [hv] = hessian_vector_product(loss, layer, [layer.weight], [torch.ones(1, 4)])
    assert torch.allclose(hv, a)
