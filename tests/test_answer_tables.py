"""The student edition holds no answer key: each is a table of the answers it gave
(tools/answer_tables.py, tools/answer_lookup.py), and no handed-out notebook prints one."""

from __future__ import annotations

import ast
import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from tools import answer_tables
from tools.answer_lookup import NotInTable, answer
from tools.classroom import KEY_LEFT_OUT, graded_notebook, printed_key
from tools.toc import ROOT

DEEPNORM_CONSTANTS = "helpers.models.transformer:deepnorm_constants"
SCALE = "helpers.models.deepnorm:scale_deepnorm_"


def _model(seed: int):
    from helpers.models.transformer import SequenceTransformer

    torch.manual_seed(seed)
    return SequenceTransformer(7, 5, 8, 2, 16, 3, norm_position="post")


def _recorded(folder: Path) -> Path:
    """A table of two keys' calls: deepnorm_constants(3) and scale_deepnorm_ on a seeded model."""
    from helpers.models.deepnorm import scale_deepnorm_
    from helpers.models.transformer import deepnorm_constants

    recorder = answer_tables.Recorder()
    recorder.wrap(DEEPNORM_CONSTANTS, deepnorm_constants)(3)
    recorder.wrap(SCALE, scale_deepnorm_)(_model(0))
    return recorder.save(folder)


def test_a_recorded_call_is_answered_and_any_other_raises(tmp_path):
    from helpers.models.deepnorm import scale_deepnorm_
    from helpers.models.transformer import deepnorm_constants

    table = str(_recorded(tmp_path))
    assert answer(DEEPNORM_CONSTANTS, {"n_layers": 3}, table) == deepnorm_constants(3)
    with pytest.raises(NotInTable, match="deepnorm_constants is one of the course's answer keys"):
        answer(DEEPNORM_CONSTANTS, {"n_layers": 4}, table)

    expected = scale_deepnorm_(_model(0)).state_dict()
    model = _model(0)
    assert answer(SCALE, {"model": model}, table) is model  # in place, and returned as the key returns it
    assert all(torch.equal(v, expected[k]) for k, v in model.state_dict().items())
    assert all(layer.alpha == pytest.approx((2 * 3) ** 0.25) for layer in model.layers)

    drifted = _model(0)  # another processor's draw (other kernels): the same call, its last digits differ
    noise = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in drifted.parameters():
            p.mul_(1 + 1e-6 * torch.randn(p.shape, generator=noise))
    wanted = scale_deepnorm_(copy.deepcopy(drifted)).state_dict()
    answer(SCALE, {"model": drifted}, table)  # the change is replayed on this model, not the recorded one
    assert all(torch.allclose(v, wanted[k], rtol=1e-6, atol=1e-9) for k, v in drifted.state_dict().items())
    for other in (_model(1), _model(0).double()):  # another seed, another dtype: not in the table
        with pytest.raises(NotInTable):
            answer(SCALE, {"model": other}, table)
    moved = _model(0)  # one layer's weights 1 % off, as a different computation would leave them
    with torch.no_grad():
        weight = moved.layers[1].linear1.weight
        weight.mul_(1 + 0.01 * torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)))
    with pytest.raises(NotInTable):
        answer(SCALE, {"model": moved}, table)


