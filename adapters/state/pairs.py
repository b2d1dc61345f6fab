"""A key's *pair map*: the engine-held key-value store of the MTA KVS layout
(:mod:`swag_core.algorithms.mta_kvs`, ``docs/adapters.md``, "KVS layout").

A :class:`~adapters.state.backend.KeyState` may offer ``pair_map()``, a map ``int -> bytes``
of the key (an engine's keyed map state: Flink ``MapState[long, bytes]``, Spark
``getMapState``; :class:`MemoryPairMap` here). :class:`LanePairs` is the
:class:`~swag_core.algorithms.mta_kvs.PairStore` the structure sees: it puts the lane into the
slot, encodes values (:func:`encode_pair`, no pickle) and holds one call's writes until
:meth:`LanePairs.apply`, so a call that fails before its state writes leaves the key's map as
the last completed call wrote it; the local part carries the nonce of the metadata written
after it, so a reload detects a call that failed between the two writes.

Format, version 2 (``PAIRS_VERSION``; golden samples in ``tests/golden/kvs_pairs.json``):
map key ``lane << 56 | level << 48 | pair`` (:func:`~swag_core.algorithms.mta_kvs.slot` plus
the lane index); value :func:`encode_pair` of the tuple of the pair's elements, level-0
elements ``(time, partial)``. A pair is stored once it is final (it left its level's tail) or
modified at a level's head; the tails go with the local part. :func:`encode_pair` writes the
**packed** form when the value is made of ``float``, ``int``, ``bool``, ``str``, ``None``,
tuples and lists (the built-in aggregations' partials: max/min floats, counts, exact sums as
big ints, collect's lists)::

    0x10 | u16 LE len(S) | S: shape, ASCII | the values, struct-packed little-endian

The shape spells the value depth first: ``d`` float64, ``q`` int64, ``z<n>`` an int
beyond 64 bits as ``n`` bytes (two's complement, little-endian), ``?`` bool (1 byte), ``s<n>``
a str of ``n`` UTF-8 bytes, ``n`` None (no bytes), ``(``...``)`` a tuple, ``[``...``]`` a list.
E.g. a level-0 pair of a max, ``((7, 2.5), (8, 1.0))``: shape ``((qd)(qd))``, 32 bytes of
values. Any other value (a dict, bytes, a user type) is stored in the codec's value encoding
(:func:`~adapters.state.codec.encode_value`, the JSON form), as every pair was in version 1:
:func:`decode_pair` reads both (JSON text never starts with byte 0x10). No pickle.

The map key ``lane << 56 | LOCAL`` holds the structure's local part
(:meth:`~swag_core.algorithms.mta_kvs.KvsAmta.local_state`, :func:`encode_local`)::

    0x11 | u8 version (2) | u16 LE len(F) | u32 LE n | int64 LE nonce | F: fingerprint, UTF-8
         | n x int64 LE ints
         | 0x00 | encode_pair([partials, rows])                       (any rows)
         | 0x01 | u32 LE m | m x int64 LE counts | u32 LE p          (flat rows)
                | 0x01 | u32 LE k | k x float64 LE values             (all values floats)
                | 0x00 | encode_pair([values])                       (any values)

with the nonce of the metadata written after it (a reload detects a call that failed
between the two writes) and per level ``[tail, lo, head]``: its tail, and the first pairs of
its head cache from position ``lo`` (``[]`` if not cached), so a reopen reads no pair for
the tails and an eviction of a few entries after it none either. Flat rows (written when
every level-0 element is ``(int time, partial)``): ``counts`` is per level ``len(tail), lo,
len(head)``, then the times of level 0's tail and head elements; ``values`` the ``p``
partials, then level 0's partials (tail, head), then each other level's tail and head
elements: for a max or a min all floats, one array.

Version 1 (still read): every pair in the JSON form and the local part
``encode_value([1, fingerprint, ints, partials, meta nonce])``, the tails stored as pairs
(read from the map on a level's first use after a reopen). A key's next save writes version 2.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from adapters.errors import CodecError, StateError
from adapters.state.codec import decode_value, encode_value, version_error

#: version of the pair map's format written (the local-part record's version)
PAIRS_VERSION: Final = 2
#: versions read
READABLE_PAIRS_VERSIONS: Final = (1, 2)
#: bits below the lane index in a map key
LANE_SHIFT: Final = 56
#: the slot (below the lane bits) of a lane's local-part record: above every pair slot
LOCAL: Final = (1 << LANE_SHIFT) - 1

_DELETED: Final = object()

# ------------------------------------------------------------------------- packed pairs (v2)
#: first byte of a packed pair value (``PAIRS_VERSION`` 2)
PACKED_PAIR: Final = 0x10
#: first byte of a version-2 local-part record
PACKED_LOCAL: Final = 0x11
_HEAD = struct.Struct("<BH")            # tag, len(shape)
_LOCAL_HEAD = struct.Struct("<BBHIq")   # tag, version, len(fingerprint), len(ints), nonce
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_SHAPES_MAX = 4096


class _Unpackable(Exception):
    """A value outside the packed form (it is stored in the JSON form instead)."""


def _walk(x: Any, shape: list[str], vals: list[Any]) -> None:
    """Append the shape characters and the packed values of ``x`` (a tuple or a list: the
    scalars of a sequence are handled inline, a level-0 pair is three calls)."""
    t = type(x)
    if t is tuple:
        shape.append("(")
        close = ")"
    elif t is list:
        shape.append("[")
        close = "]"
    else:
        _scalar(x, shape, vals)
        return
    for y in x:
        ty = type(y)
        if ty is float:
            shape.append("d")
            vals.append(y)
        elif ty is tuple or ty is list:
            _walk(y, shape, vals)
        elif ty is int and _INT64_MIN <= y <= _INT64_MAX:
            shape.append("q")
            vals.append(y)
        else:
            _scalar(y, shape, vals)
    shape.append(close)


def _scalar(x: Any, shape: list[str], vals: list[Any]) -> None:
    t = type(x)
    if t is float:
        shape.append("d")
        vals.append(x)
    elif t is int:
        if _INT64_MIN <= x <= _INT64_MAX:
            shape.append("q")
            vals.append(x)
        else:
            b = x.to_bytes((x.bit_length() + 8) >> 3, "little", signed=True)
            shape.append(f"z{len(b)}")
            vals.append(b)
    elif x is None:
        shape.append("n")
    elif t is bool:
        shape.append("?")
        vals.append(x)
    elif t is str:
        b = x.encode("utf-8")
        shape.append(f"s{len(b)}")
        vals.append(b)
    else:
        raise _Unpackable


def encode_pair(value: Any) -> bytes:
    """A pair (or a tuple of partials) as map bytes: the packed form if every item is a
    ``float``, an ``int``, a ``bool``, a ``str``, ``None`` or a tuple or list of these,
    else the codec's value encoding (JSON form). See the module docstring."""
    shape: list[str] = []
    vals: list[Any] = []
    try:
        _walk(value, shape, vals)
    except _Unpackable:
        return encode_value(value)
    text = "".join(shape).encode("ascii")
    if len(text) > 0xFFFF:
        return encode_value(value)
    return _HEAD.pack(PACKED_PAIR, len(text)) + text + _shape(text)[0].pack(*vals)


