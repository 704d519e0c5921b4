"""The looks-linear initialisation (helpers.models.looks_linear), its experiment beside chapter 2's
twins (helpers.experiments.looks_linear) and its figures (helpers.plots.looks_linear)."""

import copy
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from helpers.data import digits
from helpers.experiments.looks_linear import (
    KINDS,
    agreement_at_init,
    agreement_toward_mirror,
    best_rate,
    crelu_twins,
    digit_nets,
    first_steps_compared,
    first_steps_of,
    gradients_on_line,
    kept_share,
    parameter_counts,
    run_seeds,
    stackable,
)
from helpers.experiments.shattering import first_steps
from helpers.models.chain import LayerChain
from helpers.models.looks_linear import CReLUChain, crelu, matched_width
from helpers.plots.looks_linear import first_steps_at_rate, line_gradients
from helpers.plots.looks_linear import first_steps_compared as plot_first_steps
from helpers.plots.style import smallest_font_pt
from helpers.seeding import generator, isolated
from helpers.stack import Stack


@pytest.fixture(scope="module")
def data():
    return digits()


def test_crelu_keeps_both_halves():
    h = torch.tensor([[1.0, -2.0, 0.0]])
    assert torch.equal(crelu(h), torch.tensor([[1.0, 0.0, 0.0, 0.0, 2.0, 0.0]]))


def test_a_mirrored_net_is_linear_and_an_unmirrored_one_is_not():
    torch.manual_seed(0)
    free = CReLUChain(6, 16, in_features=5, out_features=3, norm="none", mirrored=False).double()
    mirrored = free.mirror()
    x, y = torch.randn(8, 5, dtype=torch.float64), torch.randn(8, 5, dtype=torch.float64)
    with torch.no_grad():
        # zero biases and no normalisation: exactly linear, f(2x - 3y) = 2 f(x) - 3 f(y)
        assert torch.allclose(mirrored(2 * x - 3 * y), 2 * mirrored(x) - 3 * mirrored(y), atol=1e-10)
        assert not torch.allclose(free(2 * x - 3 * y), 2 * free(x) - 3 * free(y), atol=1e-3)
    # the same left halves, the right halves their mirror image
    for a, b in zip(free.hidden, mirrored.hidden):
        assert torch.equal(a.weight[:, :16], b.weight[:, :16])
        assert torch.equal(b.weight[:, 16:], -b.weight[:, :16])
    assert mirrored.kind == "looks-linear" and free.kind == "CReLU"
    assert mirrored.mirror_gap() == 0.0
    assert free.mirror_gap() == pytest.approx(math.sqrt(2), abs=0.1)


def test_the_halves_are_orthogonal_with_he_row_norms():
    """Balduzzi et al. draw A orthogonal; gain 1 gives each row of [A, -A] (and of [A, B]) squared
    norm 2, what He initialisation gives on average to a row of 2 width inputs of variance 1 / width."""
    with isolated(0):
        free = CReLUChain(3, 16, in_features=5, out_features=3, norm="batch", mirrored=False)
    mirrored = free.mirror()
    for net in (free, mirrored):
        for layer in (*net.hidden, net.head):
            w = layer.weight.detach().double()
            for half in (w[:, :16], w[:, 16:]):
                rows = half.shape[0]
                assert torch.allclose(half @ half.T, torch.eye(rows, dtype=torch.float64), atol=1e-5)
            assert torch.allclose(w.pow(2).sum(1), torch.full((w.shape[0],), 2.0, dtype=torch.float64), atol=1e-5)
    # the two halves of the unmirrored net are drawn independently, not mirrored
    assert not torch.allclose(free.hidden[0].weight[:, 16:], -free.hidden[0].weight[:, :16], atol=1e-3)


def test_with_batchnorm_the_looks_linear_gradient_is_one_value_on_the_grid():
    grads = gradients_on_line(8, width=32, seed=0)
    assert list(grads) == list(KINDS)
    assert np.ptp(grads["looks-linear"]) <= 1e-6 * np.abs(grads["looks-linear"]).mean()
    assert np.ptp(grads["CReLU"]) > 0.1 * np.abs(grads["CReLU"]).mean()


