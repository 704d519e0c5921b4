"""Make the student edition: one archive a student installs and runs with two commands.

    python -m tools.student student-edition        # or: make student

It writes ``student-edition/residual-course-student/`` and ``student-edition/residual-course-student.zip``:

* each chapter's notebooks as nbgrader hands them out (``tools/classroom.py``): no
  solutions, no outputs, the checker cells read-only, so the notebooks a student submits
  are the ones ``make grade`` grades; and each chapter's index page. Their markdown is
  made plain (``tools/plain_markdown.py``), so that JupyterLab shows exercises, numbers and
  citations as the site does; the glued numbers come from the book's executed notebooks
  (``tools/execute.py`` must have run, as ``make student`` does);
* ``wheels/``: the ``helpers`` package as a wheel (the package alone: no tests, no tools,
  no book), in which each answer key that the lessons and checkers compute with
  (:data:`tools.answer_tables.KEYS`) is a look-up of the answers it gave to the calls the
  notebooks make, and no notebook prints one (:func:`tools.classroom.printed_key`);
* ``requirements.txt``: the book's exact pins of what the notebooks need, and the wheel;
* ``README.md``: the two commands, for students.

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
from collections.abc import Callable
from pathlib import Path

import nbformat

from tools import answer_tables
from tools.classroom import release
from tools.execute import CACHE, executed_notebook, read_cache
from tools.plain_markdown import glued_values, plain_markdown
from tools.toc import ROOT, page_title, toc_notebooks

NAME = "residual-course-student"
# Besides what ``helpers`` needs (its wheel's dependencies): JupyterLab and a kernel to run the notebooks.
TO_RUN_NOTEBOOKS = ("ipykernel", "jupyterlab")

README = """# Residual Connections, Measured: student edition

The course's notebooks, with exercises and their checkers (the solutions are not here).
You need Python 3.10 or newer. In this folder, run:

```bash
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt
.venv/bin/jupyter lab
```

(On Windows: `py -m venv .venv`, then `.venv\\Scripts\\pip install -r requirements.txt` and
`.venv\\Scripts\\jupyter lab`.) The first command installs the course's `helpers` package from
`wheels/` and the exact versions the book was tested with, PyTorch among them. The second
opens JupyterLab in your browser.

**On Linux, get PyTorch's CPU build** (a few hundred MB): from the Python Package Index, pip
installs the Linux build with CUDA, several GB, which the course does not use. Ask PyTorch's
own index for the CPU build instead, in the first command:

```bash
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt --extra-index-url https://download.pytorch.org/whl/cpu
```

(On Windows and macOS the default build is already the CPU one.)

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


def student_requirements(wheel: Path, root: Path = ROOT) -> str:
    """The book's pins (``requirements.txt``) of the ``wheel``'s dependencies and of
    :data:`TO_RUN_NOTEBOOKS`, then the wheel itself."""
    with zipfile.ZipFile(wheel) as z:
        metadata = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    needed = [re.match(r"[A-Za-z0-9_.-]+", line.removeprefix("Requires-Dist:").strip())[0].lower()
              for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    pins = {}
    for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            pins[match[1].lower()] = line.strip()
    packages = [*needed, *TO_RUN_NOTEBOOKS]
    missing = [p for p in packages if p not in pins]
    if missing:
        raise ValueError(f"requirements.txt has no exact pin for {missing}")
    return "".join(f"{pins[p]}\n" for p in packages) + f"./wheels/{wheel.name}\n"


def build_wheel(out_dir: Path, root: Path = ROOT) -> Path:
    """The ``helpers`` package as a wheel in ``out_dir`` (``pip wheel``, no dependencies), its
    answer keys replaced by the answers they gave (:mod:`tools.answer_tables`, which records
    them first where the book changed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table = answer_tables.record(root / answer_tables.OUT.relative_to(ROOT), root)
    with tempfile.TemporaryDirectory() as build:
        source = Path(build) / "source"  # a copy, so that setuptools' build/ lands outside the repository
        answer_tables.student_copy(source, table, root)
        for name in ("pyproject.toml", "README.md"):
            shutil.copyfile(root / name, source / name)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", build,
                        str(source)], check=True, capture_output=True, text=True)
        (wheel,) = Path(build).glob("*.whl")
        return Path(shutil.copy(wheel, out_dir / wheel.name))


def glued_numbers(root: Path = ROOT, *, strict: bool = True) -> dict[str, dict[str, str]]:
    """{notebook file name: {glue name: value}} from the executed notebooks in the cache.

    A notebook without a cached run of its current code raises (``strict``), or is left out."""
    cache_path = root / CACHE.relative_to(ROOT)
    if not strict and not cache_path.is_dir():
        return {}
    cache, glued = read_cache(cache_path), {}
    for path in toc_notebooks(root):
        try:
            glued[path.name] = glued_values(executed_notebook(path, cache))
        except KeyError as err:
            if strict:
                raise RuntimeError(f"{path.relative_to(root)} has not been executed for its current code: run "
                                   "`python -m tools.execute` (or `make site`) first") from err
    return glued


def contents(links: dict[str, str]) -> str:
    """A numbered list of markdown links, {target: title} (for ``{tableofcontents}``)."""
    return "\n".join(f"1. [{title}]({target})" for target, title in links.items())


def _contents(notebooks: list[Path]) -> str:
    """A list of links to ``notebooks`` under their first headings (for ``{tableofcontents}``)."""
    return contents({path.name: page_title(path) for path in notebooks})


def book_markdown(glued: dict[str, dict[str, str]], root: Path = ROOT,
                  missing: Callable[[str, str], str] | None = None) -> Callable[[str, str, dict[str, str]], str]:
    """``plain(text, here, titles)``: :func:`~tools.plain_markdown.plain_markdown` with the
    book's bibliography, one exercise count through the book and the exercise labels met so
    far; call it on every page's markdown in reading order."""
    bib, count, labels = root / "book" / "references.bib", iter(range(1, 10**6)), {}

    def plain(text: str, here: str, titles: dict[str, str]) -> str:
        return plain_markdown(text, glued=glued, here=here, bib=bib, number=lambda: next(count), titles=titles,
                              labels=labels, missing=missing)

    plain.labels = labels
    return plain


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
    (folder / "README.md").write_text(README, encoding="utf-8")
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
