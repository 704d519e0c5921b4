"""The claims ledger: every claim of the five source articles, and every claim the book measures.

The ledger has an overview and a page per chapter, all generated at build time.

**The inventory of the sources' claims** lives in one reviewable file beside the book,
``book/appendix/source_claims.yml`` (:data:`INVENTORY`). For each chapter it names the
source article (a file name; the articles themselves are not part of the repository) and
lists every substantive claim the article makes::

    chapters:
      1:
        source: 000_b29342c877bb429f.txt
        claims:
          - id: S1.01                    # S<chapter>.<two digits>
            source: '把神经网络层数从 20 层增加到 56 层，训练误差反而变高了。'   # the article's words
            claim: "A 56-layer plain net ends with a higher training error than a 20-layer one."
            status: measured             # measured | checked | told only | not covered
            ledger: ["1.1a", "1.1d"]     # the ledger rows that test it (quoted: YAML reads 1.6 as a number)
            related: ["1.1g"]            # optional: rows that bear on it without testing it as stated
            verdict: ...                 # optional, see below
            caveat: ...                  # required with a verdict other than "holds"
            why: ...                     # told only / not covered: why it is not measured
            page: ch1/01_degradation     # told only: the page (under book/) that tells it
            note: ...                    # optional remark shown with the entry

The statuses: **measured** -- at least one row in ``ledger`` is a measured claim (kind
"claim"), and the entry's verdict is the weakest verdict among those claim rows (an entry may
state a weaker ``verdict`` with a ``caveat`` when its rows test it only in part, never a
stronger one); **checked** -- its rows are all checks of maths or data, which cannot fail on a
new seed, so the entry states its own ``verdict`` (a check can confirm a statement or refute it
by a counterexample); **told only** -- the book states or discusses it without an assert
(``why`` says why it is not measured, e.g. it needs ImageNet, and ``page`` where it is told);
**not covered** -- the book leaves it out (``why`` says why). :func:`read_inventory` reads and
validates the file; :func:`unknown_ledger_ids`, :func:`rows_without_an_entry` and
:func:`status_problems` compare it with the notebooks (the tests call them).

**The ledger rows** live in the notebook cells that assert them. The cell's metadata
carries its ledger entry (a dict, or a list of dicts for a cell that asserts several claims)::

    "ledger": {
      "id": "1.1",                      # the claim's number in the chapter
      "kind": "claim",                  # "claim" (measured) or "check" (data or maths)
      "claim": "One plain sentence.",
      "verdict": "holds",               # claims: one of VERDICTS (below)
      "caveat": "...",                  # required unless the verdict is "holds"
      "why": "...",                     # checks: why the asserts cannot fail on a new seed
      "quote": "源文的原话",             # optional: the source's own words (Chinese)
      "number": {"key": "plain_gap", "format": ".1f", "unit": " points", "what": "..."},
      "asserts": [0, 1],                # optional: which of the cell's asserts check this claim
      "extension": true                 # optional: an experiment of the course's own (no quote)
    }

A **check** is an assert that cannot fail on a new seed: it holds by definition, by
construction or by arithmetic on typed-in data. It catches a bug in the code, not a finding,
and its ``why`` says in one line why no seed can make it fail (the ledger page shows it;
``tests/test_ledger_inventory.py`` requires it). A ``quote`` is the source article's own
words: :func:`quote_in` accepts it when it occurs in the article after both are normalised
(Unicode NFKC, so full-width and half-width punctuation agree; whitespace, Markdown emphasis
``**``, backticks and ``$`` removed), and ``...`` (or ``…``) joins fragments that occur in
that order, to leave out a formula or a clause (an editor's ``[sic]`` after a slip of the
source is allowed). A row with a ``quote`` tests a source claim, so it must be in some
inventory entry's ``ledger`` list.

``number.key`` names a value the same notebook glues; the ledger pastes it from that run.
How the claim is checked is not typed in: it is the cell's own ``assert`` lines. This
module reads the entries (:func:`read_ledger`, also used by the tests), gives each claim
cell an anchor (``claim-1-1``) and a label, and writes the ledger's pages
(:func:`ledger_markdown`). The overview carries the line ``% claims-ledger`` (a MyST comment,
so nothing shows if the extension is missing; the tests would notice the empty ledger): the
counts, a summary table (per chapter: the sources' claims by status, the tested ones by
verdict, the ledger's claims and checks), every source claim in one table row (its verdict,
the first clause of what limits it, the sections that test it; anchors ``source-claims-ch1``),
and the claims' ids by verdict (anchors ``verdict-holds``, ...). A chapter's page carries
``% claims-ledger chapter N``: the article's claims in full (anchors ``source-1-01``), then the
chapter's rows (anchors ``ledger-1-1a``).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("claim", "check")
VERDICTS = ("holds", "holds with a caveat", "not testable here", "does not hold as stated")  # strongest first
"""A claim's verdict. "not testable here": the book's test cannot decide it (its caveat says
why: the data, the budget, the scale), which is weaker than any agreement and stronger than a
contradiction."""
STATUSES = ("measured", "checked", "told only", "not covered")
SEEDS = "0-9"  # seed 0 in every build and test run, seeds 1-9 in the sweep (make sweep, CI)
INVENTORY = Path(__file__).resolve().parent.parent / "appendix" / "source_claims.yml"
ROOT_OF_BOOK = INVENTORY.parent.parent  # book/: the repository is its parent


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
    why: str = ""
    extension: bool = False  # an experiment of the course's own, beside the sources' claims

    @property
    def label(self) -> str:
        return label_of(self.id)

    @property
    def row_label(self) -> str:
        """The anchor of the row on the ledger page (the cell's own anchor is :attr:`label`)."""
        return "ledger-" + label_of(self.id)[len("claim-"):]

    @property
    def chapter(self) -> int:
        """The chapter of the notebook (``book/ch3/...`` -> 3), else the id's first number."""
        match = re.fullmatch(r"ch(\d+)", self.notebook.parent.name)
        return int(match.group(1) if match else re.match(r"\d+", self.id).group())


def label_of(claim_id) -> str:
    """The anchor and label of a claim cell: ``"1.1a"`` -> ``"claim-1-1a"``."""
    return "claim-" + _slug(claim_id)


def _slug(text) -> str:
    return re.sub(r"[^0-9a-z]+", "-", str(text).lower()).strip("-")


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


def bound_problem(bound, asserts: list[str], scale: float = 1) -> str | None:
    """What is wrong with a number's ``bound``, ``[low, high]`` (either ``None`` where the assert
    sets no limit), the limits one of the row's ``asserts`` puts on the glued number itself, in
    the glued number's units (``scale``: the glued number is the asserted one times ``scale``,
    as a percentage glued for a fraction); None when nothing is. Each limit divided by ``scale``
    must be written in the assert (or be the negative of a limit on an absolute value), so that
    a bound is read off the test, not typed beside it."""
    if not (isinstance(bound, list) and len(bound) == 2 and any(b is not None for b in bound)
            and all(b is None or (isinstance(b, (int, float)) and not isinstance(b, bool)) for b in bound)):
        return f"must be [low, high], numbers or null, not both null; got {bound!r}"
    written = {float(x) for a in asserts for x in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?", a)}
    missing = [b for b in bound
               if b is not None and not any(abs(abs(float(b)) / scale - w) <= 1e-12 * w for w in written)]
    return f"{missing} is not written in the row's asserts" if missing else None


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
                for key in ("why", "quote"):
                    _require(isinstance(meta.get(key, ""), str), where, f"{meta['id']}: {key} must be a string")
                _require(isinstance(meta.get("extension", False), bool), where,
                         f"{meta['id']}: extension must be a bool")
                _require(not (meta.get("extension") and meta.get("quote")), where,
                         f"{meta['id']}: an extension of the course's own quotes no source")
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
                if "bound" in number:
                    problem = bound_problem(number["bound"], asserts, number.get("scale", 1))
                    _require(problem is None, where, f"{meta['id']}: number's bound {problem}")
                entries.append(Entry(
                    id=str(meta["id"]), kind=meta["kind"], claim=meta["claim"], notebook=path, cell=index,
                    asserts=asserts, number=number, verdict=meta.get("verdict", ""),
                    caveat=meta.get("caveat", ""), quote=meta.get("quote", ""), why=meta.get("why", ""),
                    extension=meta.get("extension", False)))
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
    return {"claims": len(claims), **counts, "checks": len(entries) - len(claims),
            "extensions": sum(e.extension for e in claims)}


# --- The source's words ---------------------------------------------------------------------

_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|$])")  # Markdown's backslash escapes
_MARKUP = re.compile(r"\*\*|`|\$")
_FRAGMENTS = re.compile(r"\s*(?:\.\.\.|…)\s*")
_SIC = re.compile(r"\s*\[sic\]", re.IGNORECASE)  # an editor's mark after a slip of the source


