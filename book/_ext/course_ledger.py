"""The claims ledger: one row per claim the book measures, generated from the notebooks.

A claim lives in the notebook cell that asserts it. The cell's metadata carries its ledger
entry (a dict, or a list of dicts for a cell that asserts several claims)::

    "ledger": {
      "id": "1.1",                      # the claim's number in the chapter
      "kind": "claim",                  # "claim" (measured) or "check" (data or maths)
      "claim": "One plain sentence.",
      "verdict": "holds",               # claims: holds | holds with a caveat | does not hold as stated
      "caveat": "...",                  # required unless the verdict is "holds"
      "quote": "源文的原话",             # optional: the source's own words (Chinese)
      "number": {"key": "plain_gap", "format": ".1f", "unit": " points", "what": "..."},
      "asserts": [0, 1]                 # optional: which of the cell's asserts check this claim
    }

``number.key`` names a value the same notebook glues; the ledger pastes it from that run.
How the claim is checked is not typed in: it is the cell's own ``assert`` lines. This
module reads the entries (:func:`read_ledger`, also used by the tests), gives each claim
cell an anchor (``claim-1-1``) and a label, and writes the ledger
on the page that carries the line ``% claims-ledger`` (a MyST comment, so
nothing shows if the extension is missing; the tests would notice the empty ledger).
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("claim", "check")
VERDICTS = ("holds", "holds with a caveat", "does not hold as stated")
SEEDS = "0-9"  # seed 0 in every build and test run, seeds 1-9 in the sweep (make sweep, CI)


@dataclass
class Entry:
    """One row of the ledger, with where it comes from."""

    id: str
    kind: str
    claim: str
    notebook: Path
    cell: int
    asserts: list[str]
    number: dict = field(default_factory=dict)
    verdict: str = ""
    caveat: str = ""
    quote: str = ""

    @property
    def label(self) -> str:
        return label_of(self.id)


def label_of(claim_id) -> str:
    """The anchor and label of a claim cell: ``"1.1a"`` -> ``"claim-1-1a"``."""
    return "claim-" + re.sub(r"[^0-9a-z]+", "-", str(claim_id).lower()).strip("-")


def _asserts(source: str) -> list[str]:
    """The test of every ``assert`` in a cell, in source order (as entries number them; an
    assert inside a loop or a function counts where it is written), each on one line (no
    message)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assert)), key=lambda n: (n.lineno, n.col_offset))
    return [" ".join((ast.get_source_segment(source, n.test) or ast.unparse(n.test)).split()) for n in nodes]


def _entries_of(meta) -> list[dict]:
    if meta is None:
        return []
    return meta if isinstance(meta, list) else [meta]


def _require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise ValueError(f"{where}: ledger entry {message}")


def read_ledger(notebooks) -> list[Entry]:
    """Every ledger entry of ``notebooks`` (paths), in reading order; raises ValueError on a
    malformed entry (naming the notebook, cell and field) or a duplicate id."""
    entries: list[Entry] = []
    for path in map(Path, notebooks):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(nb["cells"]):
            metas = _entries_of(cell.get("metadata", {}).get("ledger"))
            where = f"{path.name}, cell {index}"
            for meta in metas:
                _require(isinstance(meta, dict), where, "must be a dict")
                for key in ("id", "kind", "claim"):
                    _require(key in meta, where, f"lacks {key!r}")
                _require(meta["kind"] in KINDS, where, f"kind must be one of {KINDS}, got {meta['kind']!r}")
                if meta["kind"] == "claim":
                    _require(meta.get("verdict") in VERDICTS, where,
                             f"verdict must be one of {VERDICTS}, got {meta.get('verdict')!r}")
                    _require(meta["verdict"] == "holds" or bool(meta.get("caveat")), where,
                             f"{meta['id']}: a verdict other than 'holds' needs a caveat")
                number = meta.get("number", {})
                _require(meta["kind"] == "check" or bool(number), where, f"{meta['id']}: a claim needs a number")
                _require(isinstance(number, dict) and (not number or {"key", "what"} <= set(number)), where,
                         "number must be a dict with 'key' and 'what'")
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                asserts = _asserts(source)
                _require(bool(asserts), where, f"{meta['id']} sits on a cell without an assert")
                if "asserts" in meta:
                    chosen = meta["asserts"]
                    _require(isinstance(chosen, list) and bool(chosen)
                             and all(isinstance(i, int) and 0 <= i < len(asserts) for i in chosen), where,
                             f"{meta['id']}: asserts must list indices of the cell's {len(asserts)} asserts")
                    asserts = [asserts[i] for i in chosen]
                elif len(metas) > 1:
                    _require(False, where, f"{meta['id']}: a cell with several entries must say which "
                             "asserts are whose ('asserts': [indices])")
                entries.append(Entry(
                    id=str(meta["id"]), kind=meta["kind"], claim=meta["claim"], notebook=path, cell=index,
                    asserts=asserts, number=number, verdict=meta.get("verdict", ""),
                    caveat=meta.get("caveat", ""), quote=meta.get("quote", "")))
    seen: dict[str, Entry] = {}
    for entry in entries:
        if entry.id in seen:
            raise ValueError(f"ledger id {entry.id} is used twice: {seen[entry.id].notebook.name} "
                             f"and {entry.notebook.name}")
        seen[entry.id] = entry
    return entries


