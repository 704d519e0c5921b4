"""Every figure of the course, in one house style (:mod:`helpers.plots.style`).

Plain nets are always orange and residual nets always green; every figure has a title
that states its finding and labelled axes with units.
"""

from .add_norm import (
    batch_mate_outputs,
    correction_picture,
    deletion_frame,
    divergence_map,
    join_costs_figure,
    joins_compared,
    scale_profile_frame,
    scale_sweep,
    stream_variance,
    switched_off,
)
from .backprop import outer_product
from .deepnorm import design_curves, design_frame, early_update_profile
from .diagrams import block_diagrams
from .gradients import gradient_profiles, norm_order_by_depth, singular_value_histograms
from .growth import exponent_sweep, growth_by_layer, growth_grid, one_dimensional_spread
from .increments import increment_frame, step_change_by_depth
from .landscape import loss_slices, loss_surfaces
from .lesion import lesion_by_block, lesion_by_count, lesion_frame, path_lengths
from .moments import chain_frame, chain_spread, depth_gradients, scale_gradients, second_moments
from .published import imagenet_history
from .scrambling import principal_plane, signal_through_depth
from .shattering import correlation_by_depth, first_steps_at_rate, gradient_curves, minibatch_agreement
from .style import (
    COLORS,
    SCALE,
    band,
    figure_output,
    finish,
    house_style,
    install_figure_format,
    new_figure,
    png_size,
    shown_size,
    title_figure,
    to_png,
)
from .training import identity_race, learning_rate_sweep, training_curves
from .transformer import (
    embedding_gradients,
    grid_curves,
    layer_diagram,
    layer_profiles,
    lesion_maps,
    position_accuracy,
    stack_frame,
)

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

install_figure_format()  # in a notebook: figures at twice their pixels, shown at their size
