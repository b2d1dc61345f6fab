"""The versioned state codec: event values and per-key metadata as bytes.

No pickle anywhere: decoding is ``json.loads`` and ``struct`` unpacking plus a fixed set of
type tags, so bytes that user data can influence never execute code. See
``docs/adapters.md`` ("State codec") for the format; this module is its reference
implementation.

Event values (codec version 2) take one of three forms, told apart by the first byte:

* **packed flat record** (first byte ``0x01``): a ``dict`` with ``str`` keys whose values
  are ``float``, ``int``, ``bool``, ``str`` or ``None``, at least one of them a ``float``.
  Floats are stored as 8 IEEE-754 bytes (exact, NaN and infinities included), the other
  values as a JSON array::

      0x01 | u16 LE: len(H) | H: JSON ["<fmt>", key_1, ..., key_n] | float64 LE ... | JSON [...]

  ``fmt`` has one character per key, in the dict's order: ``d`` (the next float64) or ``j``
  (the next item of the trailing JSON array, present only if some key is ``j``);
* **packed float** (first byte ``0x02``): a bare ``float`` as 8 IEEE-754 bytes;
* **JSON** (every other value): UTF-8 JSON. ``None``,
  ``bool``, ``int`` (any size), ``str``, finite ``float``, ``list`` and ``dict`` with ``str``
  keys are themselves; everything else is a one-key object whose key starts with ``$``:

  =========================  ==========================================
  Python value               encoded as
  =========================  ==========================================
  ``float('nan')``, ±inf     ``{"$f": "nan"}``, ``{"$f": "inf"}``, ``{"$f": "-inf"}``
  ``tuple``                  ``{"$t": [items...]}``
  ``bytes``, ``bytearray``   ``{"$b": "<base64>"}`` (decodes to ``bytes``)
  other ``dict``             ``{"$d": [[key, value], ...]}`` (non-``str`` keys, or a key
                             starting with ``$``)
  =========================  ==========================================

Why packed records: turning a float into its shortest decimal text (``repr``) costs several
times more than everything else the driver does with an event; the typical event, a flat
record of measurements, is packed without it. JSON text never starts with byte 0x01, 0x02 or
0x03, so the forms cannot be mistaken for one another.

NumPy scalars are stored as the equal Python scalar (``numpy.int64(3)`` -> ``3``). Any other
type raises :class:`~adapters.errors.CodecError`.

Log entries (:func:`encode_entry` / :func:`decode_entry`): the driver writes one entry per
call and key. An entry of one event holds the value's encoding; an entry of several events of
the same call is a **segment** (first byte ``0x03``), their times and values column-wise::

    0x03 | u32 LE n | 0x00 | n x int64 LE times          (arrival order)
                    | 0x01 | u32 LE len | JSON [times]  (a time beyond 64 bits)
         | 0x00 | JSON [value_1, ..., value_n]           (values in the JSON form above)
         | 0x01 | u16 LE len(H) | H: JSON ["<fmt>", key_1, ..., key_k]
                | per key of fmt "d": n x float64 LE | JSON [[column], ...] of the "j" keys
                                                        (flat records, all with these keys)
         | 0x02 | n x float64 LE                       (bare floats)

The i-th event of a segment stored with ``seq = s`` has arrival number ``s + i``.

Version: a key's metadata names the codec version of all its state (``"codec"``), and
:func:`decode_meta` refuses any version but :data:`CODEC_VERSION` (the only one) before any
entry is read. Values and entries carry their form in the first byte: JSON text never starts
with a byte below ``0x20`` other than whitespace, so bytes ``0x00``-``0x1f`` are reserved for
binary forms; one this code does not know (a form of a newer version) raises
:class:`CodecError` naming it, instead of being misread.

:func:`version_error` is the one message every persisted format of ``adapters.state`` gives
for an unknown version: the format, the version found and the one this swag reads.

Metadata (:class:`MetaWriter` writes it on every call, :func:`encode_meta` is its general
form, :func:`decode_meta` reads it) is one JSON object with keys in this order::

    {"codec":2,"q":"<query fingerprint>","n":<nonce>,"wm":<int | null | "end">,
     "seq":<next arrival number>,"rel":<released>,"late":<late>,"pol":[<policy lengths>]}
"""

