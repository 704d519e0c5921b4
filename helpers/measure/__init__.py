"""Measurements: each function's docstring says what it measures and, where there is one, the formula."""

from __future__ import annotations

from .._lazy import lazy_exports

# Each name loads its module on first use (helpers._lazy): a run imports only what it uses.
_EXPORTS = {
    "backprop": ("backprop_by_autograd", "backprop_by_hand", "gradient_rank", "largest_relative_error"),
    "batch_mates": ("batch_mate_drift", "drift_table"),
    "branches": ("branch_ratios", "net_branch_ratios"),
    "concat": ("join_costs", "measured_costs"),
    "cost": ("saved_tensor_bytes", "seconds_per_step", "stream_gradient_norms"),
    "gradients": ("GradientProfile", "gradient_profile", "per_layer_factor"),
    "growth": (
        "GrowthRun", "aligned_growth", "backward_growth", "backward_step", "bank_branch", "branch_masks",
        "branch_vjp", "he_branch", "high_dim_growth", "one_dimensional_growth"
    ),
    "increments": ("StepChange", "one_step_change", "probe_loss"),
    "jacobian": ("jacobian_singular_values",),
    "landscape": ("filter_normalised_direction", "loss_slice_1d", "loss_surface_2d", "sharpness"),
    "layer_agreement": ("agreement_with_pytorch",),
    "lesion": ("error_rate", "random_lesions", "single_block_lesions"),
    "moments": (
        "ChainMoments", "block_gradient_rms", "chain_moments", "chain_second_moments", "gain_problem",
        "predicted_moments", "relu_chain_growth", "width_profile"
    ),
    "paths": ("enumerate_path_lengths", "path_length_counts"),
    "scrambling": ("mean_field_cosines", "pair_cosines", "probe_accuracy", "relu_cosine_map"),
    "shattering": ("input_gradients", "minibatch_gradient_cosine", "neighbour_correlation"),
    "skip_gradient": ("SkipGradient", "skip_gradient_parts"),
    "streams": ("StreamRecord", "residual_stream", "variance_terms"),
    "sublayers": ("position_accuracy", "sublayer_lesions"),
    "tuning": ("best_setting",),
}

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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
