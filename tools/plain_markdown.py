"""The book's MyST markdown as plain Jupyter markdown, for the student edition.

JupyterLab renders plain markdown and math, but not Sphinx's directives and roles: an
``{exercise}`` block, a ``{glue:text}`` number or a ``{cite}`` would show as raw text. The
student edition therefore rewrites each markdown cell:

* an ``{exercise}`` block becomes a quoted block headed **Exercise N: title**, numbered as on
  the site (one count through the book, in reading order);
* an ``{admonition}`` block becomes a quoted block headed by its title;
* ``{glue:text}`name:format``` (or ``notebook.ipynb::name:format``) becomes the number the
  site shows (seed 0, from the book's executed notebooks), formatted the same way;
* ``{cite}`key``` becomes (Author et al. year), from ``book/references.bib``;
* ``{func}``, ``{mod}``, ``{class}``, ``{meth}`` become code (``~a.b.c`` as ``c``, as Sphinx
  shows it); ``{term}`` its text; ``{numref}`` "the figure";
* ``{ref}`` to an exercise's label becomes "Exercise N" (the exercise must come first in reading
  order, as it does when the text looks back at it); ``{ref}`text <label>``` becomes its text;
* ``{doc}`` becomes a markdown link to the notebook it names (titled as the site titles it)
  where that notebook's path, relative to this one's folder, is in ``titles``, and its text
  otherwise (the student edition holds no other pages).

A ``{glue:text}`` whose notebook has no value under its name raises, unless ``missing`` is
given: then its text stands in (the learner's copy, ``tools/lab_copy.py``, made before the
book ran a page).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from pybtex.database import parse_file

from tools.execute import CACHE, executed_notebook, read_cache
from tools.toc import ROOT, toc_notebooks

ROLE = re.compile(r"\{(?P<role>[a-z]+(?::[a-z]+)?)\}`(?P<body>[^`]*)`")
EXERCISE = re.compile(r"```\{exercise\}(?P<title>[^\n]*)\n(?P<body>.*?)\n```", re.S)
ADMONITION = re.compile(r":::\{admonition\}(?P<title>[^\n]*)\n(?P<body>.*?)\n:::", re.S)
OPTION = re.compile(r"^:[a-z-]+:.*$")


def citation(key: str, bib: Path) -> str:
    """``Author year``, ``A and B year`` or ``A et al. year`` for ``key`` in ``bib``."""
    entry = _entries(Path(bib)).get(key)
    if entry is None:
        raise ValueError(f"{key!r} is not in {bib}")
    names = [" ".join(p.last_names) for p in entry.persons.get("author", [])] or [entry.fields.get("title", key)]
    who = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al."
    return f"{who} {entry.fields.get('year', '')}".strip()


@functools.lru_cache
def _entries(bib: Path) -> dict:
    return dict(parse_file(str(bib), bib_format="bibtex").entries)


def glued_text(value: str, spec: str) -> str:
    """A glued value as myst-nb shows it: ``value`` (its text/plain) formatted with ``spec``."""
    if not spec:
        return value.strip("'\"")
    try:
        return format(float(value), spec)
    except ValueError:
        return value.strip("'\"")


# A role's body that names its link text and its target: ``text <target>``.
EXPLICIT_TARGET = re.compile(r"(?P<text>.*?)\s*<(?P<target>[^>]*)>")


def _quote(head: str, body: str) -> str:
    lines = [line for line in body.splitlines() if not OPTION.match(line)]
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join([f"> {head}", ">", *[f"> {line}".rstrip() for line in lines]])


def plain_markdown(text: str, *, glued: dict[str, dict[str, str]], here: str, bib: Path,
                   number: Callable[[], int], titles: dict[str, str] | None = None,
                   labels: dict[str, str] | None = None,
                   missing: Callable[[str, str], str] | None = None) -> str:
    """``text`` (one markdown cell of notebook ``here``, a file name) without Sphinx directives
    and roles; ``glued`` maps each notebook's file name to {glue name: text/plain value};
    ``number()`` gives the next exercise's number; ``titles`` maps the paths of notebooks,
    relative to ``here``'s folder (``02_b.ipynb``, ``../ch2/01_a.ipynb``), to their titles (for
    ``{doc}`` links); ``labels`` (shared between calls, filled here) maps each exercise label
    met so far to "Exercise N" (for ``{ref}``); ``missing(notebook, name)``, if given, is the
    text of a glued value that ``glued`` lacks."""
    titles = titles or {}
    labels = {} if labels is None else labels

    def exercise(m: re.Match) -> str:
        head = f"Exercise {number()}"
        label = re.search(r"^:label:\s*(\S+)", m["body"], re.M)
        if label:
            labels[label[1]] = head
        return _quote(f"**{head}: {m['title'].strip()}**", m["body"])

    def role(m: re.Match) -> str:
        kind, body = m["role"], m["body"]
        if kind == "glue:text":
            notebook, _, rest = body.rpartition("::")
            name, _, spec = rest.partition(":")
            values = glued.get(Path(notebook).name if notebook else here, {})
            if name not in values and missing is not None:
                return missing(Path(notebook).name if notebook else here, name)
            if name not in values:
                raise ValueError(f"{{glue:text}}`{body}` in {here}: nothing was glued under {name!r}")
            return glued_text(values[name], spec)
        if kind == "cite":
            return "(" + "; ".join(citation(k.strip(), bib) for k in body.split(",")) + ")"
        if kind in ("func", "mod", "class", "meth"):
            return f"`{body.rpartition('.')[2] if body.startswith('~') else body}`"
        if kind == "ref":
            explicit = EXPLICIT_TARGET.fullmatch(body)
            if explicit:
                return explicit["text"]
            if body not in labels:
                raise ValueError(f"{{ref}}`{body}` in {here}: no exercise labelled {body!r} comes before it")
            return labels[body]
        if kind == "term":
            return re.sub(r"\s*<[^>]*>$", "", body)
        if kind == "numref":
            return "the figure"
        if kind == "doc":
            explicit = EXPLICIT_TARGET.fullmatch(body)
            target = explicit["target"] if explicit else body
            name = posixpath.normpath(target) + ".ipynb"
            if name not in titles:
                return explicit["text"] if explicit else Path(target).name.replace("_", " ")
            return f"[{explicit['text'] if explicit else titles[name]}]({name})"
        raise ValueError(f"no plain form for the role {{{kind}}}")

    text = EXERCISE.sub(exercise, text)
    text = ADMONITION.sub(lambda m: _quote(f"**{m['title'].strip()}**", m["body"]), text)
    text = ROLE.sub(role, text)
    # "the figure" opening a sentence
    return re.sub(r"(^|[.!?]\s+|\n)the figure", lambda m: f"{m[1]}The figure", text)


def glued_values(executed_nb) -> dict[str, str]:
    """{name: text/plain} of every value an executed notebook glued (myst-nb's ``glue``)."""
    values = {}
    for cell in executed_nb.cells:
        for output in cell.get("outputs", []):
            scrapbook = output.get("metadata", {}).get("scrapbook", {})
            text = output.get("data", {}).get(scrapbook.get("mime_prefix", "") + "text/plain")
            if "name" in scrapbook and text is not None:
                values[scrapbook["name"]] = text
    return values


def glued_numbers(root: Path = ROOT, *, strict: bool = True) -> dict[str, dict[str, str]]:
    """{notebook file name: {glue name: value}} from the executed notebooks in the cache.

    A notebook without a cached run of its current code raises (``strict``), or is left out."""
    cache_path = root / CACHE.relative_to(ROOT)
    if not strict and not cache_path.is_dir():
        return {}
    cache, glued = read_cache(cache_path), {}
    for path in toc_notebooks(root):
        try:
            glued[path.name] = glued_values(executed_notebook(path, cache))
        except KeyError as err:
            if strict:
                raise RuntimeError(f"{path.relative_to(root)} has not been executed for its current code: run "
                                   "`python -m tools.execute` (or `make site`) first") from err
    return glued


def contents(links: dict[str, str]) -> str:
    """A numbered list of markdown links, {target: title} (for ``{tableofcontents}``)."""
    return "\n".join(f"1. [{title}]({target})" for target, title in links.items())


def book_markdown(glued: dict[str, dict[str, str]], root: Path = ROOT,
                  missing: Callable[[str, str], str] | None = None) -> Callable[[str, str, dict[str, str]], str]:
    """``plain(text, here, titles)``: :func:`~tools.plain_markdown.plain_markdown` with the
    book's bibliography, one exercise count through the book and the exercise labels met so
    far; call it on every page's markdown in reading order."""
    bib, count, labels = root / "book" / "references.bib", iter(range(1, 10**6)), {}

    def plain(text: str, here: str, titles: dict[str, str]) -> str:
        return plain_markdown(text, glued=glued, here=here, bib=bib, number=lambda: next(count), titles=titles,
                              labels=labels, missing=missing)

    plain.labels = labels
    return plain
