"""The state codec: exact round trips of every supported type (single values and multi-event
log entries), strict JSON or packed binary on the wire, no pickle, one codec version."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import CODEC_VERSION, CodecError, decode_value, encode_value
from adapters.errors import StateError
from adapters.state.codec import (
    Columns,
    decode_entry,
    decode_entry_columns,
    decode_meta,
    encode_entry,
    encode_meta,
)
from adapters.state.segments import decode_segment, encode_segment, segment_range

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2**80, 2**80),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.binary(max_size=8))
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5),
                      st.binary(max_size=4))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=5), inner, max_size=4),
    st.dictionaries(hashables, inner, max_size=4),
), max_leaves=20)


def identical(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (list(a) == list(b) and all(type(k) is type(j) for k, j in zip(a, b))
                and all(identical(a[k], b[k]) for k in a))
    return bool(a == b)


def _no_constants(name: str) -> Any:
    raise AssertionError(f"non-standard JSON constant {name}")


PACKED = (1, 2)  # first bytes of the packed forms; everything else is strict JSON


@settings(max_examples=300)
@given(values)
def test_round_trip(value: Any) -> None:
    data = encode_value(value)
    if data[0] not in PACKED:
        json.loads(data, parse_constant=_no_constants)  # strict JSON: no NaN/Infinity literals
    assert identical(decode_value(data), value)


flat_records = st.dictionaries(
    st.text(max_size=4),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70),
              st.booleans(), st.none(), st.text(max_size=3)),
    min_size=1, max_size=4)


@settings(max_examples=300)
@given(flat_records)
def test_flat_records_with_floats_are_packed(value: dict[str, Any]) -> None:
    data = encode_value(value)
    assert (data[0] == 1) == any(type(v) is float for v in value.values())
    assert identical(decode_value(data), value)


def test_documented_tags() -> None:
    assert encode_value({"v": 1, "n": None}) == b'{"v":1,"n":null}'
    assert encode_value((1, math.inf)) == b'{"$t":[1,{"$f":"inf"}]}'
    assert encode_value(b"\x00\x01") == b'{"$b":"AAE="}'
    assert encode_value({1: "a"}) == b'{"$d":[[1,"a"]]}'
    assert encode_value({"$t": 1}) == b'{"$d":[["$t",1]]}'
    assert encode_value("é") == '"é"'.encode()
    # packed: 0x01 | u16 header length | ["<fmt>", keys...] | float64 LE ... | JSON of the rest
    header = b'["dj","v","n"]'
    assert encode_value({"v": 1.5, "n": None}) == (
        b"\x01" + len(header).to_bytes(2, "little") + header + struct.pack("<d", 1.5)
        + b"[null]")
    assert encode_value(-0.0) == b"\x02" + struct.pack("<d", -0.0)


def test_the_json_form_reads_any_json_value() -> None:
    assert decode_value(b'{"v":1.5,"n":null}') == {"v": 1.5, "n": None}
    assert math.isnan(decode_value(b'{"v":{"$f":"nan"}}')["v"])
    assert decode_value(b"2.5") == 2.5


# multi-event log entries: segments
segment_values = st.one_of(
    st.lists(values, min_size=1, max_size=6),
    st.lists(st.floats(allow_nan=False), min_size=1, max_size=6),
    st.integers(1, 6).flatmap(lambda n: st.lists(flat_records, min_size=n, max_size=n)),
    st.integers(1, 6).flatmap(  # same keys, mixed value types
        lambda n: st.lists(st.fixed_dictionaries({
            "a": st.floats(), "b": st.one_of(st.integers(), st.none(), st.text(max_size=2)),
            "$c": st.floats(allow_nan=False)}), min_size=n, max_size=n)),
)
times = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-2**70, 2**70))


@settings(max_examples=300)
@given(segment_values, st.data())
def test_entry_round_trip(batch: list[Any], data: Any) -> None:
    ts = data.draw(st.lists(times, min_size=len(batch), max_size=len(batch)))
    seq = data.draw(st.integers(0, 2**40))
    encoded = encode_entry(ts, batch)
    assert encoded == encode_entry(ts, batch, Columns(batch))  # shared columns, same bytes
    got = decode_entry(max(ts), seq, encoded)
    assert [(t, s) for t, s, _ in got] == [(t, seq + i) for i, t in enumerate(ts)]
    assert all(identical(v, w) for (_, _, v), w in zip(got, batch))
    if len(batch) == 1:
        assert encoded == encode_value(batch[0])
    # column-wise (the batch runtime's rebuild): the same times and values, or None where
    # the values are not flat records of one key set
    columns = decode_entry_columns(max(ts), encoded)
    records = all(type(v) is dict and v and all(type(k) is str for k in v) for v in batch) and \
        len({tuple(v) for v in batch}) == 1
    if len(batch) > 1 and records and columns is None:
        assert encoded[:1] == b"\x03"  # a JSON-body segment (values not packable)
    elif columns is not None:
        got_times, cols = columns
        assert list(got_times) == ts
        rows = [dict(zip(cols, row)) for row in zip(*cols.values())]
        assert all(identical(v, w) for v, w in zip(rows, batch)) and len(rows) == len(batch)
    else:
        assert not records


def test_segment_layout() -> None:
    data = encode_entry([5, 3], [{"v": 1.5}, {"v": 2.5}])
    header = b'["d","v"]'
    assert data == (b"\x03" + struct.pack("<I", 2) + b"\x00" + struct.pack("<2q", 5, 3)
                    + b"\x01" + len(header).to_bytes(2, "little") + header
                    + struct.pack("<2d", 1.5, 2.5))
    assert decode_entry(5, 7, data) == [(5, 7, {"v": 1.5}), (3, 8, {"v": 2.5})]
    # an entry of one event: its value's encoding
    assert decode_entry(4, 2, b'{"v":1}') == [(4, 2, {"v": 1})]


def test_unstorable_value_in_a_segment() -> None:
    with pytest.raises(CodecError, match="set"):
        encode_entry([1, 2], [{"v": 1.0}, {"v": {1, 2}}])


@pytest.mark.parametrize("data", [
    b"\x03", b"\x03\x02\x00\x00\x00\x00", b"\x03\x02\x00\x00\x00\x07",
    b"\x03\x01\x00\x00\x00\x00" + struct.pack("<q", 1) + b"\x02",
    b"\x03\x01\x00\x00\x00\x00" + struct.pack("<q", 1) + b"\x09",
    b"\x03\x02\x00\x00\x00\x00" + struct.pack("<2q", 1, 2) + b"\x00[1]",
    b"\x03\x01\x00\x00\x00\x00" + struct.pack("<q", 1) + b"\x01\x05\x00[\"d\"]",
    b"\x01\x03\x00[1]", b"\x02\x00",
    # trailing bytes after a float body / after float-only record columns
    encode_entry([1, 2], [1.5, 2.5]) + b"\x00",
    encode_entry([1, 2], [{"v": 1.5}, {"v": 2.5}]) + b"\x00",
])
def test_corrupt_entries_raise_codec_error(data: bytes) -> None:
    with pytest.raises(CodecError):
        decode_entry(1, 1, data)
    with pytest.raises(CodecError):
        decode_entry_columns(1, data)


def test_numpy_scalars_become_python_scalars() -> None:
    np = pytest.importorskip("numpy")
    assert decode_value(encode_value({"a": np.int64(3), "b": np.float64(0.5),
                                      "c": np.bool_(True)})) == {"a": 3, "b": 0.5, "c": True}


def test_unsupported_types_and_corrupt_bytes() -> None:
    with pytest.raises(CodecError, match="set"):
        encode_value({1, 2})
    with pytest.raises(CodecError):
        decode_value(b"{not json")
    with pytest.raises(CodecError, match="tagged"):
        decode_value(b'{"$f":"huge"}')


def test_meta() -> None:
    meta = {"codec": CODEC_VERSION, "q": "ab", "n": 7, "wm": None, "seq": 3, "rel": 0,
            "late": 0, "pol": []}
    assert decode_meta(encode_meta(meta)) == meta
    for version in (1, 3, 99):  # the one version only
        with pytest.raises(StateError, match=f"codec version {version} is unknown.*codec "
                                             f"version {CODEC_VERSION} only"):
            decode_meta(encode_meta({**meta, "codec": version}))
    with pytest.raises(StateError, match="corrupt"):
        decode_meta(b"\xff")


def test_spark_segments_round_trip_and_reject_garbage() -> None:
    entries = [(5, 1, b'{"a":1}'), (-3, 2, b""), (2**40, 3, "é".encode())]
    blob = encode_segment(entries)
    assert decode_segment(blob) == entries
    assert segment_range(blob) == (-3, 2**40)
    with pytest.raises(StateError, match="not a swag event-log segment"):
        decode_segment(b"PICKLE" + blob[6:])
    with pytest.raises(StateError, match="corrupt"):
        decode_segment(blob + b"x")
    with pytest.raises(StateError, match="corrupt"):
        decode_segment(blob[:-1])
    with pytest.raises(StateError, match="corrupt"):
        decode_segment(blob[:30])  # inside the first entry's head
    with pytest.raises(StateError, match="shorter than its 25-byte header"):
        segment_range(blob[:10])


@pytest.mark.parametrize("tag", [0, 4, 8, 0x0b, 0x1f])
def test_reserved_form_tags_are_refused_by_name(tag: int) -> None:
    with pytest.raises(CodecError, match=f"event value starts with form tag 0x{tag:02x}"):
        decode_value(bytes([tag]) + b"[1]")
    with pytest.raises(CodecError, match=f"event-log entry starts with form tag 0x{tag:02x}"):
        decode_entry(0, 0, bytes([tag]) + b"[1]")
    assert decode_value(b"\n[1]") == [1]  # JSON whitespace is still JSON


@pytest.mark.parametrize(("field", "bad"), [("q", None), ("wm", "start"), ("wm", 1.5),
                                            ("seq", -1), ("rel", "2"), ("late", None),
                                            ("pol", [1, -2]), ("pol", None)])
def test_corrupt_metadata_fields_are_named(field: str, bad: Any) -> None:
    meta = {"codec": CODEC_VERSION, "q": "ab", "n": 1, "wm": None, "seq": 0, "rel": 0,
            "late": 0, "pol": []}
    assert decode_meta(encode_meta(meta)) == meta
    with pytest.raises(StateError, match=f"field '{field}' is"):
        decode_meta(encode_meta({**meta, field: bad}))
