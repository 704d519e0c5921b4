"""helpers.stacked: nets trained together take the same steps as nets trained one by one."""

import copy

import pytest
import torch

import helpers
from helpers.experiments import run_degradation
from helpers.experiments.twins import train_twin, train_twin_group, train_twins_for_seeds
from helpers.models import DeepMLP
from helpers.stacked import fit_together
from helpers.training import fit


def _max_difference(a: torch.nn.Module, b: torch.nn.Module) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    return max((sa[k].float() - sb[k].float()).abs().max().item() for k in sa)


@pytest.mark.parametrize("options", [dict(), dict(order="pre"), dict(norm="none", init="pytorch"),
                                     dict(norm="layer", branch_scale=0.5)])
def test_fit_together_equals_fit_net_by_net(options):
    """Weights, BatchNorm statistics and histories match fit's to float rounding, with a
    plain net and its residual twin in one stack and a learning rate per net."""
    data = helpers.data.digits()
    helpers.seed_everything(0)
    first = DeepMLP(8, 16, **options)
    models = [first, first.twin(), DeepMLP(8, 16, **options)]
    alone = [copy.deepcopy(m) for m in models]
    lrs, seeds = [0.05, 0.05, 0.02], [1, 1, 2]
    together = fit_together(models, data.x_train, data.y_train, epochs=2, lr=lrs, seeds=seeds, progress=False)
    for model, ref, lr, seed, hist in zip(models, alone, lrs, seeds, together):
        ref_hist = fit(ref, data.x_train, data.y_train, epochs=2, lr=lr, seed=seed, progress=False)
        assert _max_difference(model, ref) < 1e-4
        assert hist.train_error == ref_hist.train_error
        assert max(abs(a - b) for a, b in zip(hist.train_loss, ref_hist.train_loss)) < 1e-5
        model.eval(), ref.eval()
        # float32 rounding, relative to the size of the outputs (without normalisation they
        # reach about 5, and two epochs of different summation orders leave ~1e-4 of it)
        with torch.no_grad():
            out, ref_out = model(data.x_test), ref(data.x_test)
        assert (out - ref_out).abs().max() <= 1e-4 * max(1.0, float(ref_out.abs().max()))


def test_warm_up_ramps_the_rate_and_fit_together_follows_it():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    schedule = helpers.training.warmup_schedule(opt, 4)
    rates = []
    for _ in range(6):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert rates == pytest.approx([0.125, 0.25, 0.375, 0.5, 0.5, 0.5])
    assert helpers.training.warmup_schedule(opt, 0) is None
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        helpers.training.warmup_schedule(opt, -1)
    data = helpers.data.digits()
    helpers.seed_everything(2)
    models = [DeepMLP(6, 8, norm="none"), DeepMLP(6, 8, norm="none")]
    alone, plain = [copy.deepcopy(m) for m in models], copy.deepcopy(models[0])
    fit_together(models, data.x_train, data.y_train, epochs=1, lr=[0.05, 0.02], seeds=[0, 3], warmup_steps=6,
                 progress=False)
    for model, ref, lr, seed in zip(models, alone, [0.05, 0.02], [0, 3]):
        fit(ref, data.x_train, data.y_train, epochs=1, lr=lr, seed=seed, warmup_steps=6, progress=False)
        assert _max_difference(model, ref) < 1e-4
    fit(plain, data.x_train, data.y_train, epochs=1, lr=0.05, seed=0, progress=False)
    assert _max_difference(plain, models[0]) > 1e-3  # the warm-up changed the steps