def _parse(shape: bytes) -> tuple[struct.Struct, Callable[[Iterator[Any]], Any]]:
    """The struct and the builder of a packed shape (:class:`CodecError` if malformed)."""
    fmt = ["<"]
    stack: list[tuple[int, list[Callable[[Iterator[Any]], Any]]]] = [(0, [])]
    text = shape.decode("ascii")
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        nodes = stack[-1][1]
        if c in "dq?":
            fmt.append(c)
            nodes.append(next)
        elif c == "n":
            nodes.append(_none)
        elif c in "zs":
            j = i
            while j < n and text[j].isdigit():
                j += 1
            if j == i:
                raise CodecError(f"corrupt packed pair shape {shape!r:.80}")
            fmt.append(f"{int(text[i:j])}s")
            nodes.append(_big if c == "z" else _text)
            i = j
        elif c in "([":
            stack.append((ord(c), []))
        elif c in ")]":
            kind, children = stack.pop()
            if not stack or kind != (ord("(") if c == ")" else ord("[")):
                raise CodecError(f"corrupt packed pair shape {shape!r:.80}")
            stack[-1][1].append(_sequence(children, tuple if c == ")" else list))
        else:
            raise CodecError(f"corrupt packed pair shape {shape!r:.80}")
    if len(stack) != 1 or len(stack[0][1]) != 1:
        raise CodecError(f"corrupt packed pair shape {shape!r:.80}")
    return struct.Struct("".join(fmt)), stack[0][1][0]


def _none(it: Iterator[Any]) -> None:
    return None