def test_toward_mirror_goes_from_the_net_to_its_mirror():
    with isolated(0):
        free = CReLUChain(4, 32, in_features=3, out_features=2, norm="batch", mirrored=False)
    start, end = free.toward_mirror(0.0), free.toward_mirror(math.sqrt(2))
    for a, b in zip(start.hidden, free.mirror().hidden):
        assert torch.allclose(a.weight, b.weight)
    for a, c in zip(free.hidden, end.hidden):
        assert torch.allclose(a.weight, c.weight, atol=1e-6)
    gaps = [free.toward_mirror(g).mirror_gap() for g in (0.1, 0.4, 1.0)]
    assert gaps == sorted(gaps) and gaps[0] == pytest.approx(0.1, abs=0.05)
    assert start.kind == "looks-linear" and free.toward_mirror(0.4).kind == "CReLU"
    with pytest.raises(ValueError, match="unmirrored"):
        free.mirror().toward_mirror(0.5)
    with pytest.raises(ValueError, match="gap"):
        free.toward_mirror(2.0)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="mirrored"):
        CReLUChain(2, 8, mirrored=1)
    with pytest.raises(ValueError, match="norm"):
        CReLUChain(2, 8, norm="group")
    with pytest.raises(ValueError, match="layers"):
        CReLUChain(0, 8)
    with pytest.raises(TypeError, match="width"):
        matched_width(64.0, 50)


def test_the_matched_width_has_about_the_twins_parameter_count(data):
    assert matched_width(64, 50) == 46
    counts = parameter_counts(digit_nets(data, layers=50, seed=0))
    assert counts["plain"] == counts["residual"] and counts["CReLU"] == counts["looks-linear"]
    assert abs(counts["looks-linear"] / counts["residual"] - 1) < 0.05


def test_a_crelu_chain_runs_in_a_stack():
    nets = list(crelu_twins(3, 8, in_features=4, out_features=2, seed=0).values())
    x = torch.randn(2, 5, 4)
    stack = Stack(nets[:1] + [CReLUChain(3, 8, in_features=4, out_features=2, norm="batch", mirrored=False)])
    out = stack(x)
    with torch.no_grad():
        assert torch.allclose(out[0], nets[0](x[0]), atol=1e-5)


def test_a_stackable_copy_computes_what_the_net_computes():
    with isolated(0):
        chain = LayerChain(3, 8, kind="plain", in_features=4, out_features=2, norm="batch")
    copy_ = stackable(chain)
    assert type(copy_.stem).__name__ == "Linear" and copy_.stem is not chain.stem
    x = torch.randn(5, 4)
    with torch.no_grad():
        assert torch.equal(copy_(x), chain(x))
    out = Stack([copy_, stackable(chain)])(x.expand(2, -1, -1))
    assert torch.allclose(out[0], chain(x), atol=1e-6)


def test_the_nets_of_a_run_are_drawn_from_seeds_of_their_own(data):
    assert run_seeds(2) == {"twins": 6, "batches": 7, "crelu": 8}
    a, b = digit_nets(data, layers=4, seed=0), digit_nets(data, layers=4, seed=1)
    assert not torch.equal(a["residual"].stem.weight, b["residual"].stem.weight)
    assert torch.equal(a["plain"].stem.weight, a["residual"].stem.weight)
    assert torch.equal(a["CReLU"].stem.weight, a["looks-linear"].stem.weight)


def _plain_loop(start, data, lr, *, steps, sample_seed, batch_seed):
    """Section 4's loop (helpers.experiments.shattering.first_steps) for one net at one rate."""
    net = copy.deepcopy(start)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    sample = torch.randperm(len(data.x_train), generator=generator(sample_seed))[:256]
    batches, losses = generator(batch_seed), []
    net.train()
    for step in range(steps + 1):
        with torch.no_grad():
            losses.append(float(F.cross_entropy(net(data.x_train[sample]), data.y_train[sample])))
        if step == steps:
            break
        idx = torch.randint(0, len(data.x_train), (64,), generator=batches)
        opt.zero_grad()
        F.cross_entropy(net(data.x_train[idx]), data.y_train[idx]).backward()
        opt.step()
    return np.array(losses), net


