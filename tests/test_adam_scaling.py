"""Chapter 5's extension "a DeepNorm for Adam": the initialisations (helpers.models.adam_scaling),
the experiments (helpers.experiments.adam_scaling), their figures and the exercise's checker."""

import copy

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from helpers.experiments import adam_scaling as experiment
from helpers.experiments.deepnorm import make_net as deepnorm_net
from helpers.grading.chapter5 import ADAM_POWER, check_adam_beta_power
from helpers.models import SequenceTransformer, deepnorm_constants
from helpers.models.adam_scaling import (
    admin_forward,
    admin_omegas,
    admin_profiling,
    beta_of_power,
    beta_power_init_,
    tfixup_init_,
)
from helpers.models.deepnorm import deepnorm_init_
from helpers.plots import adam_scaling as plots


def _net(n_layers=3, d_model=8, norm_position="post", seed=0):
    torch.manual_seed(seed)
    return SequenceTransformer(7, 5, d_model, 2, 2 * d_model, n_layers, norm_position=norm_position)


def _tokens(batch=6, seed=1):
    return torch.randint(0, 7, (batch, 5), generator=torch.Generator().manual_seed(seed))


def test_beta_of_power_is_deepnorms_beta_at_a_quarter():
    for n in (1, 6, 24, 100):
        assert beta_of_power(n, 0.25) == pytest.approx(deepnorm_constants(n)[1])
        assert beta_of_power(n, 0.75) == pytest.approx(8 ** -0.25 * n ** -0.75)
    with pytest.raises(ValueError, match="n_layers"):
        beta_of_power(0, 0.25)
    with pytest.raises(TypeError, match="power"):
        beta_of_power(4, "1/4")
    with pytest.raises(ValueError, match="power"):
        beta_of_power(4, -0.5)


def test_beta_power_init_is_deepnorm_at_a_quarter_and_rescales_beta_otherwise():
    reference = deepnorm_init_(_net(), generator=torch.Generator().manual_seed(3))
    same = beta_power_init_(_net(), 0.25, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) for a, b in zip(reference.state_dict().values(), same.state_dict().values()))
    steeper = beta_power_init_(_net(), 1.0, generator=torch.Generator().manual_seed(3))
    ratio = beta_of_power(3, 1.0) / beta_of_power(3, 0.25)
    d = 8
    for old, new in zip(reference.layers, steeper.layers):
        assert new.alpha == pytest.approx(deepnorm_constants(3)[0])
        for name in ("linear1", "linear2"):
            for part in ("weight", "bias"):
                assert torch.allclose(getattr(getattr(new, name), part), ratio * getattr(getattr(old, name), part))
        assert torch.allclose(new.self_attn.out_proj.weight, ratio * old.self_attn.out_proj.weight)
        assert torch.allclose(new.self_attn.in_proj_weight[2 * d:], ratio * old.self_attn.in_proj_weight[2 * d:])
        assert torch.equal(new.self_attn.in_proj_weight[:2 * d], old.self_attn.in_proj_weight[:2 * d])
    with pytest.raises(ValueError, match="norm_position"):
        beta_power_init_(_net(norm_position="pre"), 0.5)
    with pytest.raises(TypeError, match="model"):
        beta_power_init_(torch.nn.Linear(2, 2), 0.5)


def test_tfixup_init_scales_the_writers_zeroes_the_biases_and_shrinks_the_input():
    n_layers, d = 4, 64
    net = _net(n_layers, d, norm_position="none")
    before = copy.deepcopy(net)
    assert tfixup_init_(net, generator=torch.Generator().manual_seed(2)) is net
    gain = 0.67 * n_layers ** -0.25
    writers = torch.cat([torch.cat([layer.self_attn.in_proj_weight[2 * d:], layer.self_attn.out_proj.weight])
                         for layer in net.layers]).detach()
    queries = torch.cat([layer.self_attn.in_proj_weight[:d] for layer in net.layers]).detach()
    assert float(writers.std()) == pytest.approx(gain * (2 / (2 * d)) ** 0.5, rel=0.05)
    assert float(queries.std()) == pytest.approx((2 / (2 * d)) ** 0.5, rel=0.05)
    ffn = torch.cat([layer.linear1.weight.flatten() for layer in net.layers]).detach()
    assert float(ffn.std()) == pytest.approx(gain * (2 / (3 * d)) ** 0.5, rel=0.05)
    for layer in net.layers:
        for bias in (layer.self_attn.in_proj_bias, layer.self_attn.out_proj.bias, layer.linear1.bias,
                     layer.linear2.bias):
            assert torch.count_nonzero(bias) == 0
    scale = (9 * n_layers) ** -0.25
    assert torch.allclose(net.embed.weight, scale * before.embed.weight)
    assert torch.allclose(net.position, scale * before.position)
    with pytest.raises(ValueError, match="norm_position"):
        tfixup_init_(_net())
    with pytest.raises(TypeError, match="generator"):
        tfixup_init_(_net(norm_position="none"), generator=3)


