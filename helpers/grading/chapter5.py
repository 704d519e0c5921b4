"""Checkers for the exercises of chapter 5: DeepNorm's constants and initialisation, by hand
(:func:`check_deepnorm`), which gains the prediction of a ReLU chain's second moment accepts
(:func:`chain_gain_problem`), the power of the depth in ``beta`` that holds Adam's first
update still (:func:`check_adam_beta_power`), and the prediction of Adam's first step at 64
blocks against 2 (:func:`check_adam_step_prediction`).

The learner writes ``fn(model)``, which turns a Post-LN
:class:`~helpers.models.transformer.SequenceTransformer` of ``N = len(model.layers)`` layers
into a DeepNorm one *in place*, as DeepNet's official code does (Wang et al. 2022;
``torchscale``'s ``Encoder``): every layer's skip scale ``layer.alpha`` (the layer computes
``x = LN(alpha x + Sublayer(x))``) becomes ``alpha = (2N)^(1/4)``, and every parameter of the
layers that write each sublayer's update, weights and biases, is multiplied by
``beta = (8N)^(-1/4)``: the attention's ``W_v`` (rows ``2d:3d`` of
``self_attn.in_proj_weight`` and of ``self_attn.in_proj_bias``), ``self_attn.out_proj``,
``linear1`` and ``linear2``. ``W_q``, ``W_k`` and their biases, the LayerNorms, the embeddings
and the head keep their values. The function may return the model or nothing.

The checker builds seeded Post-LN models (every parameter redrawn, biases and LayerNorms
included, so that a change to any of them shows), converts one copy with the course's
:func:`~helpers.models.deepnorm.scale_deepnorm_` before the learner's function runs,
lets the function convert another copy, and compares every layer's ``alpha`` and every
parameter. While the function runs, the course's DeepNorm functions and
:func:`~helpers.models.transformer.deepnorm_constants` raise. A wrong model is diagnosed
rather than just rejected: the checker measures by what number each weight block and each
bias was multiplied and names the usual mistakes: ``N`` counted as the number of sublayers
(``2N``), other wrong constants (``N^(1/4)``, ``(4N)^(-1/4)``, a flipped sign, a square root,
Python's ``x**-1/4``), alpha and beta swapped, alpha left unset, alpha put on the branch
(``out_proj`` and ``linear2`` divided, or multiplied, by alpha), beta applied to the
queries and keys too, or to the wrong rows, only the FFN or only attention scaled, the
update layers' biases left as they were (the paper's pseudo-code is silent about biases; the
official code scales them, and in this net the FFN's biases are as large as its weights),
the queries' and keys' biases, LayerNorms or embeddings scaled, weights redrawn instead of
scaled, and a model left untouched ("not implemented yet" for a starter).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..measure.moments import gain_problem
from ..models.deepnorm import deepnorm_init_, scale_deepnorm_
from ..models.transformer import SequenceTransformer, apply_deepnorm_, deepnorm_constants
from .base import Case, Feedback, is_placeholder, run_cases
from .chapter1 import _rng
from .predictions import counted
from .values import WrongType, as_number

_RTOL, _ATOL = 1e-5, 1e-8  # float32 parameters: a right answer agrees with the reference to ~1e-7
_FACTOR_RTOL = 1e-4  # two measured factors are "the same number"
_UPDATE = ("W_v", "out_proj", "linear1", "linear2")
_BLOCKS = ("W_q", "W_k") + _UPDATE
_WHERE = {"W_q": "rows 0:d of self_attn.in_proj_weight", "W_k": "rows d:2d of self_attn.in_proj_weight",
          "W_v": "rows 2d:3d of self_attn.in_proj_weight", "out_proj": "self_attn.out_proj.weight",
          "linear1": "linear1.weight", "linear2": "linear2.weight"}
_WEIGHTS = ("W_v (rows 2d:3d of self_attn.in_proj_weight and of in_proj_bias), self_attn.out_proj, linear1 "
            "and linear2, weights and biases")
_BIAS_WHERE = {"W_v": "in_proj_bias[2d:]", "out_proj": "self_attn.out_proj.bias", "linear1": "linear1.bias",
               "linear2": "linear2.bias"}
_BIASES_LEFT = ("the biases of W_v, out_proj, linear1 and linear2 were left as they were: DeepNet's official "
                "code divides every parameter of those layers by 1/beta, biases included (for p in "
                "module.parameters(): p.mul_(beta); W_v's bias is in_proj_bias[2d:]). In this net the FFN's "
                "biases are as large as its weights' entries, so scaling the weights alone leaves the FFN "
                "branch several times larger than beta intends.")


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=_FACTOR_RTOL, abs_tol=1e-12)


_MISSING = object()  # a layer without an alpha attribute


@dataclass
class _State:
    """What the checker compares: each layer's ``alpha`` and a copy of every parameter."""

    alphas: list
    params: dict[str, torch.Tensor]


@dataclass
class _Converted:
    """What the learner's function did: the model it was handed (after the call) and its return value."""

    model: nn.Module
    returned: object