from __future__ import annotations

import base64
import json
import math
import operator
import random
import re
import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from adapters.errors import CodecError, StateError

#: Version of the value, log-entry and metadata encoding: the only one read and written.
CODEC_VERSION = 2

#: Format names, as errors name them.
META_FORMAT = "window-state metadata"
VALUE_FORMAT = "event value"
ENTRY_FORMAT = "event-log entry"


def version_error(fmt: str, found: object, supported: int,
                  error: type[Exception] = StateError, what: str = "version") -> Exception:
    """The error for stored bytes of format ``fmt`` whose version (``what``) is ``found``,
    not ``supported`` (the one version of the format this swag reads)."""
    return error(f"{fmt}: {what} {found!r} is unknown; this version of swag reads {what} "
                 f"{supported} only (was the state written by a newer swag?)")


_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          check_circular=False).encode

_PACKED_RECORD = 1
_PACKED_FLOAT = 2
_FLOAT = struct.Struct("<d")
_FLOAT_PREFIX = bytes([_PACKED_FLOAT])
#: value types a packed record stores in its JSON part
_JSON_SCALARS = frozenset({int, bool, str, type(None)})
_MAX_HEADER = 0xFFFF


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


# ------------------------------------------------------------------------- packed records
_prefixes: dict[tuple[int, tuple[str, ...], str], bytes] = {}
_structs: dict[tuple[str, int], struct.Struct] = {}


def _header_prefix(kind: int, keys: tuple[str, ...], fmt: str) -> bytes | None:
    """``kind | u16 length | header`` (header: JSON ``[fmt, *keys]``) of a packed record
    (kind ``0x01``) or of a flat-record segment body (kind ``0x01`` after the times), cached;
    ``None`` if the header is too long or not encodable (a lone surrogate in a key): the
    JSON path then stores the value, or reports it."""
    prefix = _prefixes.get((kind, keys, fmt))
    if prefix is None:
        try:
            header = _dumps([fmt, *keys]).encode("utf-8")
        except ValueError:
            return None
        if len(header) > _MAX_HEADER:
            return None
        prefix = bytes([kind]) + len(header).to_bytes(2, "little") + header
        if len(_prefixes) >= 1024:
            _prefixes.clear()
        _prefixes[(kind, keys, fmt)] = prefix
    return prefix


def _array_struct(kind: str, n: int) -> struct.Struct:
    """``struct.Struct("<{n}{kind}")`` (``d``: float64, ``q``: int64), cached for n <= 4096."""
    s = _structs.get((kind, n))
    if s is None:
        s = struct.Struct(f"<{n}{kind}")
        if n <= 4096:
            _structs[(kind, n)] = s
    return s


def _floats_struct(n: int) -> struct.Struct:
    return _array_struct("d", n)


def _pack_one(value: dict[Any, Any]) -> bytes | None:
    """``value`` as a packed record, or ``None`` if it does not qualify."""
    fmt = []
    floats = []
    others = []
    for k, x in value.items():
        if type(k) is not str:
            return None
        t = type(x)
        if t is float:
            fmt.append("d")
            floats.append(x)
        elif t in _JSON_SCALARS:
            fmt.append("j")
            others.append(x)
        else:
            return None
    if not floats:
        return None
    prefix = _header_prefix(_PACKED_RECORD, tuple(value), "".join(fmt))
    if prefix is None:
        return None
    data = prefix + _floats_struct(len(floats)).pack(*floats)
    if others:
        try:
            data += _dumps(others).encode("utf-8")
        except ValueError:
            return None
    return data