def test_admin_omegas_follow_the_profiling_rule_and_admin_forward_is_post_ln_at_one():
    net, tokens = _net(), _tokens()
    omegas, variances = admin_profiling(net, tokens)
    assert np.array_equal(omegas, admin_omegas(net, tokens)) and omegas.shape == (6,) and omegas[0] == 1.0
    # by hand: omega_(i+1)^2 = Var[omega_i x_i] + Var[f_i(x_i)], each sublayer run with its omega
    with torch.no_grad():
        h, expected, omega = net.embedding(tokens), [], 1.0
        for layer in net.layers:
            for branch, norm in ((layer.self_attn, layer.norm1), (layer.ffn, layer.norm2)):
                f = branch(h)
                expected.append((omega, float(f.double().var())))
                omega, h = float(((omega * h).double().var() + f.double().var()) ** 0.5), norm(omega * h + f)
    assert np.allclose(omegas, [w for w, _ in expected]) and np.allclose(variances, [v for _, v in expected])
    # with every omega 1 the stack is the Post-LN net itself
    assert torch.allclose(admin_forward(net, tokens, np.ones(6)), net(tokens), atol=1e-6)
    assert not torch.allclose(admin_forward(net, tokens, omegas), net(tokens), atol=1e-3)
    with pytest.raises(ValueError, match="omegas"):
        admin_forward(net, tokens, np.ones(5))
    with pytest.raises(ValueError, match="omegas"):
        admin_forward(net, tokens, -np.ones(6))
    with pytest.raises(ValueError, match="tokens"):
        admin_omegas(net, tokens[0])
    with pytest.raises(ValueError, match="norm_position"):
        admin_omegas(_net(norm_position="pre"), tokens)


def test_the_experiments_nets_are_deepnorms_twins_and_t_fixups():
    a, b = experiment.make_net(0.25, 3, 5), deepnorm_net("deepnorm", 3, 5)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    steeper = experiment.make_net(1.0, 3, 5)
    ratio = beta_of_power(3, 1.0) / beta_of_power(3, 0.25)
    assert torch.allclose(steeper.layers[1].linear2.weight, ratio * a.layers[1].linear2.weight)
    tfixup = experiment.make_net(experiment.TFIXUP, 3, 5)
    assert tfixup.layers[0].norm_position == "none"
    biases = experiment.stream_biases(a)
    assert len(biases) == 6 and all(b.dim() == 1 for b in biases)
    stepped = experiment.stepped_parameters(a, "no stream biases")
    assert len(stepped) == len(experiment.stepped_parameters(a, "all")) - 6
    assert not {id(b) for b in biases} & {id(p) for p in stepped}
    with pytest.raises(ValueError, match="part"):
        experiment.stepped_parameters(a, "weights")
    with pytest.raises(TypeError, match="net"):
        experiment.stream_biases(torch.nn.Linear(2, 2))
    assert experiment.design_name(0.25) == "b = 1/4 (DeepNorm)" and experiment.design_name(0.75) == "b = 3/4"
    assert experiment.design_name("T-Fixup") == "T-Fixup"
    with pytest.raises(TypeError, match="design"):
        experiment.make_net("DeepNorm", 3, 5)


def test_update_by_depth_covers_designs_depths_and_parts():
    updates = experiment.update_by_depth((2, 3), (0.25, 1.0), seed=1, n_nets=2, batch=8)
    assert [(u.design, u.depth, u.part) for u in updates] == [
        (experiment.design_name(d), n, part) for d in (0.25, 1.0, "T-Fixup") for n in (2, 3)
        for part in experiment.PARTS]
    assert all(u.changes.shape == (2,) and np.all(u.changes > 0) for u in updates)
    assert np.isfinite(experiment.exponent(updates, "b = 1", "no stream biases"))
    with pytest.raises(ValueError, match="two depths"):
        experiment.exponent(updates[:2], "b = 1/4 (DeepNorm)")
    with pytest.raises(ValueError, match="powers"):
        experiment.update_by_depth((2, 3), (-1.0,))
    with pytest.raises(TypeError, match="tfixup"):
        experiment.update_by_depth((2, 3), tfixup="yes")
    fig = plots.update_by_depth_panels(updates, title="t")
    assert len(fig.axes) == 2
    plt.close(fig)
    fig = plots.design_update(updates, "b = 1", reference="b = 1/4 (DeepNorm)", title="t")
    assert len(fig.axes[0].get_legend().get_texts()) == 4
    plt.close(fig)


