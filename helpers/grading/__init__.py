"""Exercise checkers: a base (:mod:`helpers.grading.base`), the guards it runs a learner's
code under (:mod:`helpers.grading.sandbox`), what it accepts as an answer
(:mod:`helpers.grading.values`), points for a grader (:mod:`helpers.grading.scoring`) and
one module per chapter."""

from __future__ import annotations

from .._lazy import lazy_exports

# Each name loads its module on first use (helpers._lazy): a run imports only what it uses.
_EXPORTS = {
    "base": ("Case", "Feedback", "compare_numeric", "run_cases"),
    "chapter1": (
        "check_best_rate", "check_error_rate", "check_most_harmful_block", "check_path_counts",
        "check_per_layer_factor", "check_residual_forward"
    ),
    "chapter2": ("check_residual_backprop", "check_two_layer_backprop"),
    "chapter3": ("check_layer_norm",),
    "chapter4": ("check_pre_ln_encoder",),
    "chapter5": ("check_deepnorm",),
    "predictions": ("check_prediction", "check_predictions"),
    "sandbox": ("DEFAULT_TIME_LIMIT",),
    "scoring": ("award",),
}

__all__ = ["Case", "Feedback", "compare_numeric", "run_cases", "DEFAULT_TIME_LIMIT", "check_best_rate",
           "check_error_rate", "check_per_layer_factor", "check_residual_forward", "check_path_counts",
           "check_most_harmful_block", "check_two_layer_backprop", "check_residual_backprop", "check_layer_norm",
           "check_pre_ln_encoder", "check_deepnorm",
           "check_prediction",
           "check_predictions", "award"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
