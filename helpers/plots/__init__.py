"""Every figure of the course, in one house style (:mod:`helpers.plots.style`).

Plain nets are always orange and residual nets always green; every figure has a title
that states its finding and labelled axes with units.
"""

from __future__ import annotations

from .._lazy import lazy_exports

# Each name loads its module on first use (helpers._lazy): a run imports only what it uses.
_EXPORTS = {
    "add_norm": (
        "batch_mate_outputs", "correction_picture", "deletion_frame", "divergence_map", "join_costs_figure",
        "joins_compared", "scale_profile_frame", "scale_sweep", "stream_variance", "switched_off"
    ),
    "backprop": ("outer_product",),
    "deepnorm": ("design_curves", "design_frame", "early_update_profile"),
    "diagrams": ("block_diagrams",),
    "gradients": ("gradient_profiles", "norm_order_by_depth", "singular_value_histograms"),
    "growth": ("exponent_sweep", "growth_by_layer", "growth_grid", "one_dimensional_spread"),
    "increments": ("increment_frame", "step_change_by_depth"),
    "landscape": ("loss_slices", "loss_surfaces"),
    "lesion": ("lesion_by_block", "lesion_by_count", "lesion_frame", "path_lengths"),
    "moments": ("chain_frame", "chain_spread", "depth_gradients", "scale_gradients", "second_moments"),
    "published": ("imagenet_history",),
    "scrambling": ("principal_plane", "signal_through_depth"),
    "shattering": ("correlation_by_depth", "first_steps_at_rate", "gradient_curves", "minibatch_agreement"),
    "style": (
        "COLORS", "SCALE", "band", "figure_output", "finish", "house_style", "install_figure_format", "new_figure",
        "png_size", "shown_size", "title_figure", "to_png"
    ),
    "training": ("identity_race", "learning_rate_sweep", "training_curves"),
    "transformer": (
        "embedding_gradients", "grid_curves", "layer_diagram", "layer_profiles", "lesion_maps", "position_accuracy",
        "stack_frame"
    ),
}

__all__ = [
    "block_diagrams",
    "COLORS", "SCALE", "band", "figure_output", "finish", "house_style", "install_figure_format", "new_figure",
    "png_size", "shown_size", "title_figure", "to_png",
    "training_curves", "learning_rate_sweep", "identity_race", "gradient_profiles", "norm_order_by_depth",
    "singular_value_histograms",
    "imagenet_history", "loss_slices", "loss_surfaces", "path_lengths", "lesion_by_block",
    "lesion_by_count", "lesion_frame",
    "outer_product", "principal_plane", "signal_through_depth", "gradient_curves", "correlation_by_depth",
    "minibatch_agreement", "first_steps_at_rate", "correction_picture", "stream_variance", "batch_mate_outputs",
    "join_costs_figure", "switched_off", "deletion_frame", "joins_compared", "scale_sweep", "divergence_map",
    "scale_profile_frame", "layer_diagram", "embedding_gradients", "layer_profiles", "grid_curves", "stack_frame",
    "lesion_maps", "position_accuracy", "design_curves", "design_frame", "early_update_profile", "exponent_sweep",
    "growth_by_layer", "growth_grid", "one_dimensional_spread", "increment_frame", "step_change_by_depth",
    "chain_frame", "chain_spread", "depth_gradients", "scale_gradients", "second_moments",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

from .style import install_figure_format as _install  # noqa: E402

_install()  # in a notebook: figures at twice their pixels, shown at their size
