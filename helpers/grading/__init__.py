"""Exercise checkers: a base (:mod:`helpers.grading.base`), the guards it runs a learner's
code under (:mod:`helpers.grading.sandbox`), what it accepts as an answer
(:mod:`helpers.grading.values`), points for a grader (:mod:`helpers.grading.scoring`) and
one module per chapter."""

from .base import Case, Feedback, compare_numeric, run_cases
from .chapter1 import (
    check_best_rate,
    check_error_rate,
    check_most_harmful_block,
    check_path_counts,
    check_per_layer_factor,
    check_residual_forward,
)
from .chapter2 import check_residual_backprop, check_two_layer_backprop
from .chapter3 import check_layer_norm
from .chapter4 import check_pre_ln_encoder
from .chapter5 import check_deepnorm
from .predictions import check_prediction, check_predictions
from .sandbox import DEFAULT_TIME_LIMIT
from .scoring import award

__all__ = ["Case", "Feedback", "compare_numeric", "run_cases", "DEFAULT_TIME_LIMIT", "check_best_rate",
           "check_error_rate", "check_per_layer_factor", "check_residual_forward", "check_path_counts",
           "check_most_harmful_block", "check_two_layer_backprop", "check_residual_backprop", "check_layer_norm",
           "check_pre_ln_encoder", "check_deepnorm",
           "check_prediction",
           "check_predictions", "award"]
