"""Small, fast versions of the chapter-1 experiments: they run and measure what they say."""

import numpy as np
import pytest
import torch

from helpers import experiments
from helpers.data import digits
from helpers.experiments.spectra import lost_share, surviving
from helpers.measure.branches import branch_ratios
from helpers.models import Block, stack_twins
from helpers.published import IMAGENET_TOP5, Entry, series


def test_stack_twins_share_parameters_and_differ_in_the_skip():
    plain, residual = stack_twins(3, 8, norm="none", order="pre")
    for p, r in zip(plain.parameters(), residual.parameters()):
        assert torch.equal(p, r)
    assert all(not b.residual for b in plain) and all(b.residual for b in residual)
    x = torch.randn(4, 8)
    assert not torch.allclose(plain(x), residual(x))
    with pytest.raises(TypeError, match="residual"):
        stack_twins(2, 8, residual=True)
    with pytest.raises(ValueError, match="n_blocks"):
        stack_twins(0, 8)


def test_branch_ratios_known_answers():
    block = Block(4, norm="none", order="pre", zero_init_branch=True)
    assert branch_ratios([block], torch.randn(3, 4)) == pytest.approx([0.0])
    block = Block(4, norm="none", order="pre", branch_scale=2.0)
    x = torch.randn(3, 4)
    expected = float(block.branch(x).detach().norm() / x.norm())
    assert branch_ratios([block], x) == pytest.approx([expected])
    with pytest.raises(ValueError, match="blocks"):
        branch_ratios([], x)
    with pytest.raises(TypeError, match="branch"):
        branch_ratios([torch.nn.Linear(4, 4)], x)


def test_identity_race_residual_wins():
    race = experiments.identity_race(blocks=(1,), steps=150)
    assert race.steps("residual", 1) is not None
    assert race.steps("plain", 1) is None or race.steps("plain", 1) > race.steps("residual", 1)
    assert race.losses["plain", 1].shape == (150,)
    assert experiments.steps_to([0.5, 0.2, 0.05], 0.1) == 3
    assert experiments.steps_to([0.5], 0.1) is None


def test_identity_race_reports_steps_or_never():
    race = experiments.IdentityRace((1,), 0.01, {("plain", 1): np.array([1.0, 0.5, 0.4]),
                                                 ("residual", 1): np.array([1.0, 0.005, 0.001])})
    assert race.took("residual", 1) == "2 steps" and race.took("plain", 1) == "never"
    assert race.report("plain", 1) == "   plain, 1 block(s):     never   final loss 0.4000"


def test_identity_races_by_init_match_single_races_and_do_not_depend_on_workers():
    races = experiments.identity_races({"pytorch": (1,), "he": (1, 2)}, steps=20, workers=2)
    assert set(races) == {"pytorch", "he"} and races["he"].blocks == (1, 2)
    alone = experiments.identity_race(blocks=(2,), init="he", steps=20, workers=1)
    np.testing.assert_array_equal(races["he"].losses["residual", 2], alone.losses["residual", 2])
    with pytest.raises(ValueError, match="init"):
        experiments.identity_races({"orthogonal": (1,)}, steps=5)
    with pytest.raises(TypeError, match="blocks_by_init"):
        experiments.identity_races([1, 3], steps=5)


def test_weight_decay_shrinks_branches_and_the_plain_control_is_the_twin():
    out = experiments.weight_decay_branches((0.0, 1.0), kinds=("plain", "residual"), n_blocks=2, steps=200)
    res = {wd: out["residual", wd] for wd in (0.0, 1.0)}
    assert res[1.0]["trained"]["ratios"].mean() < res[0.0]["trained"]["ratios"].mean()
    np.testing.assert_allclose(res[1.0]["init"]["ratios"], res[0.0]["init"]["ratios"])  # same starting weights
    # The plain control starts from the residual stack's weights: the same weight norms.
    np.testing.assert_allclose(out["plain", 0.0]["init"]["weights"], res[0.0]["init"]["weights"])
    assert (out["plain", 1.0]["trained"]["weights"] < out["plain", 0.0]["trained"]["weights"]).all()


def test_block_weight_norms_is_the_frobenius_norm_of_the_block_weights():
    from helpers.experiments.identity import block_weight_norms
    from helpers.models.mlp import stack_twins

    _, stack = stack_twins(2, 4, norm="none")
    block = stack[0]
    expected = torch.sqrt(block.fc1.weight.detach().pow(2).sum() + block.fc2.weight.detach().pow(2).sum())
    assert np.isclose(block_weight_norms(stack)[0], float(expected))


