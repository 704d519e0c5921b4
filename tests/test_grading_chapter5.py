"""The checker of chapter 5: DeepNorm's constants and initialisation, by hand."""

import copy
from functools import partial

import numpy as np
import pytest
import torch
from torch import nn

from helpers.grading import chapter5, check_deepnorm, sandbox
from helpers.models import apply_deepnorm_, deepnorm_constants
from helpers.models.deepnorm import deepnorm_init_, scale_deepnorm_


def _deepnorm(model, *, alpha=lambda n: (2 * n) ** 0.25, beta=lambda n: (8 * n) ** -0.25,
              blocks=("W_v", "out_proj", "linear1", "linear2"), out_factor=lambda n: 1.0, set_alpha=True,
              biases=True, extra=(), returns="model"):
    """A learner's DeepNorm, right or with one mistake: the constants as functions of N, the
    ``blocks`` scaled by beta (``"in_proj"``: all of W_q, W_k, W_v), each weight with its bias
    unless ``biases`` is False (the course's first, weights-only version), out_proj and
    linear2 further multiplied by ``out_factor(N)``, ``extra`` parameters scaled by beta too
    (``"qk_biases"``, ``"norms"``, ``"embed"``)."""
    n = len(model.layers)
    a, b = alpha(n), beta(n)
    with torch.no_grad():
        for layer in model.layers:
            if set_alpha:
                layer.alpha = a
            d = layer.linear2.out_features
            rows = {"W_q": slice(0, d), "W_k": slice(d, 2 * d), "W_v": slice(2 * d, 3 * d),
                    "in_proj": slice(0, 3 * d)}
            for block in blocks:
                if block in rows:
                    layer.self_attn.in_proj_weight[rows[block]] *= b
                    if biases:
                        layer.self_attn.in_proj_bias[rows[block]] *= b
            for block, linear in (("out_proj", layer.self_attn.out_proj), ("linear1", layer.linear1),
                                  ("linear2", layer.linear2)):
                if block in blocks:
                    factor = b * (out_factor(n) if block != "linear1" else 1.0)
                    linear.weight *= factor
                    if biases:
                        linear.bias *= factor
            if "qk_biases" in extra:
                layer.self_attn.in_proj_bias[:2 * d] *= b
            if "norms" in extra:
                layer.norm1.weight *= b
        if "embed" in extra:
            model.embed.weight *= b
    return model if returns == "model" else None


def test_the_right_answer_passes_returning_the_model_or_nothing():
    assert check_deepnorm(_deepnorm).passed
    assert check_deepnorm(partial(_deepnorm, returns=None)).passed

    def tensor_alpha(model):
        _deepnorm(model)
        for layer in model.layers:
            layer.alpha = torch.tensor(layer.alpha)

    assert check_deepnorm(tensor_alpha).passed


def test_the_official_codes_bias_scaling_is_the_answer():
    """DeepNet's official code divides every parameter of fc1, fc2, out_proj and v_proj by
    1/beta, biases included: that passes, and a loop over each update layer's parameters does too."""
    def official(model):
        n = len(model.layers)
        beta = (8 * n) ** -0.25
        with torch.no_grad():
            for layer in model.layers:
                layer.alpha = (2 * n) ** 0.25
                d = layer.linear2.out_features
                layer.self_attn.in_proj_weight[2 * d:] *= beta
                layer.self_attn.in_proj_bias[2 * d:] *= beta
                for module in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
                    for p in module.parameters():
                        p.mul_(beta)

    assert check_deepnorm(official).passed
    # the reference itself: every update layer's bias is beta times what it was
    net = chapter5._model(np.random.default_rng(0), 3, 8, 2)
    before = copy.deepcopy(net)
    scale_deepnorm_(net)
    beta = deepnorm_constants(3)[1]
    for old, new in zip(before.layers, net.layers):
        assert torch.allclose(new.linear1.bias, beta * old.linear1.bias)
        assert torch.allclose(new.self_attn.in_proj_bias[16:], beta * old.self_attn.in_proj_bias[16:])
        assert torch.equal(new.self_attn.in_proj_bias[:16], old.self_attn.in_proj_bias[:16])
        assert torch.equal(new.norm1.weight, old.norm1.weight)