def normalise_quote(text: str) -> str:
    """``text`` as :func:`quote_in` compares it: Unicode NFKC (full-width punctuation becomes
    half-width), Markdown escapes undone, ``**``, backticks and ``$`` removed, no whitespace."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    text = _ESCAPED.sub(r"\1", unicodedata.normalize("NFKC", text))
    return re.sub(r"\s+", "", _MARKUP.sub("", text))


def quote_in(quote: str, article: str) -> bool:
    """Whether ``quote`` is the article's own words: each fragment of the quote (fragments are
    separated by ``...`` or ``…``, which mark a cut) occurs in ``article``, in order, once both
    are normalised by :func:`normalise_quote`; an editor's ``[sic]`` is not part of the words."""
    if not isinstance(quote, str) or not isinstance(article, str):
        raise TypeError("quote and article must be strings")
    fragments = [normalise_quote(f) for f in _FRAGMENTS.split(_SIC.sub("", quote))]
    fragments = [f for f in fragments if f]
    if not fragments:
        raise ValueError("quote is empty")
    text, at = normalise_quote(article), 0
    for fragment in fragments:
        found = text.find(fragment, at)
        if found < 0:
            return False
        at = found + len(fragment)
    return True


# --- The inventory of the sources' claims ---------------------------------------------------