def test_block_spectra_identity_when_the_branch_is_off():
    spectra = experiments.block_spectra(1, branch_scale=0.0, n_inputs=2)
    np.testing.assert_allclose(spectra["residual"], 1.0, atol=1e-6)
    np.testing.assert_allclose(spectra["plain"], 0.0, atol=1e-6)
    assert experiments.share_near_one([0.1, 1.0, 1.5, 3.0]) == 0.5


def test_lost_and_surviving_singular_values_split_at_a_fraction_of_the_largest():
    values = [0.0, 1e-9, 3e-5, 0.2, 2.0]  # 1e-5 of the largest is 2e-5
    assert lost_share(values) == pytest.approx(0.4)
    np.testing.assert_array_equal(surviving(values), [3e-5, 0.2, 2.0])
    assert lost_share(values, rtol=0.5) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="values must be a non-empty 1-D array"):
        lost_share([])
    with pytest.raises(ValueError, match="values must be"):
        surviving([1.0, -0.5])
    with pytest.raises(ValueError, match="rtol"):
        surviving(values, rtol=0.0)


def test_a_plain_relu_block_loses_about_half_its_directions_to_the_masks():
    """One plain pre-activation block without normalisation, He init: its Jacobian
    W2 D2 W1 D1 has rank at most the number of active units, whatever the weights' scale."""
    spectra = experiments.block_spectra(1, init="he", seed=0, n_inputs=4)
    assert 0.3 < lost_share(spectra["plain"]) < 0.7
    assert lost_share(spectra["residual"]) == 0


def test_norm_order_profiles_one_entry_per_layer():
    profiles = experiments.norm_order_profiles(3, d_model=16, d_ff=32, batch=8, n_inits=2)
    assert set(profiles) == {"Post-LN", "Pre-LN"}
    assert all(len(p) == 3 and np.all(p.weight > 0) for p in profiles.values())


def test_norm_order_seeds_draw_their_own_nets(monkeypatch):
    from helpers.experiments import norm_order

    used, real = [], norm_order.isolated
    monkeypatch.setattr(norm_order, "isolated", lambda s: used.append(s) or real(s))
    norm_order.norm_order_profiles(2, seed=1, d_model=16, d_ff=32, batch=8, n_inits=2)
    # Seed 1 draws nets 2 and 3 for both orders (seed 0 draws 0 and 1): no net is shared.
    assert used == [2, 3, 2, 3]


def test_norm_order_by_depth_and_its_summaries():
    result = experiments.norm_order_by_depth((2, 4), d_model=16, d_ff=32, batch=8, n_inits=1)
    assert result.depths == (2, 4) and set(result.profiles) == {2, 4}
    assert [len(result.profiles[n]["Post-LN"]) for n in (2, 4)] == [2, 4]
    post, pre = result.last("Post-LN"), result.last("Pre-LN")
    assert post[1] == result.profiles[4]["Post-LN"].weight[-1]
    np.testing.assert_allclose(result.last_ratio(), post / pre)
    assert result.first_to_last("Pre-LN")[0] == pytest.approx(
        result.profiles[2]["Pre-LN"].weight[-1] / result.profiles[2]["Pre-LN"].weight[0])
    for bad in ((4,), (4, 2), (2, 2)):
        with pytest.raises(ValueError, match="increasing"):
            experiments.norm_order_by_depth(bad, n_inits=1)


def test_depth_exponent_fits_a_power_law():
    depths = np.array([6, 12, 24])
    assert experiments.depth_exponent(depths, 3 * depths ** 0.5) == pytest.approx(0.5)
    assert experiments.depth_exponent(depths, 3 * depths ** -0.5) == pytest.approx(-0.5)
    assert experiments.depth_exponent(depths, [2.0, 2.0, 2.0]) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="positive"):
        experiments.depth_exponent(depths, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="equal length"):
        experiments.depth_exponent(depths, [1.0, 2.0])


def test_train_twins_and_lesions():
    data = digits()
    twins = experiments.train_twins(data, 6, seed=0, epochs=2)
    assert set(twins) == {"plain", "residual"}
    model = twins["residual"][0]
    errs = experiments.errors_by_count(model, data.x_test, data.y_test, ks=(0, 2), n_draws=3)
    assert errs.shape == (2, 3) and np.all((errs >= 0) & (errs <= 1))
    choices = experiments.lesion_choices(2)
    assert choices == {"none": (), "1": (0,), "2": (1,), "1-2": (0, 1)}
    assert errs[0].std() == 0  # deleting no block: every draw is the intact net


