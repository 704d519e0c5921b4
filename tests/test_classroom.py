"""Grading a class with ``tools/classroom.py``: every exercise of the book can be graded, and a
class of fake submissions, honest and gaming, is graded in sandboxes (tools/judge) with the
expected points."""

from __future__ import annotations

import copy
import csv
import os
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from tools.classroom import collect, find_exercises, grade, graded_notebook, write_predictions
from tools.toc import ROOT, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
new_code, new_md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


def _exercise(label: str, title: str, points: int) -> str:
    return (f"```{{exercise}} {title}\n:label: {label}\n\n**Goal:** practise · **Level:** ★☆☆ easy · "
            f"**Time:** about 5 min · **Points:** {points}\n\nDo it.\n```")


def _solution(label: str, code: str) -> list:
    return [new_md(f"```{{solution-start}} {label}\n:class: dropdown\n```"), new_code(code),
            new_md("```{solution-end}\n```")]


FACTOR = "def my_per_layer_factor(norms):\n    return None"
FACTOR_SOLVED = ("def my_per_layer_factor(norms):\n"
                 "    return math.exp(-np.polyfit(np.arange(len(norms)), np.log(norms), 1)[0])")
GUESS = "my_guess = None  # your prediction"


def _tiny_book(root: Path) -> Path:
    """A one-notebook chapter in the book's format, with the course's own checkers."""
    (root / "book" / "ch1").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/ch1/index\nchapters:\n  - file: book/ch1/01_tiny\n")
    (root / "book" / "ch1" / "index.md").write_text("# Tiny\n")
    nb = nbformat.v4.new_notebook(cells=[
        new_md("# A tiny section"),
        new_code("import math\n\nimport numpy as np\n\nimport helpers"),
        new_md(_exercise("ex-factor", "Fit the factor", 2)), new_code(FACTOR),
        *_solution("ex-factor", FACTOR_SOLVED),
        new_code("helpers.grading.check_per_layer_factor(my_per_layer_factor)"),
        new_md(_exercise("ex-guess", "Predict a half", 1)), new_code(GUESS),
        *_solution("ex-guess", "my_guess = 0.5"),
        new_code("measured = 1 / 2\nhelpers.grading.check_prediction('Predict a half', my_guess, measured, rtol=0.1)"),
    ])
    path = root / "book" / "ch1" / "01_tiny.ipynb"
    nbformat.write(nb, path)
    return path


def _submission(release: nbformat.NotebookNode, folder: Path, *, factor=FACTOR, guess=GUESS, edit=None) -> None:
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        if cell.source == FACTOR:
            cell.source = factor
        elif cell.source == GUESS:
            cell.source = guess
    if edit:
        edit(nb)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "01_tiny.ipynb")


def _forge(nb):
    """Replace the checker cell with a printed pass, and forge its output."""
    cell = next(c for c in nb.cells if "check_per_layer_factor" in c.source)
    cell.source = 'print("Per-layer factor: all checks passed.")'
    cell.outputs = [nbformat.v4.new_output("stream", text="Per-layer factor: all checks passed.\n")]


def _fn(body: str) -> str:
    return "def my_per_layer_factor(norms):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")


ENDPOINTS = "def my_per_layer_factor(norms):\n    return (norms[-1] / norms[0]) ** (-1 / (len(norms) - 1))"
SECRET = "s-honest"  # another student's id, which no feedback but theirs may hold
HONEST = _fn("""
    logs = [math.log(v) for v in norms]
    n, mean_log = len(logs), sum(logs) / len(logs)
    middle = (n - 1) / 2
    covariance = sum((i - middle) * (v - mean_log) for i, v in enumerate(logs))
    slope = covariance / sum((i - middle) ** 2 for i in range(n))
    return math.exp(-slope)""")  # their own least squares: not the book's solution, so not flagged