def test_the_student_copy_has_no_key_body_and_fixed_hidden_cases(tmp_path):
    copy = answer_tables.student_copy(tmp_path / "copy", _recorded(tmp_path / "table"))
    for key in answer_tables.KEYS:
        module, name = key.split(":")
        path = copy.joinpath(*module.split(".")).with_suffix(".py")
        [fn] = [n for n in ast.parse(path.read_text(encoding="utf-8")).body
                if isinstance(n, ast.FunctionDef) and n.name == name]
        assert len(fn.body) == 2 and isinstance(fn.body[1], ast.Return), f"{key} still computes its answer"
        assert repr(key) in ast.unparse(fn.body[1])
    rng = (copy / "helpers" / "grading" / "chapter1.py").read_text(encoding="utf-8")
    assert f"default_rng({answer_tables.STUDENT_SEED})" in rng
    assert (copy / "helpers" / "_answers.py").read_bytes() == answer_tables.LOOKUP.read_bytes()
    # the copy runs on its own: its keys look the answers up, and say so for any other call
    script = textwrap.dedent("""
        from helpers.grading import chapter1
        from helpers.models.transformer import deepnorm_constants
        print(deepnorm_constants(3))
        try:
            deepnorm_constants(5)
        except LookupError as err:
            print(type(err).__name__)
        print(chapter1._rng().integers(10**9) == chapter1._rng().integers(10**9))
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 0, run.stderr
    from helpers.models.transformer import deepnorm_constants

    assert run.stdout.splitlines() == [str(deepnorm_constants(3)), "NotInTable", "True"]


def test_a_handed_out_notebook_prints_no_answer_key():
    assert printed_key("helpers.show_source(backprop_by_hand)") == "backprop_by_hand"
    assert printed_key("helpers.show_source(helpers.models.deepnorm.deepnorm_init_, ffn_rms)") == "deepnorm_init_"
    assert printed_key("helpers.show_source(helpers.models.SequenceTransformer)") is None
    nb = nbformat.read(ROOT / "book" / "ch2" / "01_backprop_by_hand.ipynb", as_version=4)
    printing = [c.id for c in nb.cells if c.cell_type == "code" and printed_key(c.source)]
    assert printing, "ch2/01 prints the course's backprop_by_hand after its exercise"
    out = graded_notebook(nb)
    for cell in out.cells:
        assert not (cell.cell_type == "code" and printed_key(cell.source))
        if cell.id in printing:
            assert cell.cell_type == "markdown" and cell.source == KEY_LEFT_OUT.format(name="backprop_by_hand")


def test_the_lessons_that_call_a_key_are_the_ones_recorded():
    assert "helpers/models/deepnorm.py" in answer_tables.helpers_files_calling_keys()
    chosen = {p.relative_to(ROOT).as_posix() for p in answer_tables.notebooks_to_record()}
    assert {"book/ch2/01_backprop_by_hand.ipynb", "book/ch5/04_deepnorm.ipynb"} <= chosen
    assert "book/ch1/01_degradation.ipynb" not in chosen


@pytest.fixture(scope="module")
def student_helpers(tmp_path_factory) -> Path:
    """The student edition's copy of ``helpers`` (its table recorded as ``make student`` does)."""
    return answer_tables.student_copy(tmp_path_factory.mktemp("student"), answer_tables.record())


def _scan(lib: Path, checkers=None) -> dict:
    """:func:`tools.answer_scan.answering_functions` in a process of its own (candidates may
    set global state)."""
    script = (f"import json; from tools import answer_scan as t; import tempfile\n"
              f"t.load_as({str(lib / 'helpers')!r}, 'scanned', tempfile.mkdtemp())\n"
              f"print(json.dumps(t.answering_functions('scanned', seed=1, checkers={checkers!r})))")
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.coursework
def test_no_function_of_the_student_wheel_answers_an_exercise(student_helpers, tmp_path):
    """By behaviour: every function of the copy that takes an exercise's arguments is checked,
    hidden cases from another seed than the table's; the book's own helpers do answer (control)."""
    found = _scan(student_helpers)
    left = sorted(f for functions in found.values() for f in functions)
    assert left == sorted(answer_tables.STILL_IN_THE_WHEEL), found
    book = tmp_path / "book"
    (book / "helpers").parent.mkdir()
    import shutil

    shutil.copytree(ROOT / "helpers", book / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    control = _scan(book, ["check_layer_norm", "check_two_layer_backprop", "check_deepnorm"])
    assert control == {"check_layer_norm": ["helpers.grading.chapter3:_layer_norm"],
                       "check_two_layer_backprop": ["helpers.grading.chapter2:_two_layer_autograd"],
                       "check_deepnorm": ["helpers.models.deepnorm:scale_deepnorm_"]}


def _feedback(lib: Path | None, source: str, tmp: Path, environment: dict | None = None) -> list:
    """Run ``source`` (which sets ``results``) with the student copy at ``lib`` (or the book's
    helpers, hidden cases from the student edition's seed), ``environment`` added, and return
    ``results``."""
    prelude = ("import json, math, numpy as np, torch, helpers\nfrom torch import nn\nimport torch.nn.functional as F\n"
               "from tools import answer_tables\n")
    if lib is None:
        prelude += ("import importlib\nfor n in range(1, 6):\n"
                    "    importlib.import_module(f'helpers.grading.chapter{n}')._rng = answer_tables.student_rng\n")
    script = prelude + source + "\nprint(json.dumps([helpers.__file__, results]))\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": f"{lib}:{ROOT}" if lib else str(ROOT),
           **(environment or {})}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp, capture_output=True, text=True, env=env,
                         timeout=600)  # not from ROOT: its helpers/ would come first on sys.path
    assert run.returncode == 0, run.stderr[-3000:]
    used, results = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(used).is_relative_to(lib or ROOT), f"ran with the wrong helpers: {used}"
    return results


def _imports(cells) -> str:
    """The import statements of ``cells``' code (what a solution may use by name)."""
    lines = []
    for cell in cells:
        if cell.cell_type == "code":
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # IPython syntax: no import there
                continue
            lines += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "".join(line + "\n" for line in lines)


