"""The notebooks that the site's launch buttons open: the learner's copies, published on a
branch of their own (as QuantEcon publishes its lectures' notebooks).

    python -m tools.launch STUDENT_EDITION OUT --repository https://github.com/OWNER/REPO
    # or: make notebooks REPOSITORY=https://github.com/OWNER/REPO

A launch button (Binder, a JupyterHub through nbgitpuller, Colab) opens
``{branch}/book/chN/NAME.ipynb`` of the repository that ``_config.yml``'s ``repository``
names. The book's own notebooks are MyST sources with their solutions inline and no numbers;
what a learner should open is the student edition's copy (:mod:`tools.student`: no
solutions, the checker cells read-only, the markdown plain with the measured numbers filled
in). This writes, into ``OUT``, the student edition laid out as the book is
(``book/chN/...``), so that every button's path exists there, with:

* in each notebook, after its title, one cell for Colab and a hub without the course: where
  ``helpers`` is missing it runs ``%pip install "residual-course-helpers @ git+URL@COMMIT"``,
  the commit this tree was built from (so the package matches the notebooks), whose
  dependencies are unpinned (``pyproject.toml``: Colab keeps its own PyTorch); where
  ``helpers`` is installed (Binder, the student edition) it does nothing. The book's own
  notebooks never carry it, so the site and the recorded runs are as they were;
* ``binder/requirements.txt``: PyTorch's CPU index, the student edition's pins and its
  ``helpers`` wheel, for Binder (repo2docker installs it from the tree's root).

Push ``OUT`` as the branch ``notebooks`` (the commands are printed) and set
``repository.branch: notebooks`` in ``_config.yml`` with the launch URLs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import nbformat

from tools.toc import ROOT

TAG = "course-install"
PACKAGE = "residual-course-helpers"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
URL = re.compile(r"^https://[\w.-]+(/[\w.~-]+)+?(\.git)?/?$")
REF = re.compile(r"^[\w./-]+$")
SOURCE = '''# On Colab, or a JupyterHub without this course: install its helpers package first
# (where it is installed already, nothing happens).
import importlib.util

if importlib.util.find_spec("helpers") is None:
    %pip install --quiet "{package} @ git+{url}@{ref}"'''


def install_source(url: str, ref: str) -> str:
    """The cell's source for the repository ``url`` (https) at ``ref`` (a commit, tag or
    branch); ``ValueError`` for an address or ref that is not one."""
    if not isinstance(url, str) or not URL.match(url):
        raise ValueError(f"url must be the repository's https address, e.g. https://github.com/OWNER/REPO, got {url!r}")
    if not isinstance(ref, str) or not REF.match(ref):
        raise ValueError(f"ref must be a commit, tag or branch name, got {ref!r}")
    return SOURCE.format(package=PACKAGE, url=url.rstrip("/"), ref=ref)


def with_install_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    """``nb`` with the install cell ``source`` after its first markdown cell (its title)."""
    nb = nbformat.from_dict(nb)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(source, metadata={"tags": [TAG]}))
    return nb


def commit(root: Path = ROOT) -> str:
    """The commit the working tree is at; ``ValueError`` if the tree has changes not committed
    (the install cell would name a commit that lacks them)."""
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True, check=True).stdout
    if dirty.strip():
        raise ValueError(f"commit first: the install cell names a commit, and these files differ from it:\n{dirty}")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def write_tree(edition: Path, out: Path, url: str, ref: str) -> list[Path]:
    """Write the launch tree for the student edition's folder ``edition`` into ``out`` (module
    docstring), each notebook with the install cell for ``url`` at ``ref``; return its notebooks."""
    source = install_source(url, ref)
    edition, out = Path(edition), Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(edition, out, ignore=shutil.ignore_patterns("ch[0-9]*"))
    notebooks = []
    for chapter in sorted(edition.glob("ch[0-9]*")):
        shutil.copytree(chapter, out / "book" / chapter.name)
        for path in sorted((out / "book" / chapter.name).glob("*.ipynb")):
            nbformat.write(with_install_cell(nbformat.read(path, as_version=4), source), path)
            notebooks.append(path)
    pins = (edition / "requirements.txt").read_text(encoding="utf-8")
    (out / "binder").mkdir()
    (out / "binder" / "requirements.txt").write_text(
        "# Binder (repo2docker, from the tree's root): PyTorch's CPU build, the pins, the course's helpers\n"
        f"--extra-index-url {CPU_INDEX}\n{pins}", encoding="utf-8")
    return notebooks


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("edition", type=Path, help="the student edition's folder (make student)")
    parser.add_argument("out", type=Path, help="where to write the tree")
    parser.add_argument("--repository", required=True, help="the course's public repository (https)")
    args = parser.parse_args(argv)
    try:
        notebooks = write_tree(args.edition, args.out, args.repository, commit())
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {len(notebooks)} notebooks to {args.out}; publish them as the branch `notebooks`:\n"
          f"  git -C {args.out} init -q -b notebooks && git -C {args.out} add -A && "
          f"git -C {args.out} commit -qm 'Learner notebooks'\n"
          f"  git -C {args.out} push --force {args.repository} notebooks\n"
          "and set repository.branch: notebooks in _config.yml with the launch URLs.")


if __name__ == "__main__":
    main()
