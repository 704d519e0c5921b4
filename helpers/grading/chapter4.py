"""Checkers for the exercises of chapter 4: a Pre-LN encoder's forward pass, from its pieces.

The learner writes ``fn(x, layers, final_norm)``: the stack of Pre-LN layers, then the
final LayerNorm. ``layers`` are PyTorch's own ``nn.TransformerEncoderLayer`` s
(``norm_first=True``, ``batch_first=True``, dropout 0) and their pieces are the ones to
use: ``layer.self_attn`` (an ``nn.MultiheadAttention``), ``layer.linear1``,
``layer.linear2``, ``layer.norm1``, ``layer.norm2``. The expected output is PyTorch's
``nn.TransformerEncoder`` with ``norm=final_norm``, in float64, computed before the
learner's function runs; while it runs, the layers' and the encoder's own ``forward`` (and
the course's :class:`~helpers.models.transformer.EncoderLayer`) raise, so calling them is no
solution. A wrong output is matched against the usual mistakes, each recomputed here and
named: normalising after the sum (Post-LN), adding the normalised x instead of x, the two
LayerNorms swapped, and a missing final LayerNorm.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..models.transformer import EncoderLayer, _Layer
from .base import Case, Feedback, run_cases
from .chapter1 import _rng
from .values import WrongType, as_numeric_array, float32_rounding

_RTOL, _ATOL = 1e-7, 1e-9


def _attend(layer, h):
    return layer.self_attn(h, h, h, need_weights=False)[0]


def _ffn(layer, h):
    return layer.linear2(torch.relu(layer.linear1(h)))


def _variant(x, layers, final_norm, *, where: str = "pre", skip: str = "x", swap: bool = False,
             final: bool = True) -> torch.Tensor:
    """The stack with one mistake: ``where="post"`` normalises after the sum; ``skip="normed"``
    adds the normalised x; ``swap`` uses norm2 before attention and norm1 before the FFN;
    ``final=False`` leaves out the final LayerNorm."""
    for layer in layers:
        n1, n2 = (layer.norm2, layer.norm1) if swap else (layer.norm1, layer.norm2)
        for norm, sub in ((n1, _attend), (n2, _ffn)):
            if where == "post":
                x = norm(x + sub(layer, x))
            else:
                h = norm(x)
                x = (h if skip == "normed" else x) + sub(layer, h)
    return final_norm(x) if final else x


_MISTAKES = (
    (dict(where="post"), "each LayerNorm comes after its sum, x = LN(x + Sublayer(x)): that is a Post-LN "
                         "stack. Pre-LN normalises the sublayer's input and leaves the skip alone: "
                         "x = x + Sublayer(LN(x))."),
    (dict(skip="normed"), "the skip adds the normalised input, LN(x) + Sublayer(LN(x)): the residual stream "
                          "must carry x itself, x + Sublayer(LN(x)), or every layer renormalises the stream "
                          "and the identity path is lost."),
    (dict(swap=True), "norm1 and norm2 are swapped: norm1 belongs to the attention sublayer, norm2 to the FFN."),
    (dict(final=False), "the final LayerNorm is missing: a Pre-LN stack's stream is never normalised inside "
                        "the layers, so the stack ends with final_norm(x)."),
    (dict(where="post", final=False), "each LayerNorm comes after its sum (Post-LN) and there is no final "
                                      "LayerNorm: Pre-LN is x = x + Sublayer(LN(x)), then final_norm at the end."),
)


def _compare(args: tuple):
    x, layers, final_norm = args
    with torch.no_grad():
        mistakes = [(_variant(x, layers, final_norm, **changes).numpy(), message) for changes, message in _MISTAKES]

    def compare(got, expected) -> str | None:
        value, problem = as_numeric_array(got)
        if problem:
            return WrongType(problem)
        if isinstance(got, torch.Tensor) and got.dtype != x.dtype:
            return WrongType(f"the output is a {got.dtype} tensor, but x is {x.dtype}: keep x's dtype.")
        expected = expected.numpy()
        if value.shape != expected.shape:
            return f"the output has shape {value.shape}; expected {expected.shape}, the shape of x."
        if np.allclose(value, expected, rtol=_RTOL, atol=_ATOL):
            return None
        for wrong, message in mistakes:
            if np.allclose(value, wrong, rtol=_RTOL, atol=_ATOL):
                return f"the output is wrong: {message}"
        rounding = float32_rounding(value, expected, what="the output", reference="PyTorch's encoder",
                                    fix="compute in float64, the dtype of x")
        err = float(np.max(np.abs(value - expected)))
        return rounding or (f"the output is wrong: it differs from PyTorch's Pre-LN encoder by up to {err:.3g}. "
                            "Per layer: x = x + attention(LN1(x)), then x = x + FFN(LN2(x)); at the end "
                            "final_norm(x).")
    return compare


def _problem(rng: np.random.Generator, n_layers: int, batch: int, length: int, d_model: int, n_heads: int):
    """``(x, layers, final_norm)`` in float64, with LayerNorm weights and biases away from 1 and 0
    so that every mistake shows, and the expected output of PyTorch's encoder."""
    torch_gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    layer = nn.TransformerEncoderLayer(d_model, n_heads, 2 * d_model, dropout=0.0, batch_first=True,
                                       norm_first=True, dtype=torch.float64)
    encoder = nn.TransformerEncoder(layer, n_layers, norm=nn.LayerNorm(d_model, dtype=torch.float64),
                                    enable_nested_tensor=False).eval()
    with torch.no_grad():
        for p in encoder.parameters():
            p.copy_(0.3 * torch.randn(p.shape, generator=torch_gen, dtype=torch.float64))
        for module in encoder.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.add_(1.0)
        x = torch.randn(batch, length, d_model, generator=torch_gen, dtype=torch.float64)
        expected = encoder(x)
    return (x, list(encoder.layers), encoder.norm), expected