class Columns:
    """The values of a batch and, computed once on demand, their field columns
    (``[v[name] for v in values]``) and the set of types in each column: shared by the
    driver's lifts and :func:`encode_entry`."""

    __slots__ = ("_columns", "_types", "values")

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values
        self._columns: dict[Any, list[Any]] = {}
        self._types: dict[Any, set[type] | frozenset[type]] = {}

    def column(self, name: Any) -> list[Any]:
        """``[v[name] for v in values]`` (raises what ``v[name]`` raises)."""
        col = self._columns.get(name)
        if col is None:
            col = self._columns[name] = list(map(operator.itemgetter(name), self.values))
        return col

    def types(self, name: Any) -> set[type] | frozenset[type]:
        """The types of the values in column ``name``."""
        types = self._types.get(name)
        if types is None:
            types = self._types[name] = types_of(self.column(name))
        return types


_ONLY_FLOAT = frozenset({float})
_ONLY_INT = frozenset({int})
_ONLY_DICT = frozenset({dict})


def types_of(xs: Sequence[Any]) -> set[type] | frozenset[type]:
    """``set(map(type, xs))``, faster for the usual one-type columns (counting identical
    type objects needs no hashing)."""
    tl = list(map(type, xs))
    n = len(tl)
    if n:
        first = tl[0]
        if tl.count(first) == n:
            return _ONLY_FLOAT if first is float else _ONLY_INT if first is int else \
                _ONLY_DICT if first is dict else frozenset((first,))
    return set(tl)


# ------------------------------------------------------------------------- form tags
_SEGMENT = 3
#: first bytes of JSON text below 0x20 (whitespace): every other byte below 0x20 is a tag
_JSON_WHITESPACE = frozenset(b"\t\n\r")
_VALUE_TAGS = {_PACKED_RECORD: "0x01 packed record", _PACKED_FLOAT: "0x02 packed float"}
_ENTRY_TAGS = {**_VALUE_TAGS, _SEGMENT: "0x03 segment"}


def _unknown_tag(fmt: str, tag: int, known: dict[int, str]) -> CodecError:
    return CodecError(
        f"{fmt} starts with form tag 0x{tag:02x}, unknown to codec version "
        f"{CODEC_VERSION} (it reads {', '.join(known.values())} and JSON text); "
        f"was the state written by a newer swag?")


def _is_unknown_tag(first: int, known: dict[int, str]) -> bool:
    return first < 0x20 and first not in known and first not in _JSON_WHITESPACE


# ------------------------------------------------------------------------- log entries
_SEGMENT_HEAD = struct.Struct("<BI")
_TIMES_PACKED, _TIMES_JSON = 0, 1
_BODY_JSON, _BODY_RECORDS, _BODY_FLOATS = 0, 1, 2


def _int64_struct(n: int) -> struct.Struct:
    return _array_struct("q", n)


def _records_body(columns: Columns) -> bytes | None:
    """The flat-record body of a segment (``None`` if the values do not qualify)."""
    values = columns.values
    n = len(values)
    keys = tuple(values[0])
    if len(keys) == 1:
        if list(map(len, values)).count(1) != n:
            return None
    elif not keys or set(map(tuple, values)) != {keys}:
        return None
    fmt = ""
    floats = []
    others = []
    try:
        for k in keys:
            if type(k) is not str:
                return None
            types = columns.types(k)
            if types == _ONLY_FLOAT:
                fmt += "d"
                floats.append(columns.column(k))
            elif types <= _JSON_SCALARS:
                fmt += "j"
                others.append(columns.column(k))
            else:
                return None
    except KeyError:  # not the same keys after all
        return None
    prefix = _header_prefix(_BODY_RECORDS, keys, fmt)
    if prefix is None:
        return None
    pack = _floats_struct(n).pack
    parts = [prefix]
    parts.extend([pack(*col) for col in floats])
    if others:
        try:
            parts.append(_dumps(others).encode("utf-8"))
        except ValueError:  # e.g. a lone surrogate: the JSON path reports it
            return None
    return b"".join(parts)


