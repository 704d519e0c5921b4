"""Make the student edition: every notebook of the book with its solutions removed.

Solutions are written with sphinx-exercise's gated directives: a markdown cell holding a
``solution-start`` directive starts a solution, and one holding ``solution-end`` ends it;
on the site the cells in between sit in a hidden dropdown. The student edition drops
those cells altogether (and any cell tagged ``solution``), clears outputs, and keeps
everything else, exercise starters and checkers included. Run ``python -m helpers.student OUT_DIR``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import nbformat

from .toc import ROOT, toc_files

START, END = "{solution-start}", "{solution-end}"


def _opens(cell, marker: str) -> bool:
    return cell.cell_type == "markdown" and marker in cell.source


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without solution cells and without outputs."""
    nb = nbformat.from_dict(nb)
    kept, inside = [], False
    for cell in nb.cells:
        if _opens(cell, START):
            if inside:
                raise ValueError("a solution-start cell opens inside another solution")
            inside = True
        if not inside and "solution" not in cell.get("metadata", {}).get("tags", []):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            kept.append(cell)
        if _opens(cell, END):
            if not inside:
                raise ValueError("a solution-end cell has no solution-start before it")
            inside = False
    if inside:
        raise ValueError("a solution-start cell is never closed by a solution-end cell")
    nb.cells = kept
    return nb


def make_student_edition(out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Write the book's notebooks (solutions stripped) and pages under ``out_dir``."""
    out_dir = Path(out_dir)
    written = []
    for src in toc_files(root):
        dest = out_dir / src.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".ipynb":
            nbformat.write(strip_solutions(nbformat.read(src, as_version=4)), dest)
        else:
            shutil.copyfile(src, dest)
        written.append(dest)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="where to write the student edition")
    args = parser.parse_args(argv)
    files = make_student_edition(args.out_dir)
    print(f"wrote {len(files)} files to {args.out_dir}")


if __name__ == "__main__":
    main()
