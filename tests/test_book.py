"""Checks of the book's sources: notebooks clean and complete, TOC consistent, student edition sound."""

import ast
import json
import re

import nbformat
import pytest

from helpers.grading import (
    check_best_rate,
    check_deepnorm,
    check_error_rate,
    check_layer_norm,
    check_path_counts,
    check_per_layer_factor,
    check_pre_ln_encoder,
    check_residual_backprop,
    check_residual_forward,
    check_two_layer_backprop,
)
from tools.classroom import strip_solutions
from tools.run_notebooks import CHECKER_CALL
from tools.toc import ROOT, toc_files, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


def _cells(path, kind):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == kind]


def test_every_notebook_in_book_is_in_the_toc():
    in_book = {p.resolve() for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in str(p)}
    assert in_book == {p.resolve() for p in NOTEBOOKS}
    assert all(p.exists() for p in toc_files(ROOT))


def test_no_notebook_is_committed_with_outputs():
    for path in (ROOT / "book").rglob("*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        dirty = [i for i, c in enumerate(nb["cells"])
                 if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
        assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_has_the_parts_of_a_chapter(path):
    code, prose = "\n".join(_cells(path, "code")), "\n".join(_cells(path, "markdown"))
    assert "helpers.seed_everything()" in code, "seed everything with one call"
    assert re.search(r"^\s*assert ", code, re.M), "every claim needs an assert"
    assert "glue(" in code and "{glue:text}" in prose, "measured numbers in prose must be glued"
    assert "helpers.widgets.explore(" in code, "each chapter has an exploration"
    assert "{exercise}" in prose and "{solution-start}" in prose and "{solution-end}" in prose
    assert CHECKER_CALL.search(code), "each exercise has a checker"


def test_strip_solutions_removes_gated_cells_only():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```{exercise} E\n:label: e\nDo it.\n```"),
        nbformat.v4.new_code_cell("def f():\n    return None"),
        nbformat.v4.new_markdown_cell("```{solution-start} e\n:class: dropdown\n```"),
        nbformat.v4.new_code_cell("def f():\n    return 42"),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
        nbformat.v4.new_code_cell("check(f)", outputs=[nbformat.v4.new_output("stream", text="x")]),
        nbformat.v4.new_code_cell("secret = 1", metadata={"tags": ["solution"]}),
    ])
    student = strip_solutions(nb)
    sources = [c.source for c in student.cells]
    assert sources == ["```{exercise} E\n:label: e\nDo it.\n```", "def f():\n    return None", "check(f)"]
    assert student.cells[2].outputs == []
    broken = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{solution-start} e\n```")])
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions(broken)


def test_starters_get_specific_feedback_from_their_checkers():
    """Each "implement this" starter, run as a student would, is told it is not done yet."""
    for key, (prefix, checker, needle) in STARTERS.items():
        notebook = key.split("#")[0]
        starter = next(s for s in _cells(ROOT / "book" / notebook, "code") if s.startswith(prefix))
        namespace: dict = {}
        exec(starter, namespace)
        feedback = checker(namespace[prefix.removeprefix("def ")])
        assert not feedback.passed and needle in str(feedback), (notebook, str(feedback))


STARTERS = {
    "ch1/01_degradation.ipynb": ("def my_error_rate", check_error_rate, "not implemented yet"),
    "ch1/02_learning_rates.ipynb": ("def my_clearly_best", check_best_rate, "not implemented yet"),
    "ch1/04_vanishing_gradients.ipynb": ("def my_per_layer_factor", check_per_layer_factor, "return"),
    "ch1/05_residual_block.ipynb": ("def my_residual_block", check_residual_forward, "return"),
    "ch1/08_why_it_works.ipynb": ("def my_path_counts", check_path_counts, "return"),
    "ch2/01_backprop_by_hand.ipynb": ("def my_two_layer_backprop", check_two_layer_backprop, "not implemented yet"),
    "ch2/01_backprop_by_hand.ipynb#residual": ("def my_residual_backprop", check_residual_backprop,
                                               "not implemented yet"),
    "ch3/01_a_correction.ipynb": ("def my_layer_norm", check_layer_norm, "not implemented yet"),
    "ch4/01_inside_the_layer.ipynb": ("def my_pre_ln_encoder", check_pre_ln_encoder, "not implemented yet"),
    "ch5/04_deepnorm.ipynb": ("def my_deepnorm", check_deepnorm, "not implemented yet"),
}


def test_every_module_of_helpers_is_on_the_api_page():
    """A new module must be documented: its docstrings are the reference the notebooks link to."""
    import pkgutil

    import helpers

    api = (ROOT / "book" / "appendix" / "api.md").read_text(encoding="utf-8")
    # Packages re-export their modules; private modules and the build's TOC reader are not course API.
    missing = [m.name for m in pkgutil.walk_packages(helpers.__path__, "helpers.")
               if not m.ispkg and not m.name.rsplit(".", 1)[-1].startswith("_")
               and f"automodule:: {m.name}\n" not in api]
    assert not missing, f"add these modules to book/appendix/api.md: {missing}"


def _calls_a_checker(node) -> bool:
    """Whether ``node`` is a call of ``helpers.grading.check_...`` or ``helpers.grading.<module>.check_...``."""
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr.startswith("check_")
            and re.fullmatch(r"helpers\.grading(\.\w+)?", ast.unparse(func.value)) is not None)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_checker_cell_ends_with_its_feedback(path):
    """The seed sweep fails a run whose hidden solution does not pass its checker, and it reads the
    verdict from the cell's result (``tools/run_notebooks.py``): so a cell that calls a checker must
    call it as ``helpers.grading.check_...`` (or ``helpers.grading.<module>.check_...``) and as its
    last statement, and no cell may call one under another name."""
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        imported = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                    and n.module.startswith("helpers.grading") and any(a.name.startswith("check_") for a in n.names)]
        assert not imported, f"{path.name} cell {number}: call checkers as helpers.grading.check_..."
        if not any(_calls_a_checker(n) for n in ast.walk(tree)):
            continue
        # names bound to a checker's feedback (or a Feedback made in place of one)
        feedback = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                    and (_calls_a_checker(n.value) or ast.unparse(n.value.func) == "helpers.grading.Feedback")
                    for t in n.targets if isinstance(t, ast.Name)}
        last = tree.body[-1]
        assert isinstance(last, ast.Expr) and (
            _calls_a_checker(last.value) or (isinstance(last.value, ast.Name) and last.value.id in feedback)), (
            f"{path.name} cell {number}: the cell must end with the checker's call or the feedback it returned")


PREDICTION_CHECK = re.compile(r"\bhelpers\.grading\.(?:choices\.)?check_(?:prediction|predictions|choices)\(")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_measurement_a_prediction_is_checked_against_is_folded_on_the_site(path):
    """A "predict, then measure" cell prints its measurement: on the site (with or without
    solutions) that output sits right under the exercise, so it is folded (the cell tag
    ``hide-output``) and a reader opens it once the prediction is made. The PDF opens it.
    No other cell has that tag: a class's site withholds exactly those outputs
    (``book/_ext/course_solutions.py``)."""
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
        checks = cell.cell_type == "code" and bool(PREDICTION_CHECK.search(cell.source))
        assert checks == ("hide-output" in cell.metadata.get("tags", [])), f"{path.name} cell {number}"


def test_the_ten_week_schedule_covers_every_section_once():
    """The instructors' schedule names sections by number; a section added to a chapter must get a week."""
    page = (ROOT / "book" / "appendix" / "instructors.md").read_text()
    scheduled = []
    for chapter, first, how, last in re.findall(r"^\| \d+ \| chapter (\d), sections (\d) (to|and) (\d) \|", page, re.M):
        numbers = range(int(first), int(last) + 1) if how == "to" else (int(first), int(last))
        scheduled += [(int(chapter), n) for n in numbers]
    sections = sorted((int(p.parent.name[2:]), int(p.name[:2])) for p in toc_notebooks(ROOT))
    assert sorted(scheduled) == sections, set(scheduled) ^ set(sections)