@dataclass
class SourceClaim:
    """One claim of a source article, with what the book does about it."""

    id: str
    chapter: int
    source: str
    claim: str
    status: str
    ledger: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    verdict: str = ""
    caveat: str = ""
    why: str = ""
    page: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        """``"S1.01"`` -> ``"source-1-01"``."""
        return "source-" + _slug(self.id.lstrip("Ss"))


@dataclass
class Inventory:
    """The inventory file: the source article of each chapter, and the articles' claims."""

    sources: dict[int, str]
    claims: list[SourceClaim]
    root: Path = ROOT_OF_BOOK  # the book's folder (``page`` is under it)


_FIELDS = {"id", "source", "claim", "status", "ledger", "related", "verdict", "caveat", "why", "page", "note"}


def _inventory_error(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


def parse_inventory(data, where: str = "inventory", root: Path | None = None) -> Inventory:
    """Validate the inventory's data (as loaded from YAML) and return it; raises ValueError
    naming the entry and the field at the first problem."""
    if not isinstance(data, dict) or not isinstance(data.get("chapters"), dict):
        raise _inventory_error(where, "must be a mapping with 'chapters': {number: {source, claims}}")
    sources: dict[int, str] = {}
    claims: list[SourceClaim] = []
    for chapter, body in data["chapters"].items():
        if not isinstance(chapter, int) or not isinstance(body, dict):
            raise _inventory_error(where, f"chapter {chapter!r} must be a number with a mapping {{source, claims}}")
        if not isinstance(body.get("source"), str) or not body["source"]:
            raise _inventory_error(where, f"chapter {chapter} names no source article ('source')")
        if not isinstance(body.get("claims"), list) or not body["claims"]:
            raise _inventory_error(where, f"chapter {chapter} lists no claims")
        sources[chapter] = body["source"]
        for raw in body["claims"]:
            claims.append(_parse_claim(raw, chapter, where))
    seen: set[str] = set()
    for claim in claims:
        if claim.id in seen:
            raise _inventory_error(where, f"{claim.id} is used twice")
        seen.add(claim.id)
    return Inventory(sources, claims, **({"root": Path(root)} if root is not None else {}))


def _parse_claim(raw, chapter: int, where: str) -> SourceClaim:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise _inventory_error(where, f"chapter {chapter}: every claim needs an 'id' (a string), got {raw!r:.80}")
    cid = raw["id"]
    at = f"{where}: {cid}"
    if not re.fullmatch(rf"S{chapter}\.\d\d", cid):
        raise _inventory_error(at, f"the id must read S{chapter}.<two digits> (chapter {chapter})")
    unknown = set(raw) - _FIELDS
    if unknown:
        raise _inventory_error(at, f"unknown field(s) {sorted(unknown)}; the fields are {sorted(_FIELDS)}")
    for key in ("source", "claim"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _inventory_error(at, f"needs {key!r} (a non-empty string)")
    status = raw.get("status")
    if status is None:
        raise _inventory_error(at, f"has no status (one of {STATUSES})")
    if status not in STATUSES:
        raise _inventory_error(at, f"status must be one of {STATUSES}, got {status!r}")
    lists = {}
    for key in ("ledger", "related"):
        ids = raw.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise _inventory_error(at, f"{key} must be a list of ledger ids as quoted strings "
                                       "(YAML reads 1.6 as a number)")
        lists[key] = ids
    texts = {}
    for key in ("verdict", "caveat", "why", "page", "note"):
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise _inventory_error(at, f"{key} must be a string")
        texts[key] = value.strip()
    tested = status in ("measured", "checked")
    if tested and not lists["ledger"]:
        raise _inventory_error(at, f"is {status!r} but names no ledger row ('ledger': [ids])")
    if not tested and lists["ledger"]:
        raise _inventory_error(at, f"is {status!r} but names ledger rows that test it; "
                                   "list them under 'related', or make it 'measured'")
    if not tested and not texts["why"]:
        raise _inventory_error(at, f"is {status!r} and needs a 'why' (why the book does not measure it)")
    if status == "told only" and not texts["page"]:
        raise _inventory_error(at, "is 'told only' and needs the 'page' that tells it (e.g. ch1/01_degradation)")
    if status != "told only" and texts["page"]:
        raise _inventory_error(at, "only a 'told only' claim names a 'page'")
    if status == "checked" and not texts["verdict"]:
        raise _inventory_error(at, "is 'checked' (its rows are checks, which carry no verdict) and needs a 'verdict'")
    if texts["verdict"]:
        if not tested:
            raise _inventory_error(at, f"is {status!r}: only a measured or checked claim has a verdict")
        if texts["verdict"] not in VERDICTS:
            raise _inventory_error(at, f"verdict must be one of {VERDICTS}, got {texts['verdict']!r}")
        if texts["verdict"] != "holds" and not texts["caveat"]:
            raise _inventory_error(at, "a verdict other than 'holds' needs a caveat")
    elif texts["caveat"]:
        raise _inventory_error(at, "a caveat goes with a verdict the entry states itself")
    return SourceClaim(id=cid, chapter=chapter, source=raw["source"].strip(), claim=raw["claim"].strip(),
                       status=status, **lists, **texts)


def read_inventory(path=INVENTORY) -> Inventory:
    """The inventory file (YAML), validated by :func:`parse_inventory`."""
    import yaml

    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return parse_inventory(data, where=path.name, root=path.resolve().parent.parent)


def derived_verdict(claim: SourceClaim, by_id: dict[str, Entry]) -> str:
    """The verdict on a source claim: the one the entry states, else the weakest verdict of the
    measured claims among its ledger rows ("" when it has none)."""
    if claim.verdict:
        return claim.verdict
    verdicts = [by_id[i].verdict for i in claim.ledger if i in by_id and by_id[i].kind == "claim"]
    return max(verdicts, key=VERDICTS.index) if verdicts else ""


def unknown_ledger_ids(inventory: Inventory, entries: list[Entry]) -> list[str]:
    """One line per ledger id that an inventory entry names and no notebook has."""
    known = {e.id for e in entries}
    return [f"{c.id} (chapter {c.chapter}) names ledger id {i!r} under {key!r}, which no notebook has"
            for c in inventory.claims for key in ("ledger", "related") for i in getattr(c, key) if i not in known]


def rows_without_an_entry(inventory: Inventory, entries: list[Entry]) -> list[str]:
    """One line per ledger row that quotes the source but tests no inventory entry (is in no
    entry's ``ledger`` list)."""
    tested = {i for c in inventory.claims for i in c.ledger}
    return [f"ledger row {e.id} ({e.kind}, {e.notebook.parent.name}/{e.notebook.name}) quotes the source "
            f"({e.quote[:30]}...) but is in no inventory entry's 'ledger' list"
            for e in entries if e.quote and e.id not in tested]


def status_problems(inventory: Inventory, entries: list[Entry]) -> list[str]:
    """One line per entry whose status does not fit its ledger rows: "measured" needs a
    measured claim among them, "checked" only checks; a stated verdict may be weaker than the
    rows' verdict, never stronger."""
    by_id = {e.id: e for e in entries}
    problems = []
    for c in inventory.claims:
        rows = [by_id[i] for i in c.ledger if i in by_id]
        if not rows:
            continue
        claims = [r.id for r in rows if r.kind == "claim"]
        if c.status == "measured" and not claims:
            problems.append(f"{c.id} is 'measured' but its ledger rows {c.ledger} are all checks: "
                            "make it 'checked' with a verdict")
        if c.status == "checked" and claims:
            problems.append(f"{c.id} is 'checked' but {claims} measure it: make it 'measured'")
        if c.status == "measured" and c.verdict and claims:
            rows_verdict = max((by_id[i].verdict for i in claims), key=VERDICTS.index)
            if VERDICTS.index(c.verdict) < VERDICTS.index(rows_verdict):
                problems.append(f"{c.id} states {c.verdict!r}, stronger than its rows' {rows_verdict!r} "
                                f"({claims})")
    return problems


# --- The page -------------------------------------------------------------------------------

def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>$|{}])")


