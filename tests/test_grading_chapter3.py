"""The checker of chapter 3: LayerNorm's forward pass, by hand."""

from functools import partial

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.grading import chapter3, check_layer_norm


def _layer_norm(x, weight, bias, eps, slip=None):
    """A learner's LayerNorm, right or with one usual ``slip``."""
    dim = 0 if slip == "first axis" else -1
    mu = torch.zeros_like(x) if slip == "no centring" else x.mean(dim, keepdim=True)
    var = ((x - mu) ** 2).sum(dim, keepdim=True) / (x.shape[dim] - (slip == "unbiased"))
    scale = {"eps outside": torch.sqrt(var) + eps, "no eps": torch.sqrt(var)}.get(slip, torch.sqrt(var + eps))
    y = (x - mu) / scale
    return {"no affine": y, "no shift": y * weight, "swapped": y * bias + weight}.get(slip, y * weight + bias)


def _numpy(x, weight, bias, eps):
    x, weight, bias = (t.numpy() for t in (x, weight, bias))
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * weight + bias


def test_a_right_layer_norm_passes_as_a_tensor_or_an_array():
    assert check_layer_norm(_layer_norm).passed
    assert check_layer_norm(_numpy).passed
    assert check_layer_norm(lambda x, w, b, eps: _numpy(x, w, b, eps).tolist()).passed


@pytest.mark.parametrize("slip, says", [
    ("first axis", "normalises over the first axis"),
    ("unbiased", "divides the squared deviations by n − 1"),
    ("eps outside", "eps is added outside the square root"),
    ("no eps", "eps is missing"),
    ("no centring", "RMSNorm"),
    ("no affine", "the scale and the shift are missing"),
    ("no shift", "the shift is missing"),
    ("swapped", "weight and bias are swapped"),
])
def test_each_usual_slip_is_named(slip, says):
    feedback = check_layer_norm(partial(_layer_norm, slip=slip))
    assert not feedback.passed
    assert says in str(feedback), str(feedback)


def test_the_unbiased_variance_of_one_feature_is_explained():
    feedback = check_layer_norm(partial(_layer_norm, slip="unbiased"))
    assert "n − 1 = 0: is the variance unbiased?" in str(feedback)


def test_wrong_shapes_dtypes_and_types_get_specific_feedback():
    squeezed = check_layer_norm(lambda x, w, b, eps: _layer_norm(x, w, b, eps).sum(-1))
    assert "expected" in str(squeezed) and "the shape of x" in str(squeezed)
    single = check_layer_norm(lambda x, w, b, eps: _layer_norm(x.float(), w.float(), b.float(), eps))
    assert "torch.float32 tensor, but x is torch.float64" in str(single)
    assert "returned a str" in str(check_layer_norm(lambda x, w, b, eps: "normalised"))


def test_pytorchs_layer_norm_is_off_limits_while_a_learner_is_checked():
    def calls_pytorch(x, weight, bias, eps):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)

    def uses_the_module(x, weight, bias, eps):
        return torch.nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)(x) * weight + bias

    for fn in (calls_pytorch, uses_the_module):
        feedback = check_layer_norm(fn)
        assert not feedback.passed and "off limits" in str(feedback), str(feedback)
    x = torch.randn(2, 3)  # and they work again afterwards
    assert torch.allclose(F.layer_norm(x, (3,)), torch.nn.LayerNorm(3, elementwise_affine=False)(x))


def test_hidden_cases_change_from_call_to_call_and_the_fixed_ones_do_not():
    def described():
        seen = []

        def fn(x, weight, bias, eps):
            seen.append((tuple(x.shape), eps))
            return _layer_norm(x, weight, bias, eps)
        assert check_layer_norm(fn).passed
        return seen
    runs = [described() for _ in range(4)]
    assert all(run[:6] == runs[0][:6] for run in runs)
    assert len({tuple(run[6:]) for run in runs}) > 1


def test_the_slips_are_really_wrong_on_every_fixed_case():
    """Each slip the checker names differs from PyTorch's answer on at least one fixed case (else
    the checker could never tell it apart), and the checker's own LayerNorm is PyTorch's."""
    rng = np.random.default_rng(0)
    x, weight, bias = chapter3._problem(rng, (3, 4, 6))
    right = chapter3._layer_norm(x, weight, bias, 1e-5)
    assert torch.allclose(right, F.layer_norm(x, (6,), weight, bias, 1e-5), rtol=0, atol=1e-12)
    for wrong, message in chapter3._mistakes(x, weight, bias, 1e-5):
        assert not torch.allclose(wrong, right), message
