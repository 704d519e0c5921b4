"""The cell that installs ``helpers`` where a notebook opens without the course (Colab, a
JupyterHub whose image lacks it), written into every notebook once the course has a public
repository to install from.

    python -m tools.launch install-cell https://github.com/OWNER/REPO [--branch main]
    python -m tools.launch install-cell --remove

It goes right after each notebook's title cell, tagged ``course-install`` (how it is found
again) and ``remove-cell`` (the site does not show it). Where ``helpers`` is installed
(``pip install -e .``, the student edition, Binder) it does nothing; elsewhere it runs
``%pip install "residual-course-helpers @ git+URL@BRANCH"``, whose dependencies are unpinned
(``pyproject.toml``), so Colab keeps its own PyTorch. It changes every notebook's code, so
run ``make sweep-changed`` afterwards. The book ships without it, as it ships without launch
buttons: both need the repository's address (``repository.url`` in ``_config.yml``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat

from tools.toc import ROOT, toc_notebooks

TAG = "course-install"
PACKAGE = "residual-course-helpers"
URL = re.compile(r"^https://[\w.-]+(/[\w.~-]+)+?(\.git)?/?$")
BRANCH = re.compile(r"^[\w./-]+$")
SOURCE = '''# On Colab, or a JupyterHub without this course: install its helpers package first
# (where it is installed already, nothing happens).
import importlib.util

if importlib.util.find_spec("helpers") is None:
    %pip install --quiet "{package} @ git+{url}@{branch}"'''


def install_source(url: str, branch: str = "main") -> str:
    """The cell's source for the repository ``url`` (https) and ``branch``; ``ValueError`` for
    an address or branch that is not one."""
    if not isinstance(url, str) or not URL.match(url):
        raise ValueError(f"url must be the repository's https address, e.g. https://github.com/OWNER/REPO, got {url!r}")
    if not isinstance(branch, str) or not BRANCH.match(branch):
        raise ValueError(f"branch must be a branch name, got {branch!r}")
    return SOURCE.format(package=PACKAGE, url=url.rstrip("/"), branch=branch)


def set_install_cell(nb: nbformat.NotebookNode, source: str | None) -> nbformat.NotebookNode:
    """``nb`` with its install cell set to ``source`` (after the first markdown cell), or
    removed (``None``); a notebook that had one keeps its place."""
    nb = nbformat.from_dict(nb)
    where = next((i for i, c in enumerate(nb.cells) if TAG in c.get("metadata", {}).get("tags", [])), None)
    if where is not None:
        del nb.cells[where]
    if source is not None:
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG, "remove-cell"]})
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
        nb.cells.insert(where if where is not None else first + 1, cell)
    return nb


def write_install_cells(source: str | None, root: Path = ROOT) -> list[Path]:
    """Set (or, with ``None``, remove) the install cell of every notebook of the book; return
    the notebooks changed."""
    changed = []
    for path in toc_notebooks(root):
        before = path.read_text(encoding="utf-8")
        nb = set_install_cell(nbformat.reads(before, as_version=4), source)
        after = nbformat.writes(nb) + "\n"
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cell = commands.add_parser("install-cell", help="write (or remove) every notebook's install cell")
    cell.add_argument("url", nargs="?", help="the course's public repository (https)")
    cell.add_argument("--branch", default="main")
    cell.add_argument("--remove", action="store_true")
    args = parser.parse_args(argv)
    if args.remove == bool(args.url):
        parser.error("give the repository's address, or --remove")
    changed = write_install_cells(None if args.remove else install_source(args.url, args.branch))
    print(f"changed {len(changed)} notebooks; now run `make sweep-changed` (their code changed)")


if __name__ == "__main__":
    main()
