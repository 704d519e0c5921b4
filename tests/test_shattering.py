"""Shattered gradients and mini-batch agreement (helpers.measure.shattering,
helpers.experiments.shattering) and their figures."""

import numpy as np
import pytest
import torch

from helpers.data import digits
from helpers.experiments import (
    decay_fits,
    first_steps,
    gradients_on_grid,
    input_grid,
    minibatch_agreement,
    noise_references,
    scalar_twins,
    shattering_by_depth,
)
from helpers.measure.shattering import (
    freeze_batch_statistics,
    input_gradients,
    minibatch_gradient_cosine,
    neighbour_correlation,
)
from helpers.models import LayerChain
from helpers.plots import correlation_by_depth, first_steps_at_rate, gradient_curves
from helpers.plots import minibatch_agreement as plot_agreement


def test_neighbour_correlation_tells_white_from_brown_noise():
    noise = noise_references(seed=0)
    assert neighbour_correlation(noise["brown noise"]) > 0.9
    assert abs(neighbour_correlation(noise["white noise"])) < 0.2
    assert neighbour_correlation(np.ones(10)) == 0.0
    assert neighbour_correlation(np.arange(10.0)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="1-D series"):
        neighbour_correlation(np.ones((3, 3)))


def test_input_gradients_equal_finite_differences_with_frozen_batch_statistics():
    torch.manual_seed(0)
    net = LayerChain(3, 16, in_features=1, out_features=1, norm="batch").double()
    x = torch.linspace(-2, 2, 64, dtype=torch.float64).unsqueeze(1)
    g = input_gradients(net, x)
    assert not net.training
    eps = 1e-6
    with torch.no_grad():
        fd = ((net(x + eps) - net(x - eps)) / (2 * eps)).squeeze(1).numpy()
    assert np.allclose(g, fd, atol=1e-6)
    # the frozen statistics are the grid's own
    norm = net.norms[0]
    assert torch.allclose(norm.running_mean, net.stem(x).mean(0).detach())


def test_a_chain_without_biases_or_normalisation_has_two_gradient_values():
    """Positive homogeneity: N(x) = x N(1) for x > 0 and x N(-1) for x < 0."""
    torch.manual_seed(0)
    net = LayerChain(10, 32, kind="plain", in_features=1, out_features=1, norm="none")
    g = input_gradients(net, input_grid(101))
    assert len(np.unique(np.round(g, 5))) <= 3  # two slopes, and the kink at 0 itself


def test_input_gradients_rejects_bad_shapes():
    net = LayerChain(1, 4, in_features=1, out_features=2)
    with pytest.raises(ValueError, match="column of inputs"):
        input_gradients(net, torch.zeros(5))
    with pytest.raises(ValueError, match="one output"):
        input_gradients(net, torch.zeros(5, 1))


def test_scalar_twins_and_setups():
    twins = scalar_twins(2, setup="UDL", width=8, seed=0)
    assert twins["plain"].kind == "plain" and twins["plain"].norm == "none"
    weights = torch.cat([p.flatten() for p in twins["residual"].parameters()])
    assert weights.std().item() == pytest.approx(8 ** -0.5, rel=0.3)
    assert scalar_twins(2, width=8)["residual"].norm == "batch"
    with pytest.raises(ValueError, match="setup"):
        scalar_twins(2, setup="mine")
    grads = gradients_on_grid(2, width=8, seed=1)
    assert grads["plain"].shape == (256,)


def test_shattering_by_depth_and_the_decay_fits():
    result = shattering_by_depth((1, 3), setups=("Balduzzi", "no norm"), nets=2, width=16, seed=0)
    assert set(result) == {(s, k) for s in ("Balduzzi", "no norm") for k in ("plain", "residual")}
    assert result["Balduzzi", "plain"].shape == (2, 2)
    depths = np.array([1, 2, 4, 8])
    exponential = np.tile(0.8 ** depths, (3, 1)).T
    assert decay_fits(depths, exponential)["per_layer"] == pytest.approx(0.8)
    power = np.tile(depths ** -0.3, (3, 1)).T
    assert decay_fits(depths, power)["power"] == pytest.approx(0.3)
    with pytest.raises(ValueError, match="at least two depths"):
        decay_fits(depths, np.zeros((4, 3)))