def _state(model) -> _State | str:
    """The model's alphas and parameters, or what makes it unreadable (never raises)."""
    try:
        layers = list(model.layers)
        alphas = [getattr(layer, "alpha", _MISSING) for layer in layers]
        params = {name: p.detach().clone() for name, p in model.state_dict().items()}
    except Exception as err:  # the learner's function broke the model's structure
        return WrongType(f"the model could not be read after your function ran ({type(err).__name__}: {err}).")
    return _State(alphas, params)


def _blocks(name: str, tensor: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """``name``'s tensor, split into W_q, W_k, W_v for an attention's ``in_proj_weight`` (and
    into their three biases for its ``in_proj_bias``)."""
    if name.endswith(("self_attn.in_proj_weight", "self_attn.in_proj_bias")):
        d = tensor.shape[0] // 3
        return [(f"{name}[{label}]", tensor[i * d:(i + 1) * d]) for i, label in enumerate(("W_q", "W_k", "W_v"))]
    return [(name, tensor)]


def _bias_owner(block: str) -> tuple[int, str] | None:
    """``(layer index, weight block)`` whose bias ``block`` is, or ``None`` for any other tensor."""
    parts = block.split(".")
    if parts[0] != "layers" or len(parts) < 3:
        return None
    rest = ".".join(parts[2:])
    if rest.startswith("self_attn.in_proj_bias["):
        return int(parts[1]), rest[len("self_attn.in_proj_bias["):-1]
    named = {"self_attn.out_proj.bias": "out_proj", "linear1.bias": "linear1", "linear2.bias": "linear2"}
    return (int(parts[1]), named[rest]) if rest in named else None


def _factor(got: torch.Tensor, before: torch.Tensor) -> float | None:
    """The number ``s`` with ``got = s * before`` (least squares), or ``None`` if there is none."""
    g, b = got.detach().double().flatten(), before.detach().double().flatten()
    norm = float((b * b).sum())
    if norm == 0.0:
        return 1.0 if torch.equal(g, b) else None
    s = float((g * b).sum()) / norm
    tolerance = _FACTOR_RTOL * float(b.abs().max()) * max(abs(s), 1.0)
    return s if float((g - s * b).abs().max()) <= tolerance else None


def _label(block: str) -> tuple[int, str] | tuple[None, str]:
    """``(layer index, block)`` for one of a layer's six weight blocks; ``(None, kind)`` for
    anything else, kind ``"bias"``, ``"norm"`` or ``"outside"`` (the layers)."""
    parts = block.split(".")
    if parts[0] != "layers" or len(parts) < 3:
        return None, "outside"
    index, rest = int(parts[1]), ".".join(parts[2:])
    if rest.startswith("self_attn.in_proj_weight["):
        return index, rest[len("self_attn.in_proj_weight["):-1]
    named = {"self_attn.out_proj.weight": "out_proj", "linear1.weight": "linear1", "linear2.weight": "linear2"}
    if rest in named:
        return index, named[rest]
    return None, ("norm" if rest.startswith("norm") else "bias" if rest.endswith("bias") else "outside")


_ALPHA_MISTAKES = (
    ("not set", lambda n: 1.0,
     "every layer's alpha is 1, as before: set `layer.alpha = (2N)^(1/4)` on each layer in model.layers."),
    ("sublayers", lambda n: (4 * n) ** 0.25,
     "alpha is (4N)^(1/4): N was taken as the number of sublayers (two per layer); in DeepNorm's encoder "
     "formulas N is the number of layers, len(model.layers), and alpha = (2N)^(1/4)."),
    ("no 2", lambda n: n ** 0.25, "alpha is N^(1/4): the factor 2 is missing, alpha = (2N)^(1/4)."),
    ("1/beta", lambda n: (8 * n) ** 0.25, "alpha is (8N)^(1/4), which is 1/beta: alpha = (2N)^(1/4)."),
    ("beta", lambda n: (8 * n) ** -0.25,
     "alpha is set to beta's value, (8N)^(-1/4): alpha = (2N)^(1/4) > 1 scales the skip up."),
    ("sign", lambda n: (2 * n) ** -0.25,
     "alpha is (2N)^(-1/4), below 1: the exponent is +1/4, alpha = (2N)^(1/4) > 1, so that the skip "
     "outweighs the sublayer's update."),
    ("square", lambda n: (2 * n) ** 0.5, "alpha is (2N)^(1/2): it is a fourth root, alpha = (2N)^(1/4)."),
    ("precedence", lambda n: n / 2,
     "alpha is 2N/4 = N/2: Python reads (2*N)**1/4 as ((2N)^1)/4; write (2*N)**0.25 or (2*N)**(1/4)."),
    ("precedence", lambda n: 2 * n ** 0.25,
     "alpha is 2·N^(1/4): Python reads 2*N**0.25 as 2·(N^0.25); write (2*N)**0.25."),
)

_BETA_MISTAKES = (
    ("sublayers", lambda n: (16 * n) ** -0.25,
     "the weights were multiplied by (16N)^(-1/4): N was taken as the number of sublayers (two per layer); "
     "N is the number of layers, len(model.layers), and beta = (8N)^(-1/4)."),
    ("1/alpha", lambda n: (2 * n) ** -0.25,
     "the weights were multiplied by (2N)^(-1/4), which is 1/alpha: beta = (8N)^(-1/4)."),
    ("4N", lambda n: (4 * n) ** -0.25, "the weights were multiplied by (4N)^(-1/4): beta = (8N)^(-1/4), with 8."),
    ("no 8", lambda n: n ** -0.25,
     "the weights were multiplied by N^(-1/4): the factor 8 is missing, beta = (8N)^(-1/4)."),
    ("sign", lambda n: (8 * n) ** 0.25,
     "the weights were multiplied by (8N)^(+1/4), above 1: the exponent is -1/4, beta = (8N)^(-1/4) < 1 "
     "shrinks the initial weights."),
    ("twice", lambda n: (8 * n) ** -0.5,
     "the weights were multiplied by beta² = (8N)^(-1/2): scaled twice, or by a square root instead of a "
     "fourth root; multiply them once by beta = (8N)^(-1/4)."),
    ("precedence", lambda n: 1 / (32 * n),
     "the weights were multiplied by 1/(32N): Python reads (8*N)**-1/4 as ((8N)^-1)/4; write (8*N)**-0.25 "
     "or (8*N)**(-1/4)."),
    ("precedence", lambda n: 8 * n ** -0.25,
     "the weights were multiplied by 8·N^(-1/4): Python reads 8*N**-0.25 as 8·(N^-0.25); write (8*N)**-0.25."),
    ("alpha", lambda n: (2 * n) ** 0.25,
     "the weights were multiplied by alpha, (2N)^(1/4): they get beta = (8N)^(-1/4); alpha goes on the skip."),
)

_SUBLAYERS = ("N was taken as the number of sublayers (two per layer): alpha came out as (4N)^(1/4) and beta "
              "as (16N)^(-1/4). In DeepNorm's encoder formulas N is the number of layers, len(model.layers): "
              "alpha = (2N)^(1/4), beta = (8N)^(-1/4).")
_SWAPPED = ("alpha and beta are swapped: alpha = (2N)^(1/4) > 1 multiplies the skip (layer.alpha); "
            "beta = (8N)^(-1/4) < 1 multiplies " + _WEIGHTS + ".")
_ON_THE_BRANCH = ("alpha is left at 1 and the sublayers' outputs are divided by alpha instead (out_proj and "
                  "linear2 scaled by beta/alpha). DeepNorm's alpha multiplies the skip, x = LN(alpha·x + "
                  "Sublayer(x)): set layer.alpha, and scale the weights by beta only.")
_TIMES_ALPHA = ("the sublayers' outputs were multiplied by alpha (out_proj and linear2 scaled by alpha·beta): "
                "alpha multiplies the skip x, through layer.alpha, not the sublayer's update.")


def _match(value: float, n: int, mistakes) -> tuple[str, str] | None:
    for key, formula, message in mistakes:
        if _close(value, formula(n)):
            return key, message
    return None


def _layer_table(factors: dict[str, float], n_layers: int) -> dict[str, list[float]]:
    table = {block: [1.0] * n_layers for block in _BLOCKS}
    for name, s in factors.items():
        index, block = _label(name)
        if index is not None:
            table[block][index] = s
    return table


def _diagnose(got: _State, before: _State, n: int, alpha: float, beta: float) -> list[str]:
    """The mistakes a converted model shows, each named (module docstring); ``[]`` if none is
    recognised. ``alpha`` and ``beta`` are DeepNorm's constants for ``n`` layers."""
    factors, other, bias_factors = {}, {"bias": [], "norm": [], "outside": []}, {}
    for name, tensor in before.params.items():
        for block, old in _blocks(name, tensor):
            new = dict(_blocks(name, got.params[name]))[block]
            s = _factor(new, old)
            if s is None:
                return [f"{block} was changed, but not by multiplying it by one number (redrawn, or changed entry "
                        "by entry): here DeepNorm keeps the model's initial weights and multiplies them by beta, "
                        "weight.mul_(beta). (The paper draws them with xavier_normal_(w, gain=beta) instead.)"]
            owner = _bias_owner(block)
            if owner is not None:
                bias_factors.setdefault(owner[1], []).append(s)
                continue
            factors[block] = s
            kind = _label(block)[1]
            if kind in other and not _close(s, 1.0):
                other[kind].append(block)
    others = []
    qk_biases = [b for b in ("W_q", "W_k") if not all(_close(v, 1.0) for v in bias_factors.get(b, [1.0]))]
    if qk_biases:
        others.append("the queries' or keys' biases (in_proj_bias[0:2d]) were changed: leave W_q, W_k and their "
                      "biases as they are; only W_v's part, in_proj_bias[2d:], gets beta.")
    if other["norm"]:
        others.append(f"the LayerNorms' parameters were changed ({other['norm'][0]}, ...): leave norm1 and norm2 "
                      "alone; only the four weight matrices that write the updates get beta.")
    if other["outside"]:
        others.append(f"parameters outside the layers were changed ({other['outside'][0]}): the embeddings and "
                      "the head keep their values; only the layers' weights get beta.")

    alphas = [float(a) for a in got.alphas]
    if not all(_close(a, alphas[0]) for a in alphas):
        return [f"alpha differs between layers (layer 0: {alphas[0]:.4g}, layer {len(alphas) - 1}: "
                f"{alphas[-1]:.4g}): every layer gets the same alpha = (2N)^(1/4), with N = len(model.layers) "
                "the number of layers (not a layer's index)."] + others
    table = _layer_table(factors, n)
    for block, values in table.items():
        if not all(_close(v, values[0]) for v in values):
            j = next(i for i, v in enumerate(values) if not _close(v, values[0]))
            return [f"the layers were scaled differently (layer 0's {block} by {values[0]:.4g}, layer {j}'s by "
                    f"{values[j]:.4g}): every layer gets the same beta = (8N)^(-1/4), with N = len(model.layers)."
                    ] + others
    f = {block: values[0] for block, values in table.items()}
    a_got = alphas[0]
    raw = dict(f)  # each weight block's factor, before the diagnoses below reinterpret it
    bias_off = [b for b in _UPDATE if not all(_close(v, raw[b]) for v in bias_factors.get(b, [raw[b]]))]
    if bias_off and all(all(_close(v, 1.0) for v in bias_factors.get(b, [1.0])) for b in _UPDATE) and any(
            not _close(raw[b], 1.0) for b in _UPDATE):
        others.insert(0, _BIASES_LEFT)
    elif bias_off:
        others.insert(0, "the biases were not scaled like their weights (" + ", ".join(_BIAS_WHERE[b] for b in bias_off)
                      + "): every parameter of W_v, out_proj, linear1 and linear2, weight and bias, is multiplied "
                      "by the same beta.")

    if _close(a_got, beta) and all(_close(f[b], alpha) for b in _UPDATE):
        return [_SWAPPED] + others
    alpha_messages, weight_messages, alpha_key, beta_key, beta_message = [], [], None, None, None
    alpha_done = _close(a_got, alpha)
    if _close(a_got, 1.0) and _close(f["out_proj"], f["W_v"] / alpha) and _close(f["linear2"], f["linear1"] / alpha):
        alpha_messages.append(_ON_THE_BRANCH)
        f["out_proj"], f["linear2"], alpha_done = f["W_v"], f["linear1"], True
    elif _close(f["out_proj"], f["W_v"] * alpha) and _close(f["linear2"], f["linear1"] * alpha):
        weight_messages.append(_TIMES_ALPHA)
        f["out_proj"], f["linear2"] = f["W_v"], f["linear1"]

    q_scaled, k_scaled = not _close(f["W_q"], 1.0), not _close(f["W_k"], 1.0)
    if q_scaled and k_scaled and _close(f["W_q"], f["W_v"]) and _close(f["W_k"], f["W_v"]):
        weight_messages.append("beta was applied to the queries and keys too (the whole in_proj_weight): only "
                               "W_v, rows 2d:3d of in_proj_weight, is scaled; W_q and W_k only decide where "
                               "attention looks, not how large its output is.")
    elif q_scaled != k_scaled and _close(f["W_v"], 1.0):
        wrong = "W_q" if q_scaled else "W_k"
        weight_messages.append(f"{_WHERE[wrong]} ({wrong}) were scaled instead of W_v: in_proj_weight stacks "
                               "[W_q; W_k; W_v], d rows each, so W_v is in_proj_weight[2d:], with d = d_model.")
        f["W_v"] = f[wrong]
    elif q_scaled or k_scaled:
        weight_messages.append("the queries' or keys' weights (rows 0:2d of in_proj_weight) were changed: leave "
                               "W_q and W_k as they are.")

    unscaled = [b for b in _UPDATE if _close(f[b], 1.0)]
    scaled = [b for b in _UPDATE if b not in unscaled]
    if not scaled:
        start = "alpha is set, but no weight was scaled" if _close(a_got, alpha) else "no weight was scaled by beta"
        weight_messages.append(f"{start}: multiply {_WEIGHTS} by beta = (8N)^(-1/4), in place, under "
                               "torch.no_grad() (w.mul_(beta); `w = w * beta` only rebinds a name).")
    elif set(unscaled) == {"W_v", "out_proj"}:
        weight_messages.append("only the FFN was scaled: attention's W_v (rows 2d:3d of in_proj_weight) and "
                               "out_proj.weight write the attention sublayer's update, and get beta too.")
    elif set(unscaled) == {"linear1", "linear2"}:
        weight_messages.append("only the attention was scaled: the FFN's linear1.weight and linear2.weight get "
                               "beta too.")
    elif unscaled:
        weight_messages.append("not scaled by beta: " + ", ".join(_WHERE[b] for b in unscaled)
                               + f". All four of {_WEIGHTS} get beta.")
    if scaled:
        values = [f[b] for b in scaled]
        if not all(_close(v, values[0]) for v in values):
            weight_messages.append("the weights were multiplied by different numbers ("
                                   + ", ".join(f"{_WHERE[b]} by {f[b]:.4g}" for b in scaled)
                                   + f"): all get the same beta = (8N)^(-1/4) = {beta:.4g} for N = {n}.")
        elif not _close(values[0], beta):
            hit = _match(values[0], n, _BETA_MISTAKES)
            if hit is None:
                weight_messages.append(f"the weights were multiplied by {values[0]:.4g}; beta = (8N)^(-1/4) = "
                                       f"{beta:.4g} for N = {n} layers.")
            else:
                beta_key, beta_message = hit
                weight_messages.append(beta_message)
    if not alpha_done:
        hit = _match(a_got, n, _ALPHA_MISTAKES)
        if hit is None:
            alpha_messages.append(f"alpha is {a_got:.4g}; alpha = (2N)^(1/4) = {alpha:.4g} for N = {n} layers.")
        else:
            alpha_key = hit[0]
            alpha_messages.append(hit[1])
    if alpha_key == beta_key == "sublayers":
        alpha_messages = [_SUBLAYERS]
        weight_messages = [m for m in weight_messages if m is not beta_message]
    return alpha_messages + weight_messages + others


def _structure(got: _State, before: _State) -> str | None:
    """What makes the converted model incomparable: a missing or non-numeric alpha, parameters
    added, removed, reshaped, retyped, or not finite (a :class:`WrongType`: no hint follows)."""
    problem = _broken(got, before)
    return None if problem is None else WrongType(problem)


def _broken(got: _State, before: _State) -> str | None:
    if len(got.alphas) != len(before.alphas):
        return (f"the model now has {len(got.alphas)} layers; it had {len(before.alphas)}: convert the "
                "layers, do not add or remove any.")
    for i, a in enumerate(got.alphas):
        if a is _MISSING:
            return f"layer {i} has no attribute alpha any more: set it to a number, do not delete it."
        value, problem = as_number(a)
        if problem or isinstance(a, nn.Parameter):
            what = "an nn.Parameter" if isinstance(a, nn.Parameter) else f"a {type(a).__name__} ({a!r:.40})"
            return f"layer {i}'s alpha is {what}; set it to a plain finite number."
    if got.params.keys() != before.params.keys():
        added = sorted(got.params.keys() - before.params.keys())
        removed = sorted(before.params.keys() - got.params.keys())
        change = f"added {added[0]}" if added else f"removed {removed[0]}"
        return (f"the model's parameters changed ({change}): change the values in place; do not add or remove "
                "parameters (alpha is a plain number, not an nn.Parameter).")
    for name, old in before.params.items():
        new = got.params[name]
        if new.shape != old.shape:
            return f"{name} has shape {tuple(new.shape)}; it had {tuple(old.shape)}: scale it, keep its shape."
        if new.dtype != old.dtype:
            return f"{name} is now {new.dtype}; it was {old.dtype}: scale it in place and keep its dtype."
        bad = int((~torch.isfinite(new)).sum())
        if bad:
            return f"{name} has NaN or infinite entries after your function ran ({bad} of {new.numel()})."
    return None


def _same(got: _State, expected: _State) -> bool:
    return (all(math.isclose(float(a), float(e), rel_tol=1e-6) for a, e in zip(got.alphas, expected.alphas))
            and all(torch.allclose(got.params[k], v, rtol=_RTOL, atol=_ATOL) for k, v in expected.params.items()))


def _untouched(got: _State, before: _State) -> bool:
    return (all(float(a) == float(b) for a, b in zip(got.alphas, before.alphas))
            and all(torch.equal(got.params[k], v) for k, v in before.params.items()))


def _compare(before: _State, n: int, constants: tuple[float, float], fn: Callable):
    """A comparison for one case: the return value, the model's structure, then its alphas and
    parameters, naming a usual mistake where the model shows one. ``constants`` are DeepNorm's
    ``(alpha, beta)`` for ``n`` layers, computed before the learner's function runs (while it
    runs, :func:`~helpers.models.transformer.deepnorm_constants` is off limits)."""

    def compare(got: _Converted, expected: _State) -> str | None:
        state = _state(got.model)
        if isinstance(state, str):
            return state
        problem = _structure(state, before)
        if problem:
            return problem
        untouched = _untouched(state, before)
        returned = got.returned
        if returned is not None and returned is not got.model:
            if isinstance(returned, nn.Module):
                left = " and left the model it was given unchanged" if untouched else ""
                return WrongType(f"returned a different model{left}: DeepNorm converts the model it is given in "
                                 "place (its layers' alpha and weights); return nothing or that same model.")
            return WrongType(f"returned a {type(returned).__name__}: the function changes the model in place and "
                             "returns nothing (None) or the model itself.")
        if _same(state, expected):
            return None
        if untouched:
            placeholder = is_placeholder(fn)
            if placeholder:
                return ("not implemented yet: the model is unchanged (the function's body is still a "
                        "placeholder). Set every layer's alpha and scale the weights by beta, in place.")
            start = "not implemented yet? " if placeholder is None else ""
            return (f"{start}the model is unchanged: no layer's alpha was set and no weight was scaled. Change "
                    "the model you are given in place (layer.alpha = ..., and w.mul_(beta) under "
                    "torch.no_grad()); new tensors that are not written back change nothing.")
        messages = _diagnose(state, before, n, *constants)
        if messages:
            return "the model is wrong: " + " ".join([messages[0]] + [m[0].upper() + m[1:] for m in messages[1:]])
        err = max(float((state.params[k] - v).abs().max()) for k, v in expected.params.items())
        return (f"the model is wrong: its parameters differ from DeepNorm's by up to {err:.3g}, and its alpha is "
                f"{float(state.alphas[0]):.4g} (DeepNorm's: {float(expected.alphas[0]):.4g}).")
    return compare


_NO_GRAD_HINT = (" (Hint: change parameters in place inside `with torch.no_grad():`, or through "
                 "`w.data`; the model's weights require gradients.)")


def _runner(fn: Callable) -> Callable:
    """``fn``, called on a private copy of the checker's model: returns :class:`_Converted`, so
    that :func:`~helpers.grading.base.run_cases` sees an answer rather than an argument changed in
    place. Its name, source and ``__wrapped__`` are ``fn``'s (``functools.wraps``), so shortcuts
    and placeholders are recognised as the learner's."""

    @functools.wraps(fn)
    def convert(model):
        work = copy.deepcopy(model)
        try:
            returned = fn(work)
        except RuntimeError as err:
            if "leaf Variable that requires grad" in str(err) and err.args and isinstance(err.args[0], str):
                err.args = (err.args[0] + _NO_GRAD_HINT, *err.args[1:])
            raise
        return _Converted(work, returned)

    return convert


def _model(rng: np.random.Generator, n_layers: int, d_model: int, n_heads: int) -> SequenceTransformer:
    """A Post-LN model with every parameter drawn from ``rng`` (LayerNorm weights about 1, all
    biases non-zero), built without touching PyTorch's global random state."""
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2**31)))
        model = SequenceTransformer(7, 5, d_model, n_heads, 2 * d_model, n_layers, norm_position="post")
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=gen))
            if ".norm" in name and name.endswith("weight"):
                p.add_(1.0)
    return model


