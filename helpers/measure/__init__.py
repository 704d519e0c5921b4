"""Measurements: each function's docstring says what it measures and, where there is one, the formula."""

from .activations import activation_stats
from .gradients import GradientProfile, gradient_profile, per_layer_factor
from .jacobian import jacobian_singular_values
from .lesion import error_rate, random_lesions, single_block_lesions
from .paths import enumerate_path_lengths, path_length_counts

__all__ = [
    "activation_stats", "GradientProfile", "gradient_profile", "per_layer_factor",
    "jacobian_singular_values", "error_rate", "random_lesions", "single_block_lesions",
    "enumerate_path_lengths", "path_length_counts",
]