def test_minibatch_agreement_and_first_steps_measure_what_they_say():
    data = digits()
    torch.manual_seed(0)
    net = LayerChain(2, 16, in_features=64, out_features=10)
    cos = minibatch_gradient_cosine(net, data.x_train, data.y_train, batch_size=8, pairs=3,
                                    generator=torch.Generator().manual_seed(0))
    assert cos.shape == (3,) and np.all(np.abs(cos) <= 1)
    with pytest.raises(ValueError, match="half"):
        minibatch_gradient_cosine(net, data.x_train[:10], data.y_train[:10], batch_size=8,
                                  generator=torch.Generator())
    agree = minibatch_agreement(data, (2, 4), width=8, pairs=2, seed=0)
    assert agree["plain"].shape == (2, 2)
    steps = first_steps(data, layers=2, learning_rates=(0.1,), steps=3, width=8, seed=0)
    assert steps["residual"][0.1].shape == (4,) and steps["plain"][0.1][0] > 0
    fig = plot_agreement((2, 4), agree, steps, title="finding")
    assert fig.texts[0].get_text() == "finding"


def test_freeze_batch_statistics_makes_each_output_independent_of_the_others():
    torch.manual_seed(0)
    net = freeze_batch_statistics(LayerChain(2, 8, in_features=1, out_features=1, norm="batch"), input_grid(32))
    x = input_grid(32)
    with torch.no_grad():
        assert torch.allclose(net(x)[:5], net(x[:5]))


def test_gradient_figures():
    fig = gradient_curves({"plain, 1 layer": np.ones(256), "white noise": np.zeros(256)}, title="finding",
                          correlations={"plain, 1 layer": 1.0, "white noise": 0.0})
    assert fig.axes[1].get_xlabel() == "sample index" and "correlation 1.00" in fig.axes[0].get_title()
    runs = {("Balduzzi", "plain"): np.zeros((2, 3)), ("Balduzzi", "residual"): np.ones((2, 3))}
    runs["Balduzzi", "plain"][1] = -0.4
    fig = correlation_by_depth((1, 2), runs, title="finding", references={"white noise": 0.0})
    assert fig.axes[0].get_title() == "finding"
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "white noise (0.00)" in labels, "references are named in the legend, clear of the data"
    assert fig.axes[0].get_ylim()[0] < -0.4, "no band is cut off at the bottom"


def test_first_steps_at_one_rate():
    steps = {"plain": {0.1: np.array([2.3, 2.2]), 1.0: np.array([2.3, 2.4])},
             "residual": {0.1: np.array([2.3, 1.0]), 1.0: np.array([2.3, 0.5])}}
    fig = first_steps_at_rate(steps, 1.0, title="finding")
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["plain", "residual"]
    assert list(lines[1].get_ydata()) == [2.3, 0.5]
    with pytest.raises(ValueError, match="learning_rate must be one of"):
        first_steps_at_rate(steps, 0.3, title="finding")


def test_chi1_and_the_edge_of_chaos_match_mean_field_known_answers():
    from helpers.experiments.order_chaos import chi1, critical_weight_variance

    # Without biases and below sigma_w^2 = 1 the fixed point is q* = 0, where tanh' = 1: chi_1 = sigma_w^2.
    assert chi1(0.5, 0.0) == pytest.approx(0.5, abs=1e-6)
    assert critical_weight_variance(0.0) == pytest.approx(1.0, abs=0.02)
    # Biases move the edge to larger weights; chi_1 grows with the weights on either side.
    edge = critical_weight_variance(0.05)
    assert edge > 1.2 and chi1(edge, 0.05) == pytest.approx(1.0, abs=1e-6)
    assert chi1(0.5 * edge, 0.05) < 1 < chi1(2 * edge, 0.05)
    with pytest.raises(ValueError, match="weight_variance"):
        chi1(0.0)
    with pytest.raises(ValueError, match="bias_variance"):
        critical_weight_variance(-1.0)