def _case(description: str, rng: np.random.Generator, hint: str, *, n_layers: int, d_model: int,
          n_heads: int, fn: Callable) -> Case:
    model = _model(rng, n_layers, d_model, n_heads)
    before = _state(model)
    expected = _state(scale_deepnorm_(copy.deepcopy(model)))
    constants = deepnorm_constants(n_layers)
    return Case(description, (model,), expected, hint, compare=_compare(before, n_layers, constants, fn))


def check_deepnorm(fn) -> Feedback:
    """Check a learner's ``fn(model)``: DeepNorm's constants and initialisation, applied in place.

    ``model`` is a Post-LN :class:`~helpers.models.transformer.SequenceTransformer` of
    ``N = len(model.layers)`` layers. The answer, for every ``layer`` in ``model.layers``::

        layer.alpha = (2N) ** 0.25                                  # the skip: LN(alpha x + F(x))
        beta = (8N) ** -0.25, multiplying in place (torch.no_grad()):
            layer.self_attn.in_proj_weight[2d:], layer.self_attn.in_proj_bias[2d:]   (W_v)
            every parameter of layer.self_attn.out_proj, layer.linear1, layer.linear2

    and nothing else (W_q, W_k and their biases, LayerNorms, embeddings, head unchanged), as
    DeepNet's official code and :func:`~helpers.models.deepnorm.scale_deepnorm_` do. ``fn``
    may return the model or ``None``. Cases: one layer, three layers, six layers (``d_model`` 8 to 12, 1 to 3 heads),
    then two hidden cases of random depth (2 to 12 layers) and width. Alphas pass within a
    relative 1e-6, parameters within ``rtol = 1e-5``, ``atol = 1e-8``; a wrong model is
    diagnosed and the usual mistakes (module docstring) are named.
    """
    rng = np.random.default_rng(5)
    general = ("N = len(model.layers) counts layers; alpha = (2N)^(1/4) on every layer's skip, beta = "
               "(8N)^(-1/4) on every parameter (weights and biases) of the four layers that write each "
               "sublayer's update.")
    cases = [
        _case("one layer (N = 1), d_model = 8, 2 heads", rng, general, n_layers=1, d_model=8, n_heads=2, fn=fn),
        _case("three layers (N = 3), d_model = 8, 2 heads", rng,
              "one alpha and one beta for the whole model, computed from N before the loop over the layers.",
              n_layers=3, d_model=8, n_heads=2, fn=fn),
        _case("six layers (N = 6), d_model = 12, 3 heads", rng, general, n_layers=6, d_model=12, n_heads=3, fn=fn),
    ]
    hidden = _rng()
    for _ in range(2):
        heads = int(hidden.integers(1, 4))
        size = dict(n_layers=int(hidden.integers(2, 13)), d_model=heads * int(hidden.integers(2, 5)), n_heads=heads)
        cases.append(_case(f"hidden random case: {size['n_layers']} layers, d_model = {size['d_model']}", hidden,
                           general, fn=fn, **size))
    runner = _runner(fn) if callable(fn) else fn
    return run_cases("DeepNorm's constants and initialisation", runner, cases, off_limits=REFERENCES)


