"""Chapter 4's experiments and measurements: gradients at init, the training grid, sublayer lesions."""

import numpy as np
import pytest
import torch

from helpers.data import sequence_targets
from helpers.experiments import gradients_at_init, train_grid
from helpers.experiments.transformer_depth import best, evaluation_set, make_net
from helpers.measure import position_accuracy, sublayer_lesions
from helpers.measure.sublayers import accuracy, zeroed
from helpers.plots import embedding_gradients, grid_curves, layer_diagram, lesion_maps
from helpers.plots import position_accuracy as bars


def test_gradients_at_init_cover_every_setting_and_plain_twins_vanish_faster():
    results = gradients_at_init((2, 8), seed=0, n_inits=2, batch=16)
    assert len(results) == 2 * 2 * 2
    at = {(r.norm, r.residual, r.depth): r for r in results}
    for (_, _, depth), r in at.items():
        assert r.layers.shape == (depth,) and r.embedding > 0
    for norm in ("Post-LN", "Pre-LN"):  # the +1 path: the residual stack keeps more at 8 layers
        assert at[norm, True, 8].embedding > at[norm, False, 8].embedding
    with pytest.raises(ValueError, match="depths"):
        gradients_at_init((), seed=0)


def test_a_tiny_grid_trains_and_labels_its_runs():
    grid = {"pre": [(True, 3e-3, 0), (False, 3e-3, 0)], "post": [(True, 3e-3, 4)]}
    runs = train_grid((1,), seed=0, grid=grid, steps=6)
    assert [r.label for r in runs] == ["residual Pre-LN", "plain Pre-LN", "residual Post-LN, warm-up"]
    assert all(len(r.run.losses) == 6 for r in runs)
    assert best(runs, label="plain Pre-LN").residual is False
    with pytest.raises(ValueError, match="no run"):
        best(runs, depth=3)
    with pytest.raises(ValueError, match="grid"):
        train_grid((1,), grid={"sandwich": [(True, 1e-3, 0)]})
    with pytest.raises(ValueError, match="grid"):
        train_grid((1,), grid={"pre": [(True, 1e-3)]})


def test_a_lesion_zeroes_exactly_one_sublayer_and_is_undone():
    net = make_net(2, "pre", True, seed=0).eval()
    x, y = evaluation_set(32)
    assert torch.equal(y, sequence_targets("reverse", x))
    with torch.no_grad():
        intact = net(x)
        h = net.embedding(x)  # layer 1 with its attention zeroed is h + 0, then its FFN:
        layer = net.layers[0]
        h = h + layer.ffn(layer.norm2(h))
        expected = net.head(net.final_norm(net.layers[1](h)))
        with zeroed(net, [("attention", 0)]):
            lesioned = net(x)
        again = net(x)
    assert torch.allclose(lesioned, expected, atol=1e-6)
    assert torch.equal(again, intact), "the hooks are removed afterwards"
    lesions = sublayer_lesions(net, x, y)
    assert lesions.shape == (2, 2) and np.all((0 <= lesions) & (lesions <= 1))
    per_position = position_accuracy(net, x, y, [("FFN", 1)])
    assert per_position.shape == (8,) and np.isclose(per_position.mean(), accuracy(net, x, y, [("FFN", 1)]))
    with pytest.raises(ValueError, match="sublayer"):
        accuracy(net, x, y, [("norm", 0)])
    with pytest.raises(ValueError, match="layer index"):
        accuracy(net, x, y, [("FFN", 2)])


