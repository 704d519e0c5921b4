"""DeepNorm (Wang et al. 2022) as the paper's algorithm and its official code do it.

A DeepNorm encoder of ``N`` layers computes ``x = LN(alpha x + G(x))`` in every sublayer, with
``alpha = (2N)^(1/4)``, and starts the weights through which a sublayer writes into the stream
(the attention's value and output projections, both FFN layers) ``beta = (8N)^(-1/4)`` times
smaller (:func:`~helpers.models.transformer.deepnorm_constants`). Two ways to get there from a
Post-LN :class:`~helpers.models.transformer.SequenceTransformer`, both in place:

* :func:`deepnorm_init_`, the paper's algorithm (its pseudo-code): ``W_v``, ``W_o`` and both FFN
  weights drawn afresh from a Xavier normal of gain ``beta``, ``std = beta sqrt(2 / (fan_in +
  fan_out))``, and ``W_q``, ``W_k`` from a Xavier normal of gain 1. The pseudo-code says nothing
  about biases; the official code (``torchscale``'s ``Encoder``) divides every parameter whose
  name contains ``fc1``, ``fc2``, ``out_proj`` or ``v_proj`` by ``1 / beta``, biases included,
  and so does this function with the biases of those four layers.
* :func:`scale_deepnorm_`, the official code's way: nothing redrawn, every parameter of the four
  layers (weights *and* biases) multiplied by ``beta``.

The biases matter in this course's net: ``linear1`` and ``linear2`` keep PyTorch's default
biases, of standard deviation ``1 / sqrt(3 fan_in)``, as large as the weights' entries. Scale
the weights alone (:func:`~helpers.models.transformer.apply_deepnorm_`, the course's first
version) and at 24 layers the FFN branch's output is about six times larger than ``beta``
intends, most of it the untouched biases (:func:`ffn_rms`).
"""

from __future__ import annotations

import torch
from torch import nn

from .transformer import SequenceTransformer, deepnorm_constants

UPDATE_LAYERS = ("W_v", "out_proj", "linear1", "linear2")
"""The layers through which a sublayer writes into the stream; DeepNorm's ``beta`` goes here."""


def _check(model) -> SequenceTransformer:
    if not isinstance(model, SequenceTransformer):
        raise TypeError(f"model must be a SequenceTransformer, got {type(model).__name__}")
    if model.layers[0].norm_position != "post" or model.layers[0].rezero_gates is not None:
        raise ValueError("DeepNorm is a Post-LN scheme; the model's norm_position is "
                         f"{model.layers[0].norm_position!r}" + (" with ReZero gates"
                                                                if model.layers[0].rezero_gates is not None else ""))
    return model


def _update_parameters(layer) -> list[torch.Tensor]:
    """The tensors DeepNorm's ``beta`` multiplies in one layer: ``W_v`` and its bias (views of
    rows ``2d:3d`` of the attention's input projection), ``out_proj``, ``linear1`` and
    ``linear2``, weights and biases."""
    d = layer.linear2.out_features
    attn = layer.self_attn
    tensors = [attn.in_proj_weight[2 * d:], attn.in_proj_bias[2 * d:]]
    for module in (attn.out_proj, layer.linear1, layer.linear2):
        tensors += [module.weight, module.bias]
    return tensors


@torch.no_grad()
def scale_deepnorm_(model: SequenceTransformer) -> SequenceTransformer:
    """DeepNorm as its official code applies it, in place: every layer's skip scale
    ``alpha = (2N)^(1/4)``, and every parameter of ``W_v``, ``out_proj``, ``linear1`` and
    ``linear2``, weights and biases, multiplied by ``beta = (8N)^(-1/4)`` (``N`` =
    ``len(model.layers)``). ``W_q``, ``W_k``, the LayerNorms, the embeddings and the head keep
    their values. Returns the model."""
    model = _check(model)
    alpha, beta = deepnorm_constants(len(model.layers))
    for layer in model.layers:
        layer.alpha = alpha  # the skip: LN(alpha x + G(x))
        for tensor in _update_parameters(layer):
            tensor.mul_(beta)
    return model


@torch.no_grad()
def deepnorm_init_(model: SequenceTransformer, *, generator: torch.Generator | None = None) -> SequenceTransformer:
    """DeepNorm as the paper's algorithm gives it, in place (module docstring): ``alpha =
    (2N)^(1/4)`` on every layer's skip; ``W_v``, ``W_o``, ``W_1``, ``W_2`` drawn from a Xavier
    normal of gain ``beta = (8N)^(-1/4)``; ``W_q``, ``W_k`` from one of gain 1; the biases of
    the four update layers multiplied by ``beta``, as the official code does. ``generator``
    (a ``torch.Generator``; default: PyTorch's global one) draws the weights. Returns the model."""
    model = _check(model)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    alpha, beta = deepnorm_constants(len(model.layers))

    def xavier_normal(weight: torch.Tensor, gain: float) -> None:
        fan_out, fan_in = weight.shape
        std = gain * (2.0 / (fan_in + fan_out)) ** 0.5
        weight.copy_(std * torch.randn(weight.shape, generator=generator, dtype=weight.dtype))

    for layer in model.layers:
        layer.alpha = alpha
        d = layer.linear2.out_features
        w_q, w_k, w_v = layer.self_attn.in_proj_weight.split(d)
        xavier_normal(w_q, 1.0)
        xavier_normal(w_k, 1.0)
        for weight in (w_v, layer.self_attn.out_proj.weight, layer.linear1.weight, layer.linear2.weight):
            xavier_normal(weight, beta)
        for bias in (layer.self_attn.in_proj_bias[2 * d:], layer.self_attn.out_proj.bias,
                     layer.linear1.bias, layer.linear2.bias):
            bias.mul_(beta)
    return model


@torch.no_grad()
def ffn_rms(model: SequenceTransformer, tokens: torch.Tensor, *, biases: bool = True) -> float:
    """The root mean square of the FFN branch's output, ``W2 relu(W1 h + b1) + b2``, over every
    layer, position and sequence of ``tokens`` (``(batch, length)`` token ids), where ``h`` is the
    stream entering each FFN; with ``biases=False`` the same branch with ``b1 = b2 = 0`` on the
    same inputs (what the weights alone contribute)."""
    if not isinstance(model, SequenceTransformer):
        raise TypeError(f"model must be a SequenceTransformer, got {type(model).__name__}")
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        raise ValueError("tokens must be a (batch, length) tensor of token ids")
    squares, count = 0.0, 0
    h = model.embedding(tokens)
    inputs: list[torch.Tensor] = []  # what enters linear1, caught by a hook
    for layer in model.layers:
        inputs.clear()
        handle = layer.linear1.register_forward_hook(lambda m, args, out: inputs.append(args[0]))
        try:
            out = layer(h)
        finally:
            handle.remove()
        [x] = inputs
        b1, b2 = (layer.linear1.bias, layer.linear2.bias) if biases else (None, None)
        branch = nn.functional.linear(torch.relu(nn.functional.linear(x, layer.linear1.weight, b1)),
                                      layer.linear2.weight, b2)
        squares += float((branch.double() ** 2).sum())
        count += branch.numel()
        h = out
    return (squares / count) ** 0.5