REFERENCES = tuple(dict.fromkeys(
    f for ref in (scale_deepnorm_, deepnorm_init_, apply_deepnorm_) for f in (ref, getattr(ref, "__wrapped__", ref))
)) + (deepnorm_constants,)
"""The answer keys for chapter 5 (the course's DeepNorm conversions, also undecorated, and their
constants), off limits while a learner's function is checked."""


HE_GAIN_MARGIN = 0.25
"""How far from He's gain of 2 the chain exercise's gain must be; at 2 every layer keeps the
second moment and the answer, 1, needs no reasoning."""


def chain_gain_problem(gain) -> str | None:
    """What is wrong with ``gain`` for the chain exercise, in words, or ``None``: a real number
    in :data:`helpers.measure.moments.GAIN_RANGE` at least :data:`HE_GAIN_MARGIN` away from 2."""
    problem = gain_problem(gain)
    if problem:
        return problem
    if abs(float(gain) - 2.0) < HE_GAIN_MARGIN:
        return (f"my_gain = {float(gain):g} is He's gain or within {HE_GAIN_MARGIN} of it: there every layer "
                "keeps the second moment and the answer is about 1 without any reasoning. Choose a gain at "
                f"least {HE_GAIN_MARGIN} away from 2 (1.5 or 2.5, say), so that your prediction tests the "
                "per-layer factor.")
    return None


