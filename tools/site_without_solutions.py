"""The site without solutions, for a class that should not see them (``make site-no-solutions``).

    python -m tools.site_without_solutions     # -> _build/no-solutions/_build/html
    python -m tools.site_without_solutions --withhold 2026-12-15   # or --withhold always

The same book and the same executed notebooks (the jupyter-cache of ``make site``), built
with ``course_hide_solutions`` (``book/_ext/course_solutions.py``) into a folder of its own,
and without the API page's source pages (``sphinx.ext.viewcode``), which would publish the
checkers and the answer keys a class's exercises are graded against.

``--withhold DATE`` leaves out each prediction's measurement (folded under its exercise on
the site) until that day, with a line saying when it appears: build again on or after the
day to publish them (a static site cannot open a fold by the calendar). ``--withhold always``
leaves them out for good. The prose further down a page still discusses the results; for
predictions made blind, hand out the first hand-in (``make predictions``).
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
from pathlib import Path

import yaml

from tools.execute import CACHE, build_book
from tools.toc import ROOT

OUT = ROOT / "_build" / "no-solutions"
HTML = OUT / "_build" / "html"


def withheld_message(withhold: str | None, today: datetime.date | None = None) -> str:
    """What a withheld measurement's place says (empty: nothing withheld) for ``withhold``:
    ``None``, ``"always"``, or a day ``YYYY-MM-DD`` (withheld before it); ``ValueError`` for
    anything else."""
    if not withhold:
        return ""
    if withhold == "always":
        return "The measurement is withheld on this class's site."
    try:
        day = datetime.date.fromisoformat(withhold)
    except (TypeError, ValueError):
        raise ValueError(f"withhold must be 'always' or a day YYYY-MM-DD, got {withhold!r}") from None
    if (today or datetime.date.today()) >= day:
        return ""
    return f"The measurement is withheld until {day:%d %B %Y}: make your prediction first."


def build(root: Path = ROOT, out: Path = OUT, withhold: str | None = None) -> subprocess.CompletedProcess:
    """``jupyter-book build`` of ``root`` into ``out`` with solutions removed (warnings are
    errors), and the predictions' measurements as ``withhold`` says (:func:`withheld_message`)."""
    message = withheld_message(withhold)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["cache"] = str(CACHE)  # the site's executed notebooks
    config["sphinx"].setdefault("config", {})["course_hide_solutions"] = True
    config["sphinx"]["config"]["course_withhold_measurements"] = message
    config["sphinx"]["extra_extensions"].remove("sphinx.ext.viewcode")  # no _modules/: no key's source
    # paths in the config are read relative to the config file, which lies elsewhere here
    config["sphinx"]["local_extensions"] = {name: str(root / path)
                                            for name, path in config["sphinx"]["local_extensions"].items()}
    config["html"]["extra_footer"] = config["html"].get("extra_footer", "") + " This edition has no solutions."
    out.mkdir(parents=True, exist_ok=True)
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return build_book("--config", str(out / "_config.yml"), "--path-output", str(out), root=root)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--withhold", metavar="DAY", help="'always', or YYYY-MM-DD: the predictions' measurements "
                        "are left out before that day")
    args = parser.parse_args()
    try:
        result = build(withhold=args.withhold)
    except ValueError as err:
        parser.error(str(err))
    if result.returncode != 0:
        sys.exit(f"the build failed (warnings are errors):\n{result.stdout[-4000:]}\n{result.stderr[-3000:]}")
    print(f"wrote {HTML}")
