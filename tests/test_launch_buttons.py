"""Launch buttons (``_config.yml``'s ``repository`` and ``launch_buttons``) and the repository's
link (``html.use_repository_button``): off as the book ships, and, once set, on every notebook
page, each launch button pointing at that page's notebook in the repository."""

from __future__ import annotations

import re

import pytest
import yaml
from minibook import one_page_book

from tools.toc import ROOT

pytestmark = pytest.mark.slow

REPO = "https://github.com/someone/residual-course"
HUB, BINDER, COLAB = "https://hub.example.edu", "https://mybinder.org", "https://colab.research.google.com"


def test_launch_buttons_are_off_as_the_book_ships():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    urls = [config["launch_buttons"].get(key) for key in ("jupyterhub_url", "binderhub_url", "colab_url")]
    assert not config["repository"]["url"] and not any(urls) and not config["html"]["use_repository_button"]


def test_a_set_hub_binder_and_colab_each_launch_the_pages_notebook_and_the_repository_is_linked(tmp_path):
    page = one_page_book(tmp_path, launch={"jupyterhub_url": HUB, "binderhub_url": BINDER, "colab_url": COLAB},
                         repository=REPO)
    links = set(re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8").replace("&amp;", "&")))
    # nbgitpuller clones the repository into a folder of its name, then opens the notebook there
    assert (f"{HUB}/hub/user-redirect/git-pull?repo=https%3A//github.com/someone/residual-course"
            "&urlpath=lab/tree/residual-course/book/ch1/page.ipynb&branch=main") in links, links
    assert f"{BINDER}/v2/gh/someone/residual-course/main?urlpath=lab/tree/book/ch1/page.ipynb" in links, links
    assert f"{COLAB}/github/someone/residual-course/blob/main/book/ch1/page.ipynb" in links, links
    assert REPO in links, "the repository, linked from the page's header"


def test_the_install_cell_installs_helpers_only_where_it_is_missing(tmp_path):
    """tools/launch.py's first cell, for Colab and hubs without the course: written once
    after the title, removed again, its `%pip` line a real IPython magic, and a no-op here."""
    import shutil

    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    from tools import launch
    from tools.toc import ROOT

    source = launch.install_source("https://github.com/someone/residual-course", "main")
    code = TransformerManager().transform_cell(source)
    assert ("get_ipython().run_line_magic('pip', 'install --quiet \"residual-course-helpers @ "
            "git+https://github.com/someone/residual-course@main\"')") in code
    calls = []

    class Shell:
        def run_line_magic(self, *args):
            calls.append(args)

    exec(code, {"get_ipython": Shell})  # helpers is installed here: nothing to do
    assert calls == []
    exec(code.replace('find_spec("helpers")', 'find_spec("no_such_course_package")'), {"get_ipython": Shell})
    assert calls == [("pip", 'install --quiet "residual-course-helpers @ git+https://github.com/someone/residual-course@main"')]

    path = tmp_path / "nb.ipynb"
    shutil.copyfile(ROOT / "book" / "ch1" / "01_degradation.ipynb", path)
    original = nbformat.read(path, as_version=4)
    once = launch.set_install_cell(launch.set_install_cell(original, source), source)
    tagged = [i for i, c in enumerate(once.cells) if launch.TAG in c.metadata.get("tags", [])]
    assert tagged == [1] and once.cells[0].source.startswith("# ") and "remove-cell" in once.cells[1].metadata.tags
    back = launch.set_install_cell(once, None)
    assert [c.source for c in back.cells] == [c.source for c in original.cells]
    for bad in ("http://github.com/a/b", "github.com/a/b", "https://github.com/a/b; rm -rf /", ""):
        with pytest.raises(ValueError, match="url must be"):
            launch.install_source(bad)
    with pytest.raises(ValueError, match="branch must be"):
        launch.install_source("https://github.com/a/b", "main\"; echo")