ADAM_POWER = 0.75
"""The power ``b`` in DeepNorm's ``beta ∝ N^(-b)`` that holds Adam's first update still, with
``alpha = (2N)^(1/4)`` kept: the update sums ``2N`` shares of about ``beta / alpha``, so
``beta / alpha`` must fall like ``1/N``."""
_ADAM_POWER_TOL = 0.05
_ADAM_POWER_MISTAKES = (
    (0.25, "that is DeepNorm's own power. It holds SGD's sum 2N·2β²/α² still, where a weight's move "
           "carries β/α and its effect on the output β/α again; under Adam every weight moves by about "
           "η whatever its gradient, so only one factor β/α is left, and 2N·2β/α still grows like √N."),
    (1.0, "that makes β itself fall like 1/N, but α = (2N)^(1/4) grows with the depth too and divides "
          "every branch's contribution: count its power of N as well."),
    (0.5, "with β ∝ N^(-1/2), β/α falls like N^(-3/4), and 2N such shares still add up to a growth like "
          "N^(1/4). Count the powers of N in 2N·2β/α once more."),
    (1.25, "that divides by α one time too many: each share of the update carries β/α once."),
)


def _read_prediction(exercise: str, prediction, tests: list[str], what: str
                     ) -> tuple[float | None, list[str], Feedback | None]:
    """``(value, notes, None)`` for a prediction that is one finite number, else
    ``(None, [], feedback)`` saying what is wrong with it (none yet; text, NaN, an array...);
    ``what`` names it ("your power b"). The value is the first one judged for ``exercise``
    (:func:`~helpers.grading.predictions.counted`); ``notes`` names a changed one."""
    if prediction is None:
        return None, [], Feedback(exercise, [f"no prediction yet: write {what} in the cell above before you run "
                                             "this cell, then run it again."], False, tests=tests)
    value, problem = as_number(prediction)
    if problem:
        return None, [], Feedback(exercise, [f"your prediction is {str(problem).removeprefix('returned ')}"],
                                  False, tests=tests)
    value, note = counted((exercise,), value)
    return value, [note.capitalize() + "."] if note else [], None


