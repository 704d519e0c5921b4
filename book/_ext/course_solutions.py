"""A build of the site without solutions, for instructors (``make site-no-solutions``).

With ``course_hide_solutions = True`` (Sphinx config) every solution is removed from the
pages once sphinx-exercise has gathered a gated solution (the cells between
``{solution-start}`` and ``{solution-end}``) into one solution node, and so is every model
answer to a discussion question (an admonition of class ``course-model-answer``, in a cell
tagged ``solution``, which the student edition leaves out too). The checker cells stay: on
the site they show what they test, not a result.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node

MODEL_ANSWER = "course-model-answer"


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


def setup(app):
    app.add_config_value("course_hide_solutions", False, "env")
    app.add_transform(RemoveSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
