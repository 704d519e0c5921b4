"""Subpackages whose names load their module on first use (PEP 562).

``helpers.measure.branch_ratios`` imports ``helpers.measure.branches`` when it is first
read, not when ``helpers.measure`` is. So a run loads exactly the modules it uses, and the
list of ``helpers`` modules in ``sys.modules`` at the end of a run
(:func:`helpers.provenance.loaded_files`) is what that run's results depend on: a change to
a chapter-5 module re-checks chapter 5's notebooks only (``tools/fingerprints.py``).
"""

from __future__ import annotations

import importlib
import sys
import types


class _Package(types.ModuleType):
    """A package with a name that is also one of its modules (``experiments.effective_depth``,
    the function, in the module ``experiments/effective_depth.py``). Importing that module sets
    the package's attribute to the module, whenever it happens; here the name still gives the
    function."""

    def __getattribute__(self, name: str):
        value = super().__getattribute__(name)
        if isinstance(value, types.ModuleType) and name in super().__getattribute__("_SHADOWED"):
            return getattr(value, name)
        return value


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]):
    """``(__getattr__, __dir__)`` for ``package``, whose names ``exports`` maps as
    ``{submodule: (name, ...)}``; each name is imported from ``package.submodule`` when first
    read, then kept in the package's namespace."""
    owner = {name: module for module, names in exports.items() for name in names}
    shadowed = set(owner) & set(exports)
    if shadowed:
        sys.modules[package].__class__ = _Package
        sys.modules[package]._SHADOWED = frozenset(shadowed)

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
