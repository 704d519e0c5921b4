import pytest
import torch
from torch import nn

from helpers.models import (
    Block,
    DeepMLP,
    EncoderLayer,
    SequenceTransformer,
    blocks_for_depth,
)


@pytest.mark.parametrize("norm", ["none", "batch", "layer"])
@pytest.mark.parametrize("order", ["post", "pre"])
def test_plain_and_residual_twins_have_identical_parameters(norm, order):
    residual = DeepMLP(20, 16, kind="residual", norm=norm, order=order)
    plain = residual.twin()
    assert plain.kind == "plain" and all(not b.residual for b in plain.blocks)
    for (n1, p1), (n2, p2) in zip(plain.state_dict().items(), residual.state_dict().items()):
        assert n1 == n2 and torch.equal(p1, p2)
    x = torch.randn(8, 64)
    plain.eval(), residual.eval()
    assert not torch.allclose(plain(x), residual(x))


def test_depth_counts_weight_layers():
    for depth in (8, 20, 56):
        model = DeepMLP(depth, 8)
        assert len(model.linear_layers()) == depth
        assert len(model.blocks) == blocks_for_depth(depth) == (depth - 2) // 2


def test_zero_initialised_block_is_the_identity():
    x = torch.randn(32, 16)
    pre = Block(16, order="pre", zero_init_branch=True)
    assert torch.equal(pre(x), x)
    post = Block(16, order="post", zero_init_branch=True)  # identity on the non-negative stream
    assert torch.equal(post(x.relu()), x.relu())


@pytest.mark.parametrize("order", ["post", "pre"])
def test_hidden_width_sets_the_inner_layer_and_its_norm(order):
    d = 6
    block = Block(d, residual=False, norm="batch", order=order, hidden=2 * d)
    assert block.fc1.weight.shape == (2 * d, d) and block.fc2.weight.shape == (d, 2 * d)
    hidden_norm = block.norm1 if order == "post" else block.norm2
    assert hidden_norm.num_features == 2 * d and "hidden=12" in repr(block)
    assert block(torch.randn(5, d)).shape == (5, d)
    with pytest.raises(ValueError, match="hidden"):
        Block(d, hidden=0)


def test_a_plain_branch_twice_as_wide_inside_can_be_the_identity_on_any_input():
    """x = relu(x) - relu(-x): with W1 = [I; -I] and W2 = [I, -I] the branch of a plain
    post-activation block of hidden width 2d returns its input, negative entries included."""
    d = 6
    plain = Block(d, residual=False, norm="none", order="post", hidden=2 * d)
    eye = torch.eye(d)
    with torch.no_grad():
        plain.fc1.weight.copy_(torch.cat([eye, -eye]))
        plain.fc2.weight.copy_(torch.cat([eye, -eye], dim=1))
        plain.fc1.bias.zero_()
        plain.fc2.bias.zero_()
    x = torch.randn(5, d)
    assert (x < 0).any() and torch.allclose(plain.branch(x), x, atol=1e-6)


def test_branch_scale_multiplies_the_branch():
    torch.manual_seed(0)
    a = Block(8, norm="none", order="pre", branch_scale=1.0)
    b = Block(8, norm="none", order="pre", branch_scale=0.25)
    b.load_state_dict(a.state_dict())
    x = torch.randn(4, 8)
    assert torch.allclose(b(x) - x, 0.25 * (a(x) - x), atol=1e-6)


def test_lesion_skip_passes_the_input_through():
    model = DeepMLP(8, 8, norm="none").eval()
    x = torch.randn(4, 64)
    h = torch.relu(model.stem(x))
    expected = model.head(model.blocks[2](model.blocks[0](h)))
    assert torch.allclose(model(x, skip=[1]), expected)
    with pytest.raises(ValueError, match="skip"):
        model(x, skip=[3])


@pytest.mark.parametrize(
    "kwargs, err, word",
    [
        (dict(depth=0), ValueError, "depth"),
        (dict(depth=9), ValueError, "depth"),
        (dict(depth=8.0), TypeError, "depth"),
        (dict(depth=8, width=0), ValueError, "width"),
        (dict(depth=8, kind="resnet"), ValueError, "kind"),
        (dict(depth=8, norm="group"), ValueError, "norm"),
        (dict(depth=8, order="middle"), ValueError, "order"),
        (dict(depth=8, init="orthogonal"), ValueError, "init"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, err, word):
    with pytest.raises(err, match=word):
        DeepMLP(**kwargs)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_pytorch(norm_first):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    ours = EncoderLayer(16, 4, 32, norm_position="pre" if norm_first else "post").eval()
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(3, 5, 16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    assert torch.allclose(ours(x), ref(x), atol=1e-5)
    assert torch.allclose(ours(x, key_padding_mask=mask)[~mask], ref(x, src_key_padding_mask=mask)[~mask],
                          atol=1e-5)


def test_encoder_options_and_errors():
    x = torch.randn(2, 4, 8)
    layer = EncoderLayer(8, 2, 16, norm_position="none", residual=False)
    assert layer(x).shape == x.shape
    with pytest.raises(ValueError, match="divisible"):
        EncoderLayer(10, 3, 16)
    with pytest.raises(ValueError, match="norm_position"):
        EncoderLayer(8, 2, 16, norm_position="sandwich")


def test_sequence_transformer_checks_its_input_length():
    model = SequenceTransformer(vocab=10, length=6, n_layers=2, norm_position="post")
    tokens = torch.randint(0, 10, (3, 6))
    assert model(tokens).shape == (3, 6, 10)
    with pytest.raises(ValueError, match="length"):
        model(torch.randint(0, 10, (3, 7)))
