"""Signals through random chains (helpers.models.chain, helpers.measure.scrambling,
helpers.experiments.scrambling) and their figures."""

import numpy as np
import pytest
import torch

from helpers.data import digits
from helpers.experiments import digit_twins, signal_through_depth
from helpers.measure.scrambling import (
    different_class_pairs,
    mean_field_cosines,
    pair_cosines,
    probe_accuracy,
    relu_cosine_map,
)
from helpers.models import LayerChain
from helpers.plots import principal_plane
from helpers.plots import signal_through_depth as plot_signal


def test_twin_chains_share_weights_and_differ_in_the_skip():
    torch.manual_seed(0)
    residual = LayerChain(3, 8, in_features=4, out_features=2)
    plain = residual.twin()
    assert plain.kind == "plain" and residual.kind == "residual"
    for p, r in zip(plain.parameters(), residual.parameters()):
        assert torch.equal(p, r)
    x = torch.randn(5, 4)
    hp, hr = plain.representations(x), residual.representations(x)
    assert len(hp) == 4 and torch.equal(hp[0], hr[0])
    # plain: h1 = W1 relu(h0); residual: h1 = h0 + W1 relu(h0)
    assert torch.allclose(hr[1], hr[0] + hp[1])
    assert plain(x).shape == (5, 2)


def test_he_initialisation_keeps_a_plain_chains_signal_size():
    torch.manual_seed(0)
    net = LayerChain(30, 512, kind="plain", in_features=512, out_features=2)
    h = net.representations(torch.randn(64, 512))
    ratio = (h[-1].pow(2).mean() / h[0].pow(2).mean()).item()
    assert 0.3 < ratio < 3


def test_chain_rejects_bad_arguments():
    with pytest.raises(ValueError, match="layers"):
        LayerChain(0)
    with pytest.raises(ValueError, match="kind"):
        LayerChain(2, kind="dense")
    with pytest.raises(ValueError, match="norm"):
        LayerChain(2, norm="group")
    with pytest.raises(ValueError, match="init"):
        LayerChain(2, init="orthogonal")


def test_relu_cosine_map_matches_its_known_values_and_a_wide_layer():
    assert relu_cosine_map(1.0) == pytest.approx(1.0)
    assert relu_cosine_map(0.0) == pytest.approx(1 / np.pi)
    assert relu_cosine_map(-1.0) == pytest.approx(0.0)
    c = np.linspace(-0.99, 0.99, 9)
    assert np.all(relu_cosine_map(c) > c)
    # Monte Carlo: two unit vectors with cosine 0.3 through relu, in 20,000 dimensions
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(20000, generator=gen, dtype=torch.float64)
    v = 0.3 * u + np.sqrt(1 - 0.09) * torch.randn(20000, generator=gen, dtype=torch.float64)
    measured = torch.nn.functional.cosine_similarity(torch.relu(u), torch.relu(v), dim=0).item()
    assert measured == pytest.approx(relu_cosine_map(0.3), abs=0.02)


def test_mean_field_residual_drifts_at_half_the_speed():
    plain, residual = mean_field_cosines(0.0, 3), mean_field_cosines(0.0, 3, residual=True)
    assert plain.shape == (4,) and plain[0] == 0 and residual[1] == pytest.approx(plain[1] / 2)
    assert np.all(np.diff(plain) > 0) and np.all(residual[1:] < plain[1:])
    assert mean_field_cosines(np.zeros(5), 2).shape == (3, 5)


def test_pairs_cosines_and_probe():
    labels = torch.tensor([0, 0, 1, 1, 2])
    pairs = different_class_pairs(labels, 50, generator=torch.Generator().manual_seed(0))
    assert pairs.shape == (50, 2) and torch.all(labels[pairs[:, 0]] != labels[pairs[:, 1]])
    h = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 1.0]])
    assert pair_cosines(h, torch.tensor([[0, 1], [0, 2]])) == pytest.approx([1.0, 0.0])
    with pytest.raises(ValueError, match="two classes"):
        different_class_pairs(torch.zeros(4, dtype=torch.long), 3, generator=torch.Generator())
    # a separable problem is read perfectly; pure noise is not
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(200) % 4
    x = torch.nn.functional.one_hot(y, 4).double() * 5 + torch.randn(200, 4, generator=gen, dtype=torch.float64)
    assert probe_accuracy(x[:100], y[:100], x[100:], y[100:]) == 1.0
    noise = torch.randn(200, 4, generator=gen)
    assert probe_accuracy(noise[:100], y[:100], noise[100:], y[100:]) < 0.5
    with pytest.raises(ValueError, match="ridge"):
        probe_accuracy(x[:100], y[:100], x[100:], y[100:], ridge=0)


def test_signal_through_depth_measures_every_layer():
    data = digits()
    result = signal_through_depth(data, layers=4, width=32, n_pairs=100, seed=0)
    assert set(result.cosine) == {(n, k) for n in ("none", "batch") for k in ("plain", "residual")}
    assert all(v.shape == (5,) for v in result.cosine.values())
    assert result.cosine["none", "plain"][0] == result.cosine["none", "residual"][0]  # the same stem
    assert 0.8 < result.input_probe < 1 and set(result.theory) == {"plain", "residual"}
    assert 0 <= result.at("probe", "batch", "plain", 4) <= 1
    twins = digit_twins(data, layers=2, width=8)
    assert set(twins) == {"plain", "residual"}
    fig = plot_signal(result, title="finding")
    assert fig.texts[0].get_text() == "finding"
    fig = principal_plane(np.random.default_rng(0).normal(size=(30, 5)), np.arange(30) % 10, title="t")
    assert "principal component" in fig.axes[0].get_xlabel()
