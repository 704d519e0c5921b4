"""What lets others adopt the course: licences, one version everywhere, a way to cite it."""

from __future__ import annotations

import re

import pytest
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


def test_a_release_is_one_folder_of_versioned_files_from_a_committed_tree(tmp_path, monkeypatch):
    """tools/release.py packs what `make release` built (faked here): the site, the PDF, the
    student edition and the self-study notebooks, each named by the version, with checksums;
    a tree with uncommitted changes is refused."""
    import hashlib
    import subprocess
    import zipfile

    from tools import release, student

    root = tmp_path / "course"
    monkeypatch.setattr(release.helpers, "__version__", "9.8.7")
    files = {"pyproject.toml": '[project]\nname = "x"\nversion = "9.8.7"\n',
             "_build/html/index.html": "<p>the site</p>", "_build/pdf/residual-connections-measured.pdf": "%PDF",
             "student-edition/residual-course-student/README.md": student.readme("torch==1"),
             "student-edition/residual-course-student/requirements.txt": "torch==1\n./wheels/h.whl\n",
             "student-edition/residual-course-student/wheels/h.whl": "wheel",
             "student-edition/residual-course-student/LICENSE": "MIT",
             "student-edition/residual-course-student/LICENSE-CONTENT": "CC",
             "student-edition/residual-course-student/ch1/01.ipynb": "{}",
             ".gitignore": "_build/\nstudent-edition/\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "c"], cwd=root, check=True)
    monkeypatch.setattr(release, "make_lab_copy", lambda dest: (dest / "ch1").mkdir(parents=True)
                        or (dest / "ch1" / "01.ipynb").write_text("lab copy"))

    out = release.make_release(root=root)
    assert out == root / "_build" / "release" / "9.8.7"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["SHA256SUMS", "residual-connections-measured-9.8.7-notebooks.zip",
                     "residual-connections-measured-9.8.7-site.zip", "residual-connections-measured-9.8.7.pdf",
                     "residual-course-student-9.8.7.zip"]
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    with zipfile.ZipFile(out / "residual-connections-measured-9.8.7-notebooks.zip") as z:
        top = "residual-connections-measured-9.8.7-notebooks/"
        assert z.read(top + "ch1/01.ipynb") == b"lab copy" and z.read(top + "wheels/h.whl") == b"wheel"
        assert z.read(top + "README.md").decode() == student.readme("torch==1", solutions=True)
    with zipfile.ZipFile(out / "residual-connections-measured-9.8.7-site.zip") as z:
        assert "residual-connections-measured-9.8.7-site/index.html" in z.namelist()

    (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.8"\n')
    with pytest.raises(ValueError, match="commit first"):
        release.make_release(root=root)
