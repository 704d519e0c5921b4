"""Measurements: each function's docstring says what it measures and, where there is one, the formula."""

from .backprop import backprop_by_autograd, backprop_by_hand, gradient_rank, largest_relative_error
from .batch_mates import batch_mate_drift, drift_table
from .branches import branch_ratios, net_branch_ratios
from .concat import join_costs, measured_costs
from .cost import saved_tensor_bytes, seconds_per_step, stream_gradient_norms
from .gradients import GradientProfile, gradient_profile, per_layer_factor
from .growth import (
    GrowthRun,
    aligned_growth,
    backward_growth,
    backward_step,
    bank_branch,
    branch_masks,
    branch_vjp,
    he_branch,
    high_dim_growth,
    one_dimensional_growth,
)
from .increments import StepChange, one_step_change, probe_loss
from .jacobian import jacobian_singular_values
from .landscape import filter_normalised_direction, loss_slice_1d, loss_surface_2d, sharpness
from .layer_agreement import agreement_with_pytorch
from .lesion import error_rate, random_lesions, single_block_lesions
from .moments import (
    ChainMoments,
    block_gradient_rms,
    chain_moments,
    chain_second_moments,
    gain_problem,
    predicted_moments,
    relu_chain_growth,
    width_profile,
)
from .paths import enumerate_path_lengths, path_length_counts
from .scrambling import mean_field_cosines, pair_cosines, probe_accuracy, relu_cosine_map
from .shattering import input_gradients, minibatch_gradient_cosine, neighbour_correlation
from .skip_gradient import SkipGradient, skip_gradient_parts
from .streams import StreamRecord, residual_stream, variance_terms
from .sublayers import position_accuracy, sublayer_lesions
from .tuning import best_setting

__all__ = [
    "branch_ratios", "net_branch_ratios", "filter_normalised_direction", "loss_slice_1d",
    "loss_surface_2d", "sharpness", "GradientProfile", "gradient_profile", "per_layer_factor",
    "jacobian_singular_values", "error_rate", "random_lesions", "single_block_lesions",
    "enumerate_path_lengths", "path_length_counts", "best_setting",
    "backprop_by_hand", "backprop_by_autograd", "gradient_rank", "largest_relative_error", "pair_cosines",
    "probe_accuracy", "relu_cosine_map", "mean_field_cosines", "input_gradients", "neighbour_correlation",
    "minibatch_gradient_cosine", "batch_mate_drift", "drift_table", "join_costs", "measured_costs", "StreamRecord",
    "residual_stream", "variance_terms", "saved_tensor_bytes", "seconds_per_step", "stream_gradient_norms",
    "SkipGradient", "skip_gradient_parts", "agreement_with_pytorch", "position_accuracy", "sublayer_lesions",
    "GrowthRun", "aligned_growth", "backward_growth", "backward_step", "bank_branch", "branch_masks", "branch_vjp",
    "he_branch", "high_dim_growth", "one_dimensional_growth", "StepChange", "one_step_change", "probe_loss",
    "ChainMoments", "block_gradient_rms", "chain_moments", "chain_second_moments", "gain_problem",
    "predicted_moments", "relu_chain_growth", "width_profile",
]
