"""Chapter 3's init-scale sweep: the branch's size at initialisation, and what training does with it."""

import math

import numpy as np
import pytest
import torch

import helpers
from helpers.experiments.branch_scale import CHANCE_LOSS, SETTINGS, init_scale_sweep, outcome


def test_outcome_names_diverged_stuck_and_training_runs():
    assert outcome([2.0, float("nan")]) == "diverged" and outcome([3.0, float("inf")]) == "diverged"
    assert outcome([2.5, math.log(10)]) == "stuck" and outcome([2.0, 0.5]) == "trains"
    assert CHANCE_LOSS == pytest.approx(2.302585)
    with pytest.raises(ValueError, match="at least one epoch"):
        outcome([])


def test_the_init_scale_sets_the_branch_ratio_unless_a_norm_follows_the_branch():
    data = helpers.data.digits()
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    runs = init_scale_sweep(data.x_train[:256], data.y_train[:256], scales=[0.5, 2.0],
                            settings=["baseline", "BatchNorm"], seeds=[0], depth=6, width=8, epochs=1, progress=False)
    assert torch.equal(torch.rand(1), before)  # the caller's random state is left alone
    by = {(r.setting, r.scale): r for r in runs}
    assert [(r.setting, r.scale) for r in runs] == [("baseline", 0.5), ("baseline", 2.0), ("BatchNorm", 0.5),
                                                    ("BatchNorm", 2.0)]
    assert np.allclose(by["baseline", 2.0].ratios[0], 4 * by["baseline", 0.5].ratios[0], rtol=1e-5)
    assert np.allclose(by["BatchNorm", 2.0].ratios, by["BatchNorm", 0.5].ratios, rtol=1e-3)  # the norm undoes it
    assert by["baseline", 2.0].first_layer_grad > by["baseline", 0.5].first_layer_grad
    assert by["BatchNorm", 2.0].first_layer_grad == pytest.approx(by["BatchNorm", 0.5].first_layer_grad, rel=1e-4)
    assert all(len(r.losses) == 1 for r in runs)


def test_bad_settings_and_scales_are_named():
    x, y = torch.zeros(4, 64), torch.zeros(4, dtype=torch.long)
    with pytest.raises(ValueError, match="settings must be among"):
        init_scale_sweep(x, y, scales=[1.0], settings=["dropout"])
    with pytest.raises(ValueError, match="scales"):
        init_scale_sweep(x, y, scales=[0.0])
    assert set(SETTINGS) >= {"baseline", "Xavier init", "learning rate / 10", "warm-up", "LayerNorm", "BatchNorm"}