def _md_text(text: str) -> str:
    """Plain text as MyST inline text: Markdown's special characters escaped, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


_PLURAL = {"holds": "hold", "holds with a caveat": "hold with a caveat",
           "not testable here": "are not testable here", "does not hold as stated": "do not hold as stated"}


def verdict_label(verdict: str) -> str:
    """``"holds with a caveat"`` -> ``"verdict-holds-with-a-caveat"``."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return "verdict-" + _slug(verdict)


def chapter_label(chapter: int) -> str:
    return f"source-claims-ch{int(chapter)}"


def _ref(text: str, label: str) -> str:
    return f"{{ref}}`{text} <{label}>`"


def _rows(ids: list[str], by_id: dict[str, Entry]) -> str:
    return ", ".join(_ref(i, by_id[i].row_label) for i in ids)


def _check_known(inventory: Inventory, entries: list[Entry]) -> dict[str, Entry]:
    by_id = {e.id: e for e in entries}
    unknown = unknown_ledger_ids(inventory, entries)
    if unknown:
        raise ValueError("the inventory (book/appendix/source_claims.yml) names ledger rows that no notebook "
                         "has:\n" + "\n".join(unknown))
    return by_id


def inventory_table(inventory: Inventory, entries: list[Entry]) -> str:
    """The summary table: per chapter, the sources' claims by status, the tested ones (measured
    or checked) by verdict, and the ledger's rows by kind; each chapter and each verdict count
    links to its list."""
    by_id = _check_known(inventory, entries)
    chapters = sorted(set(inventory.sources) | {e.chapter for e in entries})
    head = ["Chapter", "Source claims", *STATUSES, *VERDICTS, "ledger claims", "ledger checks"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    totals = [0] * (len(head) - 1)
    for chapter in [*chapters, None]:
        if chapter is None:
            cells, name = totals, "**All**"
        else:
            mine = [c for c in inventory.claims if c.chapter == chapter]
            rows = [e for e in entries if e.chapter == chapter]
            verdicts = [derived_verdict(c, by_id) for c in mine if c.status in ("measured", "checked")]
            cells = [len(mine), *(sum(c.status == s for c in mine) for s in STATUSES),
                     *(verdicts.count(v) for v in VERDICTS),
                     sum(e.kind == "claim" for e in rows), sum(e.kind == "check" for e in rows)]
            totals = [t + c for t, c in zip(totals, cells)]
            name = _ref(f"Chapter {chapter}", chapter_label(chapter)) if mine else f"Chapter {chapter}"
        shown = [str(n) for n in cells]
        for k, verdict in enumerate(VERDICTS, start=1 + len(STATUSES)):
            if cells[k]:
                shown[k] = _ref(str(cells[k]), verdict_label(verdict))
        lines.append("| " + " | ".join([name, *shown]) + " |")
    return "\n".join(lines)


_ABBREVIATIONS = r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bFig)(?<!\bcf)(?<!\bEq)(?<!\bSec)"
_FIRST_CLAUSE = re.compile(_ABBREVIATIONS + r"[.;](?=\s|$)")


