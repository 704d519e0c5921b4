"""A book of one notebook page, built with the book's own configuration, for tests of settings
and extensions that need a real build but not the real book's pages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from tools.toc import ROOT


def one_page_book(root: Path, *, launch: dict | None = None, repository: str = "", branch: str = "main",
                  extensions=(), env: dict | None = None) -> Path:
    """Build, into ``root``, the book's own configuration (theme, HTML and launch settings) over a
    book of one notebook, ``book/ch1/page.ipynb``, with ``launch``, ``repository`` and its ``branch`` set and of
    the book's own extensions only ``extensions``; return the built page. ``env``: the build's
    environment (default this process's)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    local = config["sphinx"]["local_extensions"]
    config["sphinx"] = {"local_extensions": {name: str(ROOT / local[name]) for name in extensions}}
    config.pop("bibtex_bibfiles", None)
    config["execute"]["execute_notebooks"] = "off"
    config["html"].pop("favicon", None)
    if repository:
        config["repository"].update(url=repository, branch=branch)
        config["html"]["use_repository_button"] = True
    config["launch_buttons"].update(launch or {})
    (root / "_config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: book/ch1/page\n",
                                   encoding="utf-8")
    (root / "intro.md").write_text("# Intro\n\nThe book.\n", encoding="utf-8")
    (root / "book" / "ch1").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "references.bib", root / "book" / "references.bib")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page"),
                                         nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "book" / "ch1" / "page.ipynb")
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    build = subprocess.run([jupyter_book, "build", str(root), "-W", "-n"], cwd=root, capture_output=True, text=True,
                           timeout=600, env=env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return root / "_build" / "html" / "book" / "ch1" / "page.html"
