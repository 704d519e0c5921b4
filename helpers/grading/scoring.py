"""Points for a check, for a grader that reads them from the checker's cell.

The classroom grader (``tools/classroom.py``, a thin layer over nbgrader) appends a hidden
line ``helpers.grading.award(points)`` to each checker cell of the graded notebooks. It
shows the feedback that the cell's checker has just made and returns its points,

    points awarded = score × points,

where ``score`` is the share of the checker's cases that passed. nbgrader reads a number
shown as a cell's result as the cell's partial credit; a cell that raises earns nothing.
"""

from __future__ import annotations

from numbers import Real

from IPython.display import display

from .base import LATEST, Feedback


def award(points: float) -> float:
    """Show the latest :class:`~helpers.grading.base.Feedback` and return ``score × points``
    (rounded to 0.01); 0 when no checker has run since the last award."""
    if isinstance(points, bool) or not isinstance(points, Real) or not points > 0:
        raise ValueError(f"points must be a positive number, got {points!r}")
    if not LATEST:
        print("No checker ran in this cell, so no points.")
        return 0.0
    feedback: Feedback = LATEST.pop()
    display(feedback)
    return round(feedback.score * float(points), 2)
