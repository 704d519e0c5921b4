"""Exercise checkers: a base (:mod:`helpers.grading.base`) and one module per chapter."""

from .base import Case, Feedback, compare_numeric, run_cases
from .chapter1 import (
    check_most_harmful_block,
    check_path_counts,
    check_per_layer_factor,
    check_residual_forward,
)

__all__ = ["Case", "Feedback", "compare_numeric", "run_cases", "check_per_layer_factor",
    "check_residual_forward", "check_path_counts", "check_most_harmful_block"]
