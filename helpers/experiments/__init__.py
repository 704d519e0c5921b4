"""Experiments behind the book's claims: each returns the numbers that a notebook asserts on."""

from __future__ import annotations

import lazy_loader

# Each name loads its module on first use (lazy_loader), so that a run imports only the modules it
# uses, and what its results depend on is that list (helpers.provenance, tools/fingerprints.py).
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

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)
