"""Models: plain/residual MLP twins and a small Transformer encoder (chapter 1), and chains of
one-layer blocks (chapter 2), and MLPs that join by add or concatenation (chapter 3)."""

from .chain import LayerChain
from .joins import JoinedMLP
from .mlp import INIT_NAMES, Block, DeepMLP, blocks_for_depth, init_linear_, stack_twins
from .transformer import Attention, DecoderLayer, EncoderLayer, SequenceTransformer, causal_mask

__all__ = [
    "LayerChain", "JoinedMLP", "INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins",
    "Attention", "DecoderLayer", "EncoderLayer", "SequenceTransformer", "causal_mask",
]
