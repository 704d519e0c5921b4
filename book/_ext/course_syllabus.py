"""Sphinx extension: the ``{course-syllabus}`` directive, a table of every section's workload
and links, counted from the notebooks when the book builds.

For each section (a notebook in ``_toc.yml``, in reading order): its exercises and points,
the minutes its exercises state (``**Time:** about N min``), its reading time (its markdown's
words at :data:`WORDS_PER_MINUTE`, an assumption for technical prose, stated on the page),
the earlier sections it links to (what it builds on) and the later sections that link to it
(what dropping it would leave pointing at nothing). Each chapter gets a total in hours.
Nothing in the table is typed: change a notebook and the table follows.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from docutils import nodes
from docutils.parsers.rst import Directive

WORDS_PER_MINUTE = 150
LINK = re.compile(r"\{doc\}`(?:[^`<]*<)?(?P<doc>[^`>]+)>?`|\]\((?P<md>[^)#\s]+?)(?:\.ipynb|\.md)?(?:#[^)]*)?\)")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)


def _target(here: Path, link: str, root: Path) -> Path | None:
    if "://" in link:
        return None
    path = (here.parent / link).resolve()
    candidate = path.with_suffix(".ipynb") if path.suffix != ".ipynb" else path
    return candidate if candidate.exists() else None


def sections(root: Path) -> list[dict]:
    """Each section's counts and links (see the module), in reading order."""
    from tools.classroom import find_exercises
    from tools.toc import page_title, toc_notebooks

    paths = toc_notebooks(root)
    rows, order = [], {p.resolve(): i for i, p in enumerate(paths)}
    for i, path in enumerate(paths):
        nb = nbformat.read(path, as_version=4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        words = len(MATH.sub(" ", text).split())
        exercises = find_exercises(nb)
        links = set()
        for m in LINK.finditer(text):
            target = _target(path, m["doc"] or m["md"], root)
            if target is not None and target.resolve() in order and target.resolve() != path.resolve():
                links.add(order[target.resolve()])
        rows.append({"path": path, "title": page_title(path), "chapter": path.parent.name, "index": i,
                     "exercises": len(exercises), "points": sum(e.points for e in exercises),
                     "exercise_minutes": sum(e.minutes for e in exercises),
                     "reading_minutes": words / WORDS_PER_MINUTE, "links": links})
    for row in rows:
        row["builds_on"] = sorted(j for j in row["links"] if j < row["index"])
        row["linked_from"] = sorted(r["index"] for r in rows
                                    if row["index"] in r["links"] and r["index"] > row["index"])
    return rows


def _cell(content) -> nodes.entry:
    entry = nodes.entry()
    entry += content if isinstance(content, nodes.Node) else nodes.paragraph(text=str(content))
    return entry


class Syllabus(Directive):
    """``{course-syllabus}``: the table of :func:`sections`, with links to each section."""

    def run(self):
        env = self.state.document.settings.env
        root = Path(env.srcdir)
        rows = sections(root)
        table = nodes.table(classes=["course-syllabus"])
        group = nodes.tgroup(cols=6)
        table += group
        for width in (30, 12, 10, 10, 19, 19):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        header = nodes.row()
        for title in ("Section", "Exercises (points)", "Exercises, min", "Reading, min", "Builds on",
                      "Linked from later"):
            header += _cell(title)
        head += header
        body = nodes.tbody()
        group += body

        def link(j: int) -> nodes.Node:
            target = rows[j]["path"]
            docname = str(target.relative_to(root).with_suffix(""))
            ref = nodes.reference("", "", internal=True,
                                  refuri=env.app.builder.get_relative_uri(env.docname, docname))
            ref += nodes.Text(f"{target.parent.name}/{target.stem[:2]}")
            ref["reftitle"] = rows[j]["title"]
            return ref

        def links(indices: list[int]) -> nodes.Node:
            para = nodes.paragraph()
            for k, j in enumerate(indices):
                if k:
                    para += nodes.Text(", ")
                para += link(j)
            if not indices:
                para += nodes.Text("none")
            return para

        for chapter in dict.fromkeys(r["chapter"] for r in rows):
            members = [r for r in rows if r["chapter"] == chapter]
            minutes = sum(r["exercise_minutes"] + r["reading_minutes"] for r in members)
            total = nodes.row(classes=["course-syllabus-chapter"])
            total += _cell(nodes.strong(text=f"Chapter {chapter.removeprefix('ch')}: about "
                                             f"{minutes / 60:.1f} hours"))
            total += _cell(f"{sum(r['exercises'] for r in members)} ({sum(r['points'] for r in members)})")
            total += _cell(sum(r["exercise_minutes"] for r in members))
            total += _cell(round(sum(r["reading_minutes"] for r in members)))
            total += _cell("")
            total += _cell("")
            body += total
            for r in members:
                row = nodes.row()
                para = nodes.paragraph()
                para += link(r["index"])
                para += nodes.Text(f" {r['title']}")
                row += _cell(para)
                row += _cell(f"{r['exercises']} ({r['points']})")
                row += _cell(r["exercise_minutes"])
                row += _cell(round(r["reading_minutes"]))
                row += _cell(links(r["builds_on"]))
                row += _cell(links(r["linked_from"]))
                body += row
        return [table]


def setup(app):
    app.add_directive("course-syllabus", Syllabus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
