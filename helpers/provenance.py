"""What a run of a notebook depended on: the ``helpers`` modules it loaded and the package data
it read, recorded by the run itself.

A notebook's results depend on its own code cells and on the parts of ``helpers`` it ran.
The build tools (``tools/fingerprints.py``) ask the run, at its end, for
:func:`loaded_files`, and fingerprint exactly those files: a change to a module that a
notebook never loaded does not re-run it, and a change to one it did always does. Because the
subpackages load their modules on first use (``lazy_loader``), the modules in
``sys.modules`` are the ones the run used, not the whole package.

Package data (files beside the code, such as ``digits.npz``) is read through
:func:`package_file`, which records the read.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
_data_read: set[str] = set()


def package_file(name: str) -> Path:
    """The path of the data file ``name`` shipped inside ``helpers`` (``"digits.npz"``), recorded
    as read by this run. Raises ``FileNotFoundError`` naming the file if it is not there."""
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"name must be a file name inside the helpers package, got {name!r}")
    path = PACKAGE / name
    if not path.is_file():
        raise FileNotFoundError(f"the helpers package has no data file {name!r} (looked in {PACKAGE})")
    _data_read.add(path.relative_to(PACKAGE.parent).as_posix())
    return path


def loaded_files() -> list[str]:
    """Every ``helpers`` source file loaded in this process and every package data file read
    through :func:`package_file`, as sorted paths relative to the package's parent folder
    (``"helpers/measure/paths.py"``, ``"helpers/digits.npz"``)."""
    files = set(_data_read)
    for name, module in list(sys.modules.items()):
        if name != "helpers" and not name.startswith("helpers."):
            continue
        origin = getattr(module, "__file__", None)
        if origin:
            path = Path(origin).resolve()
            if path.is_relative_to(PACKAGE):
                files.add(path.relative_to(PACKAGE.parent).as_posix())
    return sorted(files)
