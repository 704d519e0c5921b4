"""Helpers for *Residual Connections, Measured*: models, measurements, training, data,
plots, widgets and exercise checkers. Notebooks ``import helpers`` and keep only the story
and short cells; everything they run lives here, with unit tests.

The subpackages load on first use (``helpers.plots`` imports matplotlib on first use),
so that a worker process training nets or a build tool does not pay for the plotting,
widget and grading code it never touches. In a notebook the plots load at once, so that
every figure, the first included, is shown in the house format
(:func:`helpers.plots.style.install_figure_format`).
"""

from __future__ import annotations

import sys

import lazy_loader

from .reporting import glue
from .seeding import default_seed, seed_everything, seeds_of_run
from .source import show_source

__version__ = "0.2.0"

__getattr__, _, _SUBPACKAGES = lazy_loader.attach(__name__, submodules=[
    "data", "environment", "experiments", "grading", "measure", "models", "plots", "published", "training",
    "widgets"])
__all__ = [*_SUBPACKAGES, "default_seed", "seed_everything", "seeds_of_run", "show_source", "glue"]


def __dir__() -> list[str]:
    return sorted(__all__)


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    return shell is not None and shell.get_ipython() is not None


if _in_notebook():
    from . import plots  # noqa: F401 (installs the figure format)