def one_line(text: str, limit: int = 170) -> str:
    """The first clause of ``text`` (up to its first full stop or semicolon), cut at a word
    boundary to at most ``limit`` characters: a caveat as the overview's table shows it."""
    text = " ".join(str(text).split())
    match = _FIRST_CLAUSE.search(text)
    first = text[:match.start()] if match else text
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0] + " …"
    return first


def gist(c: SourceClaim, by_id: dict[str, Entry]) -> str:
    """What limits a source claim's verdict, in full: why it is not measured, the caveat its
    entry states, or the caveat of its weakest measured row ("" when it simply holds)."""
    if c.status in ("told only", "not covered"):
        return c.why
    if c.caveat:
        return c.caveat
    verdict = derived_verdict(c, by_id)
    caveats = [by_id[i].caveat for i in c.ledger
               if by_id[i].kind == "claim" and by_id[i].verdict == verdict and by_id[i].caveat]
    return caveats[0] if caveats else ""


def detail_page(chapter: int) -> str:
    """The document (under ``book/appendix``) with chapter ``chapter``'s claims in detail."""
    return f"ledger_ch{int(chapter)}"


def _sections(c: SourceClaim, by_id: dict[str, Entry], back: str) -> str:
    """Links to the sections that test or tell a source claim."""
    if c.status == "told only":
        pages = [c.page]
    else:
        pages = list(dict.fromkeys(f"{by_id[i].notebook.parent.name}/{by_id[i].notebook.stem}" for i in c.ledger))
    return ", ".join(f"{{doc}}`{p.split('_')[0]} <{back}/{p}>`" for p in pages) or "—"


