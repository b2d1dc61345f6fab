"""A key's *pair map*: the engine-held key-value store of the MTA KVS layout
(:mod:`swag_core.algorithms.mta_kvs`, ``docs/adapters.md``, "KVS layout"), and its bytes.

A :class:`~adapters.state.backend.KeyState` may offer ``pair_map()``, a map ``int -> bytes``
of the key (an engine's keyed map state: Flink ``MapState[long, bytes]``, Spark
``getMapState``; :class:`MemoryPairMap` here). :class:`LanePairs` is the
:class:`~swag_core.algorithms.mta_kvs.PairStore` the structure sees: it puts the lane into the
map key, encodes values (:func:`encode_pair`, no pickle) and holds one call's writes until
:meth:`LanePairs.apply`, so a call that fails before its state writes leaves the key's map as
the last completed call wrote it; the structure's local part goes with the key's metadata,
the pairs go to the map in pages.

**Who owns what.** The algorithm numbers its pairs: pair ``q`` of level ``l`` is slot
``l << SLOT_BITS | q`` (:func:`swag_core.algorithms.mta_kvs.slot`, ``SLOT_BITS`` = 48), part
of its :class:`~swag_core.algorithms.mta_kvs.PairStore` contract (a level's pairs are
consecutive slots). swag_core imports nothing from ``adapters``, so that numbering is
defined there once and read here. This module owns everything persisted: the map keys built
from the slots (lane bits, page bit, a lane's local slot), the bytes of every record, and
the format's one version.

**Format version 4** (:data:`PAIRS_VERSION`, the only one; golden samples in
``tests/golden/kvs_pairs.json``). Each of its four records (a page, a local part, a mark,
the metadata's extension) carries the version byte; any other version is refused with a
:class:`CodecError` or :class:`StateError` naming the record, the version found and 4.

*Map keys.* The pairs of a level whose slots differ only in their low :data:`PAGE_SHIFT`
(6) bits share one map key, a *page*: ``lane << 56 | PAGE_BIT | slot >> 6``
(:data:`PAGE_BIT` = ``1 << 55``; slots stay below it, levels being fewer than 128). The key
``lane << 56 | LOCAL`` (:data:`LOCAL` = ``2**56 - 1``) holds the lane's mark. Why pages:
each map call of an engine's state is a round trip (Spark's Python state client has no
batched map calls), and a sliding window retires and deletes about one pair per entry.

*Page* (:func:`encode_page`; a page without pairs is deleted)::

    0x14 | u8 version (4) | u16 LE count | count x (u8 index | u32 LE len(P) | P)

``index`` the slot's low 6 bits, ``P`` the pair's :func:`encode_pair` bytes: the tuple of the
pair's one or two elements, level-0 elements ``(time, partial)``. A pair is stored once it
is final (it left its level's tail) or modified at a level's head; the tails go with the
local part. :func:`encode_pair` writes the **packed** form when the value is made of
``float``, ``int``, ``bool``, ``str``, ``None``, tuples and lists (the built-in
aggregations' partials: max/min floats, counts, exact sums as big ints, collect's lists)::

    0x10 | u16 LE len(S) | S: shape, ASCII | the values, struct-packed little-endian

The shape spells the value depth first: ``d`` float64, ``q`` int64, ``z<n>`` an int
beyond 64 bits as ``n`` bytes (two's complement, little-endian), ``?`` bool (1 byte), ``s<n>``
a str of ``n`` UTF-8 bytes, ``n`` None (no bytes), ``(``...``)`` a tuple, ``[``...``]`` a list.
E.g. a level-0 pair of a max, ``((7, 2.5), (8, 1.0))``: shape ``((qd)(qd))``, 32 bytes of
values. Any other value (a dict, bytes, a user type) is stored in the codec's value encoding
(:func:`~adapters.state.codec.encode_value`, the JSON form): :func:`decode_pair` reads both
(JSON text never starts with byte 0x10). No pickle.

*Local part* (:meth:`~swag_core.algorithms.mta_kvs.KvsAmta.park`, :func:`encode_local`)::

    0x11 | u8 version (4) | u16 LE len(F) | u32 LE n | int64 LE nonce | F: fingerprint, UTF-8
         | n x int64 LE ints
         | 0x00 | encode_pair([partials, rows, buffer])               (any rows)
         | 0x01 | u32 LE m | m x int64 LE counts                     (flat rows)
                | u32 LE b | b x int64 LE buffer counts
                | u32 LE p
                | 0x01 | u32 LE k | k x float64 LE values             (all values floats)
                | 0x00 | encode_pair([values])                       (any values)

*Metadata extension* (:func:`encode_locals`), after the key's metadata JSON text
(:func:`adapters.state.codec.split_meta`), so a cache miss reads the metadata and the local
parts in one state read, and a call writes them in one write::

    0x13 | u8 version (4) | u8 count | count x (u8 lane | u32 LE len(R) | R: local part)

*Mark*, at map key ``lane << 56 | LOCAL``::

    0x12 | u8 version (4) | int64 LE nonce

the nonce of the last call that wrote the lane's pairs (it puts the mark with its pairs,
before its deletes); the local part's nonce is that of the mark it expects (0: no call wrote
pairs yet, no mark). A reopened lane compares them on its first map access (its first read
fetches the mark with the pairs, a first write reads it first): on a state without
transactions, a call that failed after its pair writes and before its metadata write is
detected before any of its pairs is used or overwritten (:func:`different_calls`).

The local part holds the structure's ints and partials, per level ``[tail, lo, head]``: its
tail, and the first pairs of its head cache from position ``lo`` (``[]`` if not cached), so a
reopen reads no pair for the tails and an eviction of a few entries after it none either,
and the structure's write buffer ``[slot, pair]`` (pairs retired or modified since the last
store write: :meth:`~swag_core.algorithms.mta_kvs.KvsAmta.park`), so a call writes pairs
to the map once per 16 of them, not on every call. Flat rows (written when every level-0
element is ``(int time, partial)``): ``counts`` is per level ``len(tail), lo, len(head)``,
then the times of level 0's tail and head elements; ``buffer counts`` the number of buffered
pairs, per pair its slot and its element count, then the times of its level-0 elements;
``values`` the ``p`` partials, then level 0's partials (tail, head), then each other level's
tail and head elements, then the buffered elements (a level-0 one by its partial): for a max
or a min all floats, one array.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from adapters.errors import CodecError, StateError
from adapters.state.codec import META_EXTENSION, decode_value, encode_value, version_error
from swag_core.algorithms.mta_kvs import SLOT_BITS

#: the version of every record of the pair map's format (the only one read and written)
PAIRS_VERSION: Final = 4
#: a page holds the pairs of one level whose slots differ in their low ``PAGE_SHIFT`` bits
PAGE_SHIFT: Final = 6
_PAGE_MASK: Final = (1 << PAGE_SHIFT) - 1
#: set in the map key of a page (below the lane bits; pair slots never reach it, ``LOCAL``
#: has it set too: :func:`is_page` tells them apart)
PAGE_BIT: Final = 1 << 55
#: bits below the lane index in a map key
LANE_SHIFT: Final = 56
#: the map key (below the lane bits) of a lane's mark: above every page key
LOCAL: Final = (1 << LANE_SHIFT) - 1

_DELETED: Final = object()

#: first byte of a packed pair value
PACKED_PAIR: Final = 0x10
#: first byte of a local-part record
PACKED_LOCAL: Final = 0x11
#: first byte of a pair-write mark (the map's local slot)
PAIRS_MARK: Final = 0x12
#: first byte of the metadata's extension that holds the lanes' local parts (the metadata's
#: owner, :mod:`adapters.state.codec`, reserves it)
META_LOCALS: Final = META_EXTENSION[0]
#: first byte of a page of pairs
PAIRS_PAGE: Final = 0x14
_PAGE_HEAD = struct.Struct("<BBH")       # tag, version, count
_PAGE_ITEM = struct.Struct("<BI")        # index in the page, len(pair)
_MARK = struct.Struct("<BBq")            # tag, version, nonce
_LOCALS_HEAD = struct.Struct("<BBB")     # tag, version, count
_LOCALS_ITEM = struct.Struct("<BI")      # lane, len(record)
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
    """Inverse of :func:`encode_pair` (either form)."""
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


def _flat_rows(rows: list[list[Any]], vals: list[Any]) -> list[int] | None:
    """``rows`` (per level ``[tail, lo, head]``) as ints (per level ``len(tail), lo,
    len(head)``, then the times of level 0's elements), their values (level 0's partials,
    then the other levels' elements) appended to ``vals``; ``None`` if a level-0 element is
    not ``(int, partial)`` (the rows then go in the generic form)."""
    if not rows:
        return []
    tail, lo, head = rows[0]
    level0 = [*tail, *head]
    for e in level0:
        if type(e) is not tuple or len(e) != 2 or type(e[0]) is not int:
            return None
    ints = [len(tail), lo, len(head)]
    vals += [v for _, v in level0]
    for level in range(1, len(rows)):
        tail, lo, head = rows[level]
        ints += (len(tail), lo, len(head))
        vals += tail
        vals += head
    return ints + [t for t, _ in level0]


def _unflat_rows(h: int, ints: Sequence[int], vals: list[Any], at: int, stop: int
                 ) -> list[list[Any]]:
    """Inverse of :func:`_flat_rows` (``h`` levels, their values ``vals[at:stop]``); the
    tails and heads are new lists."""
    if len(ints) < 3 * h or h < 1:
        raise ValueError("rows do not match their counts")
    nt, lo, nh = ints[0], ints[1], ints[2]
    t = 3 * h
    mid = at + nt
    end = mid + nh
    if len(ints) != t + nt + nh or end > stop:
        raise ValueError("rows do not match their counts")
    rows: list[list[Any]] = [[list(zip(ints[t:t + nt], vals[at:mid])), lo,
                              list(zip(ints[t + nt:], vals[mid:end]))]]
    at = end
    for j in range(3, t, 3):
        mid = at + ints[j]
        end = mid + ints[j + 2]
        rows.append([vals[at:mid], ints[j + 1], vals[mid:end]])
        at = end
    if at != stop:
        raise ValueError("rows do not match their counts")
    return rows


def _int64s(ints: Sequence[int]) -> bytes:
    return _U32.pack(len(ints)) + struct.pack(f"<{len(ints)}q", *ints)


def _flat_buffer(buffer: Sequence[tuple[int, Any]], vals: list[Any]) -> list[int] | None:
    """The write buffer ``(slot, pair)`` as ints (its length, per pair its slot and its
    element count, then the times of its level-0 elements), its values (every element, a
    level-0 one by its partial) appended to ``vals``; ``None`` if a level-0 element is not
    ``(int, partial)`` or a pair not a tuple of one or two elements."""
    ints: list[int] = [len(buffer)]
    times: list[int] = []
    for key, pair in buffer:
        if type(pair) is not tuple or not 1 <= len(pair) <= 2:
            return None
        ints += (key, len(pair))
        if key >> SLOT_BITS:
            vals += pair
            continue
        for e in pair:
            if type(e) is not tuple or len(e) != 2 or type(e[0]) is not int:
                return None
            times.append(e[0])
            vals.append(e[1])
    return ints + times


def _unflat_buffer(ints: Sequence[int], vals: list[Any], v: int) -> list[tuple[int, Any]]:
    """Inverse of :func:`_flat_buffer`, its values ``vals[v:]`` (:class:`IndexError` or
    :class:`ValueError` if the counts do not match)."""
    n = ints[0]
    t = 1 + 2 * n           # the times
    buffer: list[tuple[int, Any]] = []
    append = buffer.append
    for j in range(1, t, 2):
        key, k = ints[j], ints[j + 1]
        if key >> SLOT_BITS:
            if k == 2:
                append((key, (vals[v], vals[v + 1])))
            elif k == 1:
                append((key, (vals[v],)))
            else:
                raise ValueError("buffered pairs do not match their counts")
        elif k == 2:
            append((key, ((ints[t], vals[v]), (ints[t + 1], vals[v + 1]))))
            t += 2
        elif k == 1:
            append((key, ((ints[t], vals[v]),)))
            t += 1
        else:
            raise ValueError("buffered pairs do not match their counts")
        v += k
    if n < 0 or t != len(ints) or v != len(vals):
        raise ValueError("buffered pairs do not match their counts")
    return buffer


def encode_local(fingerprint: str, ints: Sequence[int], partials: list[Any], nonce: int,
                 rows: list[list[Any]], buffer: Sequence[tuple[int, Any]] = ()) -> bytes:
    """A local-part record (module docstring) with the structure's write buffer
    ``(slot, pair)``; :class:`CodecError` if an int of ``ints`` or ``nonce`` is beyond 64
    bits, or a partial has no codec encoding."""
    fp = fingerprint.encode("utf-8")
    try:
        out = [_LOCAL_HEAD.pack(PACKED_LOCAL, PAIRS_VERSION, len(fp), len(ints), nonce), fp,
               struct.pack(f"<{len(ints)}q", *ints)]
        vals = list(partials)
        counts = _flat_rows(rows, vals)
        buffer_ints = None if counts is None else _flat_buffer(buffer, vals)
        if counts is None or buffer_ints is None:
            out += [bytes([_ROWS_GENERIC]),
                    encode_pair([partials, rows, [[k, v] for k, v in buffer]])]
        else:
            out += [bytes([_ROWS_FLAT]), _int64s(counts), _int64s(buffer_ints),
                    _U32.pack(len(partials))]
            # all floats (a max's or a min's): one array (a list's count is the quickest
            # test of many items' types)
            if list(map(type, vals)).count(float) == len(vals):
                out += [bytes([_VALUES_FLOATS]), _U32.pack(len(vals)),
                        struct.pack(f"<{len(vals)}d", *vals)]
            else:
                out += [bytes([_VALUES_GENERIC]), encode_pair(vals)]
    except struct.error as exc:
        raise CodecError(f"window pairs record: {exc}") from None
    return b"".join(out)


#: what a local part decodes to: ``(fingerprint, ints, partials, nonce, rows, buffer)``
LocalPart = tuple[str, list[int], list[Any], int, list[Any], list[tuple[int, Any]]]


def decode_local(data: bytes) -> LocalPart:
    """``(fingerprint, ints, partials, nonce, rows, buffer)`` of a local-part record.
    Every list returned is new (:meth:`KvsAmta.reopen
    <swag_core.algorithms.mta_kvs._KvsLayout.reopen>` takes the rows' lists over).
    :class:`CodecError` for corrupt bytes or another version than :data:`PAIRS_VERSION`."""
    try:
        tag, version, nfp, nints, nonce = _LOCAL_HEAD.unpack_from(data, 0)
        if tag != PACKED_LOCAL:
            raise ValueError(f"tag 0x{tag:02x}")
        if version != PAIRS_VERSION:
            raise version_error("window pairs record", version, PAIRS_VERSION, CodecError)
        at = _LOCAL_HEAD.size
        fingerprint = str(data[at:at + nfp], "utf-8")
        at += nfp
        ints = list(struct.unpack_from(f"<{nints}q", data, at))
        at += 8 * nints
        form = data[at]
        if form == _ROWS_GENERIC:
            partials, rows, buffer = _generic_local(data, at + 1)
        elif form == _ROWS_FLAT:
            partials, rows, buffer = _flat_local(data, at + 1, ints[1])
        else:
            raise ValueError(f"unknown rows form {form}")
        if type(partials) is not list or type(rows) is not list:
            raise ValueError("partials and rows are not lists")
    except (struct.error, ValueError, TypeError, IndexError, StopIteration) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"corrupt window pairs record: {exc}") from None
    return fingerprint, ints, partials, nonce, rows, buffer


def _generic_local(data: bytes, at: int) -> tuple[Any, Any, list[tuple[int, Any]]]:
    """Partials, rows and write buffer of a local part in the generic form (from ``at``)."""
    partials, rows, items = decode_pair(data[at:])
    if type(items) is not list or not all(
            type(x) is list and len(x) == 2 and type(x[0]) is int
            and type(x[1]) is tuple for x in items):
        raise ValueError("buffered pairs are not [slot, pair] items")
    return partials, rows, [(k, v) for k, v in items]


def _flat_local(data: bytes, at: int, levels: int
                ) -> tuple[list[Any], list[list[Any]], list[tuple[int, Any]]]:
    """Partials, rows and write buffer of a local part in the flat form (from ``at``)."""
    counts, at = _read_int64s(data, at)
    buffer_ints, at = _read_int64s(data, at)
    npartials, kind = struct.unpack_from("<IB", data, at)
    vals = _read_values(data, at + 5, kind)
    # the rows' values: each level's tail and head elements, then the buffer's
    end = (npartials + sum(counts[0:3 * levels:3]) + sum(counts[2:3 * levels:3]))
    buffer = _unflat_buffer(buffer_ints, vals, end)
    rows = _unflat_rows(levels, counts, vals, npartials, end)
    return vals[:npartials], rows, buffer


def _read_int64s(data: bytes, at: int) -> tuple[tuple[int, ...], int]:
    """What :func:`_int64s` wrote at ``data[at:]``, and where it ends."""
    n, = _U32.unpack_from(data, at)
    return struct.unpack_from(f"<{n}q", data, at + 4), at + 4 + 8 * n


def _read_values(data: bytes, at: int, kind: int) -> list[Any]:
    """The flat form's values at ``data[at:]`` (to the end), of form ``kind``."""
    if kind == _VALUES_FLOATS:
        n, = _U32.unpack_from(data, at)
        at += 4
        if at + 8 * n != len(data):
            raise ValueError(f"{len(data) - at - 8 * n} trailing bytes")
        return list(struct.unpack_from(f"<{n}d", data, at))
    if kind == _VALUES_GENERIC:
        vals = decode_pair(data[at:])
        if type(vals) is not list:
            raise ValueError("values are not a list")
        return vals
    raise ValueError(f"unknown values form {kind}")


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


def encode_locals(records: Sequence[tuple[int, bytes]]) -> bytes:
    """The metadata's extension holding the lanes' local parts ``(lane, record)`` (module
    docstring): appended to the metadata's JSON text."""
    out = [_LOCALS_HEAD.pack(META_LOCALS, PAIRS_VERSION, len(records))]
    for lane, record in records:
        out += [_LOCALS_ITEM.pack(lane, len(record)), record]
    return b"".join(out)


def decode_locals(data: bytes) -> dict[int, bytes]:
    """Inverse of :func:`encode_locals`: lane -> local-part record. :class:`StateError`
    for an unknown version or corrupt bytes."""
    try:
        tag, version, n = _LOCALS_HEAD.unpack_from(data, 0)
        if tag != META_LOCALS:
            raise ValueError(f"tag 0x{tag:02x}")
        if version != PAIRS_VERSION:
            raise version_error("window pairs in the metadata", version, PAIRS_VERSION)
        at = _LOCALS_HEAD.size
        out: dict[int, bytes] = {}
        for _ in range(n):
            lane, size = _LOCALS_ITEM.unpack_from(data, at)
            at += _LOCALS_ITEM.size
            out[lane] = data[at:at + size]
            at += size
            if at > len(data):
                raise ValueError("truncated")
        if at != len(data):
            raise ValueError(f"{len(data) - at} trailing bytes")
    except (struct.error, ValueError) as exc:
        if isinstance(exc, StateError):
            raise
        raise StateError(f"corrupt window pairs in the metadata: {exc}") from None
    return out


def different_calls(key: Any) -> StateError:
    """The error of a key whose window pairs and metadata were written by different calls."""
    return StateError(
        f"key {key!r}: its window pairs and its metadata were written by different calls "
        f"(a call failed between the two writes on a state without transactions; engines "
        f"discard a failed micro-batch's or bundle's writes): restore the key's state from "
        f"a checkpoint")


def encode_mark(nonce: int) -> bytes:
    """The mark (module docstring) of the call of ``nonce``."""
    return _MARK.pack(PAIRS_MARK, PAIRS_VERSION, nonce)


def decode_mark(data: bytes) -> int:
    """Inverse of :func:`encode_mark`: the nonce; :class:`CodecError` for corrupt bytes or
    an unknown version."""
    try:
        tag, version, nonce = _MARK.unpack(data)
    except struct.error:
        raise CodecError(f"corrupt window pairs mark: {len(data)} bytes") from None
    if tag != PAIRS_MARK:
        raise CodecError(f"corrupt window pairs mark: tag 0x{tag:02x}")
    if version != PAIRS_VERSION:
        raise version_error("window pairs mark", version, PAIRS_VERSION, CodecError)
    return int(nonce)


def is_page(key: int) -> bool:
    """Whether map key ``key`` holds a page of pairs: ``PAGE_BIT`` is set in it, and in a
    lane's local slot (``LOCAL``, its mark) too."""
    return bool(key & PAGE_BIT) and key & ((1 << LANE_SHIFT) - 1) != LOCAL


def encode_page(pairs: dict[int, bytes]) -> bytes:
    """A page (module docstring) of encoded ``pairs``: index in the page ->
    :func:`encode_pair` bytes."""
    out = [_PAGE_HEAD.pack(PAIRS_PAGE, PAIRS_VERSION, len(pairs))]
    for i in sorted(pairs):
        data = pairs[i]
        out += [_PAGE_ITEM.pack(i, len(data)), data]
    return b"".join(out)


def decode_page(data: bytes) -> dict[int, bytes]:
    """Inverse of :func:`encode_page` (the pairs stay encoded: a read decodes the ones it
    needs); :class:`CodecError` for corrupt bytes or an unknown version."""
    try:
        tag, version, n = _PAGE_HEAD.unpack_from(data, 0)
        if tag != PAIRS_PAGE:
            raise ValueError(f"tag 0x{tag:02x}")
        if version != PAIRS_VERSION:
            raise version_error("window pairs page", version, PAIRS_VERSION, CodecError)
        at = _PAGE_HEAD.size
        pairs: dict[int, bytes] = {}
        for _ in range(n):
            i, size = _PAGE_ITEM.unpack_from(data, at)
            at += _PAGE_ITEM.size
            if i > _PAGE_MASK or at + size > len(data):
                raise ValueError(f"pair {i} of {size} bytes does not fit the page")
            pairs[i] = data[at:at + size]
            at += size
        if at != len(data):
            raise ValueError(f"{len(data) - at} trailing bytes")
    except (struct.error, ValueError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"corrupt window pairs page: {exc}") from None
    return pairs


class LanePairs:
    """One lane's :class:`~swag_core.algorithms.mta_kvs.PairStore` over a key's
    :class:`PairMap` (see the module docstring): encodes, prefixes with the lane, and holds
    the writes of the current call until :meth:`apply`.

    The local part lives in the key's metadata; the map's local slot holds the *mark* of the
    last call that wrote pairs (its nonce, also in the local part: :attr:`written`). A
    reopened lane checks the mark on its first map access (with its first read, no extra
    call; before its first write, one read), so the pairs of a call that failed before its
    metadata write are never used nor overwritten unnoticed.

    The pairs are in pages of up to ``2 ** PAGE_SHIFT``: a read fetches the pages of the
    pairs it needs, a call's writes rewrite the pages they touch (read first, in one map call
    with the call's other page reads). An engine's map call is a round trip to its state
    (PySpark 4.3 has no batched map calls): a window that slides by m entries then costs
    O(m / 64) calls, not O(m). The pages read stay until :meth:`apply`, so a call reads each
    at most once."""

    __slots__ = ("_next", "_pages", "check", "key", "lane", "map", "pending", "written")

    def __init__(self, pair_map: PairMap, lane: int, key: Any) -> None:
        self.map = pair_map
        self.lane = lane << LANE_SHIFT
        self.key = key  # for error messages
        self.pending: dict[int, Any] = {}   # slot -> value, or _DELETED
        #: nonce of the last call that wrote this lane's pairs (0: none yet)
        self.written = 0
        #: the mark the map must hold, checked on the first map access (``None``: checked)
        self.check: int | None = None
        #: page number -> the page as the map holds it (read in the current call)
        self._pages: dict[int, dict[int, bytes]] = {}
        self._next = 0

    def _verify(self, data: bytes | None) -> None:
        """Compare the map's local slot with :attr:`check` (see the class docstring)."""
        expected, self.check = self.check, None
        try:
            found = 0 if data is None else decode_mark(data)
        except CodecError as exc:
            raise StateError(f"key {self.key!r}: {exc}") from None
        if found != expected:
            raise different_calls(self.key)

    def _read(self, keys: list[int]) -> list[bytes | None]:
        """The map's values at ``keys`` (lane included), with the mark while unchecked."""
        if self.check is None:
            return self.map.get_many(keys)
        values = self.map.get_many([*keys, self.lane | LOCAL])
        self._verify(values.pop())
        return values

    def _load_pages(self, pages: set[int]) -> dict[int, dict[int, bytes]]:
        """The pages held for this call, after reading those of ``pages`` not held yet."""
        held = self._pages
        want = [p for p in pages if p not in held]
        if want:
            base = self.lane | PAGE_BIT
            for p, data in zip(want, self._read([base | p for p in want])):
                try:
                    held[p] = {} if data is None else decode_page(data)
                except CodecError as exc:
                    raise StateError(f"key {self.key!r}: corrupt window pairs page in "
                                     f"state: {exc}") from None
        return held

    def get_many(self, slots: Sequence[int]) -> list[Any]:
        pending = self.pending
        out: list[Any] = [pending.get(s) for s in slots]
        missing = [s for s, v in zip(slots, out) if v is None]
        if missing:
            pages = self._load_pages({s >> PAGE_SHIFT for s in missing})
            got = iter([pages[s >> PAGE_SHIFT].get(s & _PAGE_MASK) for s in missing])
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
               nonce: int, tails: list[list[Any]], buffer: Sequence[tuple[int, Any]] = ()
               ) -> tuple[list[int], list[tuple[int, bytes]], bytes]:
        """The map writes of the call's pairs (with the mark of ``nonce``, the call's, if
        there are any) and the structure's local part for the metadata
        (:func:`encode_local`, stamped with the mark): ``(keys to delete, (key, bytes)
        to put, local part)``; writes nothing (an encoding error leaves the map as it
        was). It reads the pages the writes touch that the call has not read."""
        if self.pending:
            gone, puts = self._page_writes()
            puts.append((self.lane | LOCAL, encode_mark(nonce)))
            self._next = nonce
        else:
            puts, gone = [], []
            self._next = self.written
        return gone, puts, encode_local(fingerprint, ints, partials, self._next, tails,
                                        buffer)

    def _page_writes(self) -> tuple[list[int], list[tuple[int, bytes]]]:
        """The pending writes as page writes: ``(pages to delete, (page, bytes) to put)``."""
        touched: dict[int, dict[int, bytes]] = {}
        held = self._load_pages({s >> PAGE_SHIFT for s in self.pending})
        for s, v in self.pending.items():
            p = s >> PAGE_SHIFT
            page = touched.get(p)
            if page is None:
                page = touched[p] = dict(held[p])
            if v is _DELETED:
                page.pop(s & _PAGE_MASK, None)
            else:
                page[s & _PAGE_MASK] = encode_pair(v)
        base = self.lane | PAGE_BIT
        puts = [(base | p, encode_page(page)) for p, page in touched.items()
                if page and page != held[p]]
        gone = [base | p for p, page in touched.items() if not page and held[p]]
        return gone, puts

    def apply(self, gone: list[int], puts: list[tuple[int, bytes]]) -> None:
        """Write what :meth:`encode` returned (the puts with the mark first, then the
        deletes: a failure in between leaves a mark the metadata does not name) and forget
        the call's pairs and pages."""
        if puts:
            if self.check is not None:
                self._verify(self.map.get_many([self.lane | LOCAL])[0])
            self.map.put_many(puts)
            if gone:
                self.map.delete_many(gone)
        self.written = self._next
        self.pending.clear()
        self._pages.clear()

    def reopened(self, data: bytes
                 ) -> tuple[str, list[int], list[Any], list[Any], list[tuple[int, Any]]]:
        """A local part (from the metadata): ``(fingerprint, ints, partials, tails,
        buffer)``; the lane then checks its map's mark on first access (class docstring).
        :class:`StateError` naming the key for a corrupt record or an unknown version."""
        try:
            fingerprint, ints, partials, nonce, tails, buffer = decode_local(data)
        except CodecError as exc:
            raise StateError(f"key {self.key!r}: {exc}") from None
        self.written = self.check = nonce
        return fingerprint, ints, partials, tails, buffer


__all__ = [
    "LANE_SHIFT",
    "LOCAL",
    "META_LOCALS",
    "PACKED_LOCAL",
    "PACKED_PAIR",
    "PAGE_BIT",
    "PAGE_SHIFT",
    "PAIRS_MARK",
    "PAIRS_PAGE",
    "PAIRS_VERSION",
    "LanePairs",
    "LocalPart",
    "MemoryPairMap",
    "PairMap",
    "decode_local",
    "decode_locals",
    "decode_mark",
    "decode_page",
    "decode_pair",
    "different_calls",
    "encode_local",
    "encode_locals",
    "encode_mark",
    "encode_page",
    "encode_pair",
    "is_page",
]
