"""Models: plain/residual MLP twins and a small Transformer encoder, as chapter 1 uses them."""

from .mlp import INIT_NAMES, Block, DeepMLP, blocks_for_depth, init_linear_, stack_twins
from .transformer import EncoderLayer, SelfAttention, SequenceTransformer

__all__ = [
    "INIT_NAMES", "Block", "DeepMLP", "blocks_for_depth", "init_linear_", "stack_twins",
    "EncoderLayer", "SelfAttention", "SequenceTransformer",
]