def _solutions() -> list[tuple[str, str, str]]:
    """``(checker, function name, solution source)`` of each function exercise of the book."""
    from tools.classroom import END, START, find_exercises
    from tools.run_notebooks import CHECKER_CALL

    wanted = {c.__name__ for c in answer_tables.function_checkers()}
    found = []
    for path in sorted((ROOT / "book").glob("ch*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for ex in find_exercises(nb):
            call = CHECKER_CALL.search(nb.cells[ex.checker].source)
            if call is None or call["name"] not in wanted:
                continue
            fn = nb.cells[ex.checker].source[call.end():].split(")")[0].split(",")[0].strip()
            start = max(i for i in range(ex.checker) if START in nb.cells[i].source)
            end = next(i for i in range(start, ex.checker) if END in nb.cells[i].source)
            code = "\n".join(c.source for c in nb.cells[start:end] if c.cell_type == "code")
            found.append((call["name"], fn, _imports(nb.cells[:start]) + code))
    return found


NEAR_MISS = '''
def off(fn):
    """The solution, its answer's values 10 % off (so that a checker gets past type and shape), a
    yes or no turned round."""
    def scale(value):
        if isinstance(value, (bool, np.bool_)):  # a yes or no: the other answer
            return not value
        if isinstance(value, dict):
            return {k: scale(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(scale(v) for v in value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value + 1
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
            return value + 1
        if isinstance(value, (float, np.ndarray, torch.Tensor)):
            return value * 1.1
        return value
    def near(*args, **kwargs):
        result = fn(*args, **kwargs)
        for arg in args:  # a model changed in place: its first parameter 10 % off
            if isinstance(arg, nn.Module):
                with torch.no_grad():
                    next(arg.parameters()).mul_(1.1)
        return scale(result)
    return near
'''


@pytest.mark.coursework
def test_the_student_checkers_accept_the_solutions_and_diagnose_as_the_books_do(student_helpers, tmp_path):
    """The student's side runs as another processor computes (its table was recorded on this
    one): a learner's case inputs differ in their last digits, and the verdicts must not."""
    solutions = _solutions()
    assert {name for name, _, _ in solutions} == {c.__name__ for c in answer_tables.function_checkers()}
    source = "results = []\n" + NEAR_MISS
    for checker, fn, code in solutions:
        source += (f"exec({code!r})\n"
                   f"right = helpers.grading.{checker}({fn})\n"
                   f"wrong = helpers.grading.{checker}(lambda *a, **k: 0.5)\n"
                   f"near = helpers.grading.{checker}(off({fn}))\n"
                   f"results.append([{checker!r}, right.passed, right.lines, wrong.lines, near.lines])\n")
    student = _feedback(student_helpers, source, tmp_path, answer_tables.OTHER_PROCESSOR)
    book = _feedback(None, source, tmp_path)
    assert all(passed for _, passed, *_ in student), [(c, lines) for c, p, lines, *_ in student if not p]
    assert all(near != right for _, _, right, _, near in student), "the near misses were not caught"
    assert student == book


@pytest.mark.coursework
def test_the_student_helpers_run_the_lessons_that_call_a_key(student_helpers):
    """Each notebook recorded runs from the top on the student's copy, every checker satisfied,
    as another processor computes (:data:`tools.answer_tables.OTHER_PROCESSOR`)."""
    from concurrent.futures import ThreadPoolExecutor

    def run(path: Path) -> str | None:
        try:
            nb = answer_tables.run_as_the_site_does(
                path, last=f"assert helpers.__file__.startswith({str(student_helpers)!r}), helpers.__file__",
                env={"PYTHONPATH": str(student_helpers), **answer_tables.OTHER_PROCESSOR})
        except Exception as err:  # noqa: BLE001 (reported below)
            return f"{path.name}: {str(err)[-1500:]}"
        outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
        return f"{path.name}: a checker failed" if 'data-passed=\\"false\\"' in outputs else None

    with ThreadPoolExecutor(max_workers=answer_tables.RECORDING_KERNELS) as pool:
        problems = [p for p in pool.map(run, answer_tables.notebooks_to_record()) if p]
    assert not problems, problems


LESSON_INPUT = """
import json, helpers
from helpers.experiments import init_gradient_profiles
helpers.seed_everything(0)
profile = init_gradient_profiles(helpers.data.digits(), 56, norm="batch", init="he", seed=0)["plain"]
print(json.dumps(list(map(float, profile.weight))))
"""


def test_a_lesson_key_gets_the_same_inputs_on_another_processor():
    """Why ``per_layer_factor`` can be a table: chapter 1, section 4 calls it on the gradient norms
    of nets at initialisation, the deepest a 56-layer plain net with BatchNorm, which is chaotic;
    drawn and run in float64, its norms agree between two processors' kernels far within the
    table's tolerance (in float32 they differed by up to half)."""
    from tools.answer_lookup import RTOL, call_key, close

    def norms(environment: dict) -> np.ndarray:
        run = subprocess.run([sys.executable, "-c", LESSON_INPUT], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "COURSE_WORKERS": "1", **environment})
        assert run.returncode == 0, run.stderr[-2000:]
        return np.array(json.loads(run.stdout.strip().splitlines()[-1]))

    here, other = norms({}), norms(answer_tables.OTHER_PROCESSOR)
    assert "helpers.measure.gradients:per_layer_factor" in answer_tables.KEYS
    assert np.max(np.abs(here - other) / here) < RTOL / 100
    assert close(call_key({"norms": here})[1], call_key({"norms": other})[1])
