"""Answers looked up, not computed: the student edition's copy of an answer key.

This file goes, as it is, into the student edition's ``helpers`` as ``helpers/_answers.py``
(:mod:`tools.answer_tables` puts it there and rewrites each answer key's body into a call of
:func:`answer`); the book's recorder encodes calls with the same functions, so that the two
agree. It needs only NumPy and PyTorch.

A call is written down as its *structure* (JSON data: each argument's type, shape and dtype,
a model's class and its number and text settings; whole numbers, strings and the digest of every
whole-number array exactly) and its *floats* (every floating-point number, array, tensor and
model parameter, in order). Two calls match when their structures are equal and each float
array's summary (:func:`summary`) agrees entry by entry within a relative :data:`RTOL`
(:func:`close`): a learner's machine computes a lesson's inputs with other kernels, so
bit-for-bit equality is not asked for, while another input (another seed, size or case)
differs by far more. A summary is not the array: two inputs with nearly the same summary (an
array's inner entries swapped, or a few of them nudged) match, and get the recorded answer, not
a computed one.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import numpy as np
import torch

RTOL = 1e-4
ATOL = 1e-9
TABLE = "answer_tables.json"  # next to this file, with ARRAYS: the recorded answers
ARRAYS = "answer_tables.npz"
MAX_DEPTH = 16
MESSAGE = ("{name} is one of the course's answer keys, so the student edition does not compute it: it "
           "holds only the answers {name} gave to the calls that the course's notebooks make when they run from "
           "the top, and this call is not one of them. If you changed or re-ran cells, restart the kernel and run "
           "the notebook from the top (Kernel > Restart Kernel and Run All Cells). Write your own version (that "
           "is the exercise), or install the book's edition to explore other inputs.")


class NotInTable(LookupError):
    """A call of an answer key that the student edition's table does not hold."""


def module_leaves(module: torch.nn.Module) -> list[tuple[str, object]]:
    """``(path, value)`` for each entry of ``module``'s state (parameters and buffers) and each
    number or text attribute (bool, int, float, str) of it and its submodules, in a fixed order."""
    leaves: list[tuple[str, object]] = [(f"state:{k}", v) for k, v in module.state_dict(keep_vars=True).items()]
    for prefix, sub in module.named_modules():
        for key, value in sorted(vars(sub).items()):
            if not key.startswith("_") and type(value) in (bool, int, float, str):
                leaves.append((f"attr:{prefix}:{key}", value))
    return leaves


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:32]


def _array(array: np.ndarray, leaves: list, tag: list, exact_whole: bool) -> list:
    shape = list(array.shape)
    if np.issubdtype(array.dtype, np.floating) or not exact_whole:
        leaves.append(np.array(array, copy=True))
        return [*tag, array.dtype.str, shape, None]
    return [*tag, array.dtype.str, shape, _digest(array)]


def flatten(value, leaves: list, *, exact_whole: bool = True, depth: int = 0) -> list:
    """``value``'s structure (JSON data); its floats are appended to ``leaves`` as arrays.

    ``exact_whole``: whole-number arrays go into the structure as digests (for a call's
    arguments) rather than into ``leaves`` (for an answer, whose values are kept). Raises
    ``TypeError`` for a value it cannot write down."""
    if depth > MAX_DEPTH:
        raise TypeError(f"a value nested more than {MAX_DEPTH} deep")
    if value is None or type(value) in (bool, int, str):
        return ["v", value]
    if type(value) is float:
        leaves.append(np.array(value))
        return ["f"]
    if isinstance(value, np.generic):
        if np.issubdtype(value.dtype, np.floating):
            leaves.append(np.array(value))
            return ["nf", value.dtype.str]
        return ["ng", value.dtype.str, value.item()]
    if isinstance(value, np.ndarray):
        return _array(value, leaves, ["a"], exact_whole)
    if isinstance(value, torch.Tensor):
        return _array(value.detach().cpu().numpy(), leaves, ["t", str(value.dtype).removeprefix("torch.")],
                      exact_whole)
    if isinstance(value, (list, tuple)):
        return ["l" if isinstance(value, list) else "u",
                [flatten(v, leaves, exact_whole=exact_whole, depth=depth + 1) for v in value]]
    if isinstance(value, dict):
        return ["d", [[flatten(k, leaves, exact_whole=True, depth=depth + 1),
                       flatten(v, leaves, exact_whole=exact_whole, depth=depth + 1)] for k, v in value.items()]]
    if isinstance(value, torch.nn.Module):
        return ["m", type(value).__qualname__,
                [[path, flatten(v, leaves, exact_whole=exact_whole, depth=depth + 1)]
                 for path, v in module_leaves(value)]]
    if callable(value):
        return ["c", getattr(value, "__module__", None), getattr(value, "__qualname__", repr(value))]
    raise TypeError(f"cannot write down a {type(value).__module__}.{type(value).__qualname__}")


def rebuild(structure: list, leaves):
    """The value that :func:`flatten` (with ``exact_whole=False``) wrote as ``structure``,
    its arrays taken in order from the iterator ``leaves``."""
    tag = structure[0]
    if tag == "v":
        return structure[1]
    if tag == "f":
        return float(next(leaves))
    if tag == "nf":
        return np.dtype(structure[1]).type(next(leaves))
    if tag == "ng":
        return np.dtype(structure[1]).type(structure[2])
    if tag == "a":
        return np.array(next(leaves), dtype=np.dtype(structure[1])).reshape(structure[2])
    if tag == "t":
        array = np.array(next(leaves), dtype=np.dtype(structure[2])).reshape(structure[3])
        return torch.from_numpy(array).to(getattr(torch, structure[1]))
    if tag in ("l", "u"):
        items = [rebuild(s, leaves) for s in structure[1]]
        return items if tag == "l" else tuple(items)
    if tag == "d":
        return {rebuild(k, leaves): rebuild(v, leaves) for k, v in structure[1]}
    raise TypeError(f"an answer cannot be a {tag!r}")