def _case(description: str, rng, hint: str, **size) -> Case:
    args, expected = _problem(rng, **size)
    return Case(description, args, expected, hint, compare=_compare(args))


def check_pre_ln_encoder(fn) -> Feedback:
    """Check a learner's ``fn(x, layers, final_norm) -> tensor``: a Pre-LN encoder's forward pass.

    ``x`` is a float64 tensor ``(batch, sequence, features)``; ``layers`` a list of
    ``nn.TransformerEncoderLayer`` (``norm_first=True``); ``final_norm`` an ``nn.LayerNorm``.
    The answer is, for every layer in order::

        x = x + layer.self_attn(h, h, h)[0]       with h = layer.norm1(x)
        x = x + layer.linear2(relu(layer.linear1(layer.norm2(x))))

    and then ``final_norm(x)``, as ``nn.TransformerEncoder(..., norm=final_norm)`` computes it.
    Cases: one layer; three layers; a longer sequence with one head; then two hidden cases of
    random size. An output passes within ``rtol = 1e-7``, ``atol = 1e-9``; a wrong one is
    matched against the usual mistakes (module docstring), which are named.
    """
    rng = np.random.default_rng(4)
    general = "per layer: x = x + attention(LN1(x)); x = x + FFN(LN2(x)); after the last layer: final_norm(x)."
    cases = [
        _case("one layer, x of shape (2, 5, 8), 2 heads", rng, general,
              n_layers=1, batch=2, length=5, d_model=8, n_heads=2),
        _case("three layers, x of shape (3, 4, 12), 3 heads", rng,
              "loop over the layers, each taking the previous one's output; one final_norm after the loop.",
              n_layers=3, batch=3, length=4, d_model=12, n_heads=3),
        _case("two layers, a sequence of 9 positions, one head, (1, 9, 6)", rng, general,
              n_layers=2, batch=1, length=9, d_model=6, n_heads=1),
    ]
    hidden = _rng()
    for _ in range(2):
        heads = int(hidden.integers(1, 4))
        size = dict(n_layers=int(hidden.integers(1, 5)), batch=int(hidden.integers(1, 4)),
                    length=int(hidden.integers(2, 8)), d_model=heads * int(hidden.integers(2, 5)), n_heads=heads)
        layers = f"{size['n_layers']} layer" + ("s" if size["n_layers"] > 1 else "")
        cases.append(_case(f"hidden random case: {layers}, x of shape "
                           f"({size['batch']}, {size['length']}, {size['d_model']})", hidden, general, **size))
    return run_cases("A Pre-LN encoder, forward pass", fn, cases, off_limits=REFERENCES)


REFERENCES = (nn.TransformerEncoderLayer.forward, nn.TransformerEncoder.forward, EncoderLayer.forward,
              _Layer._sublayer, _variant)
"""The answer keys for chapter 4 (PyTorch's layer and encoder, the course's layer and the
checker's own stack), off limits while a learner's function is checked."""
