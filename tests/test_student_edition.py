"""The student edition: one archive, no solutions anywhere in it, plain markdown that JupyterLab
renders, and the commands that install and run it on a fresh machine (a clean venv)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

import helpers
from tools.classroom import END, START, printed_key, strip_solutions
from tools.plain_markdown import glued_text, plain_markdown
from tools.toc import ROOT, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
BIB = ROOT / "book" / "references.bib"


def _solution_code() -> dict[str, list[str]]:
    """{notebook: the source of each code cell that ``strip_solutions`` removes}."""
    found = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        kept = {cell.id for cell in strip_solutions(nb).cells}
        found[path.name] = [c.source for c in nb.cells if c.cell_type == "code" and c.id not in kept]
    return found


def test_plain_markdown_has_no_sphinx_left():
    number = iter(range(7, 100))
    text = ("```{exercise} Count\n:label: ex-c\n\nDo $x^2$ {cite}`he2016deep`.\n```\n\n"
            "It took {glue:text}`t:.1f` s and {glue:text}`other.ipynb::n` steps; {numref}`fig-a` shows it. "
            "See {func}`helpers.measure.paths` and {term}`skip <skip connection>`.")
    out = plain_markdown(text, glued={"here.ipynb": {"t": "2.345"}, "other.ipynb": {"n": "12"}}, here="here.ipynb",
                         bib=BIB, number=lambda: next(number))
    assert out.startswith("> **Exercise 7: Count**\n>\n> Do $x^2$ (He et al. 2016).")
    assert "It took 2.3 s and 12 steps; the figure shows it." in out
    assert "`helpers.measure.paths` and skip." in out and ":label:" not in out
    assert glued_text("'relu'", "") == "relu" and glued_text("0.12345", ".1%") == "12.3%"
    with pytest.raises(ValueError, match="nothing was glued under 'missing'"):
        plain_markdown("{glue:text}`missing`", glued={}, here="x.ipynb", bib=BIB, number=lambda: 1)
    links = plain_markdown("Read {doc}`02_b` and {doc}`the intro <01_a>`; see {doc}`../appendix/api`.", glued={},
                           here="x.ipynb", bib=BIB, number=lambda: 1,
                           titles={"01_a.ipynb": "A", "02_b.ipynb": "Two: B"})
    assert links == "Read [Two: B](02_b.ipynb) and [the intro](01_a.ipynb); see api."
    with pytest.raises(ValueError, match="no plain form"):
        plain_markdown("{download}`x`", glued={}, here="x.ipynb", bib=BIB, number=lambda: 1)


def test_plain_markdown_refers_back_to_exercises_by_number():
    labels, number = {}, iter(range(3, 100))
    first = plain_markdown("```{exercise} A\n:label: ex-a\n\nDo it.\n```", glued={}, here="x.ipynb", bib=BIB,
                           number=lambda: next(number), labels=labels)
    later = plain_markdown("As in {ref}`ex-a` (or {ref}`that one <ex-a>`), build a {class}`~helpers.models.Net`.",
                           glued={}, here="y.ipynb", bib=BIB, number=lambda: next(number), labels=labels)
    assert first.startswith("> **Exercise 3: A**") and labels == {"ex-a": "Exercise 3"}
    assert later == "As in Exercise 3 (or that one), build a `Net`."
    with pytest.raises(ValueError, match="no exercise labelled 'ex-b'"):
        plain_markdown("See {ref}`ex-b`.", glued={}, here="x.ipynb", bib=BIB, number=lambda: 1, labels=labels)


@pytest.mark.slow
@pytest.mark.coursework
def test_student_edition_is_one_archive_without_solutions(student_archive):
    with zipfile.ZipFile(student_archive) as z:
        names = z.namelist()
        texts = {n: z.read(n) for n in names if not n.endswith("/")}
    top = {n.split("/")[1] for n in names if n.count("/") >= 1 and n.split("/")[1]}
    assert top == {"README.md", "requirements.txt", "wheels", "LICENSE", "LICENSE-CONTENT",
                   *{p.parent.name for p in NOTEBOOKS}}
    assert not any("instructors" in n for n in names)
    (wheel,) = [n for n in names if n.endswith(".whl")]
    with zipfile.ZipFile(__import__("io").BytesIO(texts[wheel])) as w:
        packaged = {n.split("/")[0] for n in w.namelist()}
        texts.update({f"{wheel}:{n}": w.read(n) for n in w.namelist()})
    dist_info = f"residual_course_helpers-{helpers.__version__}.dist-info"
    assert packaged == {"helpers", dist_info}, "the wheel holds helpers only"
    shipped = {n.removeprefix(f"{wheel}:") for n in texts if n.startswith(f"{wheel}:helpers/")}
    ours = {p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == ours, f"the wheel is the helpers package as it is: {sorted(shipped ^ ours)}"
    everything = b"\n".join(texts.values()).decode("utf-8", "replace")
    for notebook, cells in _solution_code().items():
        for source in cells:
            assert source not in everything, f"a solution of {notebook} is in the student edition: {source[:60]}"
    assert START not in everything and END not in everything
    numbers = []
    for path in NOTEBOOKS:
        nb = nbformat.reads(texts[f"residual-course-student/{path.parent.name}/{path.name}"].decode(), as_version=4)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        left = re.findall(r"\{[a-z:-]+\}`|```\{|:::\{", markdown)
        assert not left, f"{path.name}: JupyterLab would show raw MyST: {left}"
        numbers += [int(n) for n in re.findall(r"\*\*Exercise (\d+):", markdown)]
        assert not [c for c in nb.cells if c.cell_type == "code" and printed_key(c.source)], \
            f"{path.name} prints an answer key"
        checkers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert checkers and all(c.metadata.get("editable") is False for c in checkers)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert numbers == list(range(1, len(numbers) + 1)), "exercises are numbered as on the site"
    requirements = texts["residual-course-student/requirements.txt"].decode()
    assert "torch==2.13.0" in requirements and f"./{wheel.split('/', 1)[1]}" in requirements


@pytest.mark.install
@pytest.mark.coursework
def test_student_edition_installs_and_runs_in_a_clean_venv(student_archive, tmp_path):
    """The README's commands on a fresh venv (PyTorch's CPU build from its index first; here
    that index is out of reach and pip takes the same wheel from the machine's own), then a
    notebook run from the top."""
    with zipfile.ZipFile(student_archive) as z:
        z.extractall(tmp_path)
    folder = tmp_path / "residual-course-student"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    commands = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert commands[0] == "python3 -m venv .venv" and commands[-1] == ".venv/bin/jupyter lab", commands
    assert "--index-url https://download.pytorch.org/whl/cpu" in commands[1] and commands[1].split()[2] in (
        folder / "requirements.txt").read_text(encoding="utf-8").splitlines(), "the CPU build of the pinned torch"
    python = Path(sys.base_prefix) / "bin" / "python3"  # not this test's venv: a clean one
    install = " && ".join(commands[:-1]).replace("python3", str(python), 1)
    subprocess.run(install, shell=True, cwd=folder, check=True, capture_output=True, text=True, timeout=1200)
    version = subprocess.run([".venv/bin/python", "-c", "import torch; print(torch.__version__)"], cwd=folder,
                             capture_output=True, text=True, check=True).stdout
    assert version.strip().endswith("+cpu"), f"the venv has torch {version}, not the CPU build"
    notebook = "ch1/04_vanishing_gradients.ipynb"
    run = subprocess.run([".venv/bin/jupyter", "nbconvert", "--to", "notebook", "--execute", notebook,
                          "--output", str(tmp_path / "run.ipynb"), "--ExecutePreprocessor.timeout=600"],
                         cwd=folder, capture_output=True, text=True, timeout=900,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COURSE_STATIC_BUILD": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    outputs = (tmp_path / "run.ipynb").read_text(encoding="utf-8")
    assert "not implemented yet" in outputs and "no prediction yet" in outputs