def overview_markdown(inventory: Inventory, entries: list[Entry], page: Path) -> str:
    """The overview's body as MyST: every source claim, chapter by chapter, in one table row
    (its verdict, what limits it in one line, the sections that test it), then the claims'
    ids by verdict."""
    by_id = _check_known(inventory, entries)
    back = Path(os.path.relpath(inventory.root, Path(page).parent)).as_posix()
    lines = ["## The source articles' claims", "",
             "Each claim in one line: its verdict (or, when the book does not test it, its status), "
             "what limits the verdict, cut to its first clause, and the sections that test or tell it. "
             "A claim's id opens its entry in full, with the article's words and the rows that test it.",
             ""]
    for chapter in sorted(inventory.sources):
        mine = [c for c in inventory.claims if c.chapter == chapter]
        if not mine:
            continue
        lines += [f"({chapter_label(chapter)})=", f"### Chapter {chapter}", "",
                  f"The article credited on {{doc}}`chapter {chapter}'s first page <{back}/ch{chapter}/index>`; "
                  f"in full, with the rows that test it: {{doc}}`chapter {chapter}'s claims in detail "
                  f"<{detail_page(chapter)}>`.", "",
                  "| Claim | Verdict | What limits it | Section |", "|---|---|---|---|"]
        for c in mine:
            verdict = derived_verdict(c, by_id) or c.status
            lines.append(f"| {_ref(c.id, c.label)} {_md_text(c.claim)} | {verdict} | "
                         f"{_md_text(one_line(gist(c, by_id))) or '—'} | {_sections(c, by_id, back)} |")
        lines.append("")
    lines += ["## Source claims by verdict", "",
              "The source claims the book tests, measured or checked, by verdict, and the ledger's measured "
              "claims with each verdict (the book's own claims among them).", ""]
    for verdict in VERDICTS:
        mine = [c for c in inventory.claims
                if c.status in ("measured", "checked") and derived_verdict(c, by_id) == verdict]
        rows = [e.id for e in entries if e.kind == "claim" and e.verdict == verdict]
        lines += [f"({verdict_label(verdict)})=", f"### {verdict.capitalize()} ({len(mine)})", "",
                  "Source claims: " + (", ".join(_ref(c.id, c.label) for c in mine) or "none") + ".", "",
                  f"Ledger claims that {_PLURAL[verdict]}: " + (_rows(rows, by_id) if rows else "none") + ".", ""]
    return "\n".join(lines)


def inventory_markdown(inventory: Inventory, entries: list[Entry], page: Path, chapter: int) -> str:
    """Chapter ``chapter``'s source claims in full, as MyST."""
    by_id = _check_known(inventory, entries)
    back = Path(os.path.relpath(inventory.root, Path(page).parent)).as_posix()
    mine = [c for c in inventory.claims if c.chapter == chapter]
    if not mine:
        return ""
    lines = ["## The article's claims", "",
             f"The article credited on {{doc}}`chapter {chapter}'s first page <{back}/ch{chapter}/index>`, "
             "claim by claim, in its own words.", ""]
    for c in mine:
        lines += _claim_lines(c, by_id, back)
    return "\n".join(lines)


