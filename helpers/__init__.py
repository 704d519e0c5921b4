"""Helpers for *Residual Connections, Measured*: models, measurements, training, data,
plots, widgets and exercise checkers. Notebooks ``import helpers`` and keep only the story
and short cells; everything they run lives here, with unit tests."""

from . import data, environment, experiments, grading, history, measure, models, plots, training, widgets
from .reporting import glue
from .seeding import default_seed, seed_everything, seeds_of_run
from .source import show_source

__version__ = "0.1.0"

__all__ = [
    "data", "environment", "experiments", "grading", "history", "measure", "models", "plots",
    "training", "widgets", "default_seed", "seed_everything", "seeds_of_run", "show_source", "glue",
]
