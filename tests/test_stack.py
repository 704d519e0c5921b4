"""helpers.stack and the training loop: nets trained as a stack take the steps torch.optim
would take for each net alone.

Why the layers of helpers.models.layers and not ``torch.func.vmap``: measured on the course's
2-core AMD EPYC machine (speed index about 1), one forward and backward pass of six 56-layer
BatchNorm MLPs of width 32 on batches of 128 took 43-53 ms under ``vmap`` over
``functional_call``, against 23-27 ms batched by hand with ``torch.baddbmm`` as these layers
do; five 12-layer Post-LN Transformers of width 16, 52 ms against 34 ms.
"""

import copy

import pytest
import torch
from torch import nn

import helpers
from helpers.experiments import run_degradation
from helpers.experiments.twins import train_twin, train_twin_group, train_twins_for_seeds
from helpers.models import DeepMLP, SequenceTransformer
from helpers.seeding import generator
from helpers.stack import Stack
from helpers.training import fit


def _max_difference(a: torch.nn.Module, b: torch.nn.Module) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    return max((sa[k].float() - sb[k].float()).abs().max().item() for k in sa)


def _alone(model, x, y, *, epochs, lr, seed, optimizer="sgd", warmup=0, momentum=0.9, weight_decay=1e-4,
           batch_size=128):
    """The reference: one net, torch.optim's own step at its own rate, LambdaLR's warm-up."""
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(warmup, 1)))
    gen, errors = generator(seed), []
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=gen).split(batch_size):
            logits = model(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            errors.append(float((logits.argmax(1) != y[idx]).float().mean()))
    return errors


@pytest.mark.parametrize("options", [dict(), dict(order="pre"), dict(norm="none", init="pytorch"),
                                     dict(norm="layer", branch_scale=0.5)])
def test_a_stack_trains_each_net_as_torch_optim_trains_it_alone(options):
    """Weights, BatchNorm statistics and training errors match to float rounding, with a plain
    net and its residual twin in one stack and a learning rate per net."""
    data = helpers.data.digits()
    helpers.seed_everything(0)
    first = DeepMLP(8, 16, **options)
    models = [first, first.twin(), DeepMLP(8, 16, **options)]
    alone = [copy.deepcopy(m) for m in models]
    lrs, seeds = [0.05, 0.05, 0.02], [1, 1, 2]
    histories = fit(models, data.x_train, data.y_train, epochs=2, lr=lrs, seed=seeds, progress=False)
    for model, ref, lr, seed, hist in zip(models, alone, lrs, seeds, histories):
        errors = _alone(ref, data.x_train, data.y_train, epochs=2, lr=lr, seed=seed)
        assert _max_difference(model, ref) < 1e-4
        n = len(errors) // 2
        sizes = [len(c) for c in torch.arange(len(data.x_train)).split(128)]
        per_epoch = [sum(e * s for e, s in zip(errors[i * n:(i + 1) * n], sizes)) / sum(sizes) for i in (0, 1)]
        assert hist.train_error == pytest.approx(per_epoch, abs=1e-6)
        model.eval(), ref.eval()
        # float32 rounding, relative to the size of the outputs (without normalisation they
        # reach about 5, and two epochs of different summation orders leave ~1e-4 of it)
        with torch.no_grad():
            out, ref_out = model(data.x_test), ref(data.x_test)
        assert (out - ref_out).abs().max() <= 1e-4 * max(1.0, float(ref_out.abs().max()))


def test_a_stack_of_dialled_nets_trains_each_as_alone():
    """Chapter 1's dial (helpers.experiments.dial): nets whose skips are scaled by different
    alphas, trained as one stack, take each the steps torch.optim takes for it alone."""
    from helpers.experiments.dial import dialled

    data = helpers.data.digits()
    helpers.seed_everything(0)
    first = DeepMLP(8, 16)
    models = [dialled(copy.deepcopy(first), a) for a in (0.0, 0.5, 0.9, 1.0)]
    alone = [copy.deepcopy(m) for m in models]
    fit(models, data.x_train, data.y_train, epochs=1, lr=0.05, seed=3, progress=False)
    for model, ref in zip(models, alone):
        _alone(ref, data.x_train, data.y_train, epochs=1, lr=0.05, seed=3)
        assert _max_difference(model, ref) < 1e-4
    assert _max_difference(models[0], models[3]) > 1e-2, "the dial changes the training"


def test_one_net_and_a_warm_up_under_sgd_and_adam():
    """One net is a stack of one; warm-up ramps each net's own rate; Adam's step scales with
    the rate as SGD's does. Without BatchNorm for Adam: a bias in front of BatchNorm has a
    gradient of exactly zero, so its computed gradient is pure rounding, which Adam's
    normalised step blows up to ~lr."""
    data = helpers.data.digits()
    helpers.seed_everything(2)
    for optimizer, lrs in (("sgd", [0.05, 0.02]), ("adam", [1e-3, 3e-3])):
        models = [DeepMLP(6, 8, norm="none"), DeepMLP(6, 8, norm="none")]
        alone, single = [copy.deepcopy(m) for m in models], copy.deepcopy(models[0])
        fit(models, data.x_train, data.y_train, epochs=1, lr=lrs, seed=[0, 3], warmup_steps=[6, 0],
            optimizer=optimizer, progress=False)
        for model, ref, lr, seed, warmup in zip(models, alone, lrs, [0, 3], [6, 0]):
            _alone(ref, data.x_train, data.y_train, epochs=1, lr=lr, seed=seed, warmup=warmup, optimizer=optimizer)
            assert _max_difference(model, ref) < 1e-4, optimizer
        history = fit(single, data.x_train, data.y_train, epochs=1, lr=lrs[0], seed=0, optimizer=optimizer,
                      progress=False)
        assert len(history) == 1
        assert _max_difference(single, models[0]) > 1e-3  # the warm-up changed the steps


def test_the_rates_ramp_up_linearly():
    from helpers.training import rates
    assert [float(rates([0.5], [4], k)[0]) for k in range(1, 7)] == pytest.approx([0.125, 0.25, 0.375, 0.5, 0.5, 0.5])
    assert rates([0.1, 0.2], [0, 0], 1).tolist() == pytest.approx([0.1, 0.2])


def test_a_stack_runs_each_members_own_forward():
    """The stack's output for member e is member e's own forward on its own input, in
    training mode (BatchNorm over each member's batch) and in evaluation mode."""
    helpers.seed_everything(3)
    nets = [DeepMLP(6, 8), DeepMLP(6, 8, kind="plain"), DeepMLP(6, 8)]
    x = torch.randn(3, 5, 64)
    stack = Stack(nets)
    with torch.no_grad():
        for mode in (True, False):
            out = stack.train(mode)(x)
            for e, net in enumerate(nets):
                assert torch.allclose(out[e], net.train(mode)(x[e]), atol=1e-5)
    tokens = torch.randint(0, 6, (2, 4, 5))
    transformers = [SequenceTransformer(6, 5, 8, 2, 16, 2, residual=r, position_std=1.0) for r in (True, False)]
    with torch.no_grad():
        out = Stack(transformers)(tokens)
        for e, net in enumerate(transformers):
            assert torch.allclose(out[e], net(tokens[e]), atol=1e-5)


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
    with pytest.raises(ValueError, match=r"models\[1\] differs"):
        fit([DeepMLP(4, 8), torch.nn.Linear(2, 2)], x, y, epochs=1, lr=0.1, seed=[0, 0])
    with pytest.raises(ValueError, match="one structure"):
        fit([DeepMLP(4, 8), DeepMLP(6, 8)], x, y, epochs=1, lr=0.1, seed=[0, 0])
    with pytest.raises(ValueError, match="one structure"):
        fit([DeepMLP(4, 8), DeepMLP(4, 8, norm="layer")], x, y, epochs=1, lr=0.1, seed=[0, 0])
    with pytest.raises(ValueError, match="seed"):
        fit([DeepMLP(4, 8)], x, y, epochs=1, lr=0.1, seed=[0, 1])
    with pytest.raises(ValueError, match="lr"):
        fit([DeepMLP(4, 8)], x, y, epochs=1, lr=[0.1, 0.2], seed=[0])
    with pytest.raises(ValueError, match="distinct"):
        net = DeepMLP(4, 8)
        fit([net, net], x, y, epochs=1, lr=0.1, seed=[0, 0])
    with pytest.raises(ValueError, match="models"):
        fit([], x, y, epochs=1, lr=0.1, seed=[])
    with pytest.raises(ValueError, match="lrs"):
        run_degradation(data, depths=(4,), seeds=(0,), lrs=(), epochs=1)
