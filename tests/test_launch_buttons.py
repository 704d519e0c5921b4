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
                         repository=REPO, branch="notebooks")
    links = set(re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8").replace("&amp;", "&")))
    # nbgitpuller clones the repository into a folder of its name, then opens the notebook there
    assert (f"{HUB}/hub/user-redirect/git-pull?repo=https%3A//github.com/someone/residual-course"
            "&urlpath=lab/tree/residual-course/book/ch1/page.ipynb&branch=notebooks") in links, links
    assert f"{BINDER}/v2/gh/someone/residual-course/notebooks?urlpath=lab/tree/book/ch1/page.ipynb" in links, links
    assert f"{COLAB}/github/someone/residual-course/blob/notebooks/book/ch1/page.ipynb" in links, links
    assert REPO in links, "the repository, linked from the page's header"


def test_the_install_cell_installs_helpers_only_where_it_is_missing():
    """The launch tree's cell for Colab and hubs without the course: its `%pip` line a real
    IPython magic naming the commit, a no-op where helpers is installed; bad input refused."""
    from IPython.core.inputtransformer2 import TransformerManager

    from tools import launch

    source = launch.install_source("https://github.com/someone/residual-course", "0123abc")
    code = TransformerManager().transform_cell(source)
    assert ("get_ipython().run_line_magic('pip', 'install --quiet \"residual-course-helpers @ "
            "git+https://github.com/someone/residual-course@0123abc\"')") in code
    calls = []

    class Shell:
        def run_line_magic(self, *args):
            calls.append(args)

    exec(code, {"get_ipython": Shell})  # helpers is installed here: nothing to do
    assert calls == []
    exec(code.replace('find_spec("helpers")', 'find_spec("no_such_course_package")'), {"get_ipython": Shell})
    assert calls == [("pip", 'install --quiet "residual-course-helpers @ '
                             'git+https://github.com/someone/residual-course@0123abc"')]
    for bad in ("http://github.com/a/b", "github.com/a/b", "https://github.com/a/b; rm -rf /", ""):
        with pytest.raises(ValueError, match="url must be"):
            launch.install_source(bad, "main")
    with pytest.raises(ValueError, match="ref must be"):
        launch.install_source("https://github.com/a/b", "main\"; echo")


@pytest.mark.coursework
def test_every_launch_button_opens_a_learner_copy_with_numbers_and_no_solutions(student_archive, tmp_path):
    """The tree `make notebooks` publishes: at every path a launch button opens
    (``book/chN/NAME.ipynb``), the student edition's notebook (no solution, numbers filled in)
    with the install cell after its title; and Binder's requirements take the CPU build."""
    import zipfile

    import nbformat

    from tools import launch
    from tools.toc import ROOT, toc_notebooks

    with zipfile.ZipFile(student_archive) as z:
        z.extractall(tmp_path)
    out = tmp_path / "notebooks"
    written = launch.write_tree(tmp_path / "residual-course-student", out, REPO, "0123abc")
    expected = [out / path.relative_to(ROOT) for path in toc_notebooks(ROOT)]
    assert sorted(written) == sorted(expected), "a launch button would open a path the tree lacks"
    for path in written:
        nb = nbformat.read(path, as_version=4)
        assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
        assert launch.TAG in nb.cells[1].metadata.tags and f"{REPO}@0123abc" in nb.cells[1].source
        text = "\n".join(c.source for c in nb.cells)
        for raw in ("solution-start", "### BEGIN SOLUTION", "{glue", "{exercise"):
            assert raw not in text, f"{path.name} shows {raw!r}"
    binder = (out / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert f"--extra-index-url {launch.CPU_INDEX}" in binder and any(line.startswith("torch==") for line in binder)
    wheels = [line for line in binder if line.endswith(".whl")]
    assert wheels and all((out / line).is_file() for line in wheels), "Binder installs helpers from the tree"
    assert (out / "README.md").is_file() and (out / "LICENSE").is_file()
