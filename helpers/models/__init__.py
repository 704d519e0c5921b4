"""Models: plain/residual MLP twins (chapters 1-3) and Transformer layers (chapters 3-5)."""

from .mlp import Block, DeepMLP, blocks_for_depth, count_parameters, init_linear_, stack_twins
from .transformer import (
    EncoderLayer,
    SelfAttention,
    SequenceTransformer,
    deepnorm_constants,
    deepnorm_init_,
)

__all__ = [
    "Block", "DeepMLP", "blocks_for_depth", "count_parameters", "init_linear_", "stack_twins",
    "EncoderLayer", "SelfAttention", "SequenceTransformer", "deepnorm_constants",
    "deepnorm_init_",
]