def _big(it: Iterator[Any]) -> int:
    return int.from_bytes(next(it), "little", signed=True)


def _text(it: Iterator[Any]) -> str:
    return str(next(it), "utf-8")


def _sequence(children: list[Callable[[Iterator[Any]], Any]],
              kind: type) -> Callable[[Iterator[Any]], Any]:
    if all(c is next for c in children):   # flat: the values as they come
        k = len(children)
        if kind is tuple:
            return lambda it: tuple([next(it) for _ in range(k)])
        return lambda it: [next(it) for _ in range(k)]
    if kind is tuple:
        return lambda it: tuple([c(it) for c in children])
    return lambda it: [c(it) for c in children]


_shapes: dict[bytes, tuple[struct.Struct, Callable[[Iterator[Any]], Any]]] = {}


def _shape(shape: bytes) -> tuple[struct.Struct, Callable[[Iterator[Any]], Any]]:
    """:func:`_parse`, cached (a lane's pairs share a few shapes)."""
    got = _shapes.get(shape)
    if got is None:
        if len(_shapes) >= _SHAPES_MAX:
            _shapes.clear()
        got = _shapes[shape] = _parse(shape)
    return got


def _unpack(data: bytes, start: int) -> tuple[Any, int]:
    """The packed value at ``data[start:]`` and where it ends."""
    _, n = _HEAD.unpack_from(data, start)
    body = start + 3 + n
    shape = bytes(data[start + 3:body])
    if len(shape) != n:
        raise CodecError("corrupt packed pair: truncated shape")
    packer, build = _shape(shape)
    return build(iter(packer.unpack_from(data, body))), body + packer.size


def decode_pair(data: bytes) -> Any:
    """Inverse of :func:`encode_pair` (either form; version-1 pairs are in the JSON form)."""
    if data and data[0] == PACKED_PAIR:
        try:
            value, end = _unpack(data, 0)
        except (struct.error, ValueError, StopIteration) as exc:
            if isinstance(exc, CodecError):
                raise
            raise CodecError(f"corrupt packed pair {bytes(data)!r:.80}: {exc}") from None
        if end != len(data):
            raise CodecError(f"corrupt packed pair: {len(data) - end} trailing bytes")
        return value
    return decode_value(data)


_U32 = struct.Struct("<I")
_ROWS_GENERIC, _ROWS_FLAT = 0, 1
_VALUES_GENERIC, _VALUES_FLOATS = 0, 1
_ONLY_FLOATS: Final = frozenset({float})


def _flat_rows(rows: list[list[Any]]) -> tuple[list[int], list[Any]] | None:
    """``rows`` (per level ``[tail, lo, head]``) as ints (per level ``len(tail), lo,
    len(head)``, then the times of level 0's elements) and values (level 0's partials, then
    the other levels' elements), or ``None`` if a level-0 element is not ``(int, partial)``
    (a dead position read as ``None`` from a version-1 map)."""
    ints: list[int] = []
    times: list[int] = []
    vals: list[Any] = []
    for level, (tail, lo, head) in enumerate(rows):
        ints += (len(tail), lo, len(head))
        if level:
            vals += tail
            vals += head
            continue
        for e in (*tail, *head):
            if type(e) is not tuple or len(e) != 2 or type(e[0]) is not int:
                return None
            times.append(e[0])
            vals.append(e[1])
    return ints + times, vals


def _unflat_rows(h: int, ints: list[int], vals: list[Any]) -> list[list[Any]]:
    """Inverse of :func:`_flat_rows` (``h`` levels)."""
    if len(ints) < 3 * h or h < 1:
        raise ValueError("rows do not match their counts")
    nt, lo, nh = ints[0], ints[1], ints[2]
    n0 = nt + nh
    if len(ints) != 3 * h + n0 or len(vals) < n0:
        raise ValueError("rows do not match their counts")
    level0 = list(zip(ints[3 * h:], vals[:n0]))
    rows: list[list[Any]] = [[level0[:nt], lo, level0[nt:]]]
    at = n0
    for j in range(3, 3 * h, 3):
        nt, lo, nh = ints[j], ints[j + 1], ints[j + 2]
        mid = at + nt
        end = mid + nh
        rows.append([vals[at:mid], lo, vals[mid:end]])
        at = end
    if at != len(vals):
        raise ValueError("rows do not match their counts")
    return rows


def _int64s(ints: Sequence[int]) -> bytes:
    return _U32.pack(len(ints)) + struct.pack(f"<{len(ints)}q", *ints)