def check_adam_beta_power(prediction, measured: float | None = None) -> Feedback:
    """Check a prediction of the power ``b`` in ``beta ∝ N^(-b)`` that holds Adam's first update
    still when DeepNorm's ``alpha = (2N)^(1/4)`` is kept (:data:`ADAM_POWER`, within 0.05),
    naming the usual mistakes (DeepNorm's own 1/4, SGD's count; 1, which forgets ``alpha``; ...).
    ``measured`` (optional) is the power at which the page's measurement is flat; it is quoted
    only to a prediction that passes, so that a wrong one cannot be corrected by copying it.
    A bad ``measured`` raises ``TypeError``."""
    exercise = "Predict the power of N in β for Adam"
    tests = [f"your power b against the one the bookkeeping derives (within {_ADAM_POWER_TOL})"]
    if measured is not None:
        measured, problem = as_number(measured)
        if problem:
            raise TypeError(f"measured must be one finite number or None: it {problem}")
    value, notes, feedback = _read_prediction(exercise, prediction, tests, "your power b")
    if feedback is not None:
        return feedback
    if abs(value - ADAM_POWER) <= _ADAM_POWER_TOL:
        after = "" if measured is None else f" This page's measurement puts the flat point at b = {measured:.2f}."
        return Feedback(exercise, [f"b = {value:g}: β/α ∝ N^(1/4 - b) = 1/N, and the 2N shares of about "
                                   f"2β/α add up to a constant.{after}", *notes], True, tests=tests)
    if value < 0:
        return Feedback(exercise, [f"b = {value:g} makes β grow with the depth; β ∝ N^(-b) must shrink, so "
                                   "b is positive.", *notes], False, tests=tests)
    why = next((text for power, text in _ADAM_POWER_MISTAKES if abs(value - power) <= _ADAM_POWER_TOL),
               "write the update as 2N · 2β/α with α = (2N)^(1/4) and β ∝ N^(-b), and choose b so that the "
               "powers of N cancel.")
    return Feedback(exercise, [f"b = {value:g}: {why}", *notes], False, tests=tests)