def test_weights_only_is_named_for_what_it_leaves():
    feedback = check_deepnorm(partial(_deepnorm, biases=False))
    assert not feedback.passed and "biases of W_v, out_proj, linear1 and linear2 were left" in str(feedback)
    assert "official code" in str(feedback), str(feedback)

    def some_biases(model):
        _deepnorm(model, biases=False)
        with torch.no_grad():
            for layer in model.layers:
                layer.linear1.bias *= (8 * len(model.layers)) ** -0.25

    says = str(check_deepnorm(some_biases))
    assert "not scaled like their weights (in_proj_bias[2d:], self_attn.out_proj.bias, linear2.bias)" in says, says


def _alpha(n):
    return (2 * n) ** 0.25


@pytest.mark.parametrize("mistake, says", [
    (dict(alpha=lambda n: (4 * n) ** 0.25, beta=lambda n: (16 * n) ** -0.25), "number of sublayers"),
    (dict(alpha=lambda n: n ** 0.25), "alpha is N^(1/4): the factor 2 is missing"),
    (dict(beta=lambda n: (2 * n) ** -0.25), "(2N)^(-1/4), which is 1/alpha"),
    (dict(beta=lambda n: (4 * n) ** -0.25), "multiplied by (4N)^(-1/4)"),
    (dict(beta=lambda n: (16 * n) ** -0.25), "number of sublayers"),
    (dict(beta=lambda n: (8 * n) ** -1 / 4), "Python reads (8*N)**-1/4"),
    (dict(alpha=lambda n: (2 * n) ** 1 / 4), "Python reads (2*N)**1/4"),
    (dict(beta=lambda n: (8 * n) ** -0.5), "beta² = (8N)^(-1/2)"),
    (dict(alpha=lambda n: (8 * n) ** -0.25, beta=_alpha), "alpha and beta are swapped"),
    (dict(blocks=("in_proj", "out_proj", "linear1", "linear2")), "queries and keys too"),
    (dict(blocks=("W_k", "out_proj", "linear1", "linear2")), "(W_k) were scaled instead of W_v"),
    (dict(set_alpha=False, out_factor=lambda n: 1 / _alpha(n)), "divided by alpha instead"),
    (dict(out_factor=_alpha), "outputs were multiplied by alpha"),
    (dict(set_alpha=False), "every layer's alpha is 1, as before"),
    (dict(blocks=()), "alpha is set, but no weight was scaled"),
    (dict(blocks=("linear1", "linear2")), "only the FFN was scaled"),
    (dict(blocks=("W_v", "out_proj")), "only the attention was scaled"),
    (dict(blocks=("W_v", "linear1", "linear2")), "not scaled by beta: self_attn.out_proj.weight"),
    (dict(extra=("qk_biases",)), "queries' or keys' biases (in_proj_bias[0:2d]) were changed"),
    (dict(biases=False), "biases of W_v, out_proj, linear1 and linear2 were left as they were"),
    (dict(extra=("norms",)), "LayerNorms' parameters were changed"),
    (dict(extra=("embed",)), "parameters outside the layers were changed (embed.weight)"),
])
def test_each_usual_mistake_is_named(mistake, says):
    feedback = check_deepnorm(partial(_deepnorm, **mistake))
    assert not feedback.passed and feedback.score == 0
    assert says in str(feedback), str(feedback)


def test_the_sublayer_count_is_one_message_and_other_mistakes_combine():
    feedback = str(check_deepnorm(partial(_deepnorm, alpha=lambda n: (4 * n) ** 0.25,
                                          beta=lambda n: (16 * n) ** -0.25)))
    assert feedback.count("number of sublayers") == 1, feedback
    both = str(check_deepnorm(partial(_deepnorm, alpha=lambda n: n ** 0.25, biases=False)))
    assert "the factor 2 is missing" in both and "The biases of W_v" in both, both