def encode_local(fingerprint: str, ints: Sequence[int], partials: list[Any], nonce: int,
                 rows: list[list[Any]]) -> bytes:
    """A version-2 local-part record (module docstring); :class:`CodecError` if an int of
    ``ints`` or ``nonce`` is beyond 64 bits, or a partial has no codec encoding."""
    fp = fingerprint.encode("utf-8")
    try:
        out = [_LOCAL_HEAD.pack(PACKED_LOCAL, PAIRS_VERSION, len(fp), len(ints), nonce), fp,
               struct.pack(f"<{len(ints)}q", *ints)]
        flat = _flat_rows(rows)
        if flat is None:
            out += [bytes([_ROWS_GENERIC]), encode_pair([partials, rows])]
        else:
            counts, vals = flat
            vals = [*partials, *vals]
            out += [bytes([_ROWS_FLAT]), _int64s(counts), _U32.pack(len(partials))]
            if _ONLY_FLOATS.issuperset(map(type, vals)):
                out += [bytes([_VALUES_FLOATS]), _U32.pack(len(vals)),
                        struct.pack(f"<{len(vals)}d", *vals)]
            else:
                out += [bytes([_VALUES_GENERIC]), encode_pair(vals)]
    except struct.error as exc:
        raise CodecError(f"window pairs record: {exc}") from None
    return b"".join(out)


def decode_local(data: bytes) -> tuple[int, str, list[int], list[Any], int, list[Any]]:
    """``(version, fingerprint, ints, partials, nonce, rows)`` of a version-2 record (the
    version is returned, not checked)."""
    try:
        _, version, nfp, nints, nonce = _LOCAL_HEAD.unpack_from(data, 0)
        at = _LOCAL_HEAD.size
        fingerprint = str(data[at:at + nfp], "utf-8")
        at += nfp
        ints = list(struct.unpack_from(f"<{nints}q", data, at))
        at += 8 * nints
        form = data[at]
        at += 1
        if form == _ROWS_GENERIC:
            partials, rows = decode_pair(data[at:])
        elif form == _ROWS_FLAT:
            n, = _U32.unpack_from(data, at)
            counts = list(struct.unpack_from(f"<{n}q", data, at + 4))
            at += 4 + 8 * n
            npartials, kind = struct.unpack_from("<IB", data, at)
            at += 5
            if kind == _VALUES_FLOATS:
                n, = _U32.unpack_from(data, at)
                at += 4
                vals = list(struct.unpack_from(f"<{n}d", data, at))
                if at + 8 * n != len(data):
                    raise ValueError(f"{len(data) - at - 8 * n} trailing bytes")
            elif kind == _VALUES_GENERIC:
                vals = decode_pair(data[at:])
                if type(vals) is not list:
                    raise ValueError("values are not a list")
            else:
                raise ValueError(f"unknown values form {kind}")
            partials = vals[:npartials]
            rows = _unflat_rows(ints[1], counts, vals[npartials:])
        else:
            raise ValueError(f"unknown rows form {form}")
        if type(partials) is not list or type(rows) is not list:
            raise ValueError("partials and rows are not lists")
    except (struct.error, ValueError, TypeError, IndexError, StopIteration) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"corrupt window pairs record: {exc}") from None
    return version, fingerprint, ints, partials, nonce, rows


@runtime_checkable
class PairMap(Protocol):
    """The engine's map ``int -> bytes`` of one key (what ``KeyState.pair_map()`` returns).
    Contract as for :class:`~adapters.state.backend.KeyState`: writes apply in call order and
    survive a restore."""

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        """The values at ``keys``, in order, ``None`` where absent."""
        ...

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        """Store each ``(key, value)``."""
        ...

    def delete_many(self, keys: Sequence[int]) -> None:
        """Delete the values at ``keys`` (absent keys are ignored)."""
        ...


class MemoryPairMap:
    """In-memory :class:`PairMap` (the reference, held by
    :class:`~adapters.state.backend.MemoryKeyState`); counts calls and bytes written."""

    __slots__ = ("bytes_written", "calls", "data")

    def __init__(self, data: dict[int, bytes] | None = None) -> None:
        self.data: dict[int, bytes] = {} if data is None else data
        self.calls = 0
        self.bytes_written = 0

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        self.calls += 1
        get = self.data.get
        return [get(k) for k in keys]

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        self.calls += 1
        for k, v in items:
            if type(k) is not int or not isinstance(v, bytes):
                raise TypeError(f"pair map items are (int, bytes), got {(k, v)!r:.80}")
            self.data[k] = v
            self.bytes_written += 8 + len(v)

    def delete_many(self, keys: Sequence[int]) -> None:
        self.calls += 1
        pop = self.data.pop
        for k in keys:
            pop(k, None)


