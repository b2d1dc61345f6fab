"""The pair map's packed format, versions 2 and 3 (``adapters/state/pairs.py``): exact round
trips of the values the KVS layout stores, the JSON form for the rest, versions 1 and 2
still read (and continued in version 3: the local parts in the metadata), and errors (not
garbage) for corrupt or unknown bytes."""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import StateError, WindowDriver
from adapters.errors import CodecError
from adapters.state.backend import MemoryKeyState
from adapters.state.codec import decode_value, encode_value
from adapters.state.pairs import (
    LOCAL,
    PACKED_LOCAL,
    PACKED_PAIR,
    PAIRS_MARK,
    LanePairs,
    MemoryPairMap,
    decode_local,
    decode_locals,
    decode_pair,
    encode_local,
    encode_locals,
    encode_pair,
)
from tests.golden import samples

_scalars = (st.floats(allow_nan=True, allow_infinity=True) | st.integers()
            | st.integers(-2**70, 2**70) | st.integers(-2**3000, 2**3000) | st.booleans()
            | st.none() | st.text(max_size=8))
_values = st.recursive(_scalars, lambda inner: st.tuples(inner, inner) | st.tuples(inner)
                       | st.lists(inner, max_size=4), max_leaves=24)


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types throughout (NaN equal to NaN, -0.0 not to 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


@given(_values)
def test_packed_round_trip_is_exact(value: Any) -> None:
    data = encode_pair(value)
    assert data[0] == PACKED_PAIR
    assert _same(decode_pair(data), value)


@pytest.mark.parametrize("value", [({"v": 1.0}, 2), (b"x",), [{1: 2}], (1.5, {"a": [1]})])
def test_other_values_take_the_json_form(value: Any) -> None:
    data = encode_pair(value)
    assert data == encode_value(value)
    assert decode_pair(data) == value


def test_common_pairs_are_small_and_version_1_pairs_still_decode() -> None:
    level0 = ((7, 2.5), (8, 1.0))
    data = encode_pair(level0)
    assert data[3:3 + 10] == b"((qd)(qd))" and len(data) == 3 + 10 + 32
    assert decode_pair(encode_value(level0)) == level0      # a version-1 pair
    assert decode_pair(encode_value((math.inf, -0.0))) == (math.inf, -0.0)


@pytest.mark.parametrize("data", [
    bytes([PACKED_PAIR, 4, 0]) + b"(dd)" + bytes(8),          # one float missing
    bytes([PACKED_PAIR, 4, 0]) + b"(dd)" + bytes(17),         # one byte too many
    bytes([PACKED_PAIR, 3, 0]) + b"(dd" + bytes(16),          # unbalanced
    bytes([PACKED_PAIR, 4, 0]) + b"(d])" + bytes(8),          # mismatched
    bytes([PACKED_PAIR, 3, 0]) + b"(x)",                      # unknown code
    bytes([PACKED_PAIR, 3, 0]) + b"(z)",                      # length missing
    bytes([PACKED_PAIR, 9, 0]) + b"(d)",                      # shape truncated
    bytes([PACKED_PAIR, 2, 0]) + b"dd" + bytes(16),           # two values, no sequence
])
def test_corrupt_packed_pairs_raise(data: bytes) -> None:
    with pytest.raises(CodecError):
        decode_pair(data)


def test_local_record_round_trip_and_versions() -> None:
    tails = [[(1, 2.0), (2, None), (3, 1.5)], [4.0, 5.0]]
    data = encode_local("KvsAmta:max:x", [1, 2, 3, -2**63], [4.0, (1, 2)], 2**62 - 1, tails)
    assert data[0] == PACKED_LOCAL
    assert decode_local(data) == (3, "KvsAmta:max:x", [1, 2, 3, -2**63], [4.0, (1, 2)],
                                  2**62 - 1, tails, [])
    with pytest.raises(CodecError):
        encode_local("f", [2**63], [], 0, [])
    pm = MemoryPairMap()
    pairs = LanePairs(pm, 0, "k")
    # version 3: the local parts are in the metadata (encode_locals), read back as written
    ext = encode_locals([(0, data), (3, b"\x11x")])
    assert decode_locals(ext) == {0: data, 3: b"\x11x"}
    assert pairs.reopened(data) == ("KvsAmta:max:x", [1, 2, 3, -2**63], [4.0, (1, 2)], tails,
                                    [])
    assert pairs.check == pairs.written == 2**62 - 1
    with pytest.raises(StateError, match=r"window pairs: version 4 is unknown.*\[1, 2, 3\]"):
        decode_locals(ext[:1] + bytes([4]) + ext[2:])
    with pytest.raises(StateError, match="corrupt window pairs in the metadata"):
        decode_locals(ext[:-1])
    with pytest.raises(StateError, match=r"window pairs: version 4 is unknown.*\[1, 2, 3\]"):
        pairs.reopened(data[:1] + bytes([4]) + data[2:])
    pm.put_many([(LOCAL, data[:1] + bytes([4]) + data[2:])])   # version 4 in the map
    with pytest.raises(StateError, match=r"window pairs: version 4 is unknown.*\[1, 2, 3\]"):
        pairs.read_local()
    pm.put_many([(LOCAL, bytes([PAIRS_MARK, 3]) + bytes(8))])   # a mark, metadata without
    with pytest.raises(StateError, match="different calls"):
        pairs.read_local()
    from tests.adapters.test_golden_formats import KVS
    v2 = bytes.fromhex(KVS["over_max_amta_v2"]["pairs"][str(LOCAL)])
    pm.put_many([(LOCAL, v2)])                                  # version 2 in the map
    got = pairs.read_local()
    assert got is not None and got[0].startswith("KvsAmta:") and got[4] is not None
    pm.put_many([(LOCAL, data[:-3])])                           # truncated
    with pytest.raises(StateError, match="key 'k'"):
        pairs.read_local()
    pm.put_many([(LOCAL, encode_value([1, "f", [0, 1, 0, 0, 0], [], 5]))])
    assert pairs.read_local() == ("f", [0, 1, 0, 0, 0], [], 5, None)   # version 1
    pm.put_many([(LOCAL, encode_value([4, "f", [], [], 5]))])
    with pytest.raises(StateError, match=r"version 4 is unknown"):
        pairs.read_local()


def _restored(name: str) -> MemoryKeyState:
    from tests.adapters.test_golden_formats import KVS, _kvs_state
    return _kvs_state(KVS[name])


@pytest.mark.parametrize("name", ["over_max_amta", "over_collect_log_mta",
                                  "over_max_amta_v2", "over_collect_log_mta_v2",
                                  "over_sum_mean_v2"])
def test_an_older_key_goes_on_and_is_rewritten_in_version_3(name: str) -> None:
    """A key restored from version-1 state (tails as pairs, JSON) or version-2 state (the
    local part in the map), as earlier code wrote it, and its twin that this code wrote (the
    same calls) emit the same rows on further calls; the old key's next save moves the local
    part into the metadata and leaves a mark in the map's local slot, packed pairs, and a
    restart from that reads on alike."""
    from tests.golden.make_golden import _run_calls

    spec = samples.KVS_CHECKPOINTS[name]
    query = spec["query"]
    old, new = _restored(name), _run_calls(spec)
    assert b"\x13" not in (old.get_meta() or b"") and b"\x13" in (new.get_meta() or b"")
    more = [[(40 + t, {"v": (t * 5) % 13}) for t in range(c, c + 7)] for c in range(0, 28, 7)]
    for i, events in enumerate(more):
        got = []
        for state in (old, new):
            # a new driver per call: every call reopens from the state
            got.append(WindowDriver(query).process("k", events, state,
                                                    watermark=40 + 7 * i).rows)
        assert got[0] == got[1] and got[0]
    for state in (old, new):
        assert state.pair_map().data[LOCAL][0] == PAIRS_MARK
        assert b"\x13" in (state.get_meta() or b"")
    assert all(decode_pair(v)[0] is not None for k, v in old.pair_map().data.items()
               if k != LOCAL)
    end = [WindowDriver(query).advance_watermark("k", "end", s).rows for s in (old, new)]
    assert end[0] == end[1] and end[0]


def test_decode_value_does_not_read_packed_pairs() -> None:
    """A swag that knows only version 1 stops with its unknown-form error, no garbage."""
    with pytest.raises(CodecError, match="form tag 0x10"):
        decode_value(encode_pair((1.0, 2.0)))


_partial = st.floats(allow_nan=False) | st.tuples(st.integers(0, 99), st.floats(allow_nan=False))


@st.composite
def _rows(draw: Any) -> list[list[Any]]:
    """Per level ``[tail, lo, head]`` as :meth:`local_state` gives them (level 0:
    ``(time, partial)`` elements, sometimes ``None``, a dead position of a version-1 map)."""
    h = draw(st.integers(1, 5))
    rows = []
    for level in range(h):
        element = (st.tuples(st.integers(-2**63, 2**63 - 1), _partial) | st.none()
                   if level == 0 else _partial)
        tail = draw(st.lists(element, max_size=4))
        head = draw(st.lists(element, max_size=4))
        rows.append([tail, draw(st.integers(0, 2**40)), head])
    return rows


@st.composite
def _buffer(draw: Any) -> list[tuple[int, Any]]:
    """A write buffer as :meth:`park` gives it: ``(slot, pair)``, a pair of one or two
    elements, level 0's ``(time, partial)`` (sometimes ``None``: not flat)."""
    items = []
    for _ in range(draw(st.integers(0, 6))):
        level = draw(st.sampled_from([0, 0, 1, 5]))
        element = (st.tuples(st.integers(-2**63, 2**63 - 1), _partial) | st.none()
                   if level == 0 else _partial)
        pair = tuple(draw(st.lists(element, min_size=1, max_size=2)))
        items.append(((level << 48) | draw(st.integers(0, 2**40)), pair))
    return items


@given(_rows(), st.lists(_partial, max_size=5), st.lists(st.integers(-2**63, 2**63 - 1),
                                                          max_size=6), _buffer())
def test_local_record_round_trip(rows: list[list[Any]], partials: list[Any],
                                 extra: list[int], buffer: list[tuple[int, Any]]) -> None:
    """Any rows (flat or not), partials (all floats or not), ints and write buffer come
    back as given."""
    ints = [0, len(rows), *extra]
    data = encode_local("fp", ints, partials, 7, rows, buffer)
    assert _same(list(decode_local(data)), [3, "fp", ints, partials, 7, rows, buffer])
