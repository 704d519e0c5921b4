"""Models: plain/residual MLP twins and a small Transformer encoder (chapter 1), and chains of
one-layer blocks (chapter 2)."""

from .chain import LayerChain
from .mlp import INIT_NAMES, Block, DeepMLP, blocks_for_depth, init_linear_, stack_twins
from .transformer import EncoderLayer, SelfAttention, SequenceTransformer

__all__ = [
    "LayerChain", "INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins",
    "EncoderLayer", "SelfAttention", "SequenceTransformer",
]