def test_the_chapter_figures_draw_and_refuse_bad_options():
    import matplotlib.pyplot as plt

    for kind in ("sublayer", "encoder", "decoder"):
        for norm in ("post", "pre"):
            plt.close(layer_diagram(kind, norm, title="t"))
    with pytest.raises(ValueError, match="kind"):
        layer_diagram("block", "post", title="t")
    with pytest.raises(ValueError, match="norm"):
        layer_diagram("encoder", "none", title="t")
    plt.close(embedding_gradients(gradients_at_init((1, 2), n_inits=1, batch=4), title="t"))
    runs = train_grid((1, 2), seed=0, grid={"pre": [(True, 3e-3, 0)]}, steps=3)
    plt.close(grid_curves(runs, title="t"))
    plt.close(lesion_maps({"a": np.full((2, 3), 0.5)}, intact={"a": 1.0}, title="t"))
    plt.close(bars(np.full(8, 0.5), np.ones(8), title="t"))


def test_gradients_at_init_record_w2_the_token_spread_and_the_stream():
    from helpers.measure.rank_collapse import token_spread

    results = gradients_at_init((3,), seed=0, n_inits=1, batch=8)
    at = {(r.norm, r.residual): r for r in results}
    for r in results:
        assert r.w2.shape == (3,) and np.all(r.w2 > 0)
        assert r.spread.shape == (4,) and r.stream > 0  # the embeddings and 3 layers
    # known answer: the spread of the embeddings is that of the batch's embedding
    net = make_net(3, "post", True, 0)
    tokens = torch.randint(0, 8, (8, 8), generator=torch.Generator().manual_seed(0))
    assert 0 < token_spread(net.embedding(tokens)) < 1
    # a Post-LN stack's stream is a LayerNorm's output: root mean square about 1
    assert at["Post-LN", True].stream == pytest.approx(1.0, abs=1e-3)
    # without skips the tokens lose their spread faster than with them
    for norm in ("Post-LN", "Pre-LN"):
        assert at[norm, False].spread[-1] < at[norm, True].spread[-1]


def test_zeroed_extra_layers_start_as_the_shallow_stack_and_train():
    from helpers.experiments.transformer_depth import TWIN, extra_layer_twin, nets_for_lesions, zero_sublayers_

    x, _ = evaluation_set(16)
    for norm in ("post", "pre"):
        base = make_net(2, norm, True, 1)
        twin = extra_layer_twin(base, 3, seed=1)
        assert len(twin.layers) == 5
        with torch.no_grad():  # Pre-LN: exactly the identity; Post-LN: LN(x) of a normalised x
            gap = float((twin(x) - base(x)).abs().max())
        assert gap == 0.0 if norm == "pre" else gap < 1e-4
        assert all(float(twin.layers[i].linear2.weight.detach().abs().sum()) == 0 for i in (2, 3, 4))
    with pytest.raises(ValueError, match="layers"):
        zero_sublayers_(make_net(2, "post", True, 0), [2])
    with pytest.raises(TypeError, match="base"):
        extra_layer_twin("net", 2)
    with pytest.raises(ValueError, match="extra"):
        extra_layer_twin(make_net(2, "post", True, 0), 0)
    nets = nets_for_lesions(seed=0, steps=2, with_twin=True)
    assert TWIN in nets and len(nets[TWIN].layers) == 6
    with pytest.raises(TypeError, match="with_twin"):
        nets_for_lesions(seed=0, steps=1, with_twin="yes")


def test_the_depth_figures_draw_and_refuse_data_without_their_fields():
    from helpers.experiments.transformer_depth import InitGradients
    from helpers.plots.transformer_depth import token_spread_by_layer, w2_gradients, w2_profile

    results = gradients_at_init((2, 4), seed=0, n_inits=1, batch=8)
    assert w2_gradients(results, profile_depth=4, title="A finding").axes
    assert token_spread_by_layer([r for r in results if r.depth == 4], title="A finding").axes
    assert w2_profile(results[:1], title="A finding").axes
    bare = [InitGradients("Post-LN", True, 2, 1.0, np.ones(2))]
    with pytest.raises(ValueError, match="W2"):
        w2_gradients(bare, profile_depth=2, title="A finding")
    with pytest.raises(ValueError, match="spread"):
        token_spread_by_layer(bare, title="A finding")
    with pytest.raises(ValueError, match="24 layers"):
        w2_gradients(results, profile_depth=24, title="A finding")