def summary(entries: list[Entry]) -> dict[str, int]:
    """How many measured claims, how many hold, hold with a caveat, do not hold; how many checks."""
    claims = [e for e in entries if e.kind == "claim"]
    counts = {v: sum(e.verdict == v for e in claims) for v in VERDICTS}
    return {"claims": len(claims), **counts, "checks": len(entries) - len(claims)}


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ledger_markdown(entries: list[Entry], page: Path) -> str:
    """The ledger as MyST: a summary line, then measured claims and checks, chapter by chapter."""
    counts = summary(entries)
    lines = [
        f"The book measures **{counts['claims']} claims**: {counts['holds']} hold as stated, "
        f"{counts['holds with a caveat']} hold with a caveat and {counts['does not hold as stated']} "
        f"do not hold as stated. Besides them, {counts['checks']} checks of data and maths are "
        "listed apart: they catch a bug in the code but cannot fail on a new seed.",
        "",
    ]
    for kind, heading in (("claim", "Measured claims"), ("check", "Checks of data and maths")):
        rows = [e for e in entries if e.kind == kind]
        if not rows:
            continue
        lines += [f"## {heading}", ""]
        for e in rows:
            rel = Path(os.path.relpath(e.notebook, page.parent)).as_posix()
            verdict = e.verdict if kind == "claim" else "check"
            lines += [
                f"### {e.id} · {verdict}",
                "",
                f"**{_md_escape(e.claim)}**" + (f" *{e.verdict.capitalize()}*: {_md_escape(e.caveat)}"
                                                 if e.caveat else ""),
                "",
            ]
            if e.quote:
                lines += [f"Source: <span lang=\"zh\">「{_md_escape(e.quote)}」</span>", ""]
            seeds = f"checked for seeds {SEEDS}" if kind == "claim" else "no randomness"
            measured = ""
            if e.number:
                fmt = e.number.get("format", "")
                value = f"{{glue:text}}`{rel}::{e.number['key']}{':' + fmt if fmt else ''}`"
                measured = f"Measured: {value}{e.number.get('unit', '')} ({_md_escape(e.number['what'])}) · "
            lines += [
                f"{measured}{seeds} · {{ref}}`the cell <{e.label}>`",
                "",
                "```python",
                *[f"assert {a}" for a in e.asserts],
                "```",
                "",
            ]
    return "\n".join(lines)


# --- Sphinx -----------------------------------------------------------------------------

def _book_notebooks(app) -> list[Path]:
    from tools.toc import toc_notebooks

    return toc_notebooks(Path(app.srcdir))


def _anchor_claim_cells(app, doctree) -> None:
    """Give every claim cell an id (``claim-1-1``) and a label of that name."""
    from docutils import nodes

    std = app.env.get_domain("std")
    for node in doctree.findall(nodes.container):
        metas = _entries_of(node.get("cell_metadata", {}).get("ledger"))
        for meta in metas:
            if not isinstance(meta, dict) or "id" not in meta:
                continue
            label = label_of(meta["id"])
            node["ids"].append(label)
            std.anonlabels[label] = (app.env.docname, label)
            std.labels[label] = (app.env.docname, label, f"claim {meta['id']}")


MARKER = "% claims-ledger"


def _insert_ledger(app, docname, source) -> None:
    """On the page that carries the marker line, put the generated ledger in its place."""
    if MARKER not in source[0]:
        return
    notebooks = _book_notebooks(app)
    for dependency in [*notebooks, Path(__file__)]:  # rebuild when a notebook or this generator changes
        app.env.note_dependency(str(dependency))
    page = Path(app.env.doc2path(docname))
    lines = source[0].splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(MARKER))
    lines[at:at + 1] = ledger_markdown(read_ledger(notebooks), page).splitlines()
    source[0] = "\n".join(lines) + "\n"


def setup(app):
    app.connect("source-read", _insert_ledger)
    app.connect("doctree-read", _anchor_claim_cells)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
