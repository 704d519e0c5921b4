"""Depth-dependent initialisations of a Transformer's branches, for chapter 5's extension "a
DeepNorm for Adam": DeepNorm with another power of ``N`` in ``beta``, T-Fixup, and Admin's
profiled skip weights.

All three start from the course's :class:`~helpers.models.transformer.SequenceTransformer`
of ``N`` layers (an attention and an FFN sublayer each):

* :func:`beta_power_init_`: DeepNorm (Wang et al. 2022) as the paper's algorithm draws it
  (:func:`~helpers.models.deepnorm.deepnorm_init_`: ``alpha = (2N)^(1/4)`` on every skip, the
  update weights ``W_v``, ``W_o``, ``W_1``, ``W_2`` Xavier normal of gain ``beta``, their biases
  scaled by ``beta`` as the official code does), with ``beta = 8^(-1/4) N^(-power)``
  (:func:`beta_of_power`). ``power = 1/4`` is DeepNorm's own ``beta = (8N)^(-1/4)``, bit for
  bit; another power changes how ``beta`` falls with the depth, and a constant factor on
  ``beta`` would change only the level of every curve against ``N``, not its slope.
* :func:`tfixup_init_`: T-Fixup (Huang et al. 2020) for an encoder, on a stack without
  LayerNorm (``norm_position="none"``, ``x = x + G(x)``): every weight Xavier normal, ``W_v``,
  ``W_o`` and both FFN weights of gain ``0.67 N^(-1/4)``, every bias of the layers 0, and the
  input (token embedding plus position) multiplied by ``(9N)^(-1/4)``, as the official code
  does to the token embeddings. The official code draws Xavier uniform (fairseq's default; the
  normal draw here has the same variance), ``W_q`` and ``W_k`` at gain ``1/sqrt(2)``, keeps
  PyTorch's default draw for the query, key and value biases, and has fixed sinusoidal
  positions, which it does not scale.
* :func:`admin_omegas`: Admin (Liu et al. 2020) keeps the Post-LN layer and weights each skip,
  ``x = LN(omega_i x + f_i(x))``, with an ``omega_i`` profiled on one batch at initialisation:
  ``omega_1 = 1`` and ``omega_(i+1)^2 = Var[omega_i x_i] + Var[f_i(x_i)]``, the variance of
  the sum before its LayerNorm (the official profiling code, over all entries of the batch), so
  that ``omega_i^2`` accumulates the variances of the input and of every branch below sublayer
  ``i``. :func:`admin_profiling` also returns each branch's variance; :func:`admin_forward` runs a
  Post-LN stack with those weights, one per sublayer. The profile reads the branches' size, so
  it depends on how they are drawn: :func:`fairseq_init_` draws them as Admin's own (fairseq)
  code does, larger than PyTorch's defaults.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._checks import positive_int, real_number
from .deepnorm import _update_parameters, deepnorm_init_
from .transformer import SequenceTransformer, deepnorm_constants

DEEPNORM_POWER = 0.25
"""DeepNorm's power of ``N`` in ``beta = (8N)^(-1/4) = 8^(-1/4) N^(-1/4)``."""
TFIXUP_GAIN = 0.67
"""T-Fixup's constant for an encoder's weights, ``0.67 N^(-1/4)``."""


