"""Subpackages whose names load their module on first use (PEP 562).

``helpers.measure.branch_ratios`` imports ``helpers.measure.branches`` when it is first
read, not when ``helpers.measure`` is. So a run loads exactly the modules it uses, and the
list of ``helpers`` modules in ``sys.modules`` at the end of a run
(:func:`helpers.provenance.loaded_files`) is what that run's results depend on: a change to
a chapter-5 module re-checks chapter 5's notebooks only (``tools/fingerprints.py``).
"""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]):
    """``(__getattr__, __dir__)`` for ``package``, whose names ``exports`` maps as
    ``{submodule: (name, ...)}``; each name is imported from ``package.submodule`` when first
    read, then kept in the package's namespace."""
    owner = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        if name not in owner:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace = importlib.import_module(package).__dict__
        value = getattr(importlib.import_module(f"{package}.{owner[name]}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(importlib.import_module(package).__dict__) | set(owner))

    return __getattr__, __dir__