def encode_entry(times: Sequence[int], values: Sequence[Any],
                 columns: Columns | None = None) -> bytes:
    """The data of one log entry holding the events ``zip(times, values)`` (arrival order,
    at least one): :func:`encode_value` of the value for one event, a *segment* for several
    (see the module docstring). Raises :class:`CodecError` if a value cannot be stored.
    ``columns``: the batch's :class:`Columns` if the caller has one (over ``values``)."""
    n = len(values)
    if n == 1:
        return encode_value(values[0])
    try:  # segment head and packed times: 0x03 | u32 n | 0x00 | n x i64
        data = _SEGMENT_HEAD.pack(_SEGMENT, n) + bytes([_TIMES_PACKED]) + \
            _int64_struct(n).pack(*times)
    except struct.error:  # beyond 64 bits
        text = _dumps(list(times)).encode("utf-8")
        data = _SEGMENT_HEAD.pack(_SEGMENT, n) + bytes([_TIMES_JSON]) + \
            len(text).to_bytes(4, "little") + text
    body = None
    types = list(map(type, values))
    first = types[0]
    if types.count(first) == n:
        if first is dict:
            body = _records_body(columns if columns is not None else Columns(values))
        elif first is float:
            body = bytes([_BODY_FLOATS]) + _floats_struct(n).pack(*values)
    if body is None:
        body = bytes([_BODY_JSON]) + _dumps([to_json(v) for v in values]).encode("utf-8")
    return data + body


def encode_float_record_segment(field: str, n: int, times: bytes, floats: bytes) -> bytes | None:
    """The segment :func:`encode_entry` writes for ``n >= 2`` events whose values are all
    ``{field: float}``, from their times and floats already packed as little-endian int64 /
    float64 (arrival order), e.g. by NumPy's ``tobytes``; ``None`` if ``field`` cannot be a
    header key (then use :func:`encode_entry`)."""
    prefix = _header_prefix(_BODY_RECORDS, (field,), "d")
    if prefix is None or n < 2:
        return None
    return _SEGMENT_HEAD.pack(_SEGMENT, n) + bytes([_TIMES_PACKED]) + times + prefix + floats


def encode_float_records_segment(fields: tuple[str, ...], n: int, times: bytes,
                                 columns: Sequence[bytes | list[int]]) -> bytes | None:
    """The segment :func:`encode_entry` writes for ``n >= 2`` events whose values are all
    dicts of ``fields``, in that key order, each field all floats or all ints: ``columns``
    holds per field its floats packed as little-endian float64 (``bytes``) or its ints (a
    ``list``), arrival order; ``None`` if the keys cannot be a header or the ints cannot be
    JSON (then use :func:`encode_entry`)."""
    fmt = "".join(["d" if type(c) is bytes else "j" for c in columns])
    prefix = _header_prefix(_BODY_RECORDS, fields, fmt)
    if prefix is None or n < 2 or not fields:
        return None
    parts = [_SEGMENT_HEAD.pack(_SEGMENT, n), bytes([_TIMES_PACKED]), times, prefix]
    parts.extend([c for c in columns if type(c) is bytes])
    if "j" in fmt:
        try:
            parts.append(_dumps([c for c in columns if type(c) is not bytes]).encode("utf-8"))
        except ValueError:
            return None
    return b"".join(parts)


