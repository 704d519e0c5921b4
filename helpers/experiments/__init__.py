"""Experiments behind the book's claims: each returns the numbers that a notebook asserts on."""

from __future__ import annotations

from .._lazy import lazy_exports

# Each name loads its module on first use (helpers._lazy): a run imports only what it uses.
_EXPORTS = {
    "branch_scale": ("ScaleProfile", "ScaleRun", "init_scale_sweep", "scale_profile"),
    "degradation": ("DegradationResult", "run_degradation"),
    "effective_depth": ("SwitchedOff", "effective_depth", "rank_agreement"),
    "gradient_flow": ("init_gradient_profiles",),
    "identity": ("IdentityRace", "identity_race", "identity_races", "steps_to", "weight_decay_branches"),
    "increments": ("IncrementRun", "incremental_explosion"),
    "joins": ("JoinRun", "compare_joins"),
    "landscapes": ("train_loss_surfaces",),
    "lesion_study": ("errors_by_count", "lesion_choices"),
    "moments": ("DepthGradients", "ScaleGradients", "chain_profiles", "gradients_by_depth", "gradients_by_scale"),
    "norm_order": ("NormOrderByDepth", "depth_exponent", "norm_order_by_depth", "norm_order_profiles"),
    "scrambling": ("SignalThroughDepth", "digit_twins", "signal_through_depth"),
    "shattering": (
        "SETUPS", "decay_fits", "first_steps", "gradients_on_grid", "input_grid", "minibatch_agreement",
        "noise_references", "scalar_twins", "shattering_by_depth"
    ),
    "spectra": ("block_spectra", "share_near_one"),
    "transformer_depth": ("GridRun", "InitGradients", "gradients_at_init", "train_grid"),
    "twins": ("train_twins", "train_twins_for_seeds"),
}

__all__ = [
    "GridRun", "InitGradients", "gradients_at_init", "train_grid",
    "ScaleRun", "ScaleProfile", "init_scale_sweep", "scale_profile", "JoinRun", "compare_joins",
    "SwitchedOff", "effective_depth", "rank_agreement",
    "DegradationResult", "run_degradation", "init_gradient_profiles", "IdentityRace", "identity_race",
    "identity_races", "steps_to", "weight_decay_branches", "errors_by_count", "lesion_choices",
    "norm_order_profiles", "norm_order_by_depth", "NormOrderByDepth", "depth_exponent", "block_spectra",
    "share_near_one", "train_twins", "train_twins_for_seeds", "train_loss_surfaces",
    "SignalThroughDepth", "digit_twins", "signal_through_depth", "SETUPS", "decay_fits", "first_steps",
    "gradients_on_grid",
    "input_grid", "minibatch_agreement", "noise_references", "scalar_twins", "shattering_by_depth",
    "IncrementRun", "incremental_explosion", "DepthGradients", "ScaleGradients", "chain_profiles",
    "gradients_by_depth", "gradients_by_scale",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
