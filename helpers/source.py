"""Show the source of a helper in a notebook, so that the code a lesson runs is the code it shows."""

from __future__ import annotations

import inspect
import textwrap

from IPython.display import Code


def show_source(*objs) -> Code:
    """The source code of one or more functions, methods or classes, as one highlighted output."""
    if not objs:
        raise TypeError("show_source needs at least one function, method or class")
    parts = []
    for obj in objs:
        try:
            parts.append(textwrap.dedent(inspect.getsource(obj)))
        except (TypeError, OSError) as err:
            raise TypeError(f"objs must be functions, methods or classes defined in Python, got {obj!r}") from err
    return Code("\n".join(parts), language="python")
