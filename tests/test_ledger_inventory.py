"""The claims ledger as an inventory of the sources' claims (book/appendix/source_claims.yml).

Every substantive claim of the five source articles has an entry with a status; the entries
name ledger rows that exist and fit their status; every ledger row that quotes a source tests
some entry; every quote, in the inventory and in the notebooks, is the article's own words;
every check says why it cannot fail. The rest tests the page the extension writes from them
(the site build itself is `make site`; these tests call the rendering functions directly).

The articles are not part of the repository: the quote tests read them from
``$COURSE_SOURCES`` (by default ``../shared/seeds`` beside the repository) and skip without them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from course_ledger import (
    STATUSES,
    VERDICTS,
    Entry,
    Inventory,
    SourceClaim,
    bound_problem,
    derived_verdict,
    inventory_table,
    ledger_markdown,
    normalise_quote,
    one_line,
    parse_inventory,
    quote_in,
    read_inventory,
    read_ledger,
    rows_without_an_entry,
    spread_line,
    status_problems,
    unknown_ledger_ids,
    verdict_label,
)

from tools.toc import ROOT, toc_files, toc_notebooks

NOTEBOOKS = toc_notebooks(ROOT)
SOURCES = Path(os.environ.get("COURSE_SOURCES", ROOT.parent / "shared" / "seeds"))
CHAPTERS = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    return read_inventory()


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    return read_ledger(NOTEBOOKS)


def _article(inventory: Inventory, chapter: int) -> str:
    path = SOURCES / inventory.sources[chapter]
    if not path.exists():
        pytest.skip(f"the source articles are not here ({SOURCES}); set COURSE_SOURCES to their folder")
    return path.read_text(encoding="utf-8")


# --- The inventory against the book ---------------------------------------------------------

def test_every_chapter_has_a_source_and_every_claim_a_status(inventory, entries):
    assert sorted(inventory.sources) == CHAPTERS
    assert {e.chapter for e in entries} <= set(inventory.sources)
    for chapter in CHAPTERS:
        assert [c for c in inventory.claims if c.chapter == chapter], f"chapter {chapter} lists no source claim"
    assert all(c.status in STATUSES for c in inventory.claims)  # read_inventory refuses an entry without one


def test_the_inventory_names_only_ledger_rows_that_exist(inventory, entries):
    problems = unknown_ledger_ids(inventory, entries)
    assert not problems, "update book/appendix/source_claims.yml:\n" + "\n".join(problems)


def test_every_row_that_quotes_a_source_tests_an_inventory_claim(inventory, entries):
    problems = rows_without_an_entry(inventory, entries)
    assert not problems, "add these rows to an entry's 'ledger' list:\n" + "\n".join(problems)


def test_each_status_fits_its_ledger_rows(inventory, entries):
    problems = status_problems(inventory, entries)
    assert not problems, "\n".join(problems)


def test_a_told_only_claim_names_a_page_of_the_book(inventory):
    pages = {p.relative_to(ROOT / "book").with_suffix("").as_posix() for p in toc_files(ROOT)
             if p.is_relative_to(ROOT / "book")}
    missing = [f"{c.id}: {c.page}" for c in inventory.claims if c.status == "told only" and c.page not in pages]
    assert not missing, f"told only, but the page is not in the book: {missing}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_inventory_quotes_the_sources_words(inventory, chapter):
    article = _article(inventory, chapter)
    wrong = [f"{c.id}: {c.source}" for c in inventory.claims
             if c.chapter == chapter and not quote_in(c.source, article)]
    assert not wrong, f"not the words of {inventory.sources[chapter]}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_ledger_quote_is_the_sources_words(inventory, entries, chapter):
    """A notebook's ``quote`` occurs in its chapter's article (up to whitespace, Markdown markup and
    full-/half-width forms; ``...`` marks a cut), not a paraphrase or a formula re-typed."""
    article = _article(inventory, chapter)
    wrong = [f"{e.id} ({e.notebook.name}): {e.quote}" for e in entries
             if e.chapter == chapter and e.quote and not quote_in(e.quote, article)]
    assert not wrong, f"quotes that are not the words of {inventory.sources[chapter]}:\n" + "\n".join(wrong)


def test_every_check_says_why_it_cannot_fail(entries):
    missing = [f"{e.id} ({e.notebook.parent.name}/{e.notebook.name})" for e in entries
               if e.kind == "check" and not e.why.strip()]
    assert not missing, "checks without a 'why' (why no seed can make them fail): " + ", ".join(missing)


def _pages(entries, inventory, chapters):
    """The overview and each chapter's page, as the site build writes them, joined."""
    appendix = ROOT / "book" / "appendix"
    return "\n".join([ledger_markdown(entries, appendix / "ledger.md", inventory),
                      *(ledger_markdown(entries, appendix / f"ledger_ch{n}.md", inventory, n) for n in chapters)])


