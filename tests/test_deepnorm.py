"""Chapter 5's deep Transformers: the designs, and the size of the first update."""

import numpy as np
import pytest
import torch

from helpers.experiments.deepnorm import DESIGNS, _stacks, early_updates, make_net, train_designs
from helpers.models import deepnorm_constants


def test_each_architecture_is_built_as_described():
    post, deep = make_net("post", 4, 0), make_net("deepnorm", 4, 0)
    alpha, beta = deepnorm_constants(4)
    assert post.layers[0].alpha == 1.0 and deep.layers[0].alpha == pytest.approx(alpha)
    # the paper's init: the update weights drawn afresh, Xavier normal of gain beta; biases scaled by beta
    w1 = torch.cat([layer.linear1.weight.detach() for layer in deep.layers])
    assert float(w1.std()) == pytest.approx(beta * (2 / (16 + 32)) ** 0.5, rel=0.1)
    assert not np.allclose(deep.layers[0].linear1.weight.detach(), beta * post.layers[0].linear1.weight.detach())
    assert np.allclose(deep.layers[0].linear1.bias.detach(), beta * post.layers[0].linear1.bias.detach())
    assert torch.equal(deep.embed.weight, post.embed.weight), "the same net otherwise"
    assert make_net("pre", 4, 0).layers[0].norm_position == "pre"
    rezero = make_net("rezero", 4, 0)
    assert rezero.layers[0].norm_position == "none" and float(rezero.layers[0].rezero_gates.detach().abs().sum()) == 0.0
    with pytest.raises(ValueError, match="architecture"):
        make_net("sandwich", 4, 0)


def test_designs_train_in_stacks_of_one_norm_position():
    stacks = _stacks(list(DESIGNS))
    assert sorted(map(len, stacks), reverse=True) == [4, 1, 1]
    assert set(stacks[0]) == {"Post-LN", "Post-LN, warm-up", "Post-LN, lower rate", "DeepNorm"}


def test_train_designs_returns_the_designs_in_order():
    runs = train_designs(2, ("ReZero", "DeepNorm", "Post-LN"), seed=3, steps=3)
    assert [r.design for r in runs] == ["ReZero", "DeepNorm", "Post-LN"]
    assert all(len(r.run.losses) == 3 and 0 <= r.run.accuracy <= 1 for r in runs)
    with pytest.raises(ValueError, match="repeat"):
        train_designs(2, ("Pre-LN", "Pre-LN"), steps=2)
    with pytest.raises(ValueError, match="designs"):
        train_designs(2, ("Sandwich-LN",), steps=2)


def test_early_updates_measure_every_layer_and_rezero_starts_still():
    updates = early_updates(3, ("Post-LN", "ReZero"), seed=0, steps=1, n_nets=2)
    assert [u.design for u in updates] == ["Post-LN", "ReZero"]
    assert all(len(u.layers) == 3 and u.steps == 1 and np.all(u.layers > 0) for u in updates)
    # ReZero's gates start at 0, so one step can only open them a little
    assert np.median(updates[1].layers) < np.median(updates[0].layers)
    assert all(u.normalised for u in updates)
    raw = early_updates(3, ("ReZero",), seed=0, steps=1, n_nets=2, normalised=False)
    assert not raw[0].normalised and raw[0].layers.shape == (3,)
    with pytest.raises(TypeError, match="normalised"):
        early_updates(3, ("ReZero",), normalised="yes")


def test_nets_are_drawn_apart_from_chapter_4s():
    """Chapter 5's nets are seeded NET_SEEDS + s, so none of them is one of chapter 4's nets."""
    from helpers.experiments.deepnorm import NET_SEEDS, _seeds
    from helpers.experiments.transformer_depth import make_net as chapter4_net

    assert _seeds(0, 3) == [NET_SEEDS, NET_SEEDS + 1, NET_SEEDS + 2]
    mine, theirs = make_net("post", 2, _seeds(0, 1)[0]), chapter4_net(2, "post", True, 0)
    assert not torch.equal(mine.embed.weight, theirs.embed.weight)
