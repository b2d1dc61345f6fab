"""The pair map's format, version 4, the only one (``adapters/state/pairs.py``): exact round
trips of the values the KVS layout stores, the JSON form for the rest, pages, the local parts
in the metadata and the mark in the map, and errors (not garbage) for corrupt bytes or any
other version."""

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
    META_LOCALS,
    PACKED_LOCAL,
    PACKED_PAIR,
    PAIRS_MARK,
    PAIRS_PAGE,
    PAIRS_VERSION,
    LanePairs,
    MemoryPairMap,
    decode_local,
    decode_locals,
    decode_mark,
    decode_page,
    decode_pair,
    encode_local,
    encode_locals,
    encode_mark,
    encode_page,
    encode_pair,
    is_page,
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


def test_common_pairs_are_small_and_the_json_form_decodes() -> None:
    level0 = ((7, 2.5), (8, 1.0))
    data = encode_pair(level0)
    assert data[3:3 + 10] == b"((qd)(qd))" and len(data) == 3 + 10 + 32
    assert decode_pair(encode_value(level0)) == level0
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
    assert data[:2] == bytes([PACKED_LOCAL, PAIRS_VERSION])
    assert decode_local(data) == ("KvsAmta:max:x", [1, 2, 3, -2**63], [4.0, (1, 2)],
                                  2**62 - 1, tails, [])
    with pytest.raises(CodecError):
        encode_local("f", [2**63], [], 0, [])
    pairs = LanePairs(MemoryPairMap(), 0, "k")
    # the local parts are in the metadata (encode_locals), read back as written
    ext = encode_locals([(0, data), (3, b"\x11x")])
    assert ext[:2] == bytes([META_LOCALS, PAIRS_VERSION])
    assert decode_locals(ext) == {0: data, 3: b"\x11x"}
    assert pairs.reopened(data) == ("KvsAmta:max:x", [1, 2, 3, -2**63], [4.0, (1, 2)], tails,
                                    [])
    assert pairs.check == pairs.written == 2**62 - 1
    for version in (1, 2, 3, 5):
        with pytest.raises(StateError, match=rf"window pairs in the metadata: version "
                                             rf"{version} is unknown.*version 4 only"):
            decode_locals(ext[:1] + bytes([version]) + ext[2:])
        with pytest.raises(StateError, match=rf"key 'k': window pairs record: version "
                                             rf"{version} is unknown.*version 4 only"):
            pairs.reopened(data[:1] + bytes([version]) + data[2:])
    with pytest.raises(StateError, match="corrupt window pairs in the metadata"):
        decode_locals(ext[:-1])
    with pytest.raises(StateError, match="key 'k': corrupt"):
        pairs.reopened(data[:-3])


def test_the_mark_is_checked_on_the_first_map_access() -> None:
    """A reopened lane reads its mark with its first read: the nonce its local part names,
    else the key is refused (another call's pairs, or an unknown version of the mark)."""
    data = encode_local("f", [0, 1, 0, 0, 0], [], 5, [[[], 0, []]])
    for mark, error in [(encode_mark(5), None), (encode_mark(6), "different calls"),
                        (None, "different calls"),
                        (encode_mark(5)[:1] + bytes([3]) + encode_mark(5)[2:],
                         r"key 'k': window pairs mark: version 3 is unknown.*4 only")]:
        pm = MemoryPairMap()
        if mark is not None:
            pm.put_many([(LOCAL, mark)])
        pairs = LanePairs(pm, 0, "k")
        pairs.reopened(data)
        if error is None:
            assert pairs.get_many([1]) == [None] and pairs.check is None
        else:
            with pytest.raises(StateError, match=error):
                pairs.get_many([1])
    assert decode_mark(encode_mark(2**62)) == 2**62


def _restored(name: str) -> MemoryKeyState:
    from tests.adapters.test_golden_formats import KVS, _kvs_state
    return _kvs_state(KVS[name])