def test_the_real_ledger_pages_are_consistent(inventory, entries):
    """Every reference on the generated pages has a target, and every target is defined once:
    what Sphinx, with warnings as errors, would otherwise only say in `make site`. Each chapter
    has its page in the table of contents, and the overview stays short."""
    text = _pages(entries, inventory, CHAPTERS)
    _assert_page_is_consistent(text, entries)
    assert f"make **{len(inventory.claims)} claims**" in text
    assert {ROOT / "book" / "appendix" / f"ledger_ch{n}.md" for n in CHAPTERS} <= set(toc_files(ROOT))
    overview = ledger_markdown(entries, ROOT / "book" / "appendix" / "ledger.md", inventory)
    assert len(overview.split()) < 10_000 and overview.count("\n#") < 20


# --- The inventory file's format ------------------------------------------------------------

GOOD = {"id": "S9.01", "source": "原话", "claim": "It holds.", "status": "measured", "ledger": ["9.1"]}


def _data(*claims, source="009.txt"):
    return {"chapters": {9: {"source": source, "claims": list(claims)}}}


@pytest.mark.parametrize(("change", "message"), [
    ({"status": None}, "S9.01: has no status"),
    ({"status": "mostly"}, "status must be one of"),
    ({"ledger": []}, "names no ledger row"),
    ({"ledger": [9.1]}, "quoted strings"),
    ({"status": "told only", "ledger": [], "page": "ch9/a"}, "needs a 'why'"),
    ({"status": "told only", "ledger": [], "why": "big"}, "needs the 'page'"),
    ({"status": "not covered", "why": "big"}, "names ledger rows that test it"),
    ({"status": "checked"}, "needs a 'verdict'"),
    ({"verdict": "holds with a caveat"}, "needs a caveat"),
    ({"verdict": "mostly"}, "verdict must be one of"),
    ({"caveat": "but"}, "a caveat goes with a verdict"),
    ({"ledgers": ["9.1"]}, "unknown field(s) ['ledgers']"),
    ({"id": "S8.01"}, "the id must read S9.<two digits>"),
    ({"source": " "}, "needs 'source'"),
])
def test_a_malformed_inventory_entry_is_named(change, message):
    claim = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_inventory(_data(claim))


def test_a_duplicate_or_a_chapter_without_a_source_is_refused():
    with pytest.raises(ValueError, match="S9.01 is used twice"):
        parse_inventory(_data(GOOD, GOOD))
    with pytest.raises(ValueError, match="names no source article"):
        parse_inventory(_data(GOOD, source=""))
    with pytest.raises(ValueError, match="'chapters'"):
        parse_inventory([GOOD])


def test_a_good_inventory_reads():
    inv = parse_inventory(_data(GOOD, {**GOOD, "id": "S9.02", "status": "not covered", "ledger": [],
                                       "related": ["9.1"], "why": "needs ImageNet"}))
    assert [c.id for c in inv.claims] == ["S9.01", "S9.02"] and inv.sources == {9: "009.txt"}
    assert inv.claims[0].chapter == 9 and inv.claims[0].label == "source-9-01"
    assert inv.claims[1].related == ["9.1"] and inv.claims[1].why == "needs ImageNet"


# --- The source's words ---------------------------------------------------------------------

