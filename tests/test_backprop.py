"""Back-propagation by hand (helpers.measure.backprop) and its figure."""

import numpy as np
import pytest

from helpers.measure.backprop import (
    activation_and_slope,
    backprop_by_autograd,
    backprop_by_hand,
    gradient_rank,
    largest_relative_error,
    random_two_layer,
)
from helpers.plots import outer_product


@pytest.mark.parametrize("activation", ["relu", "sigmoid"])
@pytest.mark.parametrize("d, h, o, n, residual", [(1, 1, 1, 1, False), (1, 1, 1, 1, True), (4, 3, 2, 5, False),
                                                   (6, 9, 6, 2, False), (6, 9, 6, 2, True)])
def test_by_hand_equals_autograd(activation, d, h, o, n, residual):
    problem = random_two_layer(d, h, o, n, rng=np.random.default_rng(1), residual=residual)
    hand = backprop_by_hand(*problem, activation, residual=residual)
    auto = backprop_by_autograd(*problem, activation, residual=residual)
    assert largest_relative_error(hand, auto) < 1e-12
    for key, value in zip(("x", "y", "W1", "b1", "W2", "b2"), problem):
        if key in auto:
            assert hand[key].shape == value.shape


def test_the_skip_adds_the_error_to_the_input_gradient_and_nothing_else():
    problem = random_two_layer(5, 4, 5, 3, rng=np.random.default_rng(2), residual=True)
    plain, residual = backprop_by_hand(*problem), backprop_by_hand(*problem, residual=True)
    # the errors differ (the output includes x), so compare the formula, not the numbers
    assert np.allclose(residual["x"] - residual["delta2"], residual["delta1"] @ problem[2])
    assert plain["x"].shape == residual["x"].shape


def test_one_example_gives_rank_one_and_a_batch_more():
    problem = random_two_layer(8, 6, 4, 1, rng=np.random.default_rng(3))
    assert gradient_rank(backprop_by_hand(*problem)["W2"]) == 1
    problem = random_two_layer(8, 6, 4, 20, rng=np.random.default_rng(3))
    assert gradient_rank(backprop_by_hand(*problem, "sigmoid")["W1"]) == 6
    assert gradient_rank(np.zeros((3, 3))) == 0


def test_slopes_of_the_activations():
    z = np.array([-2.0, 0.5])
    assert np.array_equal(activation_and_slope(z, "relu")[1], [0.0, 1.0])
    s = 1 / (1 + np.exp(-z))
    assert np.allclose(activation_and_slope(z, "sigmoid")[1], s * (1 - s))


def test_bad_input_is_named():
    x, y, W1, b1, W2, b2 = random_two_layer(3, 2, 2, 4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="activation"):
        backprop_by_hand(x, y, W1, b1, W2, b2, "tanh")
    with pytest.raises(ValueError, match="W2 must have shape"):
        backprop_by_hand(x, y, W1, b1, W2[:, :1], b2)
    with pytest.raises(ValueError, match="batch of shape"):
        backprop_by_hand(x[0], y, W1, b1, W2, b2)
    with pytest.raises(TypeError, match="NumPy array"):
        backprop_by_hand(x.tolist(), y, W1, b1, W2, b2)
    with pytest.raises(ValueError, match="residual block"):
        backprop_by_hand(x, y, W1, b1, W2, b2, residual=True)


def test_outer_product_figure_labels_its_parts():
    fig = outer_product(np.array([1.0, -2.0]), np.array([0.0, 1.0, 3.0]), title="finding")
    heat = fig.axes[3]
    assert heat.get_xlabel().startswith("column j") and heat.get_ylabel().startswith("row i")
    assert fig.texts[0].get_text() == "finding"
    with pytest.raises(ValueError, match="1-D"):
        outer_product(np.ones((2, 2)), np.ones(3), title="t")
