"""The book's table of contents: which files are in the book (shared by tests and tools)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _walk(entries):
    for entry in entries or []:
        if "file" in entry:
            yield entry["file"]
        yield from _walk(entry.get("sections"))
        yield from _walk(entry.get("chapters"))
        for part in entry.get("parts", []) or []:
            yield from _walk(part.get("chapters"))


def toc_files(root: Path = ROOT) -> list[Path]:
    """Every file listed in ``_toc.yml`` under ``root``, resolved to its ``.md``/``.ipynb`` path."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    stems = [toc["root"], *_walk([toc])]
    files = []
    for stem in stems:
        matches = [Path(root) / f"{stem}{ext}" for ext in (".ipynb", ".md")]
        found = [m for m in matches if m.exists()]
        if not found:
            raise FileNotFoundError(f"_toc.yml lists {stem!r}, but neither {stem}.ipynb nor {stem}.md exists")
        files.append(found[0])
    return files


def page_title(path: Path) -> str:
    """The first level-1 heading (``# ...``) of a page or notebook, as written."""
    path = Path(path)
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
    if title is None:
        raise ValueError(f"{path} has no level-1 heading")
    return title


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks (``.ipynb``) of the book, in reading order."""
    return [f for f in toc_files(root) if f.suffix == ".ipynb"]
