"""Experiments behind the book's claims: each returns the numbers that a notebook asserts on."""

from .degradation import DegradationResult, run_degradation
from .gradient_flow import draw_gradient_flow, init_gradient_profiles

__all__ = ["DegradationResult", "run_degradation", "draw_gradient_flow", "init_gradient_profiles"]
