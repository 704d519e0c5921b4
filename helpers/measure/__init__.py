"""Measurements: each function's docstring says what it measures and, where there is one, the formula."""

from __future__ import annotations

import lazy_loader

# Each name loads its module on first use (lazy_loader), so that a run imports only the modules it
# uses, and what its results depend on is that list (helpers.provenance, tools/fingerprints.py).
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

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)