ARTICLE = "这是**训练误差**（模型在训练集上）。如果导数 $g$ 小于 1，维度以 `d_model * 2^N` 爆炸,不退化"


@pytest.mark.parametrize(("quote", "found"), [
    ("训练误差（模型在训练集上）", True),        # Markdown emphasis is not part of the words
    ("训练误差(模型在训练集上)", True),          # full-width and half-width brackets agree
    ("如果导数 g 小于 1", True),                 # $...$ around a symbol
    ("维度以 d_model * 2^N 爆炸", True),         # backticks
    ("爆炸，不退化", True),                      # a half-width comma in the article
    ("这是 ... 小于 1", True),                   # a cut
    ("这是 … 小于 1", True),
    ("训练误差 [sic]（模型在训练集上）", True),  # an editor's mark
    ("小于 1 ... 这是", False),                  # fragments out of order
    ("训练误差很大", False),
    ("如果导数 g 小于 1（这很常见）", False),
])
def test_quote_in_finds_the_articles_words(quote, found):
    assert quote_in(quote, ARTICLE) is found


def test_quote_in_refuses_bad_input():
    with pytest.raises(TypeError, match="strings"):
        quote_in(None, ARTICLE)
    with pytest.raises(ValueError, match="empty"):
        quote_in(" ... ", ARTICLE)
    with pytest.raises(TypeError, match="text must be a string"):
        normalise_quote(3)
    assert normalise_quote("a **b** `c`\n $d$ \\*") == "abcd*"


# --- Cross-checks and verdicts (a made-up chapter 9) ----------------------------------------

def _entry(cid, kind="claim", verdict="holds", quote="", why="", caveat=""):
    return Entry(id=cid, kind=kind, claim=f"Claim {cid}.", notebook=ROOT / "book" / "ch9" / "nb.ipynb", cell=0,
                 asserts=["x > 1"], number={"key": "x", "what": "x"} if kind == "claim" else {},
                 verdict=verdict if kind == "claim" else "", caveat=caveat, quote=quote, why=why)


ENTRIES = [
    _entry("9.1", verdict="holds with a caveat", caveat="only here", quote="原话"),
    _entry("9.2", kind="check", why="maths", quote="公式"),
    _entry("9.3"),
]


def _claim(cid, status, **kw):
    return SourceClaim(id=cid, chapter=9, source="原话 *星*", claim=f"Source claim {cid}.", status=status, **kw)


INVENTORY = Inventory(
    sources={9: "009.txt"},
    claims=[
        _claim("S9.01", "measured", ledger=["9.1", "9.3"]),
        _claim("S9.02", "checked", ledger=["9.2"], verdict="does not hold as stated", caveat="a counterexample"),
        _claim("S9.03", "told only", related=["9.3"], why="needs ImageNet", page="ch9/nb"),
        _claim("S9.04", "not covered", why="a matter of taste"),
    ],
    root=ROOT / "book",
)


def test_cross_checks_name_each_problem():
    assert not unknown_ledger_ids(INVENTORY, ENTRIES)
    assert not rows_without_an_entry(INVENTORY, ENTRIES) and not status_problems(INVENTORY, ENTRIES)
    bad = Inventory(sources={9: "009.txt"}, claims=[
        _claim("S9.01", "measured", ledger=["9.2"], related=["9.9"]),               # a check only; 9.9 unknown
        _claim("S9.02", "checked", ledger=["9.3"], verdict="holds"),                # 9.3 is a claim
        _claim("S9.03", "measured", ledger=["9.1"], verdict="holds"),               # stronger than 9.1's
    ])
    assert unknown_ledger_ids(bad, ENTRIES) == [
        "S9.01 (chapter 9) names ledger id '9.9' under 'related', which no notebook has"]
    problems = "\n".join(status_problems(bad, ENTRIES))
    assert "S9.01 is 'measured' but its ledger rows ['9.2'] are all checks" in problems
    assert "S9.02 is 'checked' but ['9.3'] measure it" in problems
    assert "S9.03 states 'holds', stronger than its rows' 'holds with a caveat'" in problems
    orphans = rows_without_an_entry(Inventory(sources={9: "009.txt"}, claims=[]), ENTRIES)
    assert [o.split(" (")[0] for o in orphans] == ["ledger row 9.1", "ledger row 9.2"]  # 9.3 quotes nothing


