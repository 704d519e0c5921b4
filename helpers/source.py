"""Show the source of a helper in a notebook, so that the code a lesson runs is the code it shows."""

from __future__ import annotations

import inspect
import textwrap

from IPython.display import Code


def show_source(obj) -> Code:
    """The source code of a function, method or class, as a highlighted cell output."""
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as err:
        raise TypeError(f"obj must be a function, method or class defined in Python, got {obj!r}") from err
    return Code(textwrap.dedent(source), language="python")