@pytest.mark.parametrize("name", sorted(samples.KVS_CHECKPOINTS))
def test_a_restored_key_goes_on_as_its_twin(name: str) -> None:
    """A key restored from the committed state and its twin that this code writes (the same
    calls) emit the same rows on further calls, each through cache misses and a cached
    driver; both keep their pairs in pages, and their marks and local parts in version 4."""
    from tests.golden.make_golden import _run_calls

    spec = samples.KVS_CHECKPOINTS[name]
    query = spec["query"]
    old, new = _restored(name), _run_calls(spec)
    cached = {id(s): WindowDriver(query) for s in (old, new)}
    start = max(t for call in spec["calls"] for t, _ in call["events"]) + 1
    rows = 0
    for i, c in enumerate(range(start, start + 300, 50)):
        events = [(t, {"v": (t * 13) % 97}) for t in range(c, c + 50)]
        got = [(WindowDriver(query) if i % 3 == 0 else cached[id(s)]).process(
            "k", events, s, watermark=c - 5).rows for s in (old, new)]
        assert got[0] == got[1]
        rows += len(got[0])
    assert rows > 200
    for state in (old, new):
        data = state.pair_map().data
        assert data[LOCAL][:2] == bytes([PAIRS_MARK, PAIRS_VERSION])
        assert all(is_page(k) for k in data if k != LOCAL)
        assert (state.get_meta() or b"").count(bytes([META_LOCALS, PAIRS_VERSION])) == 1
    end = [WindowDriver(query).advance_watermark("k", "end", s).rows for s in (old, new)]
    assert end[0] == end[1] and end[0]


class CountingPairMap(MemoryPairMap):
    """Counts the keys each call reads, writes or deletes (an engine's round trips)."""

    items = 0

    def get_many(self, keys: Any) -> list[bytes | None]:
        self.items += len(keys)
        return super().get_many(keys)

    def put_many(self, items: Any) -> None:
        self.items += len(items)
        super().put_many(items)

    def delete_many(self, keys: Any) -> None:
        self.items += len(keys)
        super().delete_many(keys)


class CountingState(MemoryKeyState):
    def __init__(self) -> None:
        super().__init__()
        self._pairs = CountingPairMap()


def test_pages_cut_the_map_keys_a_sliding_window_touches() -> None:
    """A window of 5,000 entries sliding by 200 per call, through cache misses: the map
    keys read, written and deleted per slid entry stay below 0.3 (0.22; with one pair per
    map key it was 3.5: each retired pair written, read back at the head and deleted)."""
    query = {"windows": [{"kind": "over", "range": 4999}],
             "aggregations": {"m": {"fn": "max", "field": "v"}}, "layout": "kvs"}
    state = CountingState()
    assert isinstance(state.pair_map(), CountingPairMap)
    WindowDriver(query).process("k", [(t, {"v": (t * 7) % 1009}) for t in range(5000)],
                                state)
    before, rows = state.pair_map().items, 0
    for c in range(5000, 15000, 200):
        rows += len(WindowDriver(query).process(
            "k", [(t, {"v": (t * 7) % 1009}) for t in range(c, c + 200)], state,
            watermark=c - 1).rows)
    assert rows > 10000
    assert 0 < (state.pair_map().items - before) / 10000 < 0.3


def test_decode_value_does_not_read_packed_pairs() -> None:
    """The value codec stops at a packed pair with its unknown-form error, no garbage."""
    with pytest.raises(CodecError, match="form tag 0x10"):
        decode_value(encode_pair((1.0, 2.0)))


_partial = st.floats(allow_nan=False) | st.tuples(st.integers(0, 99), st.floats(allow_nan=False))


@st.composite
def _rows(draw: Any) -> list[list[Any]]:
    """Per level ``[tail, lo, head]`` as :meth:`local_state` gives them (level 0:
    ``(time, partial)`` elements, sometimes ``None``: not flat)."""
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
    assert _same(list(decode_local(data)), ["fp", ints, partials, 7, rows, buffer])


@given(st.dictionaries(st.integers(0, 63), st.binary(max_size=40), max_size=64))
def test_page_round_trip(pairs: dict[int, bytes]) -> None:
    data = encode_page(pairs)
    assert data[0] == PAIRS_PAGE and data[1] == PAIRS_VERSION
    assert decode_page(data) == pairs


def test_page_keys_are_told_from_the_local_slot() -> None:
    """``LOCAL`` has ``PAGE_BIT`` set too: a map scan must tell them apart with is_page."""
    from adapters.state.pairs import LANE_SHIFT, PAGE_BIT
    for lane in (0, 3):
        base = lane << LANE_SHIFT
        assert is_page(base | PAGE_BIT | 5) and not is_page(base | LOCAL)
        assert not is_page(base | (2 << 48) | 7)


@pytest.mark.parametrize("data,match", [
    (b"", "corrupt window pairs page"),
    (bytes([PAIRS_MARK, 4, 0, 0]), "tag 0x12"),
    (bytes([PAIRS_PAGE, 5, 0, 0]), r"^window pairs page: version 5 is unknown.*4 only"),
    (encode_page({1: b"abc"})[:-1], "does not fit"),
    (encode_page({1: b"abc"}) + b"x", "1 trailing bytes"),
    (bytes([PAIRS_PAGE, 4, 1, 0, 64, 0, 0, 0, 0]), "pair 64"),
])
def test_corrupt_pages_raise(data: bytes, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        decode_page(data)