def test_a_source_claims_verdict_is_the_weakest_of_its_measured_rows():
    by_id = {e.id: e for e in ENTRIES}
    assert derived_verdict(INVENTORY.claims[0], by_id) == "holds with a caveat"
    assert derived_verdict(INVENTORY.claims[1], by_id) == "does not hold as stated"  # stated: checks have none
    assert derived_verdict(_claim("S9.05", "measured", ledger=["9.3"]), by_id) == "holds"
    assert derived_verdict(INVENTORY.claims[3], by_id) == ""


# --- The page ---------------------------------------------------------------------------------

def test_the_summary_table_counts_by_status_verdict_and_kind_with_links():
    rows = inventory_table(INVENTORY, ENTRIES).splitlines()
    assert rows[0] == ("| Chapter | Source claims | measured | checked | told only | not covered | holds | "
                       "holds with a caveat | not testable here | does not hold as stated | ledger claims | "
                       "ledger checks |")
    chapter = ("| {ref}`Chapter 9 <source-claims-ch9>` | 4 | 1 | 1 | 1 | 1 | 0 | "
               "{ref}`1 <verdict-holds-with-a-caveat>` | 0 | {ref}`1 <verdict-does-not-hold-as-stated>` | 2 | 1 |")
    assert rows[2] == chapter
    assert rows[3].startswith("| **All** | 4 | 1 | 1 | 1 | 1 | 0 | {ref}`1 <")


def test_the_overview_gives_each_source_claim_one_line():
    text = ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger.md", INVENTORY)
    for verdict in VERDICTS:
        assert f"({verdict_label(verdict)})=\n### {verdict.capitalize()} (" in text
    assert "Source claims: {ref}`S9.02 <source-9-02>`." in text
    assert "Ledger claims that hold with a caveat: {ref}`9.1 <ledger-9-1>`." in text
    assert "Ledger claims that do not hold as stated: none." in text
    assert ("| {ref}`S9.01 <source-9-01>` Source claim S9.01. | holds with a caveat | only here | "
            "{doc}`ch9/nb <../ch9/nb>` |") in text
    assert "| does not hold as stated | a counterexample |" in text
    assert "| told only | needs ImageNet | {doc}`ch9/nb <../ch9/nb>` |" in text
    assert "| not covered | a matter of taste | — |" in text
    assert "make **4 claims**: the book measures 1, checks 1" in text
    assert "(ledger-9-1)=" not in text and "(source-9-01)=" not in text  # on the chapter's page


def test_a_chapters_page_has_its_claims_in_full_and_its_rows():
    text = ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger_ch9.md", INVENTORY, 9)
    assert "(source-9-01)=\n**S9.01** · measured · *holds with a caveat*: Source claim S9.01. 「原话 \\*星\\*」" in text
    assert "Tested by {ref}`9.1 <ledger-9-1>`, {ref}`9.3 <ledger-9-3>`." in text
    assert "*Does not hold as stated*: a counterexample" in text
    assert "Told in {doc}`../ch9/nb`, not measured: needs ImageNet See also {ref}`9.3 <ledger-9-3>`." in text
    assert "Not covered: a matter of taste" in text
    assert "(ledger-9-1)=\n### 9.1 · holds with a caveat" in text
    assert "Why it cannot fail on a new seed: maths" in text
    assert "Source claim: {ref}`S9.01 <source-9-01>`." in text
    _assert_page_is_consistent(text + "\n" + ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger.md",
                                                             INVENTORY), ENTRIES)
    assert ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger_ch8.md", INVENTORY, 8).strip() == ""
    # (a chapter with neither claims nor rows)