STUDENTS = {  # id: (what they submit, the points expected for ex-factor and ex-guess)
    SECRET: (dict(factor=HONEST, guess="my_guess = 0.5"), (2, 1)),
    "s-untouched": (dict(), (0, 0)),
    # exact on the four geometric cases, wrong on the three noisy ones: 4/7 of 2 points
    "s-partial": (dict(factor=ENDPOINTS, guess="my_guess = 0.52"), (1.14, 1)),
    # The six ways to full marks of issue 34, and more: each scores nothing.
    "s-key": (dict(factor=_fn("return helpers.measure.per_layer_factor(norms)"), guess="my_guess = '0.5'"), (0, 0)),
    "s-key-copy": (dict(factor="from helpers.measure.gradients import per_layer_factor as key\n"
                               + _fn("return key(norms)")), (0, 0)),
    "s-frame": (dict(factor="import inspect\n" + _fn("""
        f = inspect.currentframe()
        while f is not None and "case" not in f.f_locals:
            f = f.f_back
        return f.f_locals["case"].expected""")), (0, 0)),
    "s-gc": (dict(factor="import gc\n" + _fn("""
        cases = [o for o in gc.get_objects() if type(o).__name__ == "Case"]
        return cases[0].expected""")), (0, 0)),
    "s-swap": (dict(factor="import importlib\ng = importlib.import_module('helpers.' + 'gra' + 'ding')\n"
                           "g.base.run_cases = lambda *a, **k: g.base.Feedback('x', [], True)\n" + FACTOR), (0, 0)),
    "s-allclose": (dict(factor="np.allclose = lambda *a, **k: True\nnp.isclose = lambda *a, **k: True\n"
                               + _fn("return 0.123")), (0, 0)),
    "s-disk": (dict(factor="import pathlib, json\n" + _fn("""
        book = pathlib.Path(helpers.__file__).parents[1] / "book" / "ch1" / "01_tiny.ipynb"
        return float(json.loads(book.read_text())["cells"][5]["source"].split("(")[0])""")), (0, 0)),
    "s-quiet": (dict(factor="get_ipython().ast_node_interactivity = 'none'\n" + FACTOR), (0, 0)),
    "s-snoop": (dict(factor="import os, glob\n" + _fn("""
        seen = [p for top in ("/", "/tmp", "/judge", "/root", os.getcwd()) for p in glob.glob(top + "/*")]
        files = [open(p).read()[:2000] for p in seen if p.endswith((".csv", ".ipynb", ".db"))]
        return " ".join(seen + files)""")), (0, 0)),
    "s-linger": (dict(factor="import subprocess\n" + _fn("""
        subprocess.Popen(["sh", "-c", "sleep 2; for f in $(find / -name grades.csv); do echo 9 > $f; done"])
        return 0.7""")), (0, 0)),
    "s-flood": (dict(factor="print('x' * 10**8)\n" + _fn("return 'y' * 10**8")), (0, 0)),
    # a forged answer, nested past the parser's depth, on the sandbox's answer channel
    "s-forge": (dict(factor="import os, struct, sys\nforged = b'[' * 200_000\n"
                            "os.write(int(sys.argv[3]), struct.pack('!Q', len(forged)) + forged)\n" + FACTOR_SOLVED,
                     guess="my_guess = 0.5"), (0, 1)),
    "s-loop": (dict(factor=_fn("while True:\n    pass"), guess="while True:\n    pass"), (0, 0)),
    # a line that raises is reported, and the definitions after it still count
    "s-raises": (dict(factor="1 / 0\n" + FACTOR_SOLVED, guess="raise SystemExit"), (2, 0)),
    # a later cell that kills its sandbox costs its own exercise only
    "s-crash": (dict(factor=FACTOR_SOLVED, guess="import os\nos._exit(1)"), (2, 0)),
    "s-forged": (dict(edit=_forge), (0, 0)),
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_exercise_of_the_book_can_be_graded(path):
    nb = nbformat.read(path, as_version=4)
    exercises = find_exercises(nb)
    assert exercises, f"{path.name} has no exercise"
    graded = graded_notebook(nb)
    tests = [c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata.nbgrader.grade_id for c in tests] == [ex.label for ex in exercises]
    for cell, ex in zip(tests, exercises):
        assert "award" not in cell.source and 1 <= ex.points <= 5
        assert 1 <= ex.minutes <= 60 and ex.level.split()[-1] in {"easy", "medium", "hard"} and ex.goal
    starters = [c for c in graded.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    assert len(starters) == sum(len(ex.starters) for ex in exercises), "only starter cells stay editable"
    assert "{solution-start}" not in "".join(c.source for c in graded.cells)


def test_find_exercises_names_what_is_missing():
    nb = nbformat.v4.new_notebook(cells=[new_md("```{exercise} E\n:label: e\n\nDo it.\n```"), new_code("x = 1")])
    with pytest.raises(ValueError, match="'e' lacks the line"):
        find_exercises(nb)
    nb.cells[0].source = _exercise("e", "E", 1)
    with pytest.raises(ValueError, match="'e' has no solution"):
        find_exercises(nb)
    nb.cells += [*_solution("e", "x = 2"), new_code("print(x)")]
    with pytest.raises(ValueError, match="must run a checker"):
        find_exercises(nb)


def test_submissions_are_collected_from_folders_or_a_flat_download(tmp_path):
    names = {"01_tiny.ipynb", "02_more.ipynb"}
    (tmp_path / "ana" / "deep").mkdir(parents=True)
    (tmp_path / "ana" / "deep" / "01_tiny.ipynb").write_text("{}")
    (tmp_path / "smithjane_1234_5678_01_tiny.ipynb").write_text("{}")
    (tmp_path / "smithjane_1234_5678_02_more-1.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    found = collect(tmp_path, names)
    assert set(found) == {"ana", "smithjane_1234"}  # Canvas's name and user id
    assert set(found["smithjane_1234"]) == names and set(found["ana"]) == {"01_tiny.ipynb"}
    # Only regular files inside a student's own folder: a link to another student's notebook, a
    # folder reached through a link, or a named pipe (which would block the grader) is not read.
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "01_tiny.ipynb").symlink_to(tmp_path / "ana" / "deep" / "01_tiny.ipynb")
    (tmp_path / "bob" / "theirs").symlink_to(tmp_path / "ana", target_is_directory=True)
    os.mkfifo(tmp_path / "bob" / "02_more.ipynb")
    (tmp_path / "eve").symlink_to(tmp_path / "ana", target_is_directory=True)
    (tmp_path / "eve_1_2_02_more.ipynb").symlink_to(tmp_path / "smithjane_1234_5678_02_more-1.ipynb")
    found = collect(tmp_path, names)
    assert found["bob"] == {} and "eve" not in found, found
    (tmp_path / "bad id").mkdir()
    with pytest.raises(ValueError, match="'bad id'"):
        collect(tmp_path, names)


@pytest.mark.slow
@pytest.mark.coursework
def test_a_class_is_graded_in_sandboxes_and_no_strategy_games_it(tmp_path):
    root = tmp_path / "book"
    _tiny_book(root)
    course = tmp_path / "course"
    from tools.classroom import release

    handed_out = nbformat.read(release(1, tmp_path / "release", course, root=root)[0], as_version=4)
    assert "award" not in "".join(c.source for c in handed_out.cells)
    submissions = tmp_path / "submissions"
    for name, (kwargs, _) in STUDENTS.items():
        _submission(handed_out, submissions / name, **kwargs)
    (submissions / "s-absent").mkdir()

    started = time.monotonic()
    rows = grade(submissions, 1, course, root=root, cell_seconds=5)
    took = time.monotonic() - started
    grades = (course / "grades.csv").read_text(encoding="utf-8")
    time.sleep(3)  # s-linger's process would rewrite the grades now, were it still alive
    assert (course / "grades.csv").read_text(encoding="utf-8") == grades

    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        table = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    assert len(table) == len(rows) == 2 * (len(STUDENTS) + 1)
    for name, (_, expected) in STUDENTS.items():
        got = tuple(float(table[name, ex]["points"]) for ex in ("ex-factor", "ex-guess"))
        assert got == pytest.approx(expected, abs=0.01), (name, got)
    assert table[SECRET, "ex-factor"]["max_points"] == "2" and table[SECRET, "ex-guess"]["max_points"] == "1"
    assert "not submitted" in table["s-absent", "ex-factor"]["review"]
    assert not table[SECRET, "ex-factor"]["review"]
    with open(course / "totals.csv", newline="", encoding="utf-8") as f:
        totals = {r["student"]: float(r["points"]) for r in csv.DictReader(f)}
    assert totals[SECRET] == 3 and totals["s-crash"] == 2
    with open(course / "lms.csv", newline="", encoding="utf-8") as f:
        lms = list(csv.DictReader(f))
    assert {r["SIS Login ID"]: float(r["Chapter 1 (3 points)"]) for r in lms}[SECRET] == 3

    def feedback(name: str) -> str:
        return (course / "feedback" / name / "ch1" / "01_tiny.html").read_text(encoding="utf-8")

    assert "3 of 3" not in feedback(SECRET) and "2 of 2 points" in feedback(SECRET)
    assert "not implemented yet" in feedback("s-untouched") and "no prediction yet" in feedback("s-untouched")
    for name in ("s-key", "s-key-copy"):
        assert "not available while grading" in feedback(name), name
    assert "took longer than" in feedback("s-loop") and "(in my_per_layer_factor, line 1: def" in feedback("s-loop")
    assert "/judge" in feedback("s-snoop") and "returned a str" in feedback("s-snoop")
    assert "ZeroDivisionError" in feedback("s-raises")
    assert "not implemented yet" in feedback("s-forged"), "the grader runs the book's checker, not the forgery"
    for name in STUDENTS:
        text = feedback(name)
        assert len(text) < 200_000, f"{name}'s feedback is {len(text)} characters"
        if name != SECRET:
            assert SECRET not in text, f"{name}'s feedback holds another student's id"
    # the class's size and the two cores of CI: a class of 20 one-notebook submissions in a few minutes
    assert took < 240, f"grading {len(STUDENTS)} students took {took:.0f} s"

    # A regrade draws the same hidden cases: the same grades.
    grade(submissions, 1, course, root=root, cell_seconds=5)
    assert (course / "grades.csv").read_text(encoding="utf-8") == grades


@pytest.mark.slow
@pytest.mark.coursework
def test_predictions_are_graded_from_the_hand_in_made_before_the_measurement(tmp_path):
    root = tmp_path / "book"
    _tiny_book(root)
    [early] = write_predictions(1, tmp_path / "predictions", root=root)
    assert early.name == "01_tiny_predictions.ipynb"
    text = "".join(c.source for c in nbformat.read(early, as_version=4).cells)
    assert GUESS in text and "Predict a half" in text and "Your reasoning" in text
    assert "measured" not in text and "my_per_layer_factor" not in text, "only the predictions, nothing measured"
    assert "{exercise}" not in text, "the exercise's text is plain markdown, as JupyterLab shows it"

    from tools.classroom import release

    course = tmp_path / "course"
    handed_out = nbformat.read(release(1, tmp_path / "release", course, root=root)[0], as_version=4)
    submissions, first = tmp_path / "submissions", tmp_path / "first"
    # ada predicted 0.5 beforehand and kept it; bo predicted 0.9, then wrote 0.5 after seeing
    # the measurement; cy handed in no prediction; di's first hand-in computed its prediction
    # (running the experiment, say), which is not a prediction: refused, nothing of it runs.
    measured = "import helpers\nmy_guess = helpers.measure.per_layer_factor([1.0, 0.5, 0.25])"
    for name, before, after in (("ada", "0.5", "0.5"), ("bo", "0.9", "0.5"), ("cy", None, "0.5"),
                                ("di", measured, "0.5")):
        _submission(handed_out, submissions / name, factor=FACTOR_SOLVED, guess=f"my_guess = {after}")
        if before is not None:
            nb = nbformat.read(early, as_version=4)
            for cell in nb.cells:
                if cell.source == GUESS:
                    cell.source = before if "\n" in before else f"my_guess = {before}"
                elif cell.source.startswith("**Your reasoning**") and name == "ada":
                    cell.source += "A factor of a half per layer, so half."
            (first / name).mkdir(parents=True)
            nbformat.write(nb, first / name / early.name)
    grade(submissions, 1, course, root=root, cell_seconds=5, predictions=first)
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        table = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    assert [float(table[n, "ex-guess"]["points"]) for n in ("ada", "bo", "cy", "di")] == [1, 0, 0, 0]
    assert [float(table[n, "ex-factor"]["points"]) for n in ("ada", "bo", "cy", "di")] == [2, 2, 2, 2]
    assert "written down, not computed" in table["di", "ex-guess"]["review"]
    assert "not handed in" in table["cy", "ex-guess"]["review"]
    assert "no reasoning" in table["bo", "ex-guess"]["review"] and not table["ada", "ex-guess"]["review"]
    feedback = (course / "feedback" / "ada" / "ch1" / "01_tiny.html").read_text(encoding="utf-8")
    assert "A factor of a half per layer" in feedback


BACKPROP = "def my_backprop(x, y, W1, b1, W2, b2, activation):\n    return None"
BACKPROP_SOLVED = """def my_backprop(x, y, W1, b1, W2, b2, activation):
    z1 = W1 @ x + b1
    if activation == "relu":
        a1, slope = np.maximum(z1, 0.0), (z1 > 0).astype(float)
    else:
        a1 = 1.0 / (1.0 + np.exp(-z1))
        slope = a1 * (1.0 - a1)
    delta2 = W2 @ a1 + b2 - y
    delta1 = (W2.T @ delta2) * slope
    return {"W1": np.outer(delta1, x), "b1": delta1, "W2": np.outer(delta2, a1), "b2": delta2}"""


def _by_autograd(route: str) -> str:
    """A backward pass that asks PyTorch for it, by ``route`` (code given ``W``, the parameters
    as float64 tensors, and ``loss(W)``), returning the dict of gradients ``grads``."""
    return textwrap.dedent("""\
        import torch
        def my_backprop(x, y, W1, b1, W2, b2, activation):
            f = torch.relu if activation == "relu" else torch.sigmoid
            names = ("W1", "b1", "W2", "b2")
            W = [torch.tensor(v) for v in (W1, b1, W2, b2)]
            def loss(*p):
                return 0.5 * ((p[2] @ f(p[0] @ torch.tensor(x) + p[1]) + p[3] - torch.tensor(y)) ** 2).sum()
        """) + textwrap.indent(textwrap.dedent(route), "    ") + \
        "\n    return {n: g.detach().numpy() for n, g in zip(names, grads)}"


@pytest.mark.slow
@pytest.mark.coursework
def test_a_backward_pass_by_hand_is_graded_by_hand_only(tmp_path):
    """Issue 48.6: the backprop exercise puts autograd off limits, and the grader enforces it
    however autograd is reached (not only by its name); a numerical gradient fails the large
    hidden case; a copy of the reference code, or of another student, is flagged for review."""
    root = tmp_path / "book"
    (root / "book" / "ch2").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/ch2/index\nchapters:\n  - file: book/ch2/01_tiny\n")
    (root / "book" / "ch2" / "index.md").write_text("# Tiny\n")
    nbformat.write(nbformat.v4.new_notebook(cells=[
        new_md("# Backprop"), new_code("import numpy as np\n\nimport helpers"),
        new_md(_exercise("ex-backprop", "Backprop by hand", 8)), new_code(BACKPROP),
        *_solution("ex-backprop", BACKPROP_SOLVED),
        new_code("helpers.grading.check_two_layer_backprop(my_backprop)"),
    ]), root / "book" / "ch2" / "01_tiny.ipynb")
    from tools.classroom import release

    course = tmp_path / "course"
    handed_out = nbformat.read(release(2, tmp_path / "release", course, root=root)[0], as_version=4)
    renamed = (BACKPROP_SOLVED.replace("delta", "err").replace("slope", "fprime").replace("a1", "h")
               .replace("    z1", "    # the forward pass\n    z1"))
    loops = textwrap.dedent("""\
        def my_backprop(x, y, W1, b1, W2, b2, activation):
            h = [max(v, 0.0) if activation == "relu" else 1 / (1 + np.exp(-v)) for v in W1 @ x + b1]
            h = np.array(h)
            out = W2 @ h + b2
            e2 = out - y
            gate = (h > 0) * 1.0 if activation == "relu" else h * (1 - h)
            e1 = gate * (W2.T @ e2)
            gW1 = np.zeros_like(W1)
            for i in range(len(e1)):
                gW1[i] = e1[i] * x
            return dict(W1=gW1, b1=e1, W2=e2[:, None] * h[None, :], b2=e2)""")
    numerical = textwrap.dedent("""\
        def my_backprop(x, y, W1, b1, W2, b2, activation):
            f = (lambda z: np.maximum(z, 0)) if activation == "relu" else (lambda z: 1 / (1 + np.exp(-z)))
            p = {"W1": W1.copy(), "b1": b1.copy(), "W2": W2.copy(), "b2": b2.copy()}
            loss = lambda: 0.5 * np.sum((p["W2"] @ f(p["W1"] @ x + p["b1"]) + p["b2"] - y) ** 2)
            grads = {}
            for k, v in p.items():
                flat, g = v.reshape(-1), np.zeros(v.size)
                for i in range(v.size):
                    flat[i] += 1e-6
                    up = loss()
                    flat[i] -= 2e-6
                    g[i] = (up - loss()) / 2e-6
                    flat[i] += 1e-6
                grads[k] = g.reshape(v.shape)
            return grads""")
    students = {  # id: (answer, points of 8 (or their range), what the review column must say)
        "honest": (textwrap.dedent("""\
            def my_backprop(x, y, W1, b1, W2, b2, activation):
                pre = np.dot(W1, x) + b1
                act = np.where(pre > 0, pre, 0.0) if activation == "relu" else 1 / (1 + np.exp(-pre))
                d_act = np.where(pre > 0, 1.0, 0.0) if activation == "relu" else act - act ** 2
                d_out = np.dot(W2, act) + b2 - y
                d_pre = d_act * np.dot(d_out, W2)
                return {"W2": np.einsum("i,j->ij", d_out, act), "b2": d_out,
                        "W1": np.einsum("i,j->ij", d_pre, x), "b1": d_pre}"""), 8, None),
        "loops": (loops, 8, "twin-a"),  # the twins copied it
        "copy-of-key": (renamed, 8, "the course's reference code"),
        "twin-a": (loops.replace("gate", "mask"), 8, "loops, twin-b"),
        "twin-b": ("# mine\n" + loops.replace("e1", "back").replace("gW1", "grad_w1").replace("out =", "\n    out ="),
                   8, "twin-a"),
        "numerical": (numerical, 0, None),  # passes small cases, fails the large one: no points
        "getattr": (_by_autograd("""\
            for t in W:
                t.requires_grad_(True)
            getattr(loss(*W), "back" + "ward")()
            grads = [t.grad for t in W]"""), 0, "used PyTorch's autograd"),
        "func-vjp": (_by_autograd("""\
            from torch.func import vjp
            _, pull = vjp(loss, *W)
            grads = pull(torch.tensor(1.0, dtype=torch.float64))"""), 0, "used PyTorch's autograd"),
        "jacobian": (_by_autograd("""\
            from torch.autograd.functional import jacobian
            grads = jacobian(loss, tuple(W))"""), 0, "names jacobian"),
        "engine": (_by_autograd("""\
            for t in W:
                t.requires_grad_(True)
            out = loss(*W)
            engine = torch.autograd.Variable._execution_engine
            engine.run_backward((out,), (torch.ones_like(out),), False, False, (), True)
            grads = [t.grad for t in W]"""), 0, "used PyTorch's autograd"),
        "caught": (_by_autograd("""\
            try:
                for t in W:
                    t.requires_grad_(True)
                loss(*W).backward()
            except BaseException:
                pass
            grads = [t.grad if t.grad is not None else torch.zeros_like(t) for t in W]"""), 0,
                   "used PyTorch's autograd"),
    }
    submissions = tmp_path / "submissions"
    for name, (answer, _, _) in students.items():
        nb = copy.deepcopy(handed_out)
        next(c for c in nb.cells if c.source == BACKPROP).source = answer
        (submissions / name).mkdir(parents=True)
        nbformat.write(nb, submissions / name / "01_tiny.ipynb")
    grade(submissions, 2, course, root=root, cell_seconds=5)
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        table = {r["student"]: r for r in csv.DictReader(f)}
    wrong = [(name, table[name]["points"], table[name]["review"]) for name, (_, points, review) in students.items()
             if round(float(table[name]["points"])) not in (points if isinstance(points, range) else [points])
             or (review is None and table[name]["review"]) or (review and review not in table[name]["review"])]
    assert not wrong, wrong
    feedback = (course / "feedback" / "numerical" / "ch2" / "01_tiny.html").read_text(encoding="utf-8")
    assert "✗ hidden large case" in feedback and "cannot finish within the time limit" in feedback
    assert "No points: the large case" in feedback
    for name in ("getattr", "func-vjp", "engine"):
        feedback = (course / "feedback" / name / "ch2" / "01_tiny.html").read_text(encoding="utf-8")
        assert "compute the backward pass yourself" in feedback, name


def _handed_in(nb: nbformat.NotebookNode, solved: bool) -> nbformat.NotebookNode:
    """The handed-out notebook, its exercises answered with the book's solutions (or untouched)."""
    released = graded_notebook(nb)
    for ex in find_exercises(nb):
        start = max(k for k in range(ex.checker) if nb.cells[k].cell_type == "markdown"
                    and "{solution-start}" in nb.cells[k].source)
        solution = "\n\n".join(c.source for c in nb.cells[start:ex.checker] if c.cell_type == "code")
        ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in released.cells]
        stop = ids.index(ex.label)
        first = max(k for k in range(stop) if ids[k]) + 1
        starters = [k for k in range(first, stop) if released.cells[k].cell_type == "code"]
        if solved:
            released.cells[starters[0]].source = solution
            for k in starters[1:]:
                released.cells[k].source = ""
    return released


@pytest.mark.slow
@pytest.mark.coursework
@pytest.mark.parametrize("chapter", sorted({int(p.parent.name[2:]) for p in NOTEBOOKS}))
def test_every_exercise_of_a_chapter_gives_the_books_solution_full_marks_in_the_sandbox(chapter, tmp_path):
    """The judge against the whole chapter: each exercise's hidden solution, handed in as a
    student's answer, earns every point; the untouched edition earns none."""
    from tools.classroom import chapter_notebooks

    for path in chapter_notebooks(chapter):
        nb = nbformat.read(path, as_version=4)
        for who, solved in (("solved", True), ("untouched", False)):
            (tmp_path / "class" / who).mkdir(parents=True, exist_ok=True)
            nbformat.write(_handed_in(nb, solved), tmp_path / "class" / who / path.name)
    rows = grade(tmp_path / "class", chapter, tmp_path / "course")
    wrong = [r for r in rows if r.points != (r.max_points if r.student == "solved" else 0)]
    assert not wrong, wrong
    assert {r.student for r in rows} == {"solved", "untouched"}


def test_canvas_and_moodle_downloads_keep_each_student_and_their_lms_ids(tmp_path):
    """Canvas's download names files ``sortablename[_LATE]_userid_submissionid_file``; two students
    of one name stay two students, and lms.csv carries each one's Canvas user id in "ID" (how
    Canvas's gradebook import finds a student). Moodle's download (files or folders
    ``Full Name_participantid_assignsubmission_file_...``) gives moodle.csv, its grading
    worksheet, by "Identifier". An LMS id that stands for two students is refused."""
    from tools.classroom import Row, _write_tables, lms_ids

    names = {"01_tiny.ipynb"}
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    for entry in ("smithjane_1234_9001_01_tiny.ipynb", "smithjane_LATE_5678_9002_01_tiny.ipynb"):
        (canvas / entry).write_text("{}")
    found = collect(canvas, names)
    assert set(found) == {"smithjane_1234", "smithjane_5678"}, "two students of one name were merged"
    ids = lms_ids(canvas)
    rows = [Row(s, "01_tiny", "ex", p, 2.0, "") for s, p in (("smithjane_1234", 2.0), ("smithjane_5678", 1.0))]
    _write_tables(tmp_path, rows, "Chapter 1", ids)
    with open(tmp_path / "lms.csv", newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Chapter 1 (2 points)"]
    assert sorted((r[1], r[5]) for r in table[1:]) == [("1234", "2"), ("5678", "1")]
    assert all(r[0] == "smithjane" and r[3] == "" for r in table[1:]), "no folder name in the login column"
    assert not (tmp_path / "moodle.csv").exists()

    (canvas / "smithj_1234_9003_01_tiny.ipynb").write_text("{}")  # user 1234 under a second name
    with pytest.raises(ValueError, match="canvas id 1234 belongs to two students"):
        collect(canvas, names)

    moodle = tmp_path / "moodle"
    (moodle / "Jane Smith_4321_assignsubmission_file_").mkdir(parents=True)
    (moodle / "Jane Smith_4321_assignsubmission_file_" / "01_tiny.ipynb").write_text("{}")
    (moodle / "Jane Smith_8765_assignsubmission_file_01_tiny.ipynb").write_text("{}")
    found = collect(moodle, names)
    assert set(found) == {"JaneSmith_4321", "JaneSmith_8765"} and all(found.values())
    out = tmp_path / "out"
    out.mkdir()
    _write_tables(out, [Row(s, "01_tiny", "ex", 1.5, 2.0, "") for s in found], "Chapter 1", lms_ids(moodle))
    with open(out / "moodle.csv", newline="", encoding="utf-8") as f:
        worksheet = list(csv.DictReader(f))
    assert sorted((r["Identifier"], r["Full name"], r["Grade"], r["Maximum Grade"]) for r in worksheet) == [
        ("Participant 4321", "Jane Smith", "1.5", "2"), ("Participant 8765", "Jane Smith", "1.5", "2")]


def test_each_hand_in_round_draws_its_own_hidden_cases_and_a_regrade_the_same(tmp_path):
    from tools.classroom import class_seed

    first = class_seed(tmp_path)
    assert class_seed(tmp_path) == first == class_seed(tmp_path, 1), "a regrade draws the same cases"
    second = class_seed(tmp_path, 2)
    assert second != first and class_seed(tmp_path, 2) == second and class_seed(tmp_path, 1) == first
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "class.json").write_text('{"seed": 17}\n')  # a course folder from before rounds
    assert class_seed(tmp_path / "old") == 17
    with pytest.raises(ValueError, match="round"):
        class_seed(tmp_path, 0)


@pytest.mark.slow
@pytest.mark.coursework
def test_a_class_graded_in_shards_and_merged_gives_the_files_of_one_run(tmp_path):
    """For a class too large for one machine: `seed` draws the round's seed once, each shard
    (one command, as a batch scheduler's job array runs them) grades its share of the students,
    and `merge` writes the same grades, totals, grade book imports and feedback as one run."""
    from tools.classroom import class_seed, merge, release

    root = tmp_path / "book"
    _tiny_book(root)
    handed_out = nbformat.read(release(1, tmp_path / "release", tmp_path / "c0", root=root)[0], as_version=4)
    submissions = tmp_path / "submissions"
    for name in (SECRET, "s-untouched", "s-partial", "s-raises", "s-key"):
        _submission(handed_out, submissions / name, **STUDENTS[name][0])
    for name in ("s-twin-a", "s-twin-b"):  # one copied the other; they land in different shards
        _submission(handed_out, submissions / name, factor=HONEST.replace("logs", "values"))
    whole, sharded = tmp_path / "whole", tmp_path / "sharded"
    seed = class_seed(sharded)
    whole.mkdir()
    (whole / "class.json").write_text((sharded / "class.json").read_text())
    grade(submissions, 1, whole, root=root, cell_seconds=5)
    with pytest.raises(ValueError, match="no seed drawn for round 2"):
        grade(submissions, 1, sharded, root=root, shard=(1, 2), round_=2)
    for k in (1, 2):
        grade(submissions, 1, sharded, root=root, cell_seconds=5, shard=(k, 2))
    merge(sharded, 2)
    assert class_seed(sharded) == seed
    for name in ("grades.csv", "totals.csv", "lms.csv"):
        assert (sharded / name).read_text() == (whole / name).read_text(), name

    def tree(folder):
        return {p.relative_to(folder).as_posix(): p.read_text() for p in (folder / "feedback").rglob("*.html")}

    assert tree(sharded) == tree(whole) and len(tree(whole)) == 7
    with open(whole / "grades.csv", newline="", encoding="utf-8") as f:
        review = {(r["student"], r["exercise"]): r["review"] for r in csv.DictReader(f)}
    assert "s-twin-b" in review["s-twin-a", "ex-factor"], "a copy is flagged across the shards"
    with pytest.raises(ValueError, match="shard 1 of 3 is missing"):
        merge(sharded, 3)
