"""The Pre-LN encoder checker: passes the right answer, names each usual mistake, resists shortcuts."""

import torch

from helpers.grading import check_pre_ln_encoder


def _layer_pass(x, layers, final_norm, *, post=False, normed_skip=False, final=True):
    def attend(layer, h):
        return layer.self_attn(h, h, h, need_weights=False)[0]

    def ffn(layer, h):
        return layer.linear2(torch.relu(layer.linear1(h)))

    for layer in layers:
        for norm, sub in ((layer.norm1, lambda h, la=layer: attend(la, h)),
                          (layer.norm2, lambda h, la=layer: ffn(la, h))):
            if post:
                x = norm(x + sub(x))
            else:
                h = norm(x)
                x = (h if normed_skip else x) + sub(h)
    return final_norm(x) if final else x


def test_the_right_answer_passes():
    assert check_pre_ln_encoder(lambda x, layers, final_norm: _layer_pass(x, layers, final_norm)).passed


def test_each_usual_mistake_is_named():
    cases = {
        "Post-LN": dict(post=True),
        "adds the normalised input": dict(normed_skip=True),
        "final LayerNorm is missing": dict(final=False),
    }
    for needle, mistake in cases.items():
        def answer(x, layers, final_norm, m=mistake):
            return _layer_pass(x, layers, final_norm, **m)

        feedback = check_pre_ln_encoder(answer)
        assert not feedback.passed and needle in str(feedback), (needle, str(feedback))


def test_shortcuts_and_wrong_types_get_specific_feedback():
    def calls_the_layers(x, layers, final_norm):
        for layer in layers:
            x = layer(x)
        return final_norm(x)

    assert "off limits" in str(check_pre_ln_encoder(calls_the_layers))
    assert "float32" in str(check_pre_ln_encoder(
        lambda x, layers, final_norm: _layer_pass(x, layers, final_norm).float()))
    def placeholder(x, layers, final_norm):
        return None

    assert "not implemented yet" in str(check_pre_ln_encoder(placeholder))
    assert "shape" in str(check_pre_ln_encoder(lambda x, layers, final_norm: x[:, :1]))
