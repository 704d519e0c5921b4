"""Models: plain/residual MLP twins and a small Transformer encoder (chapter 1), and chains of
one-layer blocks (chapter 2), MLPs that join by add or concatenation (chapter 3), and DeepNorm and ReZero
Transformers (chapter 5)."""

from __future__ import annotations

from .._lazy import lazy_exports

# Each name loads its module on first use (helpers._lazy): a run imports only what it uses.
_EXPORTS = {
    "chain": ("LayerChain",),
    "joins": ("JoinedMLP",),
    "mlp": ("INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins"),
    "transformer": (
        "Attention", "DecoderLayer", "EncoderLayer", "SequenceTransformer", "apply_deepnorm_", "causal_mask",
        "deepnorm_constants"
    ),
}

__all__ = [
    "LayerChain", "JoinedMLP", "INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins",
    "Attention", "DecoderLayer", "EncoderLayer", "SequenceTransformer", "causal_mask",
    "apply_deepnorm_", "deepnorm_constants",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
