"""The data a sandbox answers in: numbers, strings, arrays and containers of them, as JSON.

A student's sandbox is not trusted, so nothing it sends is unpickled: :func:`decode` builds
only ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples, dicts (keys of those
scalar types), NumPy arrays and PyTorch tensors (read by ``numpy.load`` with
``allow_pickle=False``, so of plain numeric dtypes), and :class:`Unreadable` for anything
else the student returned. A message is at most :data:`MAX_BYTES` long and nests at most
:data:`MAX_DEPTH` deep; beyond either, :class:`WireError`.

Messages are framed: 8 bytes of length, then the JSON (:func:`write_message`,
:func:`read_message`). What the grader sends *into* a sandbox is pickled instead (the
grader's own objects, models among them: trusted data going to an untrusted reader).
"""

from __future__ import annotations

import base64
import io
import json
import math
import struct
from typing import Any, BinaryIO

import numpy as np
import torch

MAX_BYTES = 64 * 2**20
"""The longest message a sandbox may send (64 MiB)."""
MAX_DEPTH = 32
"""How deep its containers may nest."""
HEADER = struct.Struct("!Q")
"""A frame's length, before its JSON."""


class WireError(ValueError):
    """A message that is not the data format: too long, too deep, or malformed."""


class Unreadable:
    """What a student's function returned that is not data (a class instance, a generator…):
    it compares unequal to everything, and says what it was."""

    def __init__(self, type_name: str):
        self.type_name = str(type_name)[:80]

    def __repr__(self) -> str:
        return f"<a {self.type_name}, which the grader cannot read>"

    def __eq__(self, other) -> bool:
        return False

    __hash__ = None


def unreadable(type_name: str) -> Unreadable:
    """An :class:`Unreadable` whose class is named after what the student returned, so that a
    checker's "returned a …" names it."""
    name = "".join(c if c.isalnum() else "_" for c in type_name)[:60] or "object"
    return type(name if name[0].isalpha() else f"_{name}", (Unreadable,), {})(type_name)


def _array_bytes(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.save(buffer, np.require(array, requirements="C"), allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _scalar_key(key):
    if isinstance(key, (bool, int, float, str)) or key is None:
        return encode(key)
    if isinstance(key, np.generic) and key.dtype.kind in "biuf":
        return encode(key.item())
    return None


def encode(obj: Any, depth: int = 0) -> Any:
    """``obj`` as JSON-able data (see the module's docstring for what is kept)."""
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH}")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj if abs(obj) < 2**63 else {"float": float(obj)}
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
        return {"scalar": _array_bytes(np.asarray(obj))}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            return {"unreadable": f"array of {obj.dtype}"}
        return {"array": _array_bytes(obj)}
    if isinstance(obj, torch.Tensor):
        data = obj.detach().cpu()
        if data.dtype == torch.bfloat16:
            data = data.float()
        return {"tensor": _array_bytes(data.numpy())}
    if isinstance(obj, (list, tuple)):
        return {"list" if isinstance(obj, list) else "tuple": [encode(x, depth + 1) for x in obj]}
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            k = _scalar_key(key)
            if k is None:
                return {"unreadable": f"dict with a {type(key).__name__} key"}
            items.append([k, encode(value, depth + 1)])
        return {"dict": items}
    return {"unreadable": type(obj).__name__}


def _load_array(text: Any) -> np.ndarray:
    if not isinstance(text, str):
        raise WireError("an array must be base64 text")
    try:
        array = np.load(io.BytesIO(base64.b64decode(text, validate=True)), allow_pickle=False)
    except Exception as err:
        raise WireError(f"not an array ({type(err).__name__})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc":
        raise WireError("an array must hold numbers")
    return array


def decode(doc: Any, depth: int = 0) -> Any:
    """The data :func:`encode` wrote; raises :class:`WireError` on anything else."""
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH}")
    if doc is None or isinstance(doc, (bool, str, int, float)):
        return doc
    if not isinstance(doc, dict) or len(doc) != 1:
        raise WireError(f"not a value of the data format: {type(doc).__name__}")
    [(kind, body)] = doc.items()
    if kind == "float":
        if isinstance(body, str) and body in ("nan", "inf", "-inf"):
            return float(body)
        if isinstance(body, (int, float)):
            return float(body)
        raise WireError("a float must be a number or nan/inf")
    if kind == "scalar":
        array = _load_array(body)
        if array.shape != ():
            raise WireError("a scalar must have shape ()")
        return array[()]
    if kind == "array":
        return _load_array(body)
    if kind == "tensor":
        return torch.from_numpy(_load_array(body).copy())
    if kind in ("list", "tuple"):
        if not isinstance(body, list):
            raise WireError(f"a {kind} must be a JSON list")
        items = [decode(x, depth + 1) for x in body]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 for p in body):
            raise WireError("a dict must be a list of [key, value] pairs")
        out = {}
        for key, value in body:
            k = decode(key, depth + 1)
            if isinstance(k, np.generic):
                k = k.item()
            if not (k is None or isinstance(k, (bool, int, float, str))):
                raise WireError("a dict key must be a number, a string or None")
            out[k] = decode(value, depth + 1)
        return out
    if kind == "unreadable":
        return unreadable(str(body))
    raise WireError(f"unknown kind {kind!r}")


def write_message(stream: BinaryIO, message: Any) -> None:
    """Write ``message`` (already JSON-able) as one frame."""
    data = json.dumps(message, allow_nan=False).encode()
    if len(data) > MAX_BYTES:
        raise WireError(f"a message of {len(data)} bytes is longer than {MAX_BYTES}")
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the sandbox closed its answer channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> Any:
    """One frame's JSON, refusing a frame longer than :data:`MAX_BYTES`."""
    (length,) = HEADER.unpack(_read_exactly(stream, HEADER.size))
    if length > MAX_BYTES:
        raise WireError(f"a message of {length} bytes is longer than {MAX_BYTES}")
    try:
        return json.loads(_read_exactly(stream, length))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WireError(f"not JSON ({err})") from None
