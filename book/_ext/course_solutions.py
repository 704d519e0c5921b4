"""A build of the site without solutions, for instructors (``make site-no-solutions``).

With ``course_hide_solutions = True`` (Sphinx config) every solution is removed from the
pages once sphinx-exercise has gathered a gated solution (the cells between
``{solution-start}`` and ``{solution-end}``) into one solution node, and so is every model
answer to a discussion question (an admonition of class ``course-model-answer``, in a cell
tagged ``solution``, which the student edition leaves out too). The checker cells stay: on
the site they show what they test, not a result.

With ``course_withhold_measurements`` set to a message, each prediction's measurement (the
output of the cell tagged ``hide-output`` under a prediction exercise, which the site folds
one click away) is replaced by that message: the instructor withholds it until the
predictions are in, or for good (``tools/site_without_solutions.py --withhold``).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node

MODEL_ANSWER = "course-model-answer"
MEASUREMENT = "tag_hide-output"
"""The class of a prediction's measurement cell (tests/test_book.py: each follows a prediction)."""


def withhold_measurements(document: nodes.Node, message: str) -> int:
    """Replace the output of every prediction's measurement cell in ``document`` with a
    paragraph saying ``message``; return how many were replaced."""
    replaced = 0
    for cell in list(document.findall(nodes.container)):
        if MEASUREMENT not in cell.get("classes", []):
            continue
        for output in [c for c in cell.children if "cell_output" in c.get("classes", [])]:
            note = nodes.paragraph("", message, classes=["course-withheld"])
            cell.replace(output, note)
            replaced += 1
    return replaced


class RemoveSolutions(SphinxTransform):
    default_priority = 20  # after sphinx-exercise's MergeGatedSolutions (10)

    def apply(self, **kwargs) -> None:
        if not self.config.course_hide_solutions:
            return
        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)
        for node in list(self.document.findall(nodes.admonition)):
            if MODEL_ANSWER in node.get("classes", []):
                node.parent.remove(node)
        if self.config.course_withhold_measurements:
            withhold_measurements(self.document, self.config.course_withhold_measurements)


def setup(app):
    app.add_config_value("course_hide_solutions", False, "env")
    app.add_config_value("course_withhold_measurements", "", "env")
    app.add_transform(RemoveSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