def test_imagenet_history_is_sourced_and_keeps_kinds_apart():
    assert all(e.cite and e.table and e.note for e in IMAGENET_TOP5)
    assert [(e.year, e.top5_error) for e in IMAGENET_TOP5] == sorted(
        ((e.year, e.top5_error) for e in IMAGENET_TOP5), key=lambda t: (t[0], -t[1]))
    ensembles = series()
    assert ensembles and all(e.ensemble and e.split == "test" for e in ensembles)
    errors = [e.top5_error for e in ensembles]
    assert errors == sorted(errors, reverse=True)
    single = series(split="validation", ensemble=False)
    assert [e.name for e in single] == ["ResNet-152"] and single[0].kind == "single model, validation"
    assert set(ensembles) | set(single) == set(IMAGENET_TOP5)
    with pytest.raises(ValueError, match="split"):
        Entry(2015, "X", None, 1.0, "train", True, "key", "Table 1", "note")
    with pytest.raises(ValueError, match="split"):
        series(split="val")


def test_net_branch_ratios_follow_the_forward_pass():
    from helpers.measure import net_branch_ratios
    from helpers.models import DeepMLP

    model = DeepMLP(8, 6, in_features=5, n_classes=3).train()
    x = torch.randn(10, 5)
    ratios = net_branch_ratios(model, x)
    assert ratios.shape == (3,) and model.training  # mode restored
    model.eval()
    with torch.no_grad():
        first = model.blocks[0].branch(model.stem_output(x)).norm() / model.stem_output(x).norm()
    assert ratios[0] == pytest.approx(float(first))


def test_degradation_records_each_layers_update_and_trains_only_the_kinds_asked():
    data = digits()
    plain = experiments.run_degradation(data, depths=(6,), seeds=(0, 1), epochs=1, kinds=("plain",),
                                        workers=1, progress=False)
    assert plain.kinds == ("plain",) and set(plain.train_error) == {("plain", 6, 0.05)}
    # one row per seed, one column per weight layer (stem, two per block, head)
    assert plain.updates["plain", 6, 0.05].shape == (2, 6)
    assert (plain.updates["plain", 6, 0.05] > 0).all()
    with pytest.raises(ValueError, match="kinds"):
        experiments.run_degradation(data, depths=(6,), seeds=(0,), kinds=("dense",), workers=1)


def test_variants_change_one_thing_of_the_recipe():
    from helpers.experiments.degradation import run_variants

    data = digits()
    runs = run_variants(data, {"recipe": {}, "warm-up": {"warmup_steps": 5}, "wide": {"width": 8}},
                        depth=4, seeds=(0,), workers=1, progress=False)
    assert list(runs) == ["recipe", "warm-up", "wide"]
    base = experiments.run_degradation(data, depths=(4,), seeds=(0,), epochs=30, kinds=("plain",), workers=1,
                                       progress=False)
    # The variant without changes is the recipe's net, bit for bit; a warm-up changes the run.
    assert runs["recipe"].curves["plain", 4, 0.05].tolist() == base.curves["plain", 4, 0.05].tolist()
    assert runs["warm-up"].curves["plain", 4, 0.05].tolist() != base.curves["plain", 4, 0.05].tolist()
    assert runs["wide"].updates["plain", 4, 0.05].shape == (1, 4)
    with pytest.raises(ValueError, match="variants\\['x'\\]"):
        run_variants(data, {"x": {"lr": 0.1}}, depth=4, seeds=(0,))
    with pytest.raises(TypeError, match="variants must be a non-empty dict"):
        run_variants(data, {}, depth=4)


def test_twin_group_takes_the_recipes_decay_unless_told_and_hands_back_the_initial_nets():
    from helpers.experiments.twins import train_twin_group

    data = digits()
    initial: dict = {}
    runs = {wd: train_twin_group(data, 4, [0], epochs=1, kinds=("residual",), weight_decay=wd, progress=False,
                                 **({"initial": initial} if wd else {}))
            for wd in (0.0, 1e-4, 0.5)}
    assert set(initial) == {("residual", 0)}
    weights = {wd: runs[wd]["residual", 0, 0.05][0].head.weight for wd in runs}
    default = train_twin_group(data, 4, [0], epochs=1, kinds=("residual",), progress=False)
    assert torch.equal(default["residual", 0, 0.05][0].head.weight, weights[1e-4])
    assert not torch.equal(weights[0.0], weights[0.5])
    with pytest.raises(TypeError, match="initial must be a dict"):
        train_twin_group(data, 4, [0], epochs=1, initial=[])
