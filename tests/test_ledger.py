"""The claims ledger follows the notebooks: every claim cell has an entry, every entry points at something."""

from __future__ import annotations

import ast
import json
import re

import nbformat
import pytest
from course_ledger import _asserts, ledger_markdown, read_ledger, summary

from tools.classroom import strip_solutions
from tools.toc import ROOT, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_claim_cell_has_a_ledger_entry(path):
    """A cell that asserts something (outside an exercise's solution) is a claim or a check of the ledger."""
    for cell in strip_solutions(nbformat.read(path, as_version=4)).cells:
        if cell.cell_type == "code" and _asserts(cell.source):
            assert cell.metadata.get("ledger"), f"{path.name}: a cell asserts but has no ledger entry:\n{cell.source}"


def test_asserts_are_listed_in_source_order():
    """Entries number a cell's asserts as they are written; a breadth-first walk of the syntax
    tree would list a top-level assert before one written above it inside a loop."""
    source = "for k in range(3):\n    assert k < 3\nassert total > 1\nif ok:\n    assert ok\nassert (a\n        == b)\n"
    assert _asserts(source) == ["k < 3", "total > 1", "ok", "a == b"]


def test_the_ledger_reads_and_its_ids_are_unique():
    entries = read_ledger(NOTEBOOKS)
    counts = summary(entries)
    assert counts["claims"] >= 1 and sum(counts[v] for v in ("holds", "holds with a caveat", "not testable here",
                                                             "does not hold as stated")) == counts["claims"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_entry_covers_its_cell_and_names_a_glued_number(path):
    entries = [e for e in read_ledger([path])]
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    glued = _glued_patterns(code)
    for e in entries:
        if e.number:
            key = e.number["key"]
            assert any(p.fullmatch(key) for p in glued), f"{e.id}: {path.name} glues no value named {key!r}"
    by_cell: dict[int, set[str]] = {}
    for e in entries:
        by_cell.setdefault(e.cell, set()).update(e.asserts)
    cells = nbformat.read(path, as_version=4).cells
    for index, covered in by_cell.items():
        missing = set(_asserts(cells[index].source)) - covered
        assert not missing, f"{path.name}, cell {index}: asserts in no ledger entry: {missing}"


def _glued_patterns(code: str) -> list[re.Pattern]:
    """The names a notebook's ``glue`` calls store: ``glue("name", v)``, ``glue(f"{k}_x", v)``,
    ``glue(name=v)`` and ``glue(**{f"{k}_x": v ...})``."""
    names = []
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "glue"):
            continue
        if node.args:
            names.append(ast.get_source_segment(code, node.args[0]))
        for keyword in node.keywords:
            if keyword.arg is not None:
                names.append(repr(keyword.arg))
            elif isinstance(keyword.value, ast.DictComp):
                names.append(ast.get_source_segment(code, keyword.value.key))
            elif isinstance(keyword.value, ast.Dict):
                names += [ast.get_source_segment(code, k) for k in keyword.value.keys if k is not None]
    return [_glue_pattern(n) for n in names if n and n.lstrip("f")[:1] in "\"'"]


def _glue_pattern(literal: str) -> re.Pattern:
    """``"name"`` -> name; ``f"{kind}{depth}_train"`` -> a pattern matching plain56_train etc."""
    text = literal.lstrip("f")[1:-1]
    if not literal.startswith("f"):
        return re.compile(re.escape(text))
    parts = re.split(r"\{[^}]*\}", text)
    return re.compile(".+?".join(re.escape(p) for p in parts))


def _notebook(tmp_path, *cells):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src, metadata={"ledger": meta} if meta else {})
                                         for src, meta in cells])
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


GOOD = {"id": "9.1", "kind": "claim", "claim": "It holds.", "verdict": "holds",
        "number": {"key": "x", "what": "the value"}}


@pytest.mark.parametrize(("change", "message"), [
    ({"verdict": "mostly"}, "verdict must be one of"),
    ({"verdict": "holds with a caveat"}, "needs a caveat"),
    ({"kind": "opinion"}, "kind must be one of"),
    ({"number": {}}, "a claim needs a number"),
    ({"number": {"key": "x"}}, "'key' and 'what'"),
    ({"asserts": [5]}, "indices of the cell's 1 asserts"),
])
def test_a_malformed_entry_is_named(tmp_path, change, message):
    path = _notebook(tmp_path, ("assert 1 == 1", {**GOOD, **change}))
    with pytest.raises(ValueError, match=re.escape(message)):
        read_ledger([path])


def test_an_entry_without_an_assert_or_a_duplicate_id_is_refused(tmp_path):
    with pytest.raises(ValueError, match="without an assert"):
        read_ledger([_notebook(tmp_path, ("x = 1", GOOD))])
    with pytest.raises(ValueError, match="used twice"):
        read_ledger([_notebook(tmp_path, ("assert 1", GOOD), ("assert 2", GOOD))])
    with pytest.raises(ValueError, match="say which asserts"):
        read_ledger([_notebook(tmp_path, ("assert 1\nassert 2", [GOOD, {**GOOD, "id": "9.2"}]))])


def test_the_ledger_pastes_numbers_from_the_run_and_shows_the_asserts(tmp_path):
    path = _notebook(tmp_path, ("x = 2\nassert x > 1, 'x is big'", {**GOOD, "quote": "原话"}))
    text = ledger_markdown(read_ledger([path]), tmp_path / "pages" / "ledger.md")
    assert "{glue:text}`../nb.ipynb::x`" in text
    assert "assert x > 1\n" in text and "x is big" not in text
    assert '<span lang="zh">「原话」</span>' in text and "{ref}`the cell <claim-9-1>`" in text
    assert "**1 claims**: 1 hold as stated" in text


def test_the_courses_own_extensions_are_marked_and_quote_no_source():
    entries = read_ledger(NOTEBOOKS)
    extensions = [e for e in entries if e.extension]
    assert {"1.10a", "1.10b", "1.10c"} <= {e.id for e in extensions}
    assert not any(e.quote for e in extensions), "an extension is the course's own, not a source's claim"
    text = ledger_markdown(entries, ROOT / "book" / "appendix" / "ledger.md")
    assert "### 1.10c · holds with a caveat · the course's own extension" in text
    claims = sum(e.kind == "claim" for e in extensions)  # an extension's checks are not claims
    assert f"{claims} of the claims are the course's own extensions" in text
