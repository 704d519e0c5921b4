"""Experiments behind the book's claims: each returns the numbers that a notebook asserts on."""

from .degradation import DegradationResult, run_degradation
from .gradient_flow import init_gradient_profiles
from .identity import IdentityRace, identity_race, identity_races, steps_to, weight_decay_branches
from .landscapes import train_loss_surfaces
from .lesion_study import errors_by_count, lesion_choices
from .norm_order import NormOrderByDepth, depth_exponent, norm_order_by_depth, norm_order_profiles
from .spectra import block_spectra, share_near_one
from .twins import train_twins, train_twins_for_seeds

__all__ = [
    "DegradationResult", "run_degradation", "init_gradient_profiles", "IdentityRace", "identity_race",
    "identity_races", "steps_to", "weight_decay_branches", "errors_by_count", "lesion_choices",
    "norm_order_profiles", "norm_order_by_depth", "NormOrderByDepth", "depth_exponent", "block_spectra",
    "share_near_one", "train_twins", "train_twins_for_seeds", "train_loss_surfaces",
]