def _claim_lines(c: SourceClaim, by_id: dict[str, Entry], back: str) -> list[str]:
    verdict = derived_verdict(c, by_id)
    head = f"**{c.id}** · {c.status}" + (f" · *{verdict}*" if verdict else "")
    lines = [f"({c.label})=", f"{head}: {_md_text(c.claim)} 「{_md_text(c.source)}」", ""]
    details = []
    if c.ledger:
        details.append(("Tested by " if c.status == "measured" else "Checked by ") + _rows(c.ledger, by_id) + ".")
    if c.verdict and c.caveat:
        details.append(f"*{c.verdict.capitalize()}*: {_md_text(c.caveat)}")
    if c.status == "told only":
        details.append(f"Told in {{doc}}`{back}/{c.page}`, not measured: {_md_text(c.why)}")
    elif c.status == "not covered":
        details.append(f"Not covered: {_md_text(c.why)}")
    if c.related:
        details.append("See also " + _rows(c.related, by_id) + ".")
    if c.note:
        details.append(_md_text(c.note))
    return lines + ([" ".join(details), ""] if details else [])


def summary_markdown(entries: list[Entry], inventory: Inventory | None = None) -> str:
    """The counts that open the overview: the ledger's claims by verdict, its checks and
    extensions, and (with an inventory) the articles' claims by status."""
    counts = summary(entries)
    lines = [
        f"The book measures **{counts['claims']} claims**: {counts['holds']} hold as stated, "
        f"{counts['holds with a caveat']} hold with a caveat, {counts['not testable here']} are not "
        f"testable here and {counts['does not hold as stated']} do not hold as stated. Besides them, "
        f"{counts['checks']} checks of data and maths are "
        "listed apart: they catch a bug in the code but cannot fail on a new seed. "
        f"{counts['extensions']} of the claims are the course's own extensions, experiments beyond "
        "the source articles, marked so.",
        "",
    ]
    if inventory is not None:
        n = len(inventory.claims)
        by_status = {s: sum(c.status == s for c in inventory.claims) for s in STATUSES}
        lines += [
            f"The five source articles make **{n} claims**: the book measures "
            f"{by_status['measured']}, checks {by_status['checked']} by maths or data, tells "
            f"{by_status['told only']} without measuring them and leaves {by_status['not covered']} "
            "out.",
            "",
        ]
    return "\n".join(lines)


def ledger_markdown(entries: list[Entry], page: Path, inventory: Inventory | None = None,
                    chapter: int | None = None, swept: dict[tuple[Path, str], list[float]] | None = None) -> str:
    """The ledger as MyST. With an inventory and no ``chapter``, the overview: the counts, a table
    per chapter and every source claim in one line; with a ``chapter``, that chapter's page in
    detail: its source claims in full (with an inventory), then its measured claims and checks.
    With neither, every chapter's rows after the counts. ``swept`` (:func:`swept_numbers`) adds to
    each row with a number its spread over the sweep's seeds."""
    if chapter is None and inventory is not None:
        return "\n".join([
            summary_markdown(entries, inventory),
            "## At a glance",
            "",
            "Per chapter: the source article's claims by status, the tested ones (measured or checked) "
            "by verdict, and the ledger's rows by kind. A chapter links to its claims, a count of "
            "verdicts to the claims with that verdict.",
            "",
            inventory_table(inventory, entries),
            "",
            overview_markdown(inventory, entries, page),
        ])
    lines = []
    backlinks: dict[str, list[SourceClaim]] = {}
    if chapter is None:
        lines += [summary_markdown(entries)]
    else:
        entries_shown = [e for e in entries if e.chapter == chapter]
        if inventory is not None:
            lines += [inventory_markdown(inventory, entries, page, chapter), ""]
    if inventory is not None:
        for c in inventory.claims:
            for i in [*c.ledger, *c.related]:
                backlinks.setdefault(i, []).append(c)
    shown = entries if chapter is None else entries_shown
    for kind, heading in (("claim", "Measured claims"), ("check", "Checks of data and maths")):
        rows = [e for e in shown if e.kind == kind]
        if not rows:
            continue
        lines += [f"## {heading}", ""]
        for e in rows:
            spread = (swept or {}).get((Path(e.notebook).resolve(), e.number.get("key")))
            lines += _row_lines(e, kind, page, backlinks, spread)
    return "\n".join(lines)


def swept_numbers(notebooks, root: Path) -> dict[tuple[Path, str], list[float]]:
    """``{(notebook path, glued name): values}``: what the seed sweep's record
    (``benchmarks/sweep.json``, ``tools/run_notebooks.py``) noted for each seed of every notebook
    whose entry is current (its code and helpers unchanged since the sweep; ``make sweep-changed``
    would take it from the record), under the names the ledger shows. A stale entry gives nothing:
    its numbers were measured on other code."""
    from helpers.environment import MODES
    from tools.fingerprints import plan_sweep, read_record

    record = read_record(root).get("notebooks", {})
    current = plan_sweep(notebooks, MODES["claims-only"], root=root).taken
    values: dict[tuple[Path, str], list[float]] = {}
    for name in current:
        for by_name in record[name].get("numbers", {}).values():
            for key, value in by_name.items():
                values.setdefault(((Path(root) / name).resolve(), key), []).append(value)
    return values


