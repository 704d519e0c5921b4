import copy

import numpy as np
import pytest
import torch
from torch import nn

from helpers.measure import (
    enumerate_path_lengths,
    gradient_profile,
    jacobian_singular_values,
    path_length_counts,
    per_layer_factor,
    random_lesions,
    single_block_lesions,
)
from helpers.measure.batch_statistics import recomputed_statistics
from helpers.models import Block, DeepMLP


def test_gradient_norms_of_a_linear_net_match_the_hand_computation():
    """y = W2 W1 x, L = 0.5 ||y - t||^2:  dL/dW2 = (y - t) (W1 x)^T,  dL/dW1 = W2^T (y - t) x^T."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4, bias=False), nn.Linear(4, 2, bias=False))
    x, t = torch.randn(1, 3), torch.randn(1, 2)
    W1, W2 = net[0].weight.detach(), net[1].weight.detach()
    h = x @ W1.T
    delta = h @ W2.T - t
    dW2 = delta.T @ h
    dW1 = (delta @ W2).T @ x
    profile = gradient_profile(net, lambda out, target: 0.5 * ((out - target) ** 2).sum(), x, t)
    assert profile.names == ("0", "1")
    np.testing.assert_allclose(profile.weight, [dW1.norm().item(), dW2.norm().item()], rtol=1e-6)
    # gradient reaching each layer's output: dL/dh = W2^T delta, dL/dy = delta
    np.testing.assert_allclose(profile.output, [(delta @ W2).norm().item(), delta.norm().item()], rtol=1e-6)
    assert profile.loss == pytest.approx(0.5 * (delta ** 2).sum().item())
    assert profile.first_to_last == pytest.approx(profile.weight[0] / profile.weight[1])


def test_gradient_norms_do_not_underflow():
    net = nn.Sequential(nn.Linear(2, 2, bias=False))
    with torch.no_grad():
        net[0].weight.fill_(1e-25)
    profile = gradient_profile(net, lambda out, _: out.sum() * 1e-20, torch.ones(1, 2), None)
    assert profile.weight[0] > 0


def test_gradient_profile_rejects_bad_arguments():
    with pytest.raises(TypeError, match="loss_fn"):
        gradient_profile(nn.Linear(2, 2), "mse", torch.ones(1, 2), torch.ones(1, 2))
    with pytest.raises(ValueError, match="nn.Linear"):
        gradient_profile(nn.ReLU(), lambda a, b: a.sum(), torch.ones(1, 2), None)


def test_per_layer_factor_recovers_a_geometric_profile():
    norms = 3.0 * 0.5 ** np.arange(9, -1, -1)  # input -> output, halving per layer going back
    assert per_layer_factor(norms) == pytest.approx(0.5)
    assert per_layer_factor(norms[::-1]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive"):
        per_layer_factor([1.0, 0.0])
    with pytest.raises(ValueError, match="at least 2"):
        per_layer_factor([1.0])


def test_plain_gradients_vanish_without_normalisation_and_residual_ones_do_not():
    torch.manual_seed(0)
    residual = DeepMLP(20, 16, norm="none", init="pytorch")
    x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
    loss = nn.functional.cross_entropy
    g_plain = per_layer_factor(gradient_profile(residual.twin(), loss, x, y).weight)
    g_res = per_layer_factor(gradient_profile(residual, loss, x, y).weight)
    assert g_plain < 0.6 < 0.9 < g_res


def test_residual_jacobian_is_identity_plus_branch():
    torch.manual_seed(0)
    block = Block(6, norm="none", order="pre")
    x = torch.randn(6)
    sv_res = jacobian_singular_values(block, x)
    block.residual = False
    sv_plain = jacobian_singular_values(block, x)
    # The residual block's Jacobian is I plus the plain block's (the same weights), not just any matrix.
    j_plain = torch.autograd.functional.jacobian(block, x)
    np.testing.assert_allclose(sv_plain.numpy(), torch.linalg.svdvals(j_plain).numpy(), rtol=1e-5)
    np.testing.assert_allclose(sv_res.numpy(), torch.linalg.svdvals(torch.eye(6) + j_plain).numpy(), rtol=1e-5)
    assert not np.allclose(sv_res.numpy(), sv_plain.numpy(), atol=1e-2)
    zero = Block(6, norm="none", order="pre", zero_init_branch=True)
    np.testing.assert_allclose(jacobian_singular_values(zero, x).numpy(), np.ones(6), atol=1e-6)
    with pytest.raises(ValueError, match="1-D"):
        jacobian_singular_values(block, torch.randn(2, 6))


def test_path_counts_are_binomial():
    assert path_length_counts(3).tolist() == [1, 3, 3, 1]
    for n in (1, 5, 10):
        assert np.array_equal(enumerate_path_lengths(n), path_length_counts(n))
        assert path_length_counts(n).sum() == 2 ** n
    with pytest.raises(ValueError, match="n"):
        enumerate_path_lengths(21)


def test_lesions():
    torch.manual_seed(0)
    model = DeepMLP(8, 8, norm="none")
    x, y = torch.randn(50, 64), torch.randint(0, 10, (50,))
    single = single_block_lesions(model, x, y)
    assert single.shape == (3,) and np.all((single >= 0) & (single <= 1))
    assert random_lesions(model, x, y, k=2, n_draws=4).shape == (4,)
    with pytest.raises(ValueError, match="k"):
        random_lesions(model, x, y, k=4)


def test_recomputed_statistics_are_those_of_the_stream_with_the_blocks_deleted():
    torch.manual_seed(0)
    model = DeepMLP(8, 8, kind="residual", norm="batch", order="pre").eval()
    x = torch.randn(64, 64)
    before = copy.deepcopy(model.state_dict())
    fresh = recomputed_statistics(model, x, skip=[1])
    # the original keeps its statistics; the copy is in eval mode
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not fresh.training
    # what each BatchNorm receives in a training-mode pass of x with block 1 deleted
    probe = copy.deepcopy(model).train()
    seen = {}

    def record(name):
        def hook(module, inputs, output):
            seen[name] = inputs[0].detach().clone()
        return hook

    for name, m in probe.named_modules():
        if isinstance(m, nn.BatchNorm1d):
            m.register_forward_hook(record(name))
    with torch.no_grad():
        probe(x, skip=[1])
    norms = dict(fresh.named_modules())
    assert seen and not any(name.startswith("blocks.1.") for name in seen)  # the deleted block's see nothing
    for name, inputs in seen.items():
        torch.testing.assert_close(norms[name].running_mean, inputs.mean(0))
        torch.testing.assert_close(norms[name].running_var, inputs.var(0, unbiased=True))


# --- loss landscape ---------------------------------------------------------------------

def test_filter_normalised_direction_matches_row_norms():
    from helpers.measure import filter_normalised_direction

    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 3))
    d = filter_normalised_direction(model, seed=0)
    for name, p in model.named_parameters():
        if p.dim() < 2:
            assert torch.count_nonzero(d[name]) == 0, name
        else:
            torch.testing.assert_close(d[name].norm(dim=1), p.detach().norm(dim=1))


def test_loss_slices_pass_through_the_trained_loss_and_leave_the_model_alone():
    from helpers.measure import loss_slice_1d, loss_surface_2d

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    before = [p.clone() for p in model.parameters()]
    base = torch.nn.functional.cross_entropy(model(x), y).item()
    s = loss_slice_1d(model, torch.nn.functional.cross_entropy, x, y, [-0.5, 0.0, 0.5])
    assert s[1] == pytest.approx(base, rel=1e-6)
    grid = loss_surface_2d(model, torch.nn.functional.cross_entropy, x, y, [-0.5, 0.0, 0.5])
    assert grid.shape == (3, 3) and grid[1, 1] == pytest.approx(base, rel=1e-6)
    for p, q in zip(before, model.parameters()):
        assert torch.equal(p, q)


def test_sharpness_of_a_parabola():
    from helpers.measure import sharpness

    a = np.linspace(-1, 1, 41)
    assert sharpness(a, 3 * a**2 + 1, radius=0.5) == pytest.approx(0.75, rel=1e-3)
    with pytest.raises(ValueError, match="radius"):
        sharpness(a, a**2, radius=2.0)
    with pytest.raises(ValueError, match="increasing"):
        sharpness(a[::-1], a**2)


def test_best_setting_compares_means_not_single_runs():
    from helpers.measure import best_setting

    assert best_setting({0.01: [0.05, 0.6, 0.6], 0.05: [0.2, 0.2, 0.2]}) == 0.05
    assert best_setting({"a": [0.1], "b": [0.1]}) == "a"  # a tie goes to the first
    with pytest.raises(ValueError, match="at least one"):
        best_setting({})
    with pytest.raises(ValueError, match=r"errors_by_setting\[0.1\]"):
        best_setting({0.1: [float("nan")]})
    with pytest.raises(TypeError, match="errors_by_setting"):
        best_setting([0.1, 0.2])


def test_a_surface_point_is_the_loss_at_that_point_and_the_mode_is_restored():
    from helpers.measure import filter_normalised_direction, loss_surface_2d
    from helpers.measure.landscape import loss_at

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                torch.nn.Linear(4, 2))
    model(torch.randn(32, 3))  # running statistics that differ from a batch's
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    d, e = filter_normalised_direction(model, 3), filter_normalised_direction(model, 4)
    grid = loss_surface_2d(model, torch.nn.functional.cross_entropy, x, y, [-0.5, 0.25], [0.75, -1.0], seed=3)
    assert model.training  # evaluated in evaluation mode, and handed back as it came
    # Row b, column a: exactly the loss at theta* + a d + b e, bit for bit.
    assert grid[1, 0] == loss_at(model, torch.nn.functional.cross_entropy, x, y, [(-0.5, d), (-1.0, e)])
    assert grid[0, 1] == loss_at(model, torch.nn.functional.cross_entropy, x, y, [(0.25, d), (0.75, e)])


def test_relative_updates_known_answer_and_bad_input():
    from helpers.measure.updates import relative_updates

    before = torch.nn.Sequential(torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 3))
    after = copy.deepcopy(before)
    with torch.no_grad():
        before[0].weight.copy_(torch.ones(2, 2))  # norm 2
        after[0].weight.copy_(torch.ones(2, 2) + torch.tensor([[1.0, 0.0], [0.0, 0.0]]))  # moved by 1
        after[1].weight.copy_(before[1].weight)
        after[1].bias.add_(5.0)  # biases are not counted
    assert relative_updates(before, after) == pytest.approx([0.5, 0.0])
    with pytest.raises(ValueError, match="same net"):
        relative_updates(before, torch.nn.Sequential(torch.nn.Linear(2, 2)))
    with pytest.raises(TypeError, match="initial must be a torch.nn.Module"):
        relative_updates("net", after)
    with pytest.raises(ValueError, match="no linear"):
        relative_updates(torch.nn.ReLU(), torch.nn.ReLU())
