"""Make the student edition: one archive a student installs and runs with four commands.

    python -m tools.student student-edition        # or: make student

It writes ``student-edition/residual-course-student/`` and ``student-edition/residual-course-student.zip``:

* each chapter's notebooks as nbgrader hands them out (``tools/classroom.py``): no
  solutions, no outputs, the checker cells read-only, so the notebooks a student submits
  are the ones ``make grade`` grades; and each chapter's index page. Their markdown is
  made plain (``tools/plain_markdown.py``), so that JupyterLab shows exercises, numbers and
  citations as the site does; the glued numbers come from the book's executed notebooks
  (``tools/execute.py`` must have run, as ``make student`` does);
* ``wheels/``: the ``helpers`` package as a wheel (the package alone: no tests, no tools,
  no book), as the site's API pages publish it; no notebook prints an answer key
  (:func:`tools.classroom.printed_key`). A graded class keeps keys from its answers in the
  grader's sandbox (:mod:`tools.judge.keyfree`), where that can be enforced;
* ``requirements.txt``: the book's exact pins of what the notebooks need, and the wheel;
* ``README.md``: the commands, for students (PyTorch's CPU build first).

Nothing of the instructor's side goes in: no solutions, no ``For instructors`` page, no
tests.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

from tools.classroom import release
from tools.plain_markdown import book_markdown, contents, glued_numbers
from tools.toc import ROOT, page_title, toc_notebooks

NAME = "residual-course-student"
# Besides what ``helpers`` needs (its wheel's dependencies): JupyterLab and a kernel to run the notebooks.
TO_RUN_NOTEBOOKS = ("ipykernel", "jupyterlab")

README = """# Residual Connections, Measured: {edition}

The course's notebooks, with exercises and their checkers{solutions}.
You need Python 3.10 or newer. In this folder, run:

```bash
python3 -m venv .venv
.venv/bin/pip install {torch} --index-url https://download.pytorch.org/whl/cpu
.venv/bin/pip install -r requirements.txt
.venv/bin/jupyter lab
```

(On Windows: `py -m venv .venv`, then the same commands with `.venv\\Scripts\\pip` and
`.venv\\Scripts\\jupyter`.) The second command installs PyTorch's CPU build from PyTorch's own
index, about 200 MB: on Linux the Python Package Index would give the CUDA build, several GB,
which the course does not use (to use an NVIDIA GPU anyway, leave that command out). The
third installs the course's `helpers` package from `wheels/` and the exact versions the book
was tested with. The last opens JupyterLab in your browser.

Open a chapter's folder (`ch1/`, ...) and its notebooks in order, and run each from the top
(Run > Run All Cells; each takes under a minute). Each section ends with exercises: write
your code in the cell under the exercise, then run the checker cell below it, which says
what is right and what is not yet. The checker cells are read-only: run them, do not change
them. Hand in the notebooks as your instructor asks; they are graded by running them again
from the top, so make sure each one runs from a fresh kernel (Kernel > Restart Kernel and
Run All Cells).

The code is under the MIT licence (`LICENSE`), the text and figures under CC BY-SA 4.0
(`LICENSE-CONTENT`).
"""


def readme(torch_pin: str, *, solutions: bool = False) -> str:
    """The README of the student edition (``solutions=False``) or of the release's
    self-study notebooks, which install the same way; ``torch_pin`` is its first install."""
    if solutions:
        return README.format(edition="notebooks for self-study", torch=torch_pin,
                             solutions=", each solution folded under its exercise")
    return README.format(edition="student edition", torch=torch_pin, solutions=" (the solutions are not here)")


def student_requirements(wheel: Path, root: Path = ROOT) -> str:
    """The book's pins (``requirements.txt``) of the ``wheel``'s dependencies and of
    :data:`TO_RUN_NOTEBOOKS`, then the wheel itself."""
    with zipfile.ZipFile(wheel) as z:
        metadata = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    def normal(name: str) -> str:  # PEP 503: lazy_loader and lazy-loader are one package
        return re.sub(r"[-_.]+", "-", name).lower()

    needed = [normal(re.match(r"[A-Za-z0-9_.-]+", line.removeprefix("Requires-Dist:").strip())[0])
              for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    pins = {}
    for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            pins[normal(match[1])] = line.strip()
    packages = [*needed, *TO_RUN_NOTEBOOKS]
    missing = [p for p in packages if p not in pins]
    if missing:
        raise ValueError(f"requirements.txt has no exact pin for {missing}")
    return "".join(f"{pins[p]}\n" for p in packages) + f"./wheels/{wheel.name}\n"


def build_wheel(out_dir: Path, root: Path = ROOT) -> Path:
    """The ``helpers`` package alone as a wheel in ``out_dir`` (``pip wheel``, no dependencies)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as build:
        source = Path(build) / "source"  # a copy, so that setuptools' build/ lands outside the repository
        shutil.copytree(root / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copyfile(root / name, source / name)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", build,
                        str(source)], check=True, capture_output=True, text=True)
        (wheel,) = Path(build).glob("*.whl")
        return Path(shutil.copy(wheel, out_dir / wheel.name))


def _contents(notebooks: list[Path]) -> str:
    """A list of links to ``notebooks`` under their first headings (for ``{tableofcontents}``)."""
    return contents({path.name: page_title(path) for path in notebooks})


def make_student_edition(out_dir: Path, root: Path = ROOT) -> Path:
    """Write the student edition into ``out_dir / NAME`` and zip it as ``out_dir / NAME.zip``;
    return the archive's path."""
    out_dir = Path(out_dir)
    folder = out_dir / NAME
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    plain = book_markdown(glued_numbers(root), root)
    for chapter in dict.fromkeys(p.parent.name for p in toc_notebooks(root)):  # in reading order
        # nbgrader's release, from a course folder of its own: the instructor's class
        # (tools/classroom.py's OUT) may hold submissions, and then nbgrader will not
        # regenerate an assignment whose notebooks changed.
        notebooks = release(int(chapter.removeprefix("ch")), folder / chapter,
                            Path(root) / "_build" / "student-release", root=root)
        titles = {path.name: page_title(path) for path in notebooks}
        for path in notebooks:
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = plain(cell.source, path.name, titles)
            nbformat.write(nb, path)
        index = root / "book" / chapter / "index.md"
        if index.exists():
            text = index.read_text(encoding="utf-8").replace("```{tableofcontents}\n```", _contents(notebooks))
            (folder / chapter / "index.md").write_text(plain(text, "index.md", titles), encoding="utf-8")
    wheel = build_wheel(folder / "wheels", root)
    (folder / "requirements.txt").write_text(student_requirements(wheel, root), encoding="utf-8")
    torch = next(line for line in (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
                 if line.startswith("torch=="))
    (folder / "README.md").write_text(readme(torch), encoding="utf-8")
    for name in ("LICENSE", "LICENSE-CONTENT"):  # code MIT, text and figures CC BY-SA 4.0
        shutil.copyfile(root / name, folder / name)
    return Path(shutil.make_archive(str(out_dir / NAME), "zip", out_dir, NAME))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="where to write the student edition")
    args = parser.parse_args(argv)
    archive = make_student_edition(args.out_dir)
    print(f"wrote {args.out_dir / NAME}/ and {archive}")


if __name__ == "__main__":
    main()
