"""Chapter 5, stable propagation: second moments through linear chains, parameter gradients of
plain and residual nets at initialisation, and their figures."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import helpers
from helpers.experiments.moments import (
    DepthGradients,
    chain_profiles,
    gradients_by_depth,
    gradients_by_scale,
)
from helpers.measure.moments import (
    INITS,
    ChainMoments,
    block_gradient_rms,
    chain_moments,
    chain_second_moments,
    gain_problem,
    init_variance,
    layer_factors,
    predicted_moments,
    relu_chain_growth,
    uses_relu,
    width_profile,
)
from helpers.models.mlp import DeepMLP
from helpers.plots.moments import chain_frame, chain_spread, depth_gradients, scale_gradients, second_moments
from helpers.seeding import generator


def test_the_formula_per_layer_for_each_init():
    # one layer from 32 to 64 units: forward n σ², backward m σ², halved with ReLU
    expected = {"1/n": (1, 2), "2/n, ReLU": (1, 2), "1/m": (0.5, 1), "Xavier": (2 / 3, 4 / 3)}
    for init, (forward, backward) in expected.items():
        f, b = layer_factors([32, 64], init)
        assert f == pytest.approx([forward]) and b == pytest.approx([backward]), init
    assert init_variance("Xavier", 32, 64) == pytest.approx(2 / 96)
    assert uses_relu("2/n, ReLU") and not uses_relu("1/n")
    with pytest.raises(ValueError, match="init"):
        init_variance("orthogonal", 3, 4)
    with pytest.raises(ValueError, match="widths"):
        layer_factors([32], "1/n")


def test_the_product_of_m_over_n_telescopes_to_the_last_width_over_the_first():
    widths = np.random.default_rng(0).integers(8, 300, size=31)
    forward, backward = predicted_moments(widths, "1/n")
    assert forward == pytest.approx(np.ones(31))
    assert backward[0] == pytest.approx(widths[-1] / widths[0]) and backward[-1] == 1
    forward, backward = predicted_moments(widths, "1/m")
    assert forward[-1] == pytest.approx(widths[0] / widths[-1]) and backward == pytest.approx(np.ones(31))
    # Xavier's two factors multiply to 4nm/(n+m)² <= 1 at every layer
    f, b = layer_factors(widths, "Xavier")
    n, m = widths[:-1], widths[1:]
    assert f * b == pytest.approx(4 * n * m / (n + m) ** 2) and np.all(f * b <= 1 + 1e-12)


def test_width_profiles():
    wide = width_profile("widening")
    assert len(wide) == 51 and wide[0] == 32 and wide[-1] == 256 and np.all(np.diff(wide) >= 0)
    assert sorted(set(wide.tolist())) == [32, 64, 128, 256]
    assert np.array_equal(width_profile("narrowing"), wide[::-1])
    assert width_profile("alternating", depth=4).tolist() == [32, 256, 32, 256, 32]
    assert set(width_profile("constant").tolist()) == {128}
    for bad, match in ((dict(profile="zigzag"), "profile"), (dict(profile="widening", low=64, high=32), "high"),
                       (dict(profile="widening", low=32, high=100), "power of two"),
                       (dict(profile="widening", depth=1), "depth")):
        with pytest.raises(ValueError, match=match):
            width_profile(**bad)


def test_chain_second_moments_match_a_pass_by_hand():
    gen = generator(1)
    widths = [5, 7, 3]
    weights = [torch.randn(2, n, m, generator=gen, dtype=torch.float64) for n, m in zip(widths[:-1], widths[1:])]
    x = torch.randn(2, 4, 5, generator=gen, dtype=torch.float64)
    g = torch.randn(2, 4, 3, generator=gen, dtype=torch.float64)
    for relu in (False, True):
        forward, backward = chain_second_moments(weights, x, g, relu=relu, scales=[0.5, 2.0])
        phi = torch.relu if relu else (lambda t: t)
        h1 = phi(x) @ weights[0] * 0.5
        h2 = phi(h1) @ weights[1] * 2.0
        g1 = (g @ weights[1].transpose(1, 2)) * 2.0 * ((h1 > 0).double() if relu else 1.0)
        g0 = (g1 @ weights[0].transpose(1, 2)) * 0.5 * ((x > 0).double() if relu else 1.0)
        want_f = torch.stack([t.pow(2).mean((1, 2)) for t in (x, h1, h2)], 1)
        want_b = torch.stack([t.pow(2).mean((1, 2)) for t in (g0, g1, g)], 1)
        assert torch.allclose(forward, want_f) and torch.allclose(backward, want_b)
    assert not x.requires_grad, "the caller's input is left alone"


def test_measured_chains_follow_the_formula_per_layer_and_share_their_draws():
    widths = width_profile("alternating", depth=6, low=64, high=128)
    out = chain_moments(widths, chains=24, batch=16, generator=generator(0))
    assert list(out) == list(INITS)
    for init, r in out.items():
        assert r.forward.shape == r.backward.shape == (24, 7)
        assert np.allclose(r.forward[:, 0], 1) and np.allclose(r.backward[:, -1], 1)
        assert r.factor_off("factors") < 1.25, init
        assert r.factor_off() < 1.5, init
    # the linear inits scale the same matrices, so they differ from the formula in the same way
    ratio = {i: out[i].mean_forward / out[i].predicted_forward for i in ("1/n", "1/m", "Xavier")}
    assert np.allclose(ratio["1/n"], ratio["1/m"], rtol=1e-4) and np.allclose(ratio["1/n"], ratio["Xavier"], rtol=1e-4)
    again = chain_moments(widths, ["1/n"], chains=24, batch=16, generator=generator(0))["1/n"]
    assert np.array_equal(again.forward, out["1/n"].forward)
    with pytest.raises(ValueError, match="inits"):
        chain_moments(widths, ["He"])
    with pytest.raises(ValueError, match="chains"):
        chain_moments(widths, chains=0)


def test_factor_off_names_the_worst_layer():
    widths = np.array([4, 4, 4])
    forward, backward = predicted_moments(widths, "1/n")
    doubled = np.tile(forward, (3, 1))
    doubled[:, 2] *= 2  # the last layer's output twice the formula's
    r = ChainMoments("1/n", widths, doubled, np.tile(backward, (3, 1)), forward, backward)
    assert r.factor_off() == pytest.approx(2.0)
    assert r.factor_off("factors") == pytest.approx(2.0)
    assert r.forward_factors == pytest.approx([1.0, 2.0])
    with pytest.raises(ValueError, match="what"):
        r.factor_off("both")


def test_chain_profiles_draw_each_profile_and_seed_apart():
    a = chain_profiles(("alternating", "constant"), seed=0, chains=2, batch=2, depth=4)
    assert set(a) == {(p, i) for p in ("alternating", "constant") for i in INITS}
    b = chain_profiles(("alternating",), seed=1, chains=2, batch=2, depth=4)
    assert not np.allclose(a["alternating", "1/n"].forward, b["alternating", "1/n"].forward)
    with pytest.raises(ValueError, match="profiles"):
        chain_profiles(())


def test_gain_problem_and_the_exercise_chain():
    assert "no gain yet" in gain_problem(None)
    assert "my_gain" in gain_problem("2.5") and "my_gain" in gain_problem(float("nan"))
    assert "between" in gain_problem(100) and "between" in gain_problem(0.1)
    assert gain_problem(2.5) is None and gain_problem(np.float32(1.5)) is None
    with pytest.raises(ValueError, match="no gain yet"):
        relu_chain_growth(None)
    # ReLU is positively homogeneous: the same draws with gain 3 instead of 2 give (3/2)^depth
    he = relu_chain_growth(2.0, depth=6, width=32, chains=8, generator=generator(3))
    three = relu_chain_growth(3.0, depth=6, width=32, chains=8, generator=generator(3))
    assert three / he == pytest.approx(1.5 ** 6, rel=1e-4)
    assert 0.5 < relu_chain_growth(2.0, depth=6, width=64, chains=64, generator=generator(4)) < 1.5


def test_block_gradient_rms_is_the_root_mean_square_over_the_blocks():
    with helpers.seeding.isolated(0):
        net = DeepMLP(8, 16, kind="plain", norm="layer", order="pre")
    x, y = torch.randn(10, 64), torch.randint(0, 10, (10,))
    rms = block_gradient_rms(net, x, y)
    grads = torch.cat([p.grad.reshape(-1) for b in net.blocks for p in b.parameters()])
    assert rms == pytest.approx(math.sqrt(float(grads.pow(2).sum()) / grads.numel()))
    assert block_gradient_rms(net, x, y) == pytest.approx(rms), "old gradients are cleared first"
    with pytest.raises(TypeError, match="blocks"):
        block_gradient_rms(torch.nn.Linear(64, 10), x, y)
    with pytest.raises(ValueError, match="one row per example"):
        block_gradient_rms(net, x, y[:5])


def test_gradients_by_depth_and_by_scale():
    data = helpers.data.digits()
    x, y = data.x_train[:16], data.y_train[:16]
    torch.manual_seed(7)
    before = torch.rand(1)
    torch.manual_seed(7)
    depth = gradients_by_depth(x, y, blocks=(2, 4), width=8, draws=2, seed=0)
    assert torch.equal(torch.rand(1), before), "the caller's random state is left alone"
    assert depth.plain.shape == depth.residual.shape == (2, 2) and np.all(depth.plain > 0)
    assert depth.typical_plain == pytest.approx(np.sqrt(depth.plain.prod(1)))
    assert np.isfinite(depth.exponent("plain")) and np.isfinite(depth.exponent("residual"))
    # tiny branch scales: the gradient is proportional to ε (the same draws at every ε)
    scale = gradients_by_scale(x, y, eps=(1e-4, 2e-4, 4e-4), blocks=3, width=8, draws=1)
    assert scale.rms[1, 0] / scale.rms[0, 0] == pytest.approx(2, rel=1e-3)
    assert scale.exponent(1.0) == pytest.approx(1, abs=1e-3)
    with pytest.raises(ValueError, match="largest"):
        scale.exponent(1e-5)
    with pytest.raises(ValueError, match="eps"):
        gradients_by_scale(x, y, eps=(0.0,))
    with pytest.raises(ValueError, match="blocks"):
        gradients_by_depth(x, y, blocks=())


def test_the_figures_draw_and_refuse_bad_input():
    widths = width_profile("widening", depth=8)
    out = chain_moments(widths, chains=4, batch=4, generator=generator(0))
    depth = DepthGradients(np.array([2, 4, 8]), np.full((3, 2), 0.01), np.array([[0.02] * 2, [0.014] * 2, [0.01] * 2]))
    scale = gradients_by_scale(torch.randn(4, 64), torch.arange(4), eps=(1 / 8, 1 / 4, 1 / 2), blocks=2,
                               width=8, draws=1)
    figures = [second_moments(out, title="t"), chain_spread({"1/n": out["1/n"]}, title="t"),
               chain_frame(out["Xavier"], title="t"), depth_gradients(depth, title="t"),
               scale_gradients(scale, fit_up_to=1 / 4, title="t")]
    for fig in figures:
        assert fig.axes and (fig.texts or any(ax.get_title() for ax in fig.axes))
        plt.close(fig)
    with pytest.raises(TypeError, match="results"):
        second_moments({}, title="t")
    with pytest.raises(ValueError, match="unknown inits"):
        second_moments({"He": out["1/n"]}, title="t")
    with pytest.raises(ValueError, match="side"):
        chain_spread(out, title="t", side="sideways")
    with pytest.raises(ValueError, match="title"):
        depth_gradients(depth, title="")
