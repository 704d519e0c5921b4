"""Every notebook's claims hold for seed 0, from the book's one execution, which the site reuses.

The execution runs each notebook once into jupyter-cache: in ``make test`` nbval does
(``tools/nbval_cache.py``, before these tests; ``tests/test_nbval_cache.py``), elsewhere
``tools/execute.py``; the site build reads the cache. A failing ``assert`` fails that notebook's test here with its
traceback. The seed sweep (``tests/test_seeds.py``, ``make sweep``) covers seeds 1 to 9.
"""

from __future__ import annotations

import nbformat
import pytest

from tools import execute
from tools.run_notebooks import CHECKER_CALL, seed_failures
from tools.toc import ROOT, toc_notebooks

pytestmark = pytest.mark.slow
NOTEBOOKS = [str(p.relative_to(ROOT)) for p in toc_notebooks(ROOT)]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_claims_hold_for_seed_0(executed, notebook):
    error = executed[notebook]
    assert error is None, f"{notebook} failed for seed 0:\n{error[-4000:]}"


def _claim_notebook(path, claim: str):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A claim"),
                                         nbformat.v4.new_code_cell("import os\nSEED = int(os.environ['COURSE_SEED'])"),
                                         nbformat.v4.new_code_cell(claim)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_claim_that_fails_for_seed_0_fails_the_execution(tmp_path):
    holds = _claim_notebook(tmp_path / "holds.ipynb", "assert SEED == 0")
    breaks = _claim_notebook(tmp_path / "breaks.ipynb", "assert SEED != 0, 'the claim fails for seed 0'")
    errors = execute.execute_book([holds, breaks], cache_path=tmp_path / "cache")
    assert errors[holds.resolve()] is None
    assert "the claim fails for seed 0" in errors[breaks.resolve()]
    # The passing notebook is cached (the site build will not run it again); the failing one is not.
    cache = execute.read_cache(tmp_path / "cache")
    assert cache.get_cached_project_nb(str(holds.resolve())) is not None
    assert cache.get_cached_project_nb(str(breaks.resolve())) is None


def test_a_claim_that_fails_for_a_later_seed_fails_the_sweep(tmp_path):
    path = _claim_notebook(tmp_path / "lucky.ipynb", "assert SEED != 7, 'the claim fails for seed 7'")
    failures = seed_failures([path], [1, 7], root=tmp_path)
    assert len(failures) == 1 and "seed 7" in failures[0] and "the claim fails for seed 7" in failures[0]


def test_every_sweep_run_starts_afresh_as_a_claims_only_run(tmp_path):
    """Runs are forks of one server that has imported the libraries (not fresh kernels): each
    must still see nothing a run before it left behind, run in its notebook's folder with the
    sweep's settings, and stop at the first failing cell."""
    (tmp_path / "data.txt").write_text("here")
    path = _claim_notebook(tmp_path / "fresh.ipynb", "\n".join([
        "import helpers, torch",
        "assert 'LEFT_BEHIND' not in globals(), 'a variable survived from an earlier run'",
        "assert torch.get_default_dtype() == torch.float32, 'the dtype an earlier run set survived'",
        "LEFT_BEHIND = True",
        "torch.set_default_dtype(torch.float64)",
        "assert open('data.txt').read() == 'here'",
        "assert helpers.environment.is_claims_only() and helpers.environment.is_static_build()",
        "assert not helpers.environment.is_site_build()",
        "assert helpers.default_seed() == SEED and torch.get_num_threads() >= 1"]))
    stops = _claim_notebook(tmp_path / "stops.ipynb", "raise KeyError('first')")
    stops_nb = nbformat.read(stops, as_version=4)
    stops_nb.cells.append(nbformat.v4.new_code_cell("raise ValueError('second')"))
    nbformat.write(stops_nb, stops)
    failures = seed_failures([path, stops], [1, 2, 3], workers=1, root=tmp_path)
    assert failures == [f"stops.ipynb, seed {s}: code cell 2: KeyError: 'first'" for s in (1, 2, 3)]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_solution_passes_its_checker_and_the_page_does_not_say_so(executed, notebook):
    """On the site the hidden solutions fill the exercises: each must pass its checker (the
    outcome the markup keeps), and the page shows what the checker tests instead of the
    outcome, which would give the answer away."""
    if executed[notebook]:
        pytest.skip("the notebook failed (see test_claims_hold_for_seed_0)")
    nb = nbformat.read(ROOT / notebook, as_version=4)
    run = execute.executed_notebook(ROOT / notebook)
    shown = [output["data"]["text/html"] for cell in run.cells for output in cell.get("outputs", [])
             if "course-feedback" in output.get("data", {}).get("text/html", "")]
    assert len(shown) == sum(bool(CHECKER_CALL.search(c.source)) for c in nb.cells if c.cell_type == "code")
    for html in shown:
        assert 'data-passed="true"' in html, f"a hidden solution fails its checker:\n{html}"
        assert "what the checker tests" in html and "passed" not in html.replace('data-passed="true"', "")


def test_a_hidden_solution_that_fails_its_checker_for_a_later_seed_fails_the_sweep(tmp_path):
    """The sweep holds hidden solutions to every seed it runs, not only seed 0: a checker's
    feedback that does not pass fails the run."""
    path = _claim_notebook(tmp_path / "solution.ipynb", "\n".join([
        "import helpers",
        "answer = 1.0 if SEED != 2 else 5.0  # a 'solution' that only fits some seeds",
        "helpers.grading.check_prediction('Guess', answer, 1.0, rtol=0.1)"]))
    failures = seed_failures([path], [1, 2], workers=1, root=tmp_path)
    assert len(failures) == 1 and "seed 2" in failures[0] and "fails its checker" in failures[0], failures