ADAM_STEP_DEPTHS = (2, 64)
"""The depths of the Adam-step prediction of section 5, which asks for the loss change of Adam's
first step at 64 blocks over that at 2, for ``y = x + f(x)/√N``."""
ADAM_STEP_RTOL = 0.10
"""How far (relative) the prediction may be from the measurement. Over seeds 0-39 the measured
ratio (eight nets per depth) ranged from 7.27 to 8.05 around the theory's 7.53, so the model
answer 7.5 is at most 7 % off; √32 = 5.66, the growth without the stream's, is over 20 % below
every measurement and fails, as does √2, the ratio from 32 to 64 blocks."""


def _adam_step_theory(n: int) -> float:
    """``N ε (1 + ε²)^((N - 1)/2)`` with ``ε = 1/√N``: the size of Adam's first step up to a factor."""
    return math.sqrt(n) * (1 + 1 / n) ** ((n - 1) / 2)


def _adam_step_mistakes() -> tuple[tuple[float, str], ...]:
    low, high = ADAM_STEP_DEPTHS
    sgd = (1 + 1 / high) ** (high - 1) / (1 + 1 / low) ** (low - 1)
    squared = (math.sqrt(high) * (1 + 1 / high) ** (high - 1)) / (math.sqrt(low) * (1 + 1 / low) ** (low - 1))
    return (
        (math.sqrt(high / low),
         f"that is √({high}/{low}), the growth of N ε = √N alone. Each |g_i| also carries the square root of "
         f"the stream's growth, (1 + ε²)^((N - 1)/2): {(1 + 1 / low) ** ((low - 1) / 2):.2f} at {low} blocks and "
         f"{(1 + 1 / high) ** ((high - 1) / 2):.2f} at {high}, and it does not cancel in the ratio."),
        (math.sqrt(2),
         f"that is about the factor from 32 to 64 blocks, where the stream's growth hardly changes; the "
         f"question asks from {low} to {high} blocks."),
        (high / low,
         "that is the growth in proportion to N of a plain net; the branch scale ε = 1/√N takes a factor √N "
         "out of Adam's |ΔL| ~ N ε."),
        (sgd,
         "that is SGD's formula, N ε² (1 + ε²)^(N - 1), which counts the gradient squared; Adam's first step "
         "moves every weight by about η sign(g) and changes the loss by η ||g||_1, the gradient to the first "
         "power."),
        (squared,
         "you gave each |g_i| the stream's whole growth (1 + ε²)^(N - 1); that is the growth of g², so |g_i| "
         "carries its square root, (1 + ε²)^((N - 1)/2)."),
        (1.0, "a flat step is what ε = 1/N gives under Adam; with ε = 1/√N the step still grows with N."),
        (_adam_step_theory(high),
         f"that is N ε (1 + ε²)^((N - 1)/2) at {high} blocks alone: divide by its value at {low} blocks."),
    )