@functools.lru_cache(maxsize=1)
def _swept_once(notebooks: tuple, root: Path) -> dict[tuple[Path, str], list[float]]:
    return swept_numbers(notebooks, root)  # once per build, not once per chapter's page (seconds each)


def spread_line(values: list[float], number: dict) -> str:
    """``"over 9 more seeds (the sweep): least 1.2 %, median 3.4 %, most 5.6 %"``, in the number's
    format; with a ``bound`` (the assert's limits on the number), also the nearest seed's margin
    to it: ``"; nearest margin to the assert's bound 0.5 %: 0.3 %"``."""
    fmt, unit = number.get("format", ""), number.get("unit", "")
    low, mid, high = (format(v, fmt) + unit for v in (min(values), statistics.median(values), max(values)))
    line = f"over {len(values)} more seeds (the sweep): least {low}, median {mid}, most {high}"
    bound = number.get("bound")
    if bound:
        margin, limit = min((v - b if side == 0 else b - v, b) for v in values
                            for side, b in enumerate(bound) if b is not None)
        line += f"; nearest margin to the assert's bound {format(limit, fmt)}{unit}: {format(margin, fmt)}{unit}"
    return line


def _row_lines(e: Entry, kind: str, page: Path, backlinks: dict[str, list[SourceClaim]],
               spread: list[float] | None = None) -> list[str]:
    rel = Path(os.path.relpath(e.notebook, page.parent)).as_posix()
    verdict = e.verdict if kind == "claim" else "check"
    lines = [
        f"({e.row_label})=",
        f"### {e.id} · {verdict}" + (" · the course's own extension" if e.extension else ""),
        "",
        f"**{_md_escape(e.claim)}**" + (f" *{e.verdict.capitalize()}*: {_md_escape(e.caveat)}"
                                         if e.caveat else ""),
        "",
    ]
    if e.quote:
        lines += [f"Source: <span lang=\"zh\">「{_md_escape(e.quote)}」</span>", ""]
    if kind == "check" and e.why:
        lines += [f"Why it cannot fail on a new seed: {_md_escape(e.why)}", ""]
    if e.id in backlinks:
        lines += ["Source claim: " + ", ".join(_ref(c.id, c.label) for c in backlinks[e.id]) + ".", ""]
    seeds = f"checked for seeds {SEEDS}" if kind == "claim" else "no randomness"
    measured = ""
    if e.number:
        fmt = e.number.get("format", "")
        value = f"{{glue:text}}`{rel}::{e.number['key']}{':' + fmt if fmt else ''}`"
        measured = f"Measured: {value}{e.number.get('unit', '')} ({_md_escape(e.number['what'])}) · "
        if spread:
            measured += _md_escape(spread_line(spread, e.number)) + " · "
    return lines + [
        f"{measured}{seeds} · {{ref}}`the cell <{e.label}>`",
        "",
        "```python",
        *[f"assert {a}" for a in e.asserts],
        "```",
        "",
    ]


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


_MARKER_LINE = re.compile(r"^% claims-ledger(?: chapter (\d+))?\b.*$", re.M)


def _insert_ledger(app, docname, source) -> None:
    """On a page that carries the marker line, put the generated ledger in its place: the
    overview for ``% claims-ledger``, a chapter's page for ``% claims-ledger chapter N``."""
    match = _MARKER_LINE.search(source[0])
    if match is None:
        return
    notebooks = _book_notebooks(app)
    for dependency in [*notebooks, Path(__file__), INVENTORY]:  # rebuild when a notebook, this generator
        app.env.note_dependency(str(dependency))                # or the inventory changes
    page = Path(app.env.doc2path(docname))
    chapter = int(match.group(1)) if match.group(1) else None
    swept = _swept_once(tuple(notebooks), ROOT_OF_BOOK.parent) if chapter is not None else None
    body = ledger_markdown(read_ledger(notebooks), page, read_inventory(INVENTORY), chapter, swept)
    source[0] = source[0][:match.start()] + body + source[0][match.end():]


def setup(app):
    app.connect("source-read", _insert_ledger)
    app.connect("doctree-read", _anchor_claim_cells)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
