"""Chapter 3's measurements: the residual stream's variance, batch-mate dependence of
normalisation, and the cost of joining by add or concat."""

import math

import numpy as np
import pytest
import torch

from helpers.measure.batch_mates import (
    BATCH_NORMS,
    batch_mate_drift,
    drift_table,
    normalise,
    pad_batch,
    random_sequences,
)
from helpers.measure.concat import JOINS, SUBLAYERS, join_costs, measured_costs
from helpers.measure.streams import moments, residual_stream, variance_terms


def _stream(norm, seed=0, **kw):
    return residual_stream(10, 32, 256, norm=norm, generator=torch.Generator().manual_seed(seed), **kw)


def test_moments_and_variance_terms_match_numpy():
    rng = np.random.default_rng(0)
    x, f = rng.normal(size=(50, 4)), rng.normal(size=(50, 4)) + 0.3 * rng.normal(size=(50, 4))
    mean, var, skew = moments(torch.tensor(x))
    assert (mean, var) == pytest.approx((x.mean(), x.var()))
    assert skew == pytest.approx(((x - x.mean()) ** 3).mean() / x.var() ** 1.5)
    var_x, var_f, var_sum, twice_cov = variance_terms(torch.tensor(x), torch.tensor(f))
    assert var_sum == pytest.approx(var_x + var_f + twice_cov)  # an identity
    assert twice_cov == pytest.approx(2 * np.cov(x.ravel(), f.ravel(), bias=True)[0, 1])
    relu = torch.relu(torch.randn(200_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    m, second, third = 1 / math.sqrt(2 * math.pi), 0.5, 2 / math.sqrt(2 * math.pi)  # raw moments of ReLU(z)
    var = second - m ** 2
    assert moments(relu)[2] == pytest.approx((third - 3 * m * second + 2 * m ** 3) / var ** 1.5, abs=0.03)
    with pytest.raises(ValueError, match="same shape"):
        variance_terms(torch.zeros(3), torch.zeros(4))


def test_without_norm_the_stream_variance_grows_geometrically_and_matches_the_sum_of_variances():
    record = _stream("none")
    growth = record.stream_var[1:] / record.stream_var[:-1]
    assert np.all(growth > 1.5), growth  # each branch about as large as the stream: about x2 a layer
    assert np.median(np.abs(record.sum_var - record.predicted_var) / record.sum_var) < 0.1
    assert record.stream_var.shape == (11,) and record.branch_var.shape == (10,)


def test_pre_ln_grows_linearly_and_post_ln_holds_the_variance_at_one():
    pre, post = _stream("pre"), _stream("post")
    assert np.allclose(post.stream_var[1:], 1.0, atol=1e-6)
    assert 6 < pre.stream_var[-1] < 16  # about 1 + depth, not 2^depth
    assert np.all(np.diff(pre.stream_var) > 0)


def test_the_nonlinearity_shifts_and_skews_the_branch_activations():
    relu, gelu = _stream("post", activation="relu"), _stream("post", activation="gelu")
    for record in (relu, gelu):
        assert np.all(record.hidden_mean > 0.3) and np.all(record.hidden_skew > 1.0)
    assert np.median(np.abs(relu.stream_skew)) < 0.3  # W2 mixes the skewed units back towards symmetry


def test_scale_zero_leaves_the_stream_alone_and_bad_options_raise():
    record = _stream("none", scale=0.0)
    assert np.allclose(record.stream_var, record.stream_var[0]) and np.all(record.branch_var == 0)
    with pytest.raises(ValueError, match="norm must be one of"):
        residual_stream(2, norm="batch")
    with pytest.raises(ValueError, match="depth must be >= 1"):
        residual_stream(0)
    with pytest.raises(ValueError, match="activation must be one of"):
        residual_stream(2, activation="tanh")


def test_pad_batch_pads_with_zeros_and_masks_the_padding():
    a, b = torch.ones(2, 3), 2 * torch.ones(4, 3)
    x, mask = pad_batch([a, b])
    assert x.shape == (2, 4, 3) and mask.tolist() == [[True, True, False, False], [True] * 4]
    assert x[0, 2:].abs().sum() == 0
    with pytest.raises(ValueError, match="one width"):
        pad_batch([torch.ones(2, 3), torch.ones(2, 4)])
    with pytest.raises(ValueError, match="at least one sequence"):
        pad_batch([])


def test_normalise_agrees_with_pytorchs_layers():
    g = torch.Generator().manual_seed(1)
    x, mask = pad_batch(random_sequences([3, 5, 2], 6, generator=g))
    assert torch.allclose(normalise(x, mask, "layer"), torch.nn.LayerNorm(6, elementwise_affine=False,
                                                                          dtype=x.dtype)(x))
    bn = torch.nn.BatchNorm1d(6, affine=False, dtype=x.dtype).train()
    assert torch.allclose(normalise(x, mask, "batch"), bn(x.transpose(1, 2)).transpose(1, 2))
    real = normalise(x, mask, "batch-masked")[mask]
    assert torch.allclose(real.mean(0), torch.zeros(6, dtype=x.dtype), atol=1e-12)
    assert torch.allclose(real.var(0, unbiased=False), torch.ones(6, dtype=x.dtype), atol=1e-4)
    with pytest.raises(ValueError, match="norm must be one of"):
        normalise(x, mask, "group")


def test_layer_norm_ignores_batch_mates_and_batch_norm_does_not():
    g = torch.Generator().manual_seed(2)
    target = random_sequences([5], 8, generator=g)[0]
    batches = [random_sequences([5, 9], 8, generator=g), random_sequences([12, 12], 8, generator=g),
               random_sequences([5, 5], 8, shift=2.0, generator=g)]
    drift = drift_table(target, batches)
    assert set(drift) == set(BATCH_NORMS)
    assert drift["layer"] < 1e-12
    assert drift["batch"] > 0.3 and drift["batch-masked"] > 0.3
    with pytest.raises(ValueError, match="at least two"):
        batch_mate_drift(target, batches[:1], "layer")


@pytest.mark.parametrize("join", JOINS)
@pytest.mark.parametrize("kind", SUBLAYERS)
def test_join_costs_count_what_torch_builds(join, kind):
    rows = join_costs(6, 4, join=join, kind=kind)
    measured = measured_costs(6, 4, join=join, kind=kind)
    assert rows[-1]["total_params"] == measured["params"]
    assert sum(r["flops_per_token"] for r in rows) == measured["flops_per_token"]
    assert rows[-1]["width_out"] == measured["width_out"]


def test_concat_doubles_the_width_and_quadruples_the_cost_each_layer():
    rows = join_costs(512, 12)
    assert [r["width_out"] for r in rows] == [512 * 2 ** n for n in range(1, 13)]
    assert all(b["flops_per_token"] == 4 * a["flops_per_token"] for a, b in zip(rows, rows[1:]))
    add = join_costs(512, 12, join="add")
    assert {r["width_out"] for r in add} == {512} and len({r["params"] for r in add}) == 1
    with pytest.raises(ValueError, match="join must be one of"):
        join_costs(8, 2, join="stack")
    with pytest.raises(ValueError, match="layers must be >= 1"):
        join_costs(8, 0)


def test_feature_offset_sees_what_a_pooled_mean_hides():
    from helpers.measure.streams import feature_offset

    g = torch.Generator().manual_seed(0)
    centred = torch.randn(4000, 6, generator=g, dtype=torch.float64)
    assert feature_offset(centred) < 0.05
    shifted = centred + torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    assert abs(float(shifted.mean())) < 0.05  # the pooled mean is 0 ...
    assert feature_offset(shifted) == pytest.approx(1 / np.sqrt(2), rel=0.05)  # ... each feature is not
    with pytest.raises(ValueError, match="tokens, features"):
        feature_offset(torch.zeros(3))


def test_a_nonlinear_branch_shifts_the_streams_features_and_a_linear_one_does_not():
    from helpers.measure.streams import residual_stream

    shifted = residual_stream(12, 16, 256, activation="relu", generator=torch.Generator().manual_seed(1))
    linear = residual_stream(12, 16, 256, activation="identity", generator=torch.Generator().manual_seed(1))
    assert shifted.stream_offset.shape == (13,)
    assert shifted.stream_offset[-1] > 3 * linear.stream_offset[-1]
    assert np.allclose(linear.hidden_skew, 0, atol=0.3)  # a linear branch leaves its units symmetric


def test_natural_mates_fill_the_batch_and_the_fast_outputs_match_target_output():
    from helpers.measure.batch_mates import _outputs, natural_mates, target_output

    mates = natural_mates(40, 4, 3, max_length=6, shift=1.0, generator=torch.Generator().manual_seed(0))
    assert sum(len(m) for m in mates) == 36 and all(1 <= len(m) <= 6 for m in mates)
    assert natural_mates(4, 4, 3) == []
    target = random_sequences([4], 3, generator=torch.Generator().manual_seed(1))[0]
    for seed in range(5):
        for n in (4, 5, 9, 40):
            for norm in BATCH_NORMS:
                fast = _outputs(target, n, norm, draws=1, max_length=6, shift=0.5,
                                generator=torch.Generator().manual_seed(seed))[0]
                slow = target_output(target, natural_mates(n, 4, 3, max_length=6, shift=0.5,
                                                           generator=torch.Generator().manual_seed(seed)), norm)
                assert torch.allclose(fast, slow, atol=1e-12), (seed, n, norm)
    with pytest.raises(ValueError, match="tokens must be >= target_length"):
        natural_mates(3, 4, 3)


def test_drift_by_batch_size_is_zero_for_layer_norm_and_falls_as_one_over_root_n_for_batch_norm():
    from helpers.measure.batch_mates import drift_by_batch_size, source_shift

    g = torch.Generator().manual_seed(3)
    target = random_sequences([4], 8, generator=g)[0]
    sizes = (16, 256, 4096)
    assert np.all(drift_by_batch_size(target, sizes, "layer", generator=g) == 0)
    spread = drift_by_batch_size(target, sizes, "batch-masked", draws=200, generator=g)
    # the error of a mean and a variance from N standard-normal tokens: about sqrt(1.5 / N) per entry
    expected = np.sqrt(1.5 / np.array(sizes))
    assert np.allclose(spread[1:], expected[1:], rtol=0.3), (spread, expected)
    assert drift_by_batch_size(target, [4], "batch", generator=g)[0] < 1e-12  # alone in its batch
    moved = source_shift(target, (8, 4096), "batch-masked", shift=1.0, draws=50, generator=g)
    assert moved[1] == pytest.approx(1.0, abs=0.05) and moved[0] < moved[1]  # the mates' mean becomes the batch's
    with pytest.raises(ValueError, match="norm must be one of"):
        drift_by_batch_size(target, sizes, "group")
    with pytest.raises(ValueError, match="target"):
        drift_by_batch_size(torch.zeros(4), sizes, "batch")
    with pytest.raises(ValueError, match=">= the target's length"):
        drift_by_batch_size(target, [2], "batch")
    with pytest.raises(ValueError, match="draws must be >= 2"):
        drift_by_batch_size(target, sizes, "batch", draws=1)
    with pytest.raises(TypeError, match="tokens_per_batch"):
        drift_by_batch_size(target, [8.5], "batch")
    with pytest.raises(ValueError, match="max_length"):
        drift_by_batch_size(target, sizes, "batch", max_length=0)
    with pytest.raises(ValueError, match="max_length"):
        source_shift(target, sizes, "batch", max_length=0)


def test_drift_by_tokens_draws_log_log_lines_and_refuses_bad_input():
    import matplotlib.pyplot as plt

    from helpers.plots.batch_mates import drift_by_tokens

    sizes = [8, 32, 128]
    fig = drift_by_tokens(sizes, {"BatchNorm": [0.3, 0.2, 0.1]}, shifted=[0.5, 0.8, 0.9], title="Noise falls")
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 3  # the measured line, the sqrt reference and the shifted case
    assert "tokens" in ax.get_xlabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="one positive value per batch size"):
        drift_by_tokens(sizes, {"BatchNorm": [0.3, 0.2]}, title="Wrong length")
    with pytest.raises(ValueError, match="at least two positive"):
        drift_by_tokens([8], {"BatchNorm": [0.3]}, title="One size")
    with pytest.raises(ValueError, match="title"):
        drift_by_tokens(sizes, {"BatchNorm": [0.3, 0.2, 0.1]}, title="")