def check_adam_step_prediction(prediction, measured) -> Feedback:
    """Check a prediction of the loss change of Adam's first step at 64 blocks over that at 2,
    for ``y = x + f(x)/√N`` (section 5's exercise), against ``measured``, the ratio the notebook
    has just measured: within :data:`ADAM_STEP_RTOL` of it passes.

    A wrong prediction is told what it most likely left out (the stream's growth, giving
    √32; SGD's squared gradient; the plain net's N; the ratio from 32 to 64 blocks, √2; ...)
    or that it is more than 10 % off, never the measured value, so that the prediction is
    made once, before the measurement is seen. ``measured`` comes from the notebook: a bad
    value raises ``TypeError`` or ``ValueError``."""
    exercise = "Predict Adam's first step at 64 blocks"
    low, high = ADAM_STEP_DEPTHS
    measured, problem = as_number(measured)
    if problem:
        raise TypeError(f"measured must be one finite number: it {problem}")
    if measured <= 0:
        raise ValueError(f"measured must be a ratio > 0, got {measured}")
    tests = [f"your ratio against the measurement this cell makes (within {100 * ADAM_STEP_RTOL:.0f} %)"]
    value, notes, feedback = _read_prediction(exercise, prediction, tests, "your ratio")
    if feedback is not None:
        return feedback
    off = abs(value - measured) / measured
    if off <= ADAM_STEP_RTOL:
        return Feedback(exercise, [f"your prediction, {value:.3g}, is within {100 * off:.0f} % of the measured "
                                   f"{measured:.3g}: the stream's growth does not cancel between {low} and "
                                   f"{high} blocks.", *notes], True, tests=tests)
    why = next((text for target, text in _adam_step_mistakes() if abs(value / target - 1) <= 0.03),
               f"apply N ε (1 + ε²)^((N - 1)/2) with ε = 1/√N at {high} and at {low} blocks, and divide.")
    return Feedback(exercise, [f"your prediction, {value:.3g}, is more than {100 * ADAM_STEP_RTOL:.0f} % off "
                               f"the measurement: {why}", *notes], False, tests=tests)