def test_fit_together_with_adam_equals_fit():
    """Without BatchNorm: a bias in front of BatchNorm has a gradient of exactly zero, so its
    computed gradient is pure rounding, which Adam's normalised step blows up to ~lr."""
    data = helpers.data.digits()
    helpers.seed_everything(1)
    models = [DeepMLP(6, 8, norm="none"), DeepMLP(6, 8, norm="none")]
    alone = [copy.deepcopy(m) for m in models]
    fit_together(models, data.x_train, data.y_train, epochs=1, lr=1e-3, seeds=[0, 5], optimizer="adam",
                 progress=False)
    for model, ref, seed in zip(models, alone, [0, 5]):
        fit(ref, data.x_train, data.y_train, epochs=1, lr=1e-3, seed=seed, optimizer="adam", progress=False)
        assert _max_difference(model, ref) < 1e-4


def test_the_group_trains_the_nets_train_twin_trains():
    data = helpers.data.digits()
    group = train_twin_group(data, 6, [3, 4], lrs=[0.02, 0.05], epochs=1, progress=False)
    assert set(group) == {(k, s, lr) for k in ("plain", "residual") for s in (3, 4) for lr in (0.02, 0.05)}
    for kind in ("plain", "residual"):
        alone, _ = train_twin(data, 6, kind, seed=4, epochs=1, lr=0.02)
        assert _max_difference(group[kind, 4, 0.02][0], alone) < 1e-4
    # Seeds draw different nets; the learning rates of one seed start from the same weights.
    assert not torch.equal(group["plain", 3, 0.05][0].head.weight, group["plain", 4, 0.05][0].head.weight)
    by_seed = train_twins_for_seeds(data, 6, [4], epochs=1, lr=0.02)
    assert _max_difference(by_seed[0]["residual"][0], group["residual", 4, 0.02][0]) < 1e-4


def test_degradation_result_best_learning_rate():
    data = helpers.data.digits()
    result = run_degradation(data, depths=(4,), seeds=(0,), lr=0.05, lrs=(0.001, 0.05), epochs=2, progress=False)
    assert result.lrs == (0.001, 0.05) and result.lr == 0.05
    errors = {lr: result.mean_train_error("plain", 4, lr) for lr in result.lrs}
    assert result.best_lr("plain", 4) == min(errors, key=errors.get)
    assert result.best_train_error("plain", 4) == min(errors.values())
    assert result.mean_train_error("plain", 4) == errors[0.05]
    assert result.curves["plain", 4, 0.05].shape == (1, 2)
    # The recipe's rate is always part of the grid.
    assert run_degradation(data, depths=(4,), seeds=(0,), lr=0.05, lrs=(0.02,), epochs=1, progress=False).lrs \
        == (0.02, 0.05)


def test_bad_input_is_named():
    data = helpers.data.digits()
    x, y = data.x_train[:32], data.y_train[:32]
    with pytest.raises(TypeError, match=r"models\[1\]"):
        fit_together([DeepMLP(4, 8), torch.nn.Linear(2, 2)], x, y, epochs=1, lr=0.1, seeds=[0, 0])
    with pytest.raises(ValueError, match="one shape"):
        fit_together([DeepMLP(4, 8), DeepMLP(6, 8)], x, y, epochs=1, lr=0.1, seeds=[0, 0])
    with pytest.raises(ValueError, match="seeds"):
        fit_together([DeepMLP(4, 8)], x, y, epochs=1, lr=0.1, seeds=[0, 1])
    with pytest.raises(ValueError, match="lr"):
        fit_together([DeepMLP(4, 8)], x, y, epochs=1, lr=[0.1, 0.2], seeds=[0])
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        fit_together([DeepMLP(4, 8), DeepMLP(4, 8)], x, y, epochs=1, lr=[0.1, 0.2], seeds=[0, 0], optimizer="adam")
    with pytest.raises(ValueError, match="distinct"):
        net = DeepMLP(4, 8)
        fit_together([net, net], x, y, epochs=1, lr=0.1, seeds=[0, 0])
    with pytest.raises(ValueError, match="models"):
        fit_together([], x, y, epochs=1, lr=0.1, seeds=[])
    with pytest.raises(ValueError, match="lrs"):
        run_degradation(data, depths=(4,), seeds=(0,), lrs=(), epochs=1)