PROBES = 5  # entries a summary keeps: the first, the last and three between


def summary(array: np.ndarray) -> list[float]:
    """What a float array is matched by (in float64): its sum, sum of absolute values, sum of
    squares, root mean square, and :data:`PROBES` of its entries spread from first to last."""
    flat = np.asarray(array, dtype=np.float64).ravel()
    if flat.size == 0:
        return [0.0] * (4 + PROBES)
    rms = float(np.sqrt(np.mean(flat * flat)))
    probes = flat[np.linspace(0, flat.size - 1, PROBES).round().astype(int)]
    return [float(flat.sum()), float(np.abs(flat).sum()), float((flat * flat).sum()), rms, *map(float, probes)]


def close(a: list[list[float]], b: list[list[float]]) -> bool:
    """Whether two calls' summaries agree: each entry within :data:`RTOL` of its own scale (the
    sum's is the sum of absolute values, a probed entry's the larger of itself and the root mean
    square), plus :data:`ATOL`; non-finite entries must be equal."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False
        if not np.isfinite(x).all() or not np.isfinite(y).all():
            if not np.array_equal(x, y, equal_nan=True):
                return False
            continue
        scale = np.maximum(np.abs(x), np.abs(y))
        scale[0] = max(abs(x[1]), abs(y[1]))  # the sum, against the sum of absolute values
        scale[4:] = np.maximum(scale[4:], max(abs(x[3]), abs(y[3])))  # a probe, at least the rms
        if np.any(np.abs(x - y) > RTOL * scale + ATOL):
            return False
    return True


def call_key(arguments: dict) -> tuple[str, list[list[float]]]:
    """A call's structure (as canonical JSON) and its floats' summaries; ``arguments`` is
    ``{parameter: value}`` in the function's order, defaults filled in."""
    leaves: list = []
    structure = flatten(dict(arguments), leaves)
    return json.dumps(structure, separators=(",", ":")), [summary(leaf) for leaf in leaves]


@cache
def _table(folder: str) -> tuple[dict, dict]:
    here = Path(folder)
    with np.load(here / ARRAYS, allow_pickle=False) as arrays:
        data = {name: arrays[name] for name in arrays.files}
    table = json.loads((here / TABLE).read_text(encoding="utf-8"))
    return table, data


def set_leaves(module: torch.nn.Module, values) -> None:
    """Set ``module``'s leaves (:func:`module_leaves`) from ``(path, value)`` pairs: a state
    entry copied in place, an attribute set with its old type."""
    leaves = dict(module_leaves(module))
    subs = dict(module.named_modules())
    with torch.no_grad():
        for path, value in values:
            kind, _, rest = path.partition(":")
            if kind == "state":
                value = value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
                leaves[path].copy_(value.to(leaves[path].dtype))
            else:
                prefix, _, attr = rest.rpartition(":")
                value = value.item() if isinstance(value, np.ndarray) else value
                setattr(subs[prefix], attr, value if isinstance(value, str) else type(leaves[path])(value))


def replayed(current: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The recorded change of one array applied to ``current``, the argument as this call has it.

    ``current`` matched the recorded argument ``before`` within :data:`RTOL`, not bit for bit:
    a learner's processor draws and sums with other kernels (another vector width, or none). So
    each entry gets the factor the key applied to it, ``after / before``, rather than the
    recorded ``after``: for a key that scales entries in place (DeepNorm's ``beta``) the result
    is the key's answer on ``current`` itself, to float rounding. An entry that was zero before
    gets ``after``."""
    current, before, after = (np.asarray(a, dtype=np.float64) for a in (current, before, after))
    nonzero = before != 0
    factor = np.divide(after, before, out=np.zeros_like(after), where=nonzero)
    return np.where(nonzero, current * factor, after)


def _apply_changes(module: torch.nn.Module, changes: list, data: dict) -> None:
    """Make ``module`` what the recorded call left it: ``changes`` is ``[[path, after], ...]``,
    each an array's name in ``data``; a floating-point state entry also names the recorded
    argument's array, ``[path, after, before]``, and its change is replayed relative to this
    call's argument (:func:`replayed`)."""
    leaves = dict(module_leaves(module))
    values = []
    for path, after, *before in changes:
        if before:
            current = leaves[path].detach().cpu().numpy()
            values.append((path, replayed(current, data[before[0]], data[after]).astype(current.dtype)))
        else:
            values.append((path, data[after]))
    set_leaves(module, values)


def answer(name: str, arguments: dict, folder: str | None = None):
    """The answer that the answer key ``name`` (``module:qualname``) gave to the recorded call
    that matches ``arguments`` (module docstring), with any argument the key changed in place
    changed the same way; raises :class:`NotInTable` (:data:`MESSAGE`) for a call not recorded."""
    table, data = _table(folder or str(Path(__file__).parent))
    short = name.rpartition(":")[2]
    try:
        structure, floats = call_key(arguments)
    except TypeError as err:
        raise NotInTable(MESSAGE.format(name=short)) from err
    for call in table.get(name, {}).get(structure, []):
        if close(call["floats"], floats):
            for parameter, changes in call["changes"].items():
                _apply_changes(arguments[parameter], changes, data)
            if call["result"][0] == "argument":
                return arguments[call["result"][1]]
            return rebuild(call["result"], iter(data[n] for n in call["leaves"]))
    raise NotInTable(MESSAGE.format(name=short))
