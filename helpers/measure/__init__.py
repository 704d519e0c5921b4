"""Measurements: each function's docstring says what it measures and, where there is one, the formula."""

from .branches import branch_ratios, net_branch_ratios
from .gradients import GradientProfile, gradient_profile, per_layer_factor
from .jacobian import jacobian_singular_values
from .landscape import filter_normalised_direction, loss_slice_1d, loss_surface_2d, sharpness
from .lesion import error_rate, random_lesions, single_block_lesions
from .paths import enumerate_path_lengths, path_length_counts
from .tuning import best_setting

__all__ = [
    "branch_ratios", "net_branch_ratios", "filter_normalised_direction", "loss_slice_1d",
    "loss_surface_2d", "sharpness", "GradientProfile", "gradient_profile", "per_layer_factor",
    "jacobian_singular_values", "error_rate", "random_lesions", "single_block_lesions",
    "enumerate_path_lengths", "path_length_counts", "best_setting",
]