def _segment_columns(data: bytes
                     ) -> tuple[Sequence[int], tuple[str, ...] | None, list[Any]]:
    """A segment's times (arrival order; packed ones as an int64 ``array``) and values: for a
    flat-record body its keys and one column per key (a ``d`` column as a float64
    ``array``), else ``None`` and the list of values."""
    _, n = _SEGMENT_HEAD.unpack_from(data)
    at = _SEGMENT_HEAD.size
    times: Sequence[int]
    if data[at] == _TIMES_PACKED:
        times = _packed("q", data, at + 1, n)
        at += 1 + 8 * n
    elif data[at] == _TIMES_JSON:
        size = int.from_bytes(data[at + 1:at + 5], "little")
        times = json.loads(data[at + 5:at + 5 + size])
        at += 5 + size
        if not (isinstance(times, list) and len(times) == n
                and all(type(t) is int for t in times)):
            raise CodecError("corrupt segment times")
    else:
        raise CodecError(f"corrupt segment: times kind {data[at]}")
    body, at = data[at], at + 1
    values: list[Any]
    if body == _BODY_FLOATS:
        if len(data) != at + 8 * n:
            raise CodecError("corrupt segment: float body size")
        values = list(_floats_struct(n).unpack_from(data, at))
    elif body == _BODY_JSON:
        values = json.loads(data[at:], object_hook=_hook)
    elif body == _BODY_RECORDS:
        size = int.from_bytes(data[at:at + 2], "little")
        fmt, keys = _read_header(data[at + 2:at + 2 + size])
        at += 2 + size
        columns: list[Any] = []
        floats_at = at
        nd = fmt.count("d")
        at += 8 * n * nd
        others = iter(json.loads(data[at:], object_hook=_hook) if "j" in fmt else [])
        for c in fmt:
            if c == "d":
                columns.append(_packed("d", data, floats_at, n))
                floats_at += 8 * n
            else:
                col = next(others)
                if not (isinstance(col, list) and len(col) == n):
                    raise CodecError("corrupt segment: JSON column")
                columns.append(col)
        if next(others, None) is not None:
            raise CodecError("corrupt segment: extra JSON columns")
        if "j" not in fmt and len(data) != at:  # JSON columns end the entry themselves
            raise CodecError(f"corrupt segment: {len(data) - at} bytes after the float "
                             f"columns")
        if len(times) != n or not keys:
            raise CodecError("corrupt segment: wrong number of values")
        return times, keys, columns
    else:
        raise CodecError(f"corrupt segment: body kind {body}")
    if not (isinstance(values, list) and len(values) == n):
        raise CodecError("corrupt segment: wrong number of values")
    return times, None, values


def _decode_segment(data: bytes) -> tuple[Sequence[int], list[Any]]:
    times, keys, values = _segment_columns(data)
    if keys is not None:
        values = [dict(zip(keys, row)) for row in zip(*values)]
    return times, values


def _corrupt_segment(data: bytes, exc: Exception) -> CodecError:
    if isinstance(exc, CodecError):
        return exc
    return CodecError(f"corrupt segment {data!r:.80}: {exc}")


_SEGMENT_ERRORS = (ValueError, TypeError, struct.error, IndexError, StopIteration)


def decode_entry(time: int, seq: int, data: bytes) -> list[tuple[int, int, Any]]:
    """The events ``(time, seq, value)`` of one log entry (inverse of :func:`encode_entry`)."""
    if isinstance(data, (bytes, bytearray)) and data[:1] == b"\x03":
        try:
            times, values = _decode_segment(bytes(data))
        except _SEGMENT_ERRORS as exc:
            raise _corrupt_segment(data, exc) from None
        return list(zip(times, range(seq, seq + len(times)), values))
    if data and isinstance(data, (bytes, bytearray)) and _is_unknown_tag(data[0], _ENTRY_TAGS):
        raise _unknown_tag(ENTRY_FORMAT, data[0], _ENTRY_TAGS)
    return [(time, seq, decode_value(data))]


def decode_entry_columns(time: int, data: bytes
                         ) -> tuple[Sequence[int], dict[str, Sequence[Any]]] | None:
    """The events of one log entry column-wise, for readers that fold arrays: their times
    (arrival order) and per key of their flat-record values its column (packed times and
    floats as ``array`` s of int64 / float64, which NumPy reads without a copy); ``None`` if
    the values are not non-empty dicts with ``str`` keys, all with the same keys (then
    :func:`decode_entry` reads the entry). Raises :class:`CodecError` as :func:`decode_entry`
    does."""
    if isinstance(data, (bytes, bytearray)) and data[:1] == b"\x03":
        try:
            times, keys, values = _segment_columns(bytes(data))
        except _SEGMENT_ERRORS as exc:
            raise _corrupt_segment(data, exc) from None
        return None if keys is None else (times, dict(zip(keys, values)))
    (_, _, value), = decode_entry(time, 0, data)
    if type(value) is not dict or not value or not all(type(k) is str for k in value):
        return None
    return [time], {k: [v] for k, v in value.items()}


_headers: dict[bytes, tuple[str, tuple[str, ...]]] = {}


