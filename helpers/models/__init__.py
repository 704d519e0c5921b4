"""Models: plain/residual MLP twins and a small Transformer encoder (chapter 1), and chains of
one-layer blocks (chapter 2), MLPs that join by add or concatenation (chapter 3), and DeepNorm and ReZero
Transformers (chapter 5)."""

from .chain import LayerChain
from .joins import JoinedMLP
from .mlp import INIT_NAMES, Block, DeepMLP, blocks_for_depth, init_linear_, stack_twins
from .transformer import (
    Attention,
    DecoderLayer,
    EncoderLayer,
    SequenceTransformer,
    apply_deepnorm_,
    causal_mask,
    deepnorm_constants,
)

__all__ = [
    "LayerChain", "JoinedMLP", "INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins",
    "Attention", "DecoderLayer", "EncoderLayer", "SequenceTransformer", "causal_mask",
    "apply_deepnorm_", "deepnorm_constants",
]
