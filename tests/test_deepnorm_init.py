"""DeepNorm as the paper's algorithm and its official code do it (helpers.models.deepnorm)."""

import copy

import pytest
import torch

from helpers.models import SequenceTransformer, deepnorm_constants
from helpers.models.deepnorm import deepnorm_init_, ffn_rms, scale_deepnorm_


def _net(n_layers=3, d_model=8, norm_position="post", **options):
    torch.manual_seed(0)
    return SequenceTransformer(7, 5, d_model, 2, 2 * d_model, n_layers, norm_position=norm_position, **options)


def test_scale_deepnorm_multiplies_every_update_parameter_biases_included():
    net = _net()
    with torch.no_grad():  # non-zero attention biases, so that their scaling shows
        for layer in net.layers:
            layer.self_attn.in_proj_bias.normal_()
            layer.self_attn.out_proj.bias.normal_()
    before = copy.deepcopy(net)
    assert scale_deepnorm_(net) is net
    alpha, beta = deepnorm_constants(3)
    d = 8
    for old, new in zip(before.layers, net.layers):
        assert new.alpha == pytest.approx(alpha)
        for name in ("linear1", "linear2"):
            for part in ("weight", "bias"):
                assert torch.allclose(getattr(getattr(new, name), part), beta * getattr(getattr(old, name), part))
        assert torch.allclose(new.self_attn.out_proj.bias, beta * old.self_attn.out_proj.bias)
        assert torch.allclose(new.self_attn.in_proj_weight[2 * d:], beta * old.self_attn.in_proj_weight[2 * d:])
        assert torch.allclose(new.self_attn.in_proj_bias[2 * d:], beta * old.self_attn.in_proj_bias[2 * d:])
        # queries, keys and their biases, the norms: unchanged
        assert torch.equal(new.self_attn.in_proj_weight[:2 * d], old.self_attn.in_proj_weight[:2 * d])
        assert torch.equal(new.self_attn.in_proj_bias[:2 * d], old.self_attn.in_proj_bias[:2 * d])
        assert torch.equal(new.norm2.weight, old.norm2.weight)
    assert torch.equal(net.embed.weight, before.embed.weight) and torch.equal(net.head.weight, before.head.weight)


def test_deepnorm_init_draws_xavier_normal_with_the_papers_gains():
    n_layers, d = 4, 64
    net = _net(n_layers, d)
    before = copy.deepcopy(net)
    deepnorm_init_(net, generator=torch.Generator().manual_seed(1))
    alpha, beta = deepnorm_constants(n_layers)
    # Xavier normal: std = gain sqrt(2 / (fan_in + fan_out)), pooled over the layers
    layers = net.layers
    w_q = torch.cat([layer.self_attn.in_proj_weight[:d] for layer in layers]).detach()
    w_v = torch.cat([layer.self_attn.in_proj_weight[2 * d:] for layer in layers]).detach()
    w_1 = torch.cat([layer.linear1.weight for layer in layers]).detach()
    assert float(w_q.std()) == pytest.approx((2 / (2 * d)) ** 0.5, rel=0.03)
    assert float(w_v.std()) == pytest.approx(beta * (2 / (2 * d)) ** 0.5, rel=0.03)
    assert float(w_1.std()) == pytest.approx(beta * (2 / (3 * d)) ** 0.5, rel=0.03)
    for old, new in zip(before.layers, net.layers):
        assert new.alpha == pytest.approx(alpha)
        assert torch.allclose(new.linear1.bias, beta * old.linear1.bias)
        assert torch.equal(new.norm1.weight, old.norm1.weight)
    # the same generator draws the same net
    again = deepnorm_init_(copy.deepcopy(before), generator=torch.Generator().manual_seed(1))
    assert torch.equal(again.layers[2].linear2.weight, net.layers[2].linear2.weight)


def test_ffn_rms_knows_zero_and_separates_the_biases():
    net = _net()
    tokens = torch.randint(0, 7, (4, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for layer in net.layers:
            layer.linear2.weight.zero_()
            layer.linear2.bias.fill_(0.5)
    # the branch is the constant b2 = 0.5 everywhere; without biases it is 0
    assert ffn_rms(net, tokens) == pytest.approx(0.5)
    assert ffn_rms(net, tokens, biases=False) == 0.0
    # at 24 layers, scaling the weights alone leaves most of the FFN branch in its biases
    deep = SequenceTransformer(8, 8, 16, 2, 32, 24, norm_position="post", position_std=1.0)
    tokens = torch.randint(0, 8, (64, 8), generator=torch.Generator().manual_seed(0))
    official = scale_deepnorm_(copy.deepcopy(deep))
    assert ffn_rms(official, tokens) < 0.5 * ffn_rms(deep, tokens)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="model must be a SequenceTransformer"):
        scale_deepnorm_(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="Post-LN"):
        deepnorm_init_(_net(norm_position="pre"))
    with pytest.raises(ValueError, match="ReZero"):
        scale_deepnorm_(_net(norm_position="post", rezero=True))
    with pytest.raises(TypeError, match="generator"):
        deepnorm_init_(_net(), generator=3)
    with pytest.raises(ValueError, match="tokens"):
        ffn_rms(_net(), torch.zeros(5, dtype=torch.long))