def _read_header(text: bytes) -> tuple[str, tuple[str, ...]]:
    """``(fmt, keys)`` of a packed header's JSON text, checked; cached (a log repeats the
    same few headers in every entry)."""
    found = _headers.get(text)
    if found is None:
        header = json.loads(text)
        if not (isinstance(header, list) and header and isinstance(header[0], str)):
            raise CodecError(f"corrupt packed record header {header!r:.80}")
        fmt, keys = header[0], tuple(header[1:])
        if len(fmt) != len(keys) or set(fmt) - {"d", "j"} or not all(
                isinstance(k, str) for k in keys):
            raise CodecError(f"corrupt packed record header {header!r:.80}")
        if len(_headers) >= 1024:
            _headers.clear()
        found = _headers[bytes(text)] = (fmt, keys)
    return found


def _packed(kind: str, data: bytes, at: int, n: int) -> array[Any]:
    """``n`` little-endian int64 (``q``) or float64 (``d``) values at ``data[at:]`` as an
    ``array`` (a sequence of Python numbers, and a buffer NumPy reads without a copy)."""
    if at + 8 * n > len(data):
        raise CodecError("corrupt segment: cut inside a packed column")
    values = array(kind)
    values.frombytes(data[at:at + 8 * n])
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _unpack_record(data: bytes) -> dict[str, Any]:
    size = int.from_bytes(data[1:3], "little")
    fmt, keys = _read_header(data[3:3 + size])
    nd = fmt.count("d")
    start = 3 + size
    end = start + 8 * nd
    floats = iter(_floats_struct(nd).unpack(data[start:end]))
    if "j" in fmt:
        others = json.loads(data[end:], object_hook=_hook)
        if not isinstance(others, list) or len(others) != len(fmt) - nd:
            raise CodecError(f"corrupt packed record values {others!r:.80}")
    else:
        if len(data) != end:
            raise CodecError(f"corrupt packed record: {len(data) - end} trailing bytes")
        others = []
    rest = iter(others)
    return {k: next(floats) if c == "d" else next(rest) for k, c in zip(keys, fmt)}


# ------------------------------------------------------------------------- public API
def encode_value(value: Any) -> bytes:
    """``value`` as codec bytes; :class:`CodecError` if its type is unsupported."""
    t = type(value)
    if t is dict:
        if value:
            data = _pack_one(value)
            if data is not None:
                return data
    elif t is float:
        return _FLOAT_PREFIX + _FLOAT.pack(value)
    return _dumps(to_json(value)).encode("utf-8")


def decode_value(data: bytes | str) -> Any:
    """Inverse of :func:`encode_value`."""
    try:
        if isinstance(data, (bytes, bytearray)) and data:
            first = data[0]
            if first == _PACKED_RECORD:
                return _unpack_record(bytes(data))
            if first == _PACKED_FLOAT:
                if len(data) != 9:
                    raise CodecError(f"corrupt packed float {data!r:.80}")
                return _FLOAT.unpack(data[1:])[0]
            if _is_unknown_tag(first, _VALUE_TAGS):
                raise _unknown_tag(VALUE_FORMAT, first, _VALUE_TAGS)
        return json.loads(data, object_hook=_hook)
    except (ValueError, TypeError, struct.error, StopIteration) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"corrupt value bytes {data!r:.80}: {exc}") from None


# ------------------------------------------------------------------------- metadata
_getrandbits = random.Random().getrandbits


def watermark_text(wm: int | float) -> str:
    """The metadata's ``wm`` as JSON text: an int, ``null`` (``-inf``: no watermark yet) or
    ``"end"`` (``+inf``: end of input)."""
    if type(wm) is int:
        return str(wm)
    return "null" if wm == -math.inf else '"end"' if wm == math.inf else str(int(wm))


def decode_watermark(value: Any) -> int | float:
    """Inverse of :func:`watermark_text` for the parsed ``wm`` of :func:`decode_meta`."""
    return -math.inf if value is None else math.inf if value == "end" else int(value)