def test_constants_that_depend_on_the_layer_or_redrawn_weights_are_explained():
    def by_index(model):
        _deepnorm(model)
        for i, layer in enumerate(model.layers):
            layer.alpha = (2 * (i + 1)) ** 0.25

    feedback = check_deepnorm(by_index)
    assert "alpha differs between layers" in str(feedback) and "✓ one layer" in str(feedback), str(feedback)

    def redraws(model):
        n = len(model.layers)
        for layer in model.layers:
            layer.alpha = (2 * n) ** 0.25
            for linear in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
                nn.init.xavier_normal_(linear.weight, gain=(8 * n) ** -0.25)

    assert "not by multiplying it by one number" in str(check_deepnorm(redraws))


def test_starters_and_untouched_models_are_not_implemented_yet():
    namespace: dict = {}
    exec("def my_deepnorm(model):\n    return None  # set each layer's alpha, scale the weights by beta\n",
         namespace)
    for starter in (namespace["my_deepnorm"], lambda model: None):
        feedback = check_deepnorm(starter)
        assert not feedback.passed and "not implemented yet" in str(feedback), str(feedback)

    def placeholder(model):
        pass

    assert "not implemented yet: the model is unchanged" in str(check_deepnorm(placeholder))

    def rebinds(model):  # builds new tensors, writes nothing back
        for layer in model.layers:
            w = layer.linear1.weight * 0.5  # noqa: F841

    feedback = str(check_deepnorm(rebinds))
    assert "the model is unchanged" in feedback and "not implemented yet" not in feedback, feedback


def test_the_references_are_off_limits():
    assert "course's own reference function" in str(check_deepnorm(scale_deepnorm_))
    assert "scale_deepnorm_ is off limits" in str(check_deepnorm(lambda model: scale_deepnorm_(model)))
    assert "deepnorm_init_ is off limits" in str(check_deepnorm(lambda model: deepnorm_init_(model)))
    assert "apply_deepnorm_ is off limits" in str(check_deepnorm(lambda model: apply_deepnorm_(model)))

    def uses_constants(model):
        alpha, beta = deepnorm_constants(len(model.layers))
        return _deepnorm(model, alpha=lambda n: alpha, beta=lambda n: beta)

    assert "deepnorm_constants is off limits" in str(check_deepnorm(uses_constants))
    assert deepnorm_constants(2) == pytest.approx((4 ** 0.25, 16 ** -0.25))  # put back afterwards


def test_hostile_functions_get_clear_messages(monkeypatch):
    def raises(model):
        raise ValueError("no idea")

    assert "raised ValueError: no idea (in raises, line" in str(check_deepnorm(raises))

    def without_no_grad(model):
        for layer in model.layers:
            layer.linear1.weight *= 0.5

    assert "torch.no_grad()" in str(check_deepnorm(without_no_grad))
    assert "returned a tuple" in str(check_deepnorm(lambda model: (_deepnorm(model), 1.0)))
    fresh = str(check_deepnorm(lambda model: _deepnorm(copy.deepcopy(model))))
    assert "returned a different model and left the model it was given unchanged" in fresh, fresh

    def nan_weights(model):
        _deepnorm(model)
        with torch.no_grad():
            model.layers[0].linear2.weight.fill_(float("nan"))

    assert "layers.0.linear2.weight has NaN or infinite entries" in str(check_deepnorm(nan_weights))

    def text_alpha(model):
        _deepnorm(model)
        model.layers[0].alpha = "1.19"

    assert "layer 0's alpha is a str" in str(check_deepnorm(text_alpha))

    def parameter_alpha(model):
        _deepnorm(model)
        model.layers[0].alpha = nn.Parameter(torch.tensor(1.19))

    assert "an nn.Parameter" in str(check_deepnorm(parameter_alpha))

    def deletes_alpha(model):
        _deepnorm(model)
        del model.layers[0].alpha

    assert "no attribute alpha" in str(check_deepnorm(deletes_alpha))

    def breaks_the_model(model):
        model.layers = None

    assert "could not be read" in str(check_deepnorm(breaks_the_model))
    assert "keep its dtype" in str(check_deepnorm(lambda model: _deepnorm(model).double()))
    assert "expected a function, got int" in str(check_deepnorm(3))

    def never_returns(model):
        while True:
            pass

    monkeypatch.setattr(sandbox, "DEFAULT_TIME_LIMIT", 0.3)
    feedback = check_deepnorm(never_returns)
    assert "took longer than 0.3 s (in never_returns" in feedback.lines[0], str(feedback)
    assert "were not run" in feedback.lines[1]


