"""Chapter 4: residual connections through the depth of a small Transformer.

All nets are :class:`~helpers.models.transformer.SequenceTransformer` s of :data:`SIZE`
(width 16, 2 heads, FFN width 32) on the reversal task of :func:`helpers.data.sequence_task`
(8 tokens from a vocabulary of 8; chance is 1/8 of the tokens).

* :func:`gradients_at_init` (claims 4.3 to 4.3e): one backward pass of the cross-entropy at
  initialisation; the gradient norm that reaches the embeddings, ``||dL/dh_0||`` (``h_0``
  the stream entering the first layer, token embedding plus position, for the whole
  batch), the gradient norm of each layer's parameters, ``||dL/dθ_l||``, and of its second
  FFN weight, ``||dL/dW2_l||``; and from the same forward pass the token spread of the
  stream after each layer (rank collapse, :mod:`helpers.measure.rank_collapse`).
* :func:`train_grid` (claim 4.4): the grid of depth x residual x norm position x
  learning rate x warm-up, trained with :func:`helpers.sequence_training.fit_sequences`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int
from ..data import sequence_task
from ..measure.rank_collapse import token_spread
from ..models.transformer import SequenceTransformer
from ..parallel import run_all
from ..seeding import isolated, seeds_of_run
from ..sequence_training import TEST_SEED, SequenceRun, fit_sequences
from .norm_order import token_loss

SIZE = dict(vocab=8, length=8, d_model=16, n_heads=2, d_ff=32, position_std=1.0)
"""The size of every net of chapter 4 (keyword arguments of SequenceTransformer)."""
TASK = "reverse"
NORMS = {"post": "Post-LN", "pre": "Pre-LN"}
"""``norm_position`` -> its label."""


def make_net(n_layers: int, norm_position: str, residual: bool, seed: int) -> SequenceTransformer:
    """A chapter-4 net of ``n_layers`` layers, drawn from ``seed`` (the caller's random state untouched)."""
    with isolated(seed):
        return SequenceTransformer(n_layers=n_layers, norm_position=norm_position, residual=residual, **SIZE)


@dataclass(frozen=True)
class InitGradients:
    """Gradients at initialisation of one setting, averaged over initialisations.

    ``embedding`` is the geometric mean of ``||dL/dh_0||``; ``layers[l]`` the geometric mean
    of ``||dL/dθ_l||``, the norm over all parameters of layer ``l + 1`` (input to output);
    ``w2[l]`` the geometric mean of ``||dL/dW2_l||``, the Frobenius norm of the gradient of
    that layer's second FFN weight alone (``linear2.weight``, the quantity of Xiong et al.'s
    Theorem 1); ``spread[l]`` the arithmetic mean of the token spread
    (:func:`helpers.measure.rank_collapse.token_spread`) of the stream leaving layer ``l``
    (``spread[0]``: the embeddings); ``stream`` the geometric mean of the root mean square of
    the stream leaving the last layer (before a Pre-LN stack's final LayerNorm). Geometric,
    because a plain stack's gradients spread over orders of magnitude from one
    initialisation to the next, and one draw would dominate an arithmetic mean (the spread,
    which can be exactly 0, is averaged arithmetically).
    """

    norm: str
    residual: bool
    depth: int
    embedding: float
    layers: np.ndarray
    w2: np.ndarray | None = None
    spread: np.ndarray | None = None
    stream: float | None = None


def gradients_at_init(depths=(6, 12, 24), *, seed: int = 0, n_inits: int = 5,
                      batch: int = 64) -> list[InitGradients]:
    """:class:`InitGradients` for every depth x {Post-LN, Pre-LN} x {residual, plain}.

    Each setting is measured on ``n_inits`` nets drawn from :func:`helpers.seeding.seeds_of_run`
    (``seed``, ``n_inits``), residual and plain twins from the same draw (the plain net is the
    residual net with the skips switched off), on one batch of the reversal task.
    """
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    n_inits = positive_int("n_inits", n_inits)
    tokens, targets = sequence_task(TASK, positive_int("batch", batch), SIZE["length"], SIZE["vocab"], seed=seed)
    out = []
    for depth in depths:
        for norm in NORMS:
            for residual in (True, False):
                emb, layers, w2, spread, stream = [], [], [], [], []
                for init in seeds_of_run(seed, n_inits):
                    net = make_net(depth, norm, True, init)
                    for layer in net.layers:
                        layer.residual = residual
                    h = net.embedding(tokens).detach().requires_grad_()
                    streams = [h]
                    hooks = [la.register_forward_hook(lambda _m, _i, out, kept=streams: kept.append(out))
                             for la in net.layers]
                    try:
                        token_loss(net(tokens, h), targets).backward()
                    finally:
                        for hook in hooks:
                            hook.remove()
                    spread.append([token_spread(s) for s in streams])
                    stream.append(float(streams[-1].detach().pow(2).mean().sqrt()))
                    emb.append(float(h.grad.norm()))
                    layers.append([float(torch.cat([p.grad.reshape(-1) for p in la.parameters()]).norm())
                                   for la in net.layers])
                    w2.append([float(la.linear2.weight.grad.norm()) for la in net.layers])
                out.append(InitGradients(NORMS[norm], residual, depth, float(np.exp(np.mean(np.log(emb)))),
                                         np.exp(np.mean(np.log(layers), axis=0)),
                                         np.exp(np.mean(np.log(w2), axis=0)),
                                         np.mean(spread, axis=0), float(np.exp(np.mean(np.log(stream))))))
    return out


@dataclass(frozen=True)
class GridRun:
    """One trained net of :func:`train_grid`: its setting and its
    :class:`~helpers.sequence_training.SequenceRun`."""

    depth: int
    norm: str
    residual: bool
    lr: float
    warmup: int
    run: SequenceRun

    @property
    def label(self) -> str:
        kind = "residual" if self.residual else "plain"
        return f"{kind} {self.norm}" + (", warm-up" if self.warmup else "")


GRID = {
    "post": [(True, 5e-3, 0), (True, 5e-3, 200), (False, 1e-3, 0), (False, 3e-3, 0), (False, 1e-2, 0)],
    "pre": [(True, 5e-3, 0), (False, 1e-3, 0), (False, 3e-3, 0), (False, 1e-2, 0)],
}
"""Per norm position, the members ``(residual, learning rate, warm-up steps)`` trained at each depth."""
STEPS = 300


def _train_stack(depth: int, norm: str, members: list, seeds: list[int], steps: int) -> list[GridRun]:
    nets = [make_net(depth, norm, residual, s) for (residual, _, _), s in zip(members, seeds)]
    runs = fit_sequences(nets, task=TASK, steps=steps, lr=[m[1] for m in members],
                         warmup_steps=[m[2] for m in members], seeds=seeds, batch_size=32,
                         progress=False)
    return [GridRun(depth, NORMS[norm], r, lr, w, run) for (r, lr, w), run in zip(members, runs)]


def train_grid(depths=(2, 6, 12), *, seed: int = 0, grid: dict | None = None,
               steps: int = STEPS) -> list[GridRun]:
    """Train every member of ``grid`` (default :data:`GRID`) at every depth: Adam, batches
    of 32, ``steps`` steps, a linear warm-up where a member has one.

    Each (depth, norm position) is one stack of nets trained together, the stacks side by
    side on the available cores. Every net is drawn from its own seed (``seeds_of_run``), so
    no two nets, and no two values of ``seed``, share an initialisation; a plain net and
    the residual net with the same learning rate differ in their draw too.
    """
    depths = [positive_int("depths[i]", d) for d in non_empty("depths", depths)]
    grid = GRID if grid is None else grid
    if not isinstance(grid, dict) or not grid or set(grid) - set(NORMS):
        raise ValueError(f"grid must be a dict whose keys are among {list(NORMS)}, got {grid!r}")
    for norm, members in grid.items():
        if not members or not all(isinstance(m, tuple) and len(m) == 3 for m in members):
            raise ValueError(f"grid[{norm!r}] must be a non-empty list of (residual, lr, warm-up steps), "
                             f"got {members!r}")
    jobs, start = [], 0
    size = sum(len(m) for m in grid.values()) * len(depths)
    seeds = seeds_of_run(seed, size)
    for depth in sorted(depths, reverse=True):  # the longest jobs first
        for norm, members in grid.items():
            jobs.append(dict(depth=depth, norm=norm, members=list(members),
                             seeds=list(seeds[start:start + len(members)]), steps=steps))
            start += len(members)
    return [run for stack in run_all(_train_stack, jobs, description="stacks") for run in stack]


def best(runs: list[GridRun], **setting) -> GridRun:
    """The run of lowest final loss among those matching ``setting`` (e.g. depth=24, residual=False)."""
    chosen = [r for r in runs if all(getattr(r, k) == v for k, v in setting.items())]
    if not chosen:
        raise ValueError(f"no run matches {setting}")
    return min(chosen, key=lambda r: r.run.final_loss())


def evaluation_set(size: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """The chapter's test sequences and their targets (the same ones :func:`train_grid` scores)."""
    return sequence_task(TASK, positive_int("size", size), SIZE["length"], SIZE["vocab"], seed=TEST_SEED)


EXTRA_SEEDS = 700_000
"""The extra layers of :func:`extra_layer_twin` are drawn from ``EXTRA_SEEDS + seed``, so that
they share no draw with any other net of the chapter."""
TWIN = "residual, 2 + 4 zeroed layers"
"""The name :func:`nets_for_lesions` gives the extra-layer twin (``with_twin=True``)."""


@torch.no_grad()
def zero_sublayers_(net: SequenceTransformer, layers) -> SequenceTransformer:
    """Make every sublayer of the layers ``layers`` (indices) of ``net`` output zero, in place:
    the attention's output projection and the FFN's second linear map, weights and biases,
    set to 0 (Fixup's and ReZero's idea: the sublayer starts silent and learns to speak,
    since the gradient of a zero ``W2`` is not zero). Returns ``net``."""
    if not isinstance(net, SequenceTransformer):
        raise TypeError(f"net must be a SequenceTransformer, got {type(net).__name__}")
    layers = list(layers)
    for i in layers:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(net.layers):
            raise ValueError(f"layers must be indices in [0, {len(net.layers)}), got {i!r}")
    for i in layers:
        for writer in (net.layers[i].self_attn.out_proj, net.layers[i].linear2):
            writer.weight.zero_()
            writer.bias.zero_()
    return net


def extra_layer_twin(base: SequenceTransformer, extra: int, *, seed: int = 0) -> SequenceTransformer:
    """A copy of ``base`` (untrained) with ``extra`` layers stacked on top whose sublayers
    output zero (:func:`zero_sublayers_`); the extra layers' other weights are drawn from
    ``EXTRA_SEEDS + seed``. ``base``'s embeddings, positions, layers, final norm and head are
    copied, so the twin starts as ``base``'s function: exactly for Pre-LN (``x + 0 = x``), and
    for Post-LN up to LayerNorm's ``eps``, since each extra layer computes ``LN(x + 0) =
    LN(x)`` of an ``x`` that the layer below already normalised (gain 1, bias 0 at init)."""
    if not isinstance(base, SequenceTransformer):
        raise TypeError(f"base must be a SequenceTransformer, got {type(base).__name__}")
    extra = positive_int("extra", extra)
    seed = positive_int("seed", seed, minimum=0)
    first = base.layers[0]
    depth = len(base.layers)
    twin = make_net(depth + extra, first.norm_position, first.residual, EXTRA_SEEDS + seed)
    state = {k: v for k, v in base.state_dict().items()}
    twin.load_state_dict(state, strict=False)  # the base's layers are the twin's first ones
    return zero_sublayers_(twin, range(depth, depth + extra))


def _fit_nets(nets: list, lr: list, seeds: list, steps: int) -> tuple[list, list[SequenceRun]]:
    """Train ``nets`` (one structure) as the grid does and return them with their runs (a job
    of :func:`helpers.parallel.run_all`: a worker trains its own copy of the nets)."""
    runs = fit_sequences(nets, task=TASK, steps=steps, lr=lr, seeds=seeds, batch_size=32, progress=False)
    return nets, runs


def nets_for_lesions(*, seed: int = 0, steps: int = STEPS,
                     with_twin: bool = False) -> dict[str, SequenceTransformer]:
    """Trained Post-LN nets for claim 4.5: ``{"residual, 6 layers", "plain, 2 layers",
    "residual, 2 layers"}``, trained as the grid trains them (no warm-up): the residual nets
    at a learning rate of 0.003, the middle of the plain nets' rates, so that both kinds are
    trained alike; the plain net at 0.001, 0.003 and 0.01, of which the one with the lowest
    final training loss is kept (the lesion is only worth measuring on a plain net that
    learned). Each net from its own seed.

    With ``with_twin`` (claim 4.5b) the dict also holds :data:`TWIN`: the
    :func:`extra_layer_twin` of the residual 2-layer net with 4 zeroed layers on top, trained
    at the same rate on the same batches (it trains beside the 6-layer net, in one stack)."""
    if not isinstance(with_twin, bool):
        raise TypeError(f"with_twin must be a bool, got {type(with_twin).__name__}")
    s = seeds_of_run(seed, 5)
    deep = make_net(6, "post", True, s[0])
    shallow = [make_net(2, "post", False, s[i]) for i in (1, 2, 3)] + [make_net(2, "post", True, s[4])]
    sixes, six_seeds = [deep], [s[0]]
    if with_twin:
        sixes.append(extra_layer_twin(shallow[3], 4, seed=seed))
        six_seeds.append(s[4])  # the same batches as the residual 2-layer net
    # the 6-layer stack and the 2-layer stack train side by side on the available cores
    (sixes, _), (shallow, runs) = run_all(_fit_nets, [
        dict(nets=sixes, lr=[3e-3] * len(sixes), seeds=six_seeds, steps=steps),
        dict(nets=shallow, lr=[1e-3, 3e-3, 1e-2, 3e-3], seeds=list(s[1:]), steps=steps),
    ], description="stacks")
    deep = sixes[0]
    plain = min(range(3), key=lambda i: runs[i].final_loss())
    nets = {"residual, 6 layers": deep, "plain, 2 layers": shallow[plain], "residual, 2 layers": shallow[3]}
    if with_twin:
        nets[TWIN] = sixes[1]
    return nets