class MetaWriter:
    """Writes the metadata of the keys of one query (fixed fingerprint), the same bytes as
    :func:`encode_meta` of the equal dict, formatted directly: it runs once per call and
    key. Each write carries a fresh random 62-bit nonce unless ``nonce`` is given."""

    __slots__ = ("_head",)

    def __init__(self, fingerprint: str) -> None:
        self._head = f'{{"codec":{CODEC_VERSION},"q":{_dumps(fingerprint)},"n":'

    def __call__(self, wm: int | float, seq: int, released: int, late: int, policy: str,
                 nonce: int | None = None) -> bytes:
        """The metadata bytes; ``policy``: the policy windows' lengths, comma-separated
        (empty without policy windows)."""
        if nonce is None:
            nonce = _getrandbits(62)
        wm_text = str(wm) if type(wm) is int else watermark_text(wm)
        return (f'{self._head}{nonce},"wm":{wm_text},"seq":{seq},'
                f'"rel":{released},"late":{late},"pol":[{policy}]}}').encode()


def encode_meta(meta: dict[str, Any]) -> bytes:
    """Per-key metadata (a flat dict of JSON scalars and lists) as bytes."""
    return _dumps(meta).encode("utf-8")


#: first byte of the metadata's extension after its JSON text (JSON text holds no byte below
#: 0x20 but whitespace): the KVS layout's local parts
#: (:data:`adapters.state.pairs.META_LOCALS`, :func:`adapters.state.pairs.encode_locals`)
META_EXTENSION = b"\x13"

_N = rb"(0|[1-9][0-9]*)"
#: what :class:`MetaWriter` writes (a 16-hex-digit fingerprint): parsed without ``json``
_WRITTEN = re.compile(rb'\{"codec":' + _N + rb',"q":"([0-9a-f]{16})","n":' + _N
                      + rb',"wm":(-?(?:0|[1-9][0-9]*)|null|"end"),"seq":' + _N + rb',"rel":'
                      + _N + rb',"late":' + _N + rb',"pol":\[((?:0|[1-9][0-9]*)'
                      rb'(?:,(?:0|[1-9][0-9]*))*)?\]\}')


def split_meta(data: bytes) -> tuple[bytes, bytes | None]:
    """The metadata's JSON text and its extension (:data:`META_EXTENSION` on; ``None``
    if it has none)."""
    i = data.find(META_EXTENSION)
    if i < 0:
        return data, None
    return data[:i], data[i:]


def decode_meta(data: bytes | str) -> dict[str, Any]:
    """Inverse of :func:`encode_meta`; checks the codec version (:class:`StateError` naming
    the version found and :data:`CODEC_VERSION`). An extension after the JSON text
    (:func:`split_meta`) is not read here."""
    if type(data) is bytes:
        i = data.find(META_EXTENSION)
        if i >= 0:
            data = data[:i]
        m = _WRITTEN.fullmatch(data)
        if m is not None and int(m[1]) == CODEC_VERSION:
            wm, pol = m[4], m[8]
            return {"codec": int(m[1]), "q": m[2].decode("ascii"), "n": int(m[3]),
                    "wm": (None if wm == b"null" else "end" if wm == b'"end"' else int(wm)),
                    "seq": int(m[5]), "rel": int(m[6]), "late": int(m[7]),
                    "pol": [] if pol is None else [int(x) for x in pol.split(b",")]}
    try:
        meta = json.loads(data)
    except ValueError as exc:
        raise StateError(f"corrupt {META_FORMAT} {data!r:.80}: {exc}") from None
    version = meta.get("codec") if isinstance(meta, dict) else None
    if type(version) is not int or version != CODEC_VERSION:
        raise version_error(META_FORMAT, version, CODEC_VERSION, what="codec version")
    for name, valid in _META_FIELDS.items():
        value = meta.get(name)
        if not valid(value):
            raise StateError(f"corrupt {META_FORMAT}: field {name!r} is {value!r:.40} "
                             f"({data!r:.120})")
    return meta


def _count(x: Any) -> bool:
    return type(x) is int and x >= 0


#: the fields of the metadata, and what each may hold
_META_FIELDS: dict[str, Any] = {
    "q": lambda x: type(x) is str,
    "wm": lambda x: x is None or x == "end" or type(x) is int,
    "seq": _count, "rel": _count, "late": _count,
    "pol": lambda x: type(x) is list and all(map(_count, x)),
}