def test_the_checker_leaves_the_random_state_and_its_models_alone(monkeypatch):
    torch.manual_seed(3)
    np.random.seed(3)
    check_deepnorm(_deepnorm)
    drawn = torch.rand(2), np.random.rand(2)
    torch.manual_seed(3)
    np.random.seed(3)
    assert torch.equal(drawn[0], torch.rand(2)) and np.array_equal(drawn[1], np.random.rand(2))
    # fixed hidden cases: a table of the right constants for only the visible depths fails them
    monkeypatch.setattr(chapter5, "_rng", lambda: np.random.default_rng(11))
    table = {1: (2 ** 0.25, 8 ** -0.25), 3: (6 ** 0.25, 24 ** -0.25), 6: (12 ** 0.25, 48 ** -0.25)}
    feedback = check_deepnorm(partial(_deepnorm, alpha=lambda n: table.get(n, (1.0, 1.0))[0],
                                      beta=lambda n: table.get(n, (1.0, 1.0))[1]))
    assert not feedback.passed and "✓ six layers" in str(feedback) and "✗ hidden" in str(feedback)


def test_the_chain_exercise_refuses_hes_gain_and_bad_input():
    from helpers.grading.chapter5 import chain_gain_problem

    assert chain_gain_problem(2.5) is None and chain_gain_problem(1.5) is None
    for trivial in (2, 2.0, 1.8, 2.2):
        assert "He's gain" in chain_gain_problem(trivial), trivial
    assert "no gain yet" in chain_gain_problem(None)
    assert "between 0.5 and 6" in chain_gain_problem(7)
    assert "my_gain" in chain_gain_problem("2.5")
    assert chain_gain_problem(float("nan")) is not None


def test_the_adam_step_prediction_passes_the_theory_and_names_the_usual_mistakes():
    """Section 5's prediction, |ΔL| at 64 blocks over 2 under Adam's first step: the theory's
    7.5 passes over the measured range of seeds 0-39 (7.27 to 8.05); √32, the growth without the
    stream's, fails everywhere in that range, and neither it nor any wrong answer is told the
    measured value."""
    from helpers.grading.chapter5 import ADAM_STEP_RTOL, check_adam_step_prediction
    from helpers.grading.predictions import COUNTED

    for measured in (7.27, 7.53, 8.05):
        assert check_adam_step_prediction(7.5, measured).passed
        assert check_adam_step_prediction(np.float32(7.5), measured).passed
        assert check_adam_step_prediction(torch.tensor(7.5), measured).passed
    mistakes = {32 ** 0.5: "stream's growth", 2 ** 0.5: "32 to 64 blocks", 32: "plain net", 1.77: "SGD's formula",
                10.0: "square root", 1: "ε = 1/N", 13.04: "divide by its value", 6.2: "apply N ε"}
    for measured in (7.27, 7.53, 8.05):
        for guess, says in mistakes.items():
            COUNTED.clear()  # each guess is a learner's first prediction
            feedback = check_adam_step_prediction(guess, measured)
            assert not feedback.passed and says in str(feedback), (guess, str(feedback))
            assert f"{measured:.3g}" not in str(feedback) and f"{measured:.2f}" not in str(feedback)
    assert abs(32 ** 0.5 / 7.27 - 1) > ADAM_STEP_RTOL + 0.1  # √32 fails with room over the measured range
    assert "no prediction yet" in str(check_adam_step_prediction(None, 7.5))
    for bad, says in (("7.5", "text"), (True, "bool"), ([7.5], "list"), (float("nan"), "not a finite")):
        feedback = check_adam_step_prediction(bad, 7.5)
        assert not feedback.passed and says in str(feedback), bad
    with pytest.raises(TypeError, match="measured"):
        check_adam_step_prediction(7.5, None)
    with pytest.raises(ValueError, match="measured"):
        check_adam_step_prediction(7.5, -1.0)
