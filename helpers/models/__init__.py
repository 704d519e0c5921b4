"""Models: plain/residual MLP twins and a small Transformer encoder (chapter 1), and chains of
one-layer blocks (chapter 2), MLPs that join by add or concatenation (chapter 3), and DeepNorm and ReZero
Transformers (chapter 5)."""

from __future__ import annotations

import lazy_loader

# Each name loads its module on first use (lazy_loader), so that a run imports only the modules it
# uses, and what its results depend on is that list (helpers.provenance, tools/fingerprints.py).
_EXPORTS = {
    "chain": ("LayerChain",),
    "joins": ("JoinedMLP",),
    "mlp": ("INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins"),
    "transformer": (
        "Attention", "DecoderLayer", "EncoderLayer", "SequenceTransformer", "apply_deepnorm_", "causal_mask",
        "deepnorm_constants"
    ),
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)