class LanePairs:
    """One lane's :class:`~swag_core.algorithms.mta_kvs.PairStore` over a key's
    :class:`PairMap` (see the module docstring): encodes, prefixes with the lane, and holds
    the writes of the current call until :meth:`apply`."""

    __slots__ = ("key", "lane", "map", "pending")

    def __init__(self, pair_map: PairMap, lane: int, key: Any) -> None:
        self.map = pair_map
        self.lane = lane << LANE_SHIFT
        self.key = key  # for error messages
        self.pending: dict[int, Any] = {}   # slot -> value, or _DELETED

    def get_many(self, slots: Sequence[int]) -> list[Any]:
        pending = self.pending
        out: list[Any] = [pending.get(s) for s in slots]
        missing = [s for s, v in zip(slots, out) if v is None]
        if missing:
            lane = self.lane
            got = iter(self.map.get_many([lane | s for s in missing]))
            out = [self._decode(next(got)) if v is None else v for v in out]
        return [None if v is _DELETED else v for v in out]

    def _decode(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return decode_pair(data)
        except CodecError as exc:
            raise StateError(f"key {self.key!r}: corrupt window pair in state: {exc}") from None

    def put_many(self, items: Sequence[tuple[int, Any]]) -> None:
        self.pending.update(items)

    def delete_many(self, slots: Sequence[int]) -> None:
        pending = self.pending
        for s in slots:
            pending[s] = _DELETED

    def encode(self, fingerprint: str, ints: Sequence[int], partials: list[Any],
               nonce: int, tails: list[list[Any]]) -> tuple[list[int], list[tuple[int, bytes]]]:
        """The map writes of the call's pairs and the structure's local part
        (:func:`encode_local`): ``(slots to delete, (slot, bytes) to put)``; writes nothing
        (an encoding error leaves the map as it was)."""
        lane = self.lane
        puts = [(lane | s, encode_pair(v)) for s, v in self.pending.items() if v is not _DELETED]
        puts.append((lane | LOCAL, encode_local(fingerprint, ints, partials, nonce, tails)))
        gone = [lane | s for s, v in self.pending.items() if v is _DELETED]
        return gone, puts

    def apply(self, gone: list[int], puts: list[tuple[int, bytes]]) -> None:
        """Write what :meth:`encode` returned and forget the call's pairs."""
        if gone:
            self.map.delete_many(gone)
        self.map.put_many(puts)
        self.pending.clear()

    def read_local(self) -> tuple[str, list[int], list[Any], int, list[Any] | None] | None:
        """The lane's local-part record ``(fingerprint, ints, partials, nonce, tails)``
        (``tails`` ``None`` in a version-1 record: they are in the map), or ``None`` if it
        has none. :class:`StateError` for a corrupt record or an unknown version."""
        data = self.map.get_many([self.lane | LOCAL])[0]
        if data is None:
            return None
        if data[:1] == bytes([PACKED_LOCAL]):
            try:
                version, fingerprint, ints, partials, nonce, tails = decode_local(data)
            except CodecError as exc:
                raise StateError(f"key {self.key!r}: {exc}") from None
            if version != PAIRS_VERSION:
                error = version_error("window pairs", version, READABLE_PAIRS_VERSIONS)
                raise StateError(f"key {self.key!r}: {error}")
            return fingerprint, ints, partials, nonce, tails
        record = self._decode(data)
        if not isinstance(record, list) or not record or record[0] != 1:
            found = record[0] if isinstance(record, list) and record else record
            raise StateError(f"key {self.key!r}: "
                             f"{version_error('window pairs', found, READABLE_PAIRS_VERSIONS)}")
        try:
            fingerprint, ints, partials, nonce = record[1:]
        except ValueError:
            raise StateError(f"key {self.key!r}: corrupt window pairs record") from None
        return fingerprint, ints, partials, nonce, None


__all__ = ["LANE_SHIFT", "LOCAL", "PACKED_LOCAL", "PACKED_PAIR", "PAIRS_VERSION",
           "READABLE_PAIRS_VERSIONS", "LanePairs", "MemoryPairMap", "PairMap", "decode_local",
           "decode_pair", "encode_local", "encode_pair"]
