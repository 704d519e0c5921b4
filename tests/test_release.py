"""What lets others adopt the course: licences, one version everywhere, a way to cite it."""

from __future__ import annotations

import re

import tomllib
import yaml

import helpers
from tools.toc import ROOT, toc_files


def _version_of_pyproject() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_one_version_everywhere():
    """pyproject.toml, helpers.__version__, CITATION.cff, the site's cite block and the
    changelog's latest numbered section name the same version."""
    version = _version_of_pyproject()
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert helpers.__version__ == version
    assert citation["version"] == version
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    numbered = re.findall(r"^## (\d+\.\d+\.\d+)\b", changelog, re.M)
    assert numbered and numbered[0] == version, f"CHANGELOG's latest version is {numbered[:1]}, not {version}"
    about = (ROOT / "book" / "appendix" / "about.md").read_text(encoding="utf-8")
    assert re.search(rf"version\s*=\s*\{{{re.escape(version)}\}}", about), "the site's cite block names the version"
    assert f"title   = {{{citation['title']}}}" in about


def test_the_licences_are_in_the_repository_and_on_every_page():
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence and "CC BY-SA 4.0" in licence and "LICENSE-CONTENT" in licence
    assert (ROOT / "LICENSE-CONTENT").read_text(encoding="utf-8").startswith("Attribution-ShareAlike 4.0 International")
    footer = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["html"]["extra_footer"]
    assert "creativecommons.org/licenses/by-sa/4.0" in footer and "MIT" in footer
    assert yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))["license"] == "MIT"


def test_the_about_page_is_in_the_book_and_contributing_names_the_files():
    assert ROOT / "book" / "appendix" / "about.md" in toc_files(ROOT)
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for path in ("helpers/experiments/", "helpers/plots/", "helpers/grading/", "book/appendix/glossary.md",
                 "benchmarks/sweep.json", "helpers/environment.py"):
        assert path in contributing, path