def test_the_stacked_loop_is_section_4s_loop(data):
    """The reference loop gives first_steps' losses exactly on chapter 2's residual net, and
    first_steps_of, its rates stacked, gives the reference loop's losses and weights on each
    CReLU net, to float rounding."""
    with isolated(3):
        chain = LayerChain(4, 16, kind="residual", in_features=64, out_features=10, norm="batch")
    theirs = first_steps(data, layers=4, width=16, learning_rates=(0.1, 1.0), steps=3, seed=3)["residual"]
    for lr in (0.1, 1.0):
        assert np.array_equal(_plain_loop(chain, data, lr, steps=3, sample_seed=3, batch_seed=4)[0], theirs[lr])
    for start in (stackable(chain), *crelu_twins(6, 16, seed=0).values()):
        ours, trained = first_steps_of(start, data, learning_rates=(0.03, 0.3), steps=4, sample_seed=3,
                                       batch_seed=4)
        for lr in (0.03, 0.3):
            losses, alone = _plain_loop(start, data, lr, steps=4, sample_seed=3, batch_seed=4)
            assert np.allclose(ours[lr], losses, rtol=1e-4)
            assert torch.allclose(trained[lr].hidden[2].weight, alone.hidden[2].weight, atol=1e-5)
            assert torch.allclose(trained[lr].head.weight, alone.head.weight, atol=1e-5)
            assert trained[lr] is not start and trained[lr].training
    with pytest.raises(ValueError, match="learning_rates"):
        first_steps_of(start, data, learning_rates=())


def test_first_steps_compared_trains_the_four_nets_on_one_footing(data):
    run = first_steps_compared(data, layers=4, width=16, learning_rates=(0.03, 0.3), steps=2, seed=0)
    assert list(run["losses"]) == list(KINDS)
    assert all(len(v) == 3 for by_rate in run["losses"].values() for v in by_rate.values())
    assert set(run["mirror_gap"]) == {0.03, 0.3} and all(g > 0 for g in run["mirror_gap"].values())
    ll = run["losses"]["looks-linear"]
    assert best_rate(ll) in (0.03, 0.3)
    assert kept_share(ll)[0.03] == pytest.approx(ll[0.03][-1] / ll[0.03][0])


def test_agreement_is_measured_on_the_same_pairs_for_every_net(data):
    cos = agreement_at_init(data, layers=4, width=16, pairs=2, seed=0)
    assert list(cos) == list(KINDS) and all(v.shape == (2,) for v in cos.values())
    path = agreement_toward_mirror(data, (0.0, math.sqrt(2)), layers=4, width=16, pairs=2, seed=0)
    assert np.allclose(path[0.0], cos["looks-linear"], atol=1e-6)
    assert np.allclose(path[math.sqrt(2)], cos["CReLU"], atol=1e-4)


def test_the_figures_draw_and_refuse_bad_input():
    grads = {kind: np.linspace(0, 1, 16) for kind in KINDS}
    correlations = {"plain": 0.1, "residual": 0.5, "CReLU": 0.0, "looks-linear": None}
    fig = line_gradients(grads, correlations=correlations, title="A finding")
    assert "constant" in fig.axes[3].get_title() and smallest_font_pt(fig) >= 10
    plt.close(fig)
    with pytest.raises(ValueError, match="correlations"):
        line_gradients(grads, correlations={}, title="A finding")
    losses = {kind: {0.1: np.array([2.0, 1.0]), 1.0: np.array([2.0, 1.5])} for kind in KINDS}
    for fig in (plot_first_steps(losses, title="A finding"), first_steps_at_rate(losses, 0.1, title="A finding")):
        assert smallest_font_pt(fig) >= 10 and fig.get_size_inches()[0] <= 7.4
        plt.close(fig)
    with pytest.raises(ValueError, match="title"):
        plot_first_steps(losses, title=" ")
    with pytest.raises(ValueError, match="learning_rate"):
        first_steps_at_rate(losses, 0.5, title="A finding")
