"""Exercise checkers: a base (:mod:`helpers.grading.base`) and one module per chapter."""

from .base import Case, Feedback, compare_numeric, run_cases
from .chapter1 import check_per_layer_factor

__all__ = ["Case", "Feedback", "compare_numeric", "run_cases", "check_per_layer_factor"]