def test_train_rules_and_admin_profile_run_small():
    runs = experiment.train_rules(2, (0.25, 0.75), seed=1, steps=3)
    assert [r.design for r in runs] == ["b = 1/4 (DeepNorm)", "b = 3/4", "T-Fixup"]
    assert all(r.run.losses.shape == (3,) and r.depth == 2 for r in runs)
    with pytest.raises(ValueError, match="repeat"):
        experiment.train_rules(2, (0.25, 0.25), steps=1)
    two = experiment.train_rules(2, (0.25,), seed=1, steps=2, n_nets=2)
    assert [r.design for r in two] == ["b = 1/4 (DeepNorm)"] * 2 + ["T-Fixup"] * 2
    assert not np.array_equal(two[0].run.losses, two[1].run.losses), "each net is its own draw"
    with pytest.raises(ValueError, match="n_nets"):
        experiment.train_rules(2, (0.25,), steps=1, n_nets=0)
    fig = plots.rule_curves(runs + two, threshold=0.5, title="t")
    plt.close(fig)
    profile = experiment.admin_profile(3, seed=1, n_nets=2, batch=4)
    assert profile.omegas.shape == (2, 6) and profile.branch_var.shape == (2, 6) and profile.input_var.shape == (2,)
    assert np.all(profile.omegas[:, 0] == 1.0) and profile.alpha == pytest.approx(6 ** 0.25)
    # omega's square accumulates the input's variance and the branches' (the LayerNorms' outputs have variance ~1)
    assert np.allclose(profile.omegas[:, 1] ** 2, profile.input_var + profile.branch_var[:, 0], rtol=1e-6)
    fairseq = experiment.admin_profile(3, init="fairseq", seed=1, n_nets=2, batch=4)
    assert fairseq.init == "fairseq" and np.array_equal(fairseq.input_var, profile.input_var), "the same nets"
    # fairseq's Xavier draw gives larger branches than PyTorch's defaults, so omega climbs faster
    assert fairseq.branch_var.mean() > profile.branch_var.mean()
    assert np.all(fairseq.omegas[:, -1] > profile.omegas[:, -1])
    with pytest.raises(ValueError, match="init"):
        experiment.admin_profile(3, init="xavier")
    fig = plots.admin_omegas_figure([profile, fairseq], title="t")
    assert len(fig.axes[0].get_legend().get_texts()) == 4
    plt.close(fig)


def test_fairseq_init_draws_the_sublayers_as_admins_code_does():
    from helpers.models.adam_scaling import fairseq_init_
    from helpers.models.transformer import SequenceTransformer

    net = SequenceTransformer(vocab=8, length=8, d_model=64, n_heads=2, d_ff=256, n_layers=2, norm_position="post")
    embed = net.embed.weight.clone()
    fairseq_init_(net, generator=torch.Generator().manual_seed(0))
    layer = net.layers[1]
    w_q = layer.self_attn.in_proj_weight[:64]
    assert w_q.var().item() == pytest.approx(0.5 * 2 / 128, rel=0.1)  # Xavier, gain 1/sqrt(2)
    assert layer.linear1.weight.var().item() == pytest.approx(2 / (64 + 256), rel=0.1)
    assert not layer.linear2.bias.any() and not layer.self_attn.in_proj_bias.any()
    assert torch.equal(net.embed.weight, embed), "the embeddings keep their draw"
    with pytest.raises(TypeError, match="model"):
        fairseq_init_(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("prediction, passed, says", [
    (0.75, True, "add up to a constant"), (3 / 4, True, ""), (0.25, False, "DeepNorm's own power"),
    (1, False, "count its power of N"), (0.5, False, "N^(1/4)"), (1.25, False, "one time too many"),
    (-0.75, False, "must shrink"), (0.6, False, "powers of N cancel"), (None, False, "no prediction yet"),
    ("3/4", False, "not text"), (float("nan"), False, "not a finite number"), (True, False, "bool"),
    (np.array([0.75, 0.75]), False, "one number"),
])
def test_the_power_checker_names_the_mistake(prediction, passed, says):
    feedback = check_adam_beta_power(prediction, 0.71)
    assert feedback.passed is passed and says in str(feedback)
    # the measurement is quoted to a prediction that passes, never to one that could copy it
    assert ("flat point at b = 0.71" in str(feedback)) is passed
    # ... and a wrong prediction is not told the answer (its own value aside)
    text = str(feedback)
    if isinstance(prediction, (int, float)) and not isinstance(prediction, bool) and np.isfinite(prediction):
        text = text.replace(f"b = {prediction:g}", "")
    assert passed or ("0.75" not in text and "N^(1/4)/N" not in text and "β ∝ N^(-3/4)" not in text)
    assert ADAM_POWER == 0.75


def test_the_power_checker_refuses_a_bad_measurement():
    with pytest.raises(TypeError, match="measured"):
        check_adam_beta_power(0.75, "0.7")
    assert "flat point" not in str(check_adam_beta_power(0.75))
