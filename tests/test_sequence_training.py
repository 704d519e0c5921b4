"""fit_sequences trains each member exactly as torch.optim.Adam would train it alone."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from helpers.data import sequence_targets
from helpers.models import SequenceTransformer, apply_deepnorm_
from helpers.seeding import generator
from helpers.sequence_training import SequenceRun, fit_sequences


def _net(norm, residual, seed):
    torch.manual_seed(seed)
    return SequenceTransformer(6, 5, 8, 2, 16, 2, norm_position=norm, residual=residual, position_std=1.0)


def _alone(model, *, lr, warmup, seed, steps, batch):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(warmup, 1)))
    tokens = torch.randint(0, 6, (steps, batch, 5), generator=generator(seed))
    losses = []
    for k in range(steps):
        logits = model(tokens[k])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 6), sequence_targets("reverse", tokens[k]).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("norm", ["post", "pre", "none"])
def test_members_train_as_they_would_alone(norm):
    models = [_net(norm, True, 0), _net(norm, False, 1), _net(norm, True, 2)]
    alone = copy.deepcopy(models)
    settings = [dict(lr=1e-3, warmup=0, seed=5), dict(lr=3e-3, warmup=0, seed=6), dict(lr=3e-3, warmup=8, seed=7)]
    runs = fit_sequences(models, task="reverse", steps=20, batch_size=16,
                                     lr=[s["lr"] for s in settings], warmup_steps=[s["warmup"] for s in settings],
                                     seeds=[s["seed"] for s in settings], progress=False)
    for run, model, setting in zip(runs, alone, settings):
        expected = _alone(model, steps=20, batch=16, **setting)
        assert np.allclose(run.losses, expected, rtol=1e-4, atol=1e-5), np.abs(run.losses - expected).max()
        assert run.lr == setting["lr"] and run.warmup == setting["warmup"]
    assert [r.residual for r in runs] == [True, False, True]
    # the trained weights are written back: the models now predict as the runs' accuracy says
    assert all(0.0 <= r.accuracy <= 1.0 for r in runs)


def test_deepnorm_and_rezero_members_train_as_they_would_alone():
    """Skip scales that differ between members (DeepNorm's alpha beside 1), and ReZero's gates."""
    post = [apply_deepnorm_(_net("post", True, 0)), _net("post", True, 1)]
    torch.manual_seed(2)
    rezero = [SequenceTransformer(6, 5, 8, 2, 16, 2, norm_position="none", rezero=True, position_std=1.0)]
    for models in (post, rezero):
        alone = copy.deepcopy(models)
        runs = fit_sequences(models, task="reverse", steps=15, batch_size=16, lr=3e-3,
                                         seeds=list(range(5, 5 + len(models))), progress=False)
        for run, model, seed in zip(runs, alone, range(5, 5 + len(models))):
            expected = _alone(model, lr=3e-3, warmup=0, seed=seed, steps=15, batch=16)
            assert np.allclose(run.losses, expected, rtol=1e-4, atol=1e-5), np.abs(run.losses - expected).max()
    # ReZero's gates moved away from 0 and were written back
    assert rezero[0].layers[0].rezero_gates.abs().sum() > 0


def test_a_run_reports_divergence_and_its_final_loss():
    run = SequenceRun(np.array([2.0, 1.0, np.nan]), 0.1, 1e-3, 0, True)
    assert run.diverged and run.final_loss() == float("inf")
    calm = SequenceRun(np.array([2.0, 1.0, 0.5]), 0.9, 1e-3, 0, True)
    assert not calm.diverged and calm.final_loss(last=2) == 0.75


def test_bad_arguments_are_named():
    a, b = _net("post", True, 0), _net("pre", True, 1)
    with pytest.raises(ValueError, match="one structure"):
        fit_sequences([a, b], task="reverse", steps=2, lr=1e-3, seeds=[0, 1])
    with pytest.raises(ValueError, match="lr"):
        fit_sequences([a], task="reverse", steps=2, lr=[1e-3, 1e-3], seeds=[0])
    with pytest.raises(ValueError, match="seeds"):
        fit_sequences([a], task="reverse", steps=2, lr=1e-3, seeds=[0, 1])
    with pytest.raises(ValueError, match="distinct"):
        fit_sequences([a, a], task="reverse", steps=2, lr=1e-3, seeds=[0, 1])
    with pytest.raises(ValueError, match="task"):
        fit_sequences([a], task="shuffle", steps=2, lr=1e-3, seeds=[0])
    with pytest.raises(TypeError, match="SequenceTransformer"):
        fit_sequences([nn.Linear(2, 2)], task="reverse", steps=2, lr=1e-3, seeds=[0])
    with pytest.raises(ValueError, match="lr"):
        fit_sequences([a], task="reverse", steps=2, lr=0.0, seeds=[0])
