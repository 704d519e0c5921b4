"""Exercise checkers: a base (:mod:`helpers.grading.base`), the guards it runs a learner's
code under (:mod:`helpers.grading.sandbox`), what it accepts as an answer
(:mod:`helpers.grading.values`), points for a grader (:mod:`helpers.grading.scoring`) and
one module per chapter."""

from __future__ import annotations

import lazy_loader

# Each name loads its module on first use (lazy_loader), so that a run imports only the modules it
# uses, and what its results depend on is that list (helpers.provenance, tools/fingerprints.py).
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

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)
