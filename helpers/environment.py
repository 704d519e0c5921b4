"""Where is this code running: live in a kernel with a person watching, executed for the site,
re-run to check its claims, or graded?

The four ways a notebook runs are the :data:`MODES`, each a set of environment variables;
this is the one place that names them, and the tools that execute notebooks take their
environment from :func:`mode_environment`:

* ``learner``: JupyterLab, a person watching: progress bars, every exploration live, the
  runs of an experiment side by side on the available cores. No variable is set.
* ``site``: the one execution whose outputs the built site shows (``tools/execute.py``):
  seed 0, no progress bars (no debris on the pages), one worker, the hidden solutions
  filling in the exercises (:func:`is_site_build`).
* ``claims-only``: the seed sweep re-runs a notebook only for its asserted claims: no
  progress bars, one frame per exploration (:func:`is_claims_only`), one worker (the sweep
  runs notebooks side by side instead), no figure rendered (``MPLBACKEND=agg``). The sweep
  sets ``COURSE_SEED`` itself.
* ``grading``: nbgrader's kernels (``tools/classroom.py``): claims-only's settings at seed 0,
  and no warnings, since nbgrader gives 0 to a cell that writes to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

STATIC_VARIABLE = "COURSE_STATIC_BUILD"
CLAIMS_ONLY_VARIABLE = "COURSE_CLAIMS_ONLY"
SITE_VARIABLE = "COURSE_SITE"

MODES: dict[str, dict[str, str]] = {
    "learner": {},
    "site": {STATIC_VARIABLE: "1", SITE_VARIABLE: "1", "COURSE_SEED": "0", "COURSE_WORKERS": "1"},
    "claims-only": {STATIC_VARIABLE: "1", CLAIMS_ONLY_VARIABLE: "1", "COURSE_WORKERS": "1", "MPLBACKEND": "agg"},
    "grading": {STATIC_VARIABLE: "1", CLAIMS_ONLY_VARIABLE: "1", "COURSE_SEED": "0", "COURSE_WORKERS": "1",
                "PYTHONWARNINGS": "ignore", "MPLBACKEND": "agg"},
}
"""Each mode's variables (module docstring)."""
COURSE_VARIABLES = tuple(sorted({k for mode in MODES.values() for k in mode}))
"""The variables that any mode sets, all cleared by :func:`mode_environment` before it sets one mode's."""


def mode_environment(mode: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with every course variable of any mode
    removed and ``mode``'s set, for a kernel or process that runs notebooks in that mode."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in COURSE_VARIABLES}
    env.update(MODES[mode])
    return env


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}


def is_static_build() -> bool:
    """True when the notebook is being executed for the static site or the tests."""
    return _flag(STATIC_VARIABLE)


def show_progress(progress: bool | None = None) -> bool:
    """Whether to draw a progress bar: ``progress`` if given, else unless this is a static build."""
    return (not is_static_build()) if progress is None else bool(progress)


def is_claims_only() -> bool:
    """True when a notebook is re-run only to check its asserted claims (the seed sweep of
    the tests): explorations then draw just their first frame, since no one will look."""
    return _flag(CLAIMS_ONLY_VARIABLE)


def is_site_build() -> bool:
    """True when the notebook is executed for the site (``tools/execute.py`` sets
    ``COURSE_SITE=1``). There the hidden solutions fill in the exercises, so a checker shows
    what it tests rather than how the solution did, which would give the answer away."""
    return _flag(SITE_VARIABLE)
