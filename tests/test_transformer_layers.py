"""Chapter 4's layers against PyTorch's, with masks, and their argument checks."""

import pytest
import torch
from torch import nn

from helpers.measure import agreement_with_pytorch
from helpers.models import Attention, DecoderLayer, EncoderLayer, causal_mask


def _pair(kind, norm_first, dtype):
    torch.manual_seed(1)
    theirs_class, ours_class = ((nn.TransformerEncoderLayer, EncoderLayer) if kind == "encoder"
                                else (nn.TransformerDecoderLayer, DecoderLayer))
    theirs = theirs_class(12, 3, 24, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=dtype).eval()
    ours = ours_class(12, 3, 24, norm_position="pre" if norm_first else "post").to(dtype).eval()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_pytorch_with_padding_and_causal_masks(norm_first, dtype, tol):
    ours, theirs = _pair("encoder", norm_first, dtype)
    x = torch.randn(3, 5, 12, dtype=dtype)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad():
        a = ours(x, key_padding_mask=pad, attn_mask=causal_mask(5))
        b = theirs(x, src_mask=causal_mask(5), src_key_padding_mask=pad)
    assert (a - b)[~pad].abs().max() < tol


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_pytorch_with_padding_and_causal_masks(norm_first, dtype, tol):
    ours, theirs = _pair("decoder", norm_first, dtype)
    x, memory = torch.randn(2, 4, 12, dtype=dtype), torch.randn(2, 6, 12, dtype=dtype)
    tgt_pad = torch.tensor([[False] * 4, [False] * 3 + [True]])
    memory_pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    float_mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype)
    with torch.no_grad():
        a = ours(x, memory, tgt_mask=float_mask, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=memory_pad)
        b = theirs(x, memory, tgt_mask=causal_mask(4), tgt_key_padding_mask=tgt_pad,
                   memory_key_padding_mask=memory_pad)
    assert (a - b)[~tgt_pad].abs().max() < tol


def test_causal_mask_marks_the_future_as_pytorch_does():
    assert torch.equal(causal_mask(5), nn.Transformer.generate_square_subsequent_mask(5).isinf())
    with pytest.raises(ValueError, match="length"):
        causal_mask(0)


def test_the_decoder_cannot_see_later_positions():
    layer = DecoderLayer(8, 2, 16).eval()
    x, memory = torch.randn(1, 5, 8), torch.randn(1, 3, 8)
    changed = x.clone()
    changed[0, 3:] += 1.0  # only the last two positions differ
    with torch.no_grad():
        a = layer(x, memory, tgt_mask=causal_mask(5))
        b = layer(changed, memory, tgt_mask=causal_mask(5))
    assert torch.allclose(a[0, :3], b[0, :3]) and not torch.allclose(a[0, 3:], b[0, 3:])


def test_agreement_with_pytorch_is_rounding_and_checks_its_arguments():
    assert agreement_with_pytorch("decoder", "pre", torch.float64, seed=3) < 1e-12
    assert agreement_with_pytorch("encoder", "post", torch.float32, seed=3) < 1e-5
    with pytest.raises(ValueError, match="kind"):
        agreement_with_pytorch("middle", "post")
    with pytest.raises(ValueError, match="norm_position"):
        agreement_with_pytorch("encoder", "none")
    with pytest.raises(ValueError, match="dtype"):
        agreement_with_pytorch("encoder", "post", torch.float16)


def test_layers_name_bad_arguments():
    with pytest.raises(ValueError, match="divisible"):
        Attention(10, 3)
    with pytest.raises(ValueError, match="norm_position"):
        DecoderLayer(8, 2, 16, norm_position="sandwich")
    with pytest.raises(TypeError, match="residual"):
        DecoderLayer(8, 2, 16, residual="yes")
    with pytest.raises(ValueError, match="d_ff"):
        EncoderLayer(8, 2, 0)


def test_deepnorm_scales_the_skip_and_the_update_weights_only():
    """alpha = (2N)^(1/4) on every skip; beta = (8N)^(-1/4) on W_v, W_o and the FFN; W_q, W_k, biases,
    LayerNorms and the embeddings untouched."""
    from helpers.models import SequenceTransformer, apply_deepnorm_, deepnorm_constants

    assert deepnorm_constants(6) == pytest.approx((12 ** 0.25, 48 ** -0.25))
    torch.manual_seed(0)
    net = SequenceTransformer(8, 5, 8, 2, 16, 3, norm_position="post")
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    apply_deepnorm_(net)
    alpha, beta = deepnorm_constants(3)
    assert all(layer.alpha == alpha for layer in net.layers)
    for name, p in net.named_parameters():
        if name.endswith("in_proj_weight"):
            assert torch.equal(p[:16], before[name][:16]), "queries and keys keep their init"
            assert torch.allclose(p[16:], beta * before[name][16:])
        elif name.endswith(("out_proj.weight", "linear1.weight", "linear2.weight")):
            assert torch.allclose(p, beta * before[name]), name
        else:
            assert torch.equal(p, before[name]), name
    with pytest.raises(ValueError, match="Post-LN"):
        apply_deepnorm_(SequenceTransformer(8, 5, 8, 2, 16, 3, norm_position="pre"))
    with pytest.raises(TypeError, match="SequenceTransformer"):
        apply_deepnorm_(torch.nn.Linear(2, 2))


def test_rezero_layers_are_the_identity_at_initialisation():
    from helpers.models import EncoderLayer

    torch.manual_seed(0)
    layer = EncoderLayer(8, 2, 16, norm_position="none", rezero=True)
    x = torch.randn(3, 5, 8)
    assert torch.equal(layer(x), x)
    assert [n for n, _ in layer.named_parameters()].count("rezero_gates") == 1
    with pytest.raises(TypeError, match="rezero"):
        EncoderLayer(8, 2, 16, rezero=1)
