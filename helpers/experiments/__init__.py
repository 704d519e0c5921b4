"""Experiments behind the book's claims: each returns the numbers that a notebook asserts on."""

from .branch_scale import ScaleProfile, ScaleRun, init_scale_sweep, scale_profile
from .degradation import DegradationResult, run_degradation
from .effective_depth import SwitchedOff, effective_depth, rank_agreement
from .gradient_flow import init_gradient_profiles
from .identity import IdentityRace, identity_race, identity_races, steps_to, weight_decay_branches
from .increments import IncrementRun, incremental_explosion
from .joins import JoinRun, compare_joins
from .landscapes import train_loss_surfaces
from .lesion_study import errors_by_count, lesion_choices
from .moments import DepthGradients, ScaleGradients, chain_profiles, gradients_by_depth, gradients_by_scale
from .norm_order import NormOrderByDepth, depth_exponent, norm_order_by_depth, norm_order_profiles
from .scrambling import SignalThroughDepth, digit_twins, signal_through_depth
from .shattering import (
    SETUPS,
    decay_fits,
    first_steps,
    gradients_on_grid,
    input_grid,
    minibatch_agreement,
    noise_references,
    scalar_twins,
    shattering_by_depth,
)
from .spectra import block_spectra, share_near_one
from .transformer_depth import GridRun, InitGradients, gradients_at_init, train_grid
from .twins import train_twins, train_twins_for_seeds

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
