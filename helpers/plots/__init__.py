"""Every figure of the course, in one house style (:mod:`helpers.plots.style`).

Plain nets are always orange and residual nets always green; every figure has a title
that states its finding and labelled axes with units.
"""

from __future__ import annotations

import lazy_loader

# Each name loads its module on first use (lazy_loader), so that a run imports only the modules it
# uses, and what its results depend on is that list (helpers.provenance, tools/fingerprints.py).
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

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)

from .style import install_figure_format as _install  # noqa: E402

_install()  # in a notebook: figures at twice their pixels, shown at their size