def _generator(generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")


def _model(model, norm_position: str) -> SequenceTransformer:
    if not isinstance(model, SequenceTransformer):
        raise TypeError(f"model must be a SequenceTransformer, got {type(model).__name__}")
    layer = model.layers[0]
    if layer.norm_position != norm_position or layer.rezero_gates is not None or not layer.residual:
        raise ValueError(f"model must be a residual stack with norm_position={norm_position!r} and no ReZero "
                         f"gates; got norm_position={layer.norm_position!r}")
    return model


def beta_of_power(n_layers: int, power: float) -> float:
    """``beta = 8^(-1/4) N^(-power)``: DeepNorm's ``(8N)^(-1/4)`` at ``power = 1/4``."""
    n_layers = positive_int("n_layers", n_layers)
    return 8 ** -0.25 * n_layers ** -real_number("power", power, low=0.0)


@torch.no_grad()
def beta_power_init_(model: SequenceTransformer, power: float = DEEPNORM_POWER, *,
                     generator: torch.Generator | None = None) -> SequenceTransformer:
    """DeepNorm's initialisation with ``beta = 8^(-1/4) N^(-power)`` (module docstring), in
    place: :func:`~helpers.models.deepnorm.deepnorm_init_` draws the paper's DeepNorm, then
    every tensor it scaled by DeepNorm's ``beta`` is multiplied by ``beta / beta_DeepNorm``.
    ``alpha = (2N)^(1/4)`` stays. Returns the model."""
    model = _model(model, "post")
    power = real_number("power", power, low=0.0)
    n = len(model.layers)
    deepnorm_init_(model, generator=generator)
    ratio = beta_of_power(n, power) / deepnorm_constants(n)[1]
    if ratio != 1.0:
        for layer in model.layers:
            for tensor in _update_parameters(layer):
                tensor.mul_(ratio)
    return model


@torch.no_grad()
def tfixup_init_(model: SequenceTransformer, *, generator: torch.Generator | None = None) -> SequenceTransformer:
    """T-Fixup's initialisation for an encoder (module docstring), in place, on a stack without
    LayerNorm: ``W_q``, ``W_k`` Xavier normal of gain 1; ``W_v``, ``W_o``, ``W_1``, ``W_2`` of
    gain ``0.67 N^(-1/4)``; every bias of the layers 0; token embeddings and positions times
    ``(9N)^(-1/4)``. ``generator`` (default: PyTorch's global one) draws the weights. Returns
    the model."""
    model = _model(model, "none")
    _generator(generator)
    n = len(model.layers)
    gain = TFIXUP_GAIN * n ** -0.25
    for layer in model.layers:
        w_q, w_k, w_v = layer.self_attn.in_proj_weight.split(layer.linear2.out_features)
        for weight, weight_gain in ((w_q, 1.0), (w_k, 1.0), (w_v, gain), (layer.self_attn.out_proj.weight, gain),
                                    (layer.linear1.weight, gain), (layer.linear2.weight, gain)):
            nn.init.xavier_normal_(weight, weight_gain, generator=generator)
        for bias in (layer.self_attn.in_proj_bias, layer.self_attn.out_proj.bias, layer.linear1.bias,
                     layer.linear2.bias):
            bias.zero_()
    model.embed.weight.mul_((9 * n) ** -0.25)
    model.position.mul_((9 * n) ** -0.25)
    return model


@torch.no_grad()
def fairseq_init_(model: SequenceTransformer, *, generator: torch.Generator | None = None) -> SequenceTransformer:
    """The sublayers drawn as fairseq draws them, the code Admin's profiling was written for, in
    place: ``W_q``, ``W_k``, ``W_v`` Xavier uniform of gain ``1/sqrt(2)``, ``W_o``, ``W_1`` and
    ``W_2`` Xavier uniform of gain 1, every bias of the layers 0. The embeddings, positions,
    LayerNorms and head keep their draw. ``generator`` (default: PyTorch's global one) draws
    the weights. Returns the model."""
    if not isinstance(model, SequenceTransformer):
        raise TypeError(f"model must be a SequenceTransformer, got {type(model).__name__}")
    _generator(generator)
    for layer in model.layers:
        for w in layer.self_attn.in_proj_weight.split(layer.linear2.out_features):
            nn.init.xavier_uniform_(w, 2 ** -0.5, generator=generator)
        for linear in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
            nn.init.xavier_uniform_(linear.weight, generator=generator)
        for bias in (layer.self_attn.in_proj_bias, layer.self_attn.out_proj.bias, layer.linear1.bias,
                     layer.linear2.bias):
            bias.zero_()
    return model


def _sublayers(layer):
    """A layer's two sublayers with the LayerNorm that follows each: ``(branch, norm)``."""
    return ((layer.self_attn, layer.norm1), (layer.ffn, layer.norm2))


def _tokens(tokens) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        raise ValueError("tokens must be a (batch, length) tensor of token ids")
    return tokens


@torch.no_grad()
def admin_profiling(model: SequenceTransformer, tokens: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Admin's profiling pass (:func:`admin_omegas`), returning the skip weights
    ``omega_1 ... omega_2N`` and the variance of each sublayer's branch output ``Var[f_i]``."""
    model, tokens = _model(model, "post"), _tokens(tokens)
    omegas, variances, omega = [], [], 1.0
    h = model.embedding(tokens)
    for layer in model.layers:
        for branch, norm in _sublayers(layer):
            f = branch(h)
            omegas.append(omega)
            variances.append(float(f.double().var()))
            nxt = float(((omega * h).double().var() + variances[-1]) ** 0.5)
            h = norm(omega * h + f)  # the profiling pass runs with the weights set so far
            omega = nxt
    return np.array(omegas), np.array(variances)


def admin_omegas(model: SequenceTransformer, tokens: torch.Tensor) -> np.ndarray:
    """Admin's skip weights ``omega_1 ... omega_2N``, profiled on ``tokens`` (a ``(batch, length)``
    tensor of token ids) in one forward pass of the Post-LN ``model`` at initialisation, as the
    official code profiles them: ``omega_1 = 1``; each sublayer ``i`` is run with its own
    ``omega_i`` already set, and ``omega_(i+1) = sqrt(Var[omega_i x_i] + Var[f_i(x_i)])``, with
    ``x_i`` the sublayer's input and ``f_i`` its branch (variances over every entry)."""
    return admin_profiling(model, tokens)[0]


def admin_forward(model: SequenceTransformer, tokens: torch.Tensor, omegas) -> torch.Tensor:
    """The logits of the Post-LN ``model`` with Admin's skip weights: every sublayer computes
    ``x = LN(omega_i x + f_i(x))``, ``omegas`` one number per sublayer (``2N`` of them)."""
    model, tokens = _model(model, "post"), _tokens(tokens)
    omegas = [float(w) for w in np.asarray(omegas, dtype=float).ravel()]
    if len(omegas) != 2 * len(model.layers) or not all(w > 0 for w in omegas):
        raise ValueError(f"omegas must be {2 * len(model.layers)} positive numbers, one per sublayer")
    h = model.embedding(tokens)
    weights = iter(omegas)
    for layer in model.layers:
        for branch, norm in _sublayers(layer):
            h = norm(next(weights) * h + branch(h))
    return model.head(h)
