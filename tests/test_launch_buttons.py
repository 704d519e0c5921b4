"""Launch buttons (``_config.yml``'s ``repository`` and ``launch_buttons``) and the repository's
link (``html.use_repository_button``): off as the book ships, and, once set, on every notebook
page, each launch button pointing at that page's notebook in the repository."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from tools.toc import ROOT

pytestmark = pytest.mark.slow

REPO = "https://github.com/someone/residual-course"
HUB, BINDER, COLAB = "https://hub.example.edu", "https://mybinder.org", "https://colab.research.google.com"


def test_launch_buttons_are_off_as_the_book_ships():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    urls = [config["launch_buttons"].get(key) for key in ("jupyterhub_url", "binderhub_url", "colab_url")]
    assert not config["repository"]["url"] and not any(urls) and not config["html"]["use_repository_button"]


def _one_page_book(root: Path, launch: dict) -> Path:
    """The book's own configuration (theme, HTML and launch settings), with ``launch`` set, over a
    book of one notebook in ``book/ch1``; its extensions and bibliography left out."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    for key in ("sphinx", "bibtex_bibfiles"):
        config.pop(key, None)
    config["execute"]["execute_notebooks"] = "off"
    config["html"].pop("favicon", None)
    config["repository"].update(url=REPO)
    config["launch_buttons"].update(launch)
    config["html"]["use_repository_button"] = True
    (root / "_config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: book/ch1/page\n",
                                   encoding="utf-8")
    (root / "intro.md").write_text("# Intro\n\nThe book.\n", encoding="utf-8")
    (root / "book" / "ch1").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page"),
                                         nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "book" / "ch1" / "page.ipynb")
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    build = subprocess.run([jupyter_book, "build", str(root), "-W", "-n"], cwd=root, capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return root / "_build" / "html" / "book" / "ch1" / "page.html"


def test_a_set_hub_binder_and_colab_each_launch_the_pages_notebook_and_the_repository_is_linked(tmp_path):
    page = _one_page_book(tmp_path, {"jupyterhub_url": HUB, "binderhub_url": BINDER, "colab_url": COLAB})
    links = set(re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8").replace("&amp;", "&")))
    # nbgitpuller clones the repository into a folder of its name, then opens the notebook there
    assert (f"{HUB}/hub/user-redirect/git-pull?repo=https%3A//github.com/someone/residual-course"
            "&urlpath=lab/tree/residual-course/book/ch1/page.ipynb&branch=main") in links, links
    assert f"{BINDER}/v2/gh/someone/residual-course/main?urlpath=lab/tree/book/ch1/page.ipynb" in links, links
    assert f"{COLAB}/github/someone/residual-course/blob/main/book/ch1/page.ipynb" in links, links
    assert REPO in links, "the repository, linked from the page's header"
