"""Where is this code running: live in a kernel with a person watching, or executed for the site?

The site build and the tests set ``COURSE_STATIC_BUILD=1`` (see the Makefile). Then the
training loop draws no progress bar, so the built pages carry no progress-bar debris;
in JupyterLab the variable is unset and the bar shows.
"""

from __future__ import annotations

import os

STATIC_VARIABLE = "COURSE_STATIC_BUILD"


CLAIMS_ONLY_VARIABLE = "COURSE_CLAIMS_ONLY"
SITE_VARIABLE = "COURSE_SITE"


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}


def is_static_build() -> bool:
    """True when the notebook is being executed for the static site or the tests."""
    return _flag(STATIC_VARIABLE)


def is_claims_only() -> bool:
    """True when a notebook is re-run only to check its asserted claims (the seed sweep of
    the tests): explorations then draw just their first frame, since no one will look."""
    return _flag(CLAIMS_ONLY_VARIABLE)


def is_site_build() -> bool:
    """True when the notebook is executed for the site (``tools/execute.py`` sets
    ``COURSE_SITE=1``). There the hidden solutions fill in the exercises, so a checker shows
    what it tests rather than how the solution did, which would give the answer away."""
    return _flag(SITE_VARIABLE)
