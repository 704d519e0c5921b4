"""The site without solutions, for a class that should not see them (``make site-no-solutions``).

    python -m tools.site_without_solutions     # -> _build/no-solutions/_build/html

The same book and the same executed notebooks (the jupyter-cache of ``make site``), built
with ``course_hide_solutions`` (``book/_ext/course_solutions.py``) into a folder of its own,
and without the API page's source pages (``sphinx.ext.viewcode``), which would publish the
checkers and the answer keys a class's exercises are graded against.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tools.execute import CACHE, build_book
from tools.toc import ROOT

OUT = ROOT / "_build" / "no-solutions"
HTML = OUT / "_build" / "html"


def build(root: Path = ROOT, out: Path = OUT) -> subprocess.CompletedProcess:
    """``jupyter-book build`` of ``root`` into ``out`` with solutions removed (warnings are errors)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["cache"] = str(CACHE)  # the site's executed notebooks
    config["sphinx"].setdefault("config", {})["course_hide_solutions"] = True
    config["sphinx"]["extra_extensions"].remove("sphinx.ext.viewcode")  # no _modules/: no key's source
    # paths in the config are read relative to the config file, which lies elsewhere here
    config["sphinx"]["local_extensions"] = {name: str(root / path)
                                            for name, path in config["sphinx"]["local_extensions"].items()}
    config["html"]["extra_footer"] = config["html"].get("extra_footer", "") + " This edition has no solutions."
    out.mkdir(parents=True, exist_ok=True)
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return build_book("--config", str(out / "_config.yml"), "--path-output", str(out), root=root)


if __name__ == "__main__":
    result = build()
    if result.returncode != 0:
        sys.exit(f"the build failed (warnings are errors):\n{result.stdout[-4000:]}\n{result.stderr[-3000:]}")
    print(f"wrote {HTML}")