def test_a_row_shows_its_numbers_spread_over_the_sweeps_seeds():
    swept = {(ROOT / "book" / "ch9" / "nb.ipynb", "x"): [2.0, 1.0, 4.0]}
    number = {"key": "x", "what": "x", "format": ".1f", "unit": " %"}
    entries = [Entry(**{**ENTRIES[0].__dict__, "number": number}), ENTRIES[1],
               Entry(**{**ENTRIES[2].__dict__, "number": {"key": "z", "what": "z"}})]
    text = ledger_markdown(entries, ROOT / "book" / "appendix" / "ledger_ch9.md", INVENTORY, 9, swept)
    assert "over 3 more seeds (the sweep): least 1.0 %, median 2.0 %, most 4.0 % · checked for seeds" in text
    assert text.count("more seeds (the sweep)") == 1  # 9.3's number, z, was not swept: no spread
    bounded = {**number, "bound": [0.5, 5]}  # the nearest seed: 1.0, 0.5 above the low bound
    assert spread_line([2.0, 1.0, 4.0], bounded).endswith("; nearest margin to the assert's bound 0.5 %: 0.5 %")
    assert spread_line([2.0, 4.8], {**bounded, "bound": [None, 5]}).endswith("bound 5.0 %: 0.2 %")


@pytest.mark.parametrize(("bound", "problem"), [
    ([0.4, 1.1], None), ([None, 1.1], None), ([-0.35, 0.35], None),
    ([0.4, 2], "[2] is not written"), ([None, None], "must be [low, high]"), ("0.4", "must be [low, high]"),
    ([True, 1.1], "must be [low, high]"),
])
def test_a_numbers_bound_is_read_off_its_asserts(bound, problem):
    asserts = ["0.4 < flat_power < 1.1", "abs(w) < 0.35 and z > 1e-3"]
    found = bound_problem(bound, asserts)
    assert found is None if problem is None else problem in found


def test_a_bound_in_percent_is_read_off_an_assert_on_the_fraction():
    assert bound_problem([30, None], ["gap > 0.3"], scale=100) is None
    assert "[3] is not written" in bound_problem([3, None], ["gap > 0.3"], scale=100)


@pytest.mark.parametrize(("text", "line"), [
    ("one recipe (SGD, rate 0.05); the next section sweeps it.", "one recipe (SGD, rate 0.05)"),
    ("He et al. write so. Then more.", "He et al. write so"),
    ("e.g. a net. Rest", "e.g. a net"),
    ("word " * 60, ("word " * 34).strip() + " …"),
])
def test_one_line_is_the_first_clause(text, line):
    assert one_line(text) == line


def test_an_inventory_naming_a_missing_row_stops_the_page():
    bad = Inventory(sources={9: "009.txt"}, claims=[_claim("S9.01", "measured", ledger=["9.9"])])
    with pytest.raises(ValueError, match=r"S9.01 \(chapter 9\) names ledger id '9.9'"):
        ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger.md", bad)


def test_without_an_inventory_the_page_is_the_rows_alone():
    text = ledger_markdown(ENTRIES, ROOT / "book" / "appendix" / "ledger.md")
    assert "## At a glance" not in text and "(ledger-9-2)=\n### 9.2 · check" in text


def _assert_page_is_consistent(text: str, entries: list[Entry]) -> None:
    """Labels defined once, each on its own line after a blank one and before a block; every
    {ref} to a label of the page or of a claim cell; headings that do not skip a level."""
    lines = text.splitlines()
    labels = [m.group(1) for m in map(re.compile(r"^\(([a-z0-9-]+)\)=$").match, lines) if m]
    assert len(labels) == len(set(labels)), "a label is defined twice"
    for i, line in enumerate(lines):
        if re.fullmatch(r"\([a-z0-9-]+\)=", line):
            assert i == 0 or not lines[i - 1].strip(), f"no blank line before {line}"
            assert i + 1 < len(lines) and lines[i + 1].strip(), f"{line} labels nothing"
    targets = set(labels) | {e.label for e in entries}
    refs = re.findall(r"\{ref\}`[^`<]*<([^>]+)>`", text)
    assert refs and not set(refs) - targets, f"references without a target: {sorted(set(refs) - targets)}"
    levels = [len(m.group(1)) for m in map(re.compile(r"^(#+) ").match, lines) if m]
    assert all(b - a <= 1 for a, b in zip([1, *levels], levels)), "a heading skips a level"
