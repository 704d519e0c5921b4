"""One release of the course: the files a class pins, named by its version.

    python -m tools.release        # or `make release`, which builds them first

From what ``make release`` built, it writes ``_build/release/VERSION/`` (the version is
``pyproject.toml``'s, which ``helpers.__version__`` repeats):

* ``residual-connections-measured-VERSION-site.zip``: the site (``_build/html``), which
  reads offline (open ``index.html``); every page's footer names the version and commit;
* ``residual-connections-measured-VERSION.pdf``: the whole book (``make pdf``);
* ``residual-course-student-VERSION.zip``: the student edition (``make student``), for a
  class: no solutions, checkers read-only;
* ``residual-connections-measured-VERSION-notebooks.zip``: the learner's notebooks for
  self-study (``tools/lab_copy.py``: plain markdown, the build's numbers, each solution
  folded under its exercise), with the student edition's wheel, pins and install commands;
* ``SHA256SUMS``.

A release is a commit: the tree must have no uncommitted change. Tag it ``vVERSION``
(``git tag v0.2.0 && git push origin v0.2.0``) and attach the files to the tag's release.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import helpers
from tools.lab_copy import make_lab_copy
from tools.launch import commit
from tools.student import NAME as STUDENT
from tools.student import readme
from tools.toc import ROOT

BOOK = "residual-connections-measured"
def _zip(folder: Path, archive: Path) -> Path:
    """``folder`` as ``archive`` (a .zip), its files under the folder's name."""
    return Path(shutil.make_archive(str(archive.with_suffix("")), "zip", folder.parent, folder.name))


def make_release(out: Path | None = None, root: Path = ROOT) -> Path:
    """Write the release's files (module docstring) into ``out`` (default
    ``_build/release/VERSION``); return that folder."""
    commit(root)  # refuses a tree with changes not committed
    v = helpers.__version__  # pyproject.toml's (tests/test_release.py keeps them equal)
    out = Path(out or root / "_build" / "release" / v)
    site, pdf = root / "_build" / "html", root / "_build" / "pdf" / f"{BOOK}.pdf"
    edition = root / "student-edition" / STUDENT
    for needed in (site / "index.html", pdf, edition / "requirements.txt"):
        if not needed.exists():
            raise ValueError(f"{needed} is missing: `make release` builds it")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / f"{BOOK}-{v}-site"
        shutil.copytree(site, folder)
        _zip(folder, out / f"{folder.name}.zip")
        notebooks = Path(tmp) / f"{BOOK}-{v}-notebooks"
        make_lab_copy(notebooks)
        for name in ("wheels", "requirements.txt", "LICENSE", "LICENSE-CONTENT"):
            copy = shutil.copytree if (edition / name).is_dir() else shutil.copyfile
            copy(edition / name, notebooks / name)
        torch_pin = next(line for line in (edition / "requirements.txt").read_text(encoding="utf-8").splitlines()
                         if line.startswith("torch=="))
        (notebooks / "README.md").write_text(readme(torch_pin, solutions=True), encoding="utf-8")
        _zip(notebooks, out / f"{notebooks.name}.zip")
        edition_copy = Path(tmp) / f"{STUDENT}-{v}"
        shutil.copytree(edition, edition_copy)
        _zip(edition_copy, out / f"{edition_copy.name}.zip")
    shutil.copyfile(pdf, out / f"{BOOK}-{v}.pdf")
    sums = "".join(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"
                   for path in sorted(out.iterdir()))
    (out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    return out


if __name__ == "__main__":
    try:
        folder = make_release()
    except ValueError as err:
        raise SystemExit(str(err)) from None
    print(f"the release's files are in {folder}:")
    for path in sorted(folder.iterdir()):
        print(f"  {path.name}  ({path.stat().st_size / 1e6:.1f} MB)")