def test_tanh_chains_are_drawn_from_their_seed_and_the_phases_differ():
    from helpers.experiments.order_chaos import TanhChain, phase_scan, tanh_chain_on_grid

    a, b = TanhChain(3, 2.0, width=16, seed=4), TanhChain(3, 2.0, width=16, seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert tanh_chain_on_grid(3, 2.0, width=16, seed=4) == tanh_chain_on_grid(3, 2.0, width=16, seed=4)
    scan = phase_scan((0.5, 6.0), layers=30, nets=2, width=64, seed=0)
    assert scan["gradient"].shape == scan["cosine"].shape == (2, 2)
    ordered, chaotic = scan["gradient"].mean(axis=1)
    assert ordered > 0.9 > 0.5 > chaotic
    with pytest.raises(ValueError, match="layers"):
        TanhChain(0, 1.0)
    with pytest.raises(ValueError, match="weight_variances"):
        phase_scan(())


def test_measured_edge_interpolates_the_first_crossing():
    from helpers.experiments.order_chaos import measured_edge

    # 0.9 at 1, 0.7 at 2, 0.1 at 3: 0.5 is a third of the way from 0.7 to 0.1.
    assert measured_edge((1.0, 2.0, 3.0), (0.9, 0.7, 0.1)) == pytest.approx(2 + 1 / 3)
    # the first crossing counts, not a later one after a rebound
    assert measured_edge((1, 2, 3, 4), (0.9, 0.3, 0.8, 0.0)) == pytest.approx(1 + 0.4 / 0.6)
    assert measured_edge((1, 2), (1.0, 0.0), level=0.25) == pytest.approx(1.75)
    with pytest.raises(ValueError, match="bracket"):
        measured_edge((1, 2), (0.9, 0.8))
    with pytest.raises(ValueError, match="bracket"):
        measured_edge((1, 2), (0.1, 0.0))
    with pytest.raises(ValueError, match="one value per weight variance"):
        measured_edge((1, 2, 3), (0.9, 0.1))
    with pytest.raises(ValueError, match="increase"):
        measured_edge((2, 1), (0.9, 0.1))
    with pytest.raises((TypeError, ValueError), match="correlations"):
        measured_edge((1, 2), (0.9, "low"))


def test_phase_diagram_marks_the_edge_and_places_the_batchnorm_chains():
    from helpers.plots.shattering import phase_diagram

    scan = {"gradient": np.array([[1.0, 0.98], [0.1, -0.1]]), "cosine": np.array([[1.0, 1.0], [0.5, 0.4]])}
    fig = phase_diagram((0.5, 4.0), scan, critical=1.76, layers=50, title="Edge",
                        placed={"plain, ReLU + BatchNorm": 0.02}, edge=2.1)
    left, right = fig.axes[:2]
    assert any("edge of chaos" in line.get_label() for line in left.lines)
    assert any(line.get_label() == "correlation 0.5 at 50 layers" for line in left.lines)
    assert not any("correlation 0.5" in line.get_label() for line in right.lines)
    assert any(line.get_label().startswith("plain, ReLU + BatchNorm") for line in left.lines)
    assert left.get_xlabel().startswith("weight variance") and right.get_ylabel().startswith("cosine")
    import matplotlib.pyplot as plt
    plt.close(fig)
    with pytest.raises((TypeError, ValueError), match="edge"):
        phase_diagram((0.5, 4.0), scan, critical=1.76, layers=50, title="Edge", edge="high")


def test_cosine_by_layer_is_one_for_identical_batches_and_matches_the_whole_cosine():
    from helpers.measure.shattering import minibatch_gradient_cosine, minibatch_gradient_cosine_by_layer

    torch.manual_seed(0)
    net = LayerChain(3, 8, kind="plain", in_features=4, out_features=3, norm="none")
    same_x, same_y = torch.randn(1, 4).repeat(40, 1), torch.ones(40, dtype=torch.long)
    whole, layers = minibatch_gradient_cosine_by_layer(net, same_x, same_y, batch_size=8, pairs=2,
                                                       generator=torch.Generator().manual_seed(0))
    assert layers.shape == (2, 5)  # the stem, three hidden layers, the head
    assert np.allclose(whole, 1.0) and np.allclose(layers, 1.0)
    x, y = torch.randn(40, 4), torch.randint(0, 3, (40,))
    whole, _ = minibatch_gradient_cosine_by_layer(net, x, y, batch_size=8, pairs=3,
                                                  generator=torch.Generator().manual_seed(1))
    again = minibatch_gradient_cosine(net, x, y, batch_size=8, pairs=3, generator=torch.Generator().manual_seed(1))
    assert np.array_equal(whole, again)
    with pytest.raises(ValueError, match="batch_size"):
        minibatch_gradient_cosine_by_layer(net, x, y, batch_size=30, generator=torch.Generator())


def test_agreement_by_layer_gives_the_whole_cosines_of_minibatch_agreement_and_one_row_per_depth():
    from helpers.experiments.shattering import agreement_by_layer
    from helpers.plots.shattering import agreement_heat_map

    data = digits()
    result = agreement_by_layer(data, (2, 4), pairs=2, width=16, seed=3)
    whole = minibatch_agreement(data, (2, 4), pairs=2, width=16, seed=3)
    assert all(np.array_equal(result["whole"][k], whole[k]) for k in whole)
    assert [len(layers) for layers in result["by_layer"]["plain"]] == [4, 6]
    fig = agreement_heat_map((2, 4), result["by_layer"], title="Two depths")
    assert len(fig.axes) == 4  # two panels and their colour bars
    import matplotlib.pyplot as plt
    plt.close(fig)
    with pytest.raises(ValueError, match="one array per depth"):
        agreement_heat_map((2, 4, 8), result["by_layer"], title="Three depths")
