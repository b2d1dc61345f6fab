"""The versioned state codec: event values and per-key metadata as UTF-8 JSON bytes.

No pickle anywhere: decoding is ``json.loads`` plus a fixed set of type tags, so bytes that
user data can influence never execute code. See ``docs/adapters.md`` ("State codec") for the
format; this module is its reference implementation.

Values (codec version 1). JSON carries ``None``, ``bool``, ``int`` (any size), ``str``,
finite ``float``, ``list`` and ``dict`` with ``str`` keys as themselves. Everything else is a
one-key object whose key starts with ``$``:

=========================  ==========================================
Python value               encoded as
=========================  ==========================================
``float('nan')``, ±inf     ``{"$f": "nan"}``, ``{"$f": "inf"}``, ``{"$f": "-inf"}``
``tuple``                  ``{"$t": [items...]}``
``bytes``, ``bytearray``   ``{"$b": "<base64>"}`` (decodes to ``bytes``)
other ``dict``             ``{"$d": [[key, value], ...]}`` (non-``str`` keys, or a key
                           starting with ``$``)
=========================  ==========================================

NumPy scalars are stored as the equal Python scalar (``numpy.int64(3)`` -> ``3``). Any other
type raises :class:`~adapters.errors.CodecError`.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

from adapters.errors import CodecError, StateError

#: Version of the value and metadata encoding written by this code.
CODEC_VERSION = 1
#: Versions this code can read.
READABLE_VERSIONS = frozenset({1})

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          check_circular=False).encode


def _float_tag(x: float) -> Any:
    if x != x:
        return {"$f": "nan"}
    return {"$f": "inf" if x > 0 else "-inf"}


def to_json(value: Any) -> Any:
    """``value`` as a JSON-compatible object in the tagged form (see the module docstring)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else _float_tag(value)
    if t is dict:
        for k in value:
            if type(k) is not str or k[:1] == "$":
                return {"$d": [[to_json(k), to_json(v)] for k, v in value.items()]}
        return {k: to_json(v) for k, v in value.items()}
    if t is list:
        return [to_json(v) for v in value]
    if t is tuple:
        return {"$t": [to_json(v) for v in value]}
    if t is bytes or t is bytearray:
        return {"$b": base64.b64encode(value).decode("ascii")}
    # Subclasses (IntEnum, numpy.float64 subclasses float, str enums) and numpy scalars.
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return to_json(float(value))
    if isinstance(value, str):
        return str(value)
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        item = value.item()
        if type(item).__module__ != "numpy":
            return to_json(item)
    raise CodecError(
        f"cannot store a value of type {type(value).__name__} ({value!r:.60}) in window state; "
        "supported: None, bool, int, float, str, bytes, list, tuple, dict")


_TAGS = frozenset({"$f", "$t", "$b", "$d"})
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        (tag, payload), = obj.items()
        if tag in _TAGS:
            try:
                if tag == "$f":
                    return _FLOATS[payload]
                if tag == "$t":
                    return tuple(payload)
                if tag == "$b":
                    return base64.b64decode(payload.encode("ascii"), validate=True)
                return {k: v for k, v in payload}
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise CodecError(f"corrupt tagged value {obj!r:.80}: {exc}") from None
    return obj


def from_json(obj: Any) -> Any:
    """Inverse of :func:`to_json` for an already-parsed JSON object (tags resolved)."""
    if isinstance(obj, dict):
        return _hook({k: from_json(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [from_json(v) for v in obj]
    return obj


def encode_value(value: Any) -> bytes:
    """``value`` as codec bytes (UTF-8 JSON); :class:`CodecError` if its type is unsupported."""
    return _dumps(to_json(value)).encode("utf-8")


def decode_value(data: bytes | str) -> Any:
    """Inverse of :func:`encode_value`."""
    try:
        return json.loads(data, object_hook=_hook)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"corrupt value bytes {data!r:.80}: {exc}") from None


def encode_meta(meta: dict[str, Any]) -> bytes:
    """Per-key metadata (a flat dict of JSON scalars and lists) as bytes."""
    return _dumps(meta).encode("utf-8")


def decode_meta(data: bytes | str) -> dict[str, Any]:
    """Inverse of :func:`encode_meta`; checks the codec version."""
    try:
        meta = json.loads(data)
    except ValueError as exc:
        raise StateError(f"corrupt window-state metadata {data!r:.80}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("codec") not in READABLE_VERSIONS:
        version = meta.get("codec") if isinstance(meta, dict) else None
        raise StateError(
            f"window-state metadata has codec version {version!r}; this version of swag reads "
            f"{sorted(READABLE_VERSIONS)}")
    return meta
