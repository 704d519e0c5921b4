"""Chapter 5, stable propagation: second moments through chains of linear layers (claim 5.3)
and the parameter gradients of plain and residual nets at initialisation (claim 5.4).

* :func:`chain_profiles`: :func:`helpers.measure.moments.chain_moments` for several width
  profiles, each from its own random stream.
* :func:`gradients_by_depth`: the root mean square gradient per block parameter
  (:func:`helpers.measure.moments.block_gradient_rms`) of plain nets of several depths, and
  of their residual twins with the branch scale ``eps = 1/sqrt(N)``.
* :func:`gradients_by_scale`: the same for residual nets of one depth and several branch
  scales ``eps``, the weights shared across the scales.

The nets are :class:`~helpers.models.mlp.DeepMLP` s with pre-activation blocks, He
initialisation and a LayerNorm inside each branch:
``y = x + eps * W2 relu(LN(W1 relu(LN(x))))`` (residual) or the same without ``x +``
(plain), so that the plain net is forward-stable by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._checks import non_empty, positive_int, real_number
from ..measure.moments import INITS, ChainMoments, block_gradient_rms, chain_moments, width_profile
from ..models.mlp import DeepMLP
from ..seeding import generator, isolated, seeds_of_run
from .norm_order import depth_exponent

NET = dict(norm="layer", order="pre", init="he")
"""The options of every net of :func:`gradients_by_depth` and :func:`gradients_by_scale`."""
SCALE_SEEDS = 10_000
""":func:`gradients_by_scale` draws its nets from ``SCALE_SEEDS + seeds_of_run(seed, draws)``, so
that they never share a seed with :func:`gradients_by_depth`'s."""


def chain_profiles(profiles, *, seed: int = 0, chains: int = 32, batch: int = 8,
                   depth: int = 50) -> dict[tuple[str, str], ChainMoments]:
    """``{(profile, init): ChainMoments}`` for every profile of ``profiles``
    (:func:`~helpers.measure.moments.width_profile` of ``depth`` layers) and every init.

    Profile ``i`` draws its ``chains`` chains from the stream ``seeds_of_run(seed, len(profiles))[i]``,
    so no two notebook seeds share a draw; within a profile the four inits share the draws."""
    profiles = list(non_empty("profiles", profiles))
    out = {}
    for profile, stream in zip(profiles, seeds_of_run(seed, len(profiles))):
        measured = chain_moments(width_profile(profile, depth), INITS, chains=chains, batch=batch,
                                 generator=generator(stream))
        out.update({(profile, init): result for init, result in measured.items()})
    return out


@dataclass(frozen=True)
class DepthGradients:
    """:func:`gradients_by_depth`: ``plain[i, d]`` and ``residual[i, d]`` are the RMS gradient per
    block parameter of draw ``d`` at ``blocks[i]`` blocks; the residual twin has ``eps = 1/sqrt(N)``."""

    blocks: np.ndarray
    plain: np.ndarray
    residual: np.ndarray

    @staticmethod
    def _typical(values: np.ndarray) -> np.ndarray:
        return np.exp(np.log(values).mean(1))

    @property
    def typical_plain(self) -> np.ndarray:
        """The geometric mean over the draws, per depth."""
        return self._typical(self.plain)

    @property
    def typical_residual(self) -> np.ndarray:
        return self._typical(self.residual)

    def exponent(self, kind: str) -> float:
        """The fitted ``a`` of ``rms ~ N^a`` (least squares on the logs of the typical values)."""
        values = {"plain": self.typical_plain, "residual": self.typical_residual}[kind]
        return depth_exponent(self.blocks, values)


def _make(blocks: int, width: int, kind: str, eps: float, seed: int) -> DeepMLP:
    with isolated(seed):
        return DeepMLP(2 * blocks + 2, width, kind=kind, branch_scale=eps, **NET)


def _set_skips(net: DeepMLP, residual: bool, eps: float) -> None:
    for block in net.blocks:
        block.residual, block.branch_scale = residual, eps


def gradients_by_depth(x: torch.Tensor, y: torch.Tensor, blocks=(4, 8, 16, 32), *, width: int = 64,
                       draws: int = 6, seed: int = 0) -> DepthGradients:
    """The RMS gradient per block parameter at initialisation, on the batch ``(x, y)``, of a plain
    net of each number of ``blocks`` and of its residual twin with ``eps = 1/sqrt(N)``: the same
    weights with the skips switched on. ``draws`` nets per depth, from ``seeds_of_run``."""
    blocks = [positive_int("blocks[i]", b) for b in non_empty("blocks", blocks)]
    width, draws = positive_int("width", width), positive_int("draws", draws)
    seeds = iter(seeds_of_run(seed, len(blocks) * draws))
    plain, residual = np.zeros((len(blocks), draws)), np.zeros((len(blocks), draws))
    for i, n in enumerate(blocks):
        for d in range(draws):
            net = _make(n, width, "plain", 1.0, next(seeds))
            plain[i, d] = block_gradient_rms(net, x, y)
            _set_skips(net, True, n ** -0.5)
            residual[i, d] = block_gradient_rms(net, x, y)
    return DepthGradients(np.array(blocks), plain, residual)


@dataclass(frozen=True)
class ScaleGradients:
    """:func:`gradients_by_scale`: ``rms[i, d]`` is the RMS gradient per block parameter of draw
    ``d`` with branch scale ``eps[i]``, ``blocks`` blocks deep."""

    blocks: int
    eps: np.ndarray
    rms: np.ndarray

    @property
    def typical(self) -> np.ndarray:
        """The geometric mean over the draws, per scale."""
        return np.exp(np.log(self.rms).mean(1))

    def exponent(self, largest: float) -> float:
        """The fitted ``a`` of ``rms ~ eps^a`` over the scales up to ``largest``."""
        keep = self.eps <= largest
        if keep.sum() < 2:
            raise ValueError(f"largest must keep at least two scales, got {largest}")
        return depth_exponent(self.eps[keep], self.typical[keep])


def gradients_by_scale(x: torch.Tensor, y: torch.Tensor, eps=(1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2),
                       *, blocks: int = 16, width: int = 64, draws: int = 2, seed: int = 0) -> ScaleGradients:
    """The RMS gradient per block parameter at initialisation, on ``(x, y)``, of residual nets of
    ``blocks`` blocks with each branch scale of ``eps``. Each of the ``draws`` nets (seeds:
    :data:`SCALE_SEEDS`) is measured at every scale, so the scales differ by ``eps`` alone."""
    eps = np.array([real_number("eps[i]", e, low=0.0, low_inclusive=False) for e in non_empty("eps", eps)])
    blocks, width, draws = positive_int("blocks", blocks), positive_int("width", width), positive_int("draws", draws)
    rms = np.zeros((len(eps), draws))
    for d, s in enumerate(seeds_of_run(seed, draws)):
        net = _make(blocks, width, "residual", 1.0, SCALE_SEEDS + s)
        for i, e in enumerate(eps):
            _set_skips(net, True, float(e))
            rms[i, d] = block_gradient_rms(net, x, y)
    return ScaleGradients(blocks, eps, rms)
