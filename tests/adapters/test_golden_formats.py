"""Golden state samples: the committed bytes of every persisted format (``tests/golden``), each
in its one version, decode with the current code to the content they were written from, and
the current encoders write the same bytes again; every other version of every format is
refused with an error naming the format, the version found and the one supported. A failure
here means checkpoints that users hold would no longer load (or would load differently): fix
the code, never the samples."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from adapters import CodecError, StateError, WindowDriver, decode_value, encode_value
from adapters.state.backend import MemoryKeyState
from adapters.state.buckets import BUCKET_VERSION, decode_bucket, encode_bucket
from adapters.state.codec import (
    CODEC_VERSION,
    MetaWriter,
    decode_entry,
    decode_meta,
    decode_watermark,
    encode_entry,
    encode_float_record_segment,
    encode_meta,
    split_meta,
)
from adapters.state.pairs import (
    LANE_SHIFT,
    LOCAL,
    PACKED_PAIR,
    PAIRS_MARK,
    PAIRS_VERSION,
    decode_local,
    decode_locals,
    decode_mark,
    decode_page,
    decode_pair,
    is_page,
)
from adapters.state.segments import (
    SEGMENT_VERSION,
    decode_segment,
    encode_segment,
    segment_range,
)
from tests.adapters.test_codec import identical
from tests.golden import samples
from tests.golden.make_golden import bucket

GOLDEN = Path(__file__).parent.parent / "golden"


def _load(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / name).read_text())


VALUES = _load("values.json")
ENTRIES = _load("entries.json")
SEGMENTS = _load("spark_segments.json")
BUCKETS = _load("spark_buckets.json")
CHECKPOINTS = _load("checkpoints.json")
UNKNOWN = _load("unknown_versions.json")


def test_every_sample_is_committed() -> None:
    assert set(VALUES) == set(samples.VALUES)
    assert set(ENTRIES) == set(samples.ENTRIES)
    assert set(SEGMENTS) == set(samples.SPARK_SEGMENTS)
    assert set(BUCKETS) == set(samples.SPARK_BUCKETS)
    assert set(CHECKPOINTS) == set(samples.CHECKPOINTS)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value(name: str) -> None:
    data = bytes.fromhex(VALUES[name]["hex"])
    want = samples.VALUES[name]
    got = decode_value(data)
    assert identical(got, want), (got, want)
    assert VALUES[name]["canonical"] and encode_value(got) == data


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_log_entry(name: str) -> None:
    sample = ENTRIES[name]
    data = bytes.fromhex(sample["hex"])
    time, seq, times, values = samples.ENTRIES[name]
    assert (sample["time"], sample["seq"]) == (time, seq)
    got = decode_entry(time, seq, data)
    want = [(t, seq + i, v) for i, (t, v) in enumerate(zip(times, values))]
    assert identical(got, want), (got, want)
    assert encode_entry([e[0] for e in got], [e[2] for e in got]) == data


def test_float_record_segments_from_columns_are_the_same_bytes() -> None:
    """The cross-key path writes flat float records from packed columns, not through
    ``encode_entry``: the same golden bytes."""
    data = bytes.fromhex(ENTRIES["segment_float_records"]["hex"])
    _, _, times, values = samples.ENTRIES["segment_float_records"]
    packed_times = struct.pack(f"<{len(times)}q", *times)
    packed_floats = struct.pack(f"<{len(values)}d", *[v["v"] for v in values])
    assert encode_float_record_segment("v", len(times), packed_times, packed_floats) == data


@pytest.mark.parametrize("name", sorted(SEGMENTS))
def test_spark_segment(name: str) -> None:
    blob = bytes.fromhex(SEGMENTS[name]["hex"])
    assert blob[4] == SEGMENT_VERSION
    entries = samples.SPARK_SEGMENTS[name]
    assert decode_segment(blob) == entries
    assert segment_range(blob) == (min(e[0] for e in entries), max(e[0] for e in entries))
    assert encode_segment(decode_segment(blob)) == blob


@pytest.mark.parametrize("name", sorted(BUCKETS))
def test_spark_bucket(name: str) -> None:
    blob = bytes.fromhex(BUCKETS[name]["hex"])
    assert blob[4] == BUCKET_VERSION
    want = bucket(samples.SPARK_BUCKETS[name])
    got = decode_bucket(blob, want.buckets)
    assert got == want
    assert list(got.keys) == list(want.keys)  # key order is part of the format
    assert encode_bucket(got) == blob
    with pytest.raises(StateError, match=f"key_buckets={want.buckets}"):
        decode_bucket(blob, want.buckets + 1)


def test_a_cut_or_padded_bucket_blob_is_refused() -> None:
    """A bucket blob that lost (or gained) bytes must not decode as fewer keys: the missing
    key's state would be lost without a word."""
    blob = bytes.fromhex(BUCKETS["two_keys"]["hex"])
    first_key_end = blob.index(b'["a",1]') - 24  # the second key's 24-byte record header
    for cut in (blob[:first_key_end], blob[:first_key_end + 5], blob[:-1], blob[:10],
                blob + b"\x00"):
        with pytest.raises(StateError, match="SWGB"):
            decode_bucket(cut, 16)


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_checkpoint_meta(name: str) -> None:
    """The metadata decodes to the recorded fields, in the documented order; the query still
    has the fingerprint it had (else the state would be refused as another query's); the
    writer the driver uses writes the same bytes from those fields."""
    sample = CHECKPOINTS[name]
    data = bytes.fromhex(sample["meta_hex"])
    meta = decode_meta(data)
    assert meta == sample["meta"]
    assert list(meta) == ["codec", "q", "n", "wm", "seq", "rel", "late", "pol"]
    assert meta["q"] == WindowDriver(sample["query"]).query.fingerprint
    assert meta["codec"] == CODEC_VERSION
    assert encode_meta(meta) == data
    pol = ",".join(map(str, meta["pol"]))
    write = MetaWriter(meta["q"])
    assert write(decode_watermark(meta["wm"]), meta["seq"], meta["rel"], meta["late"],
                 pol, nonce=meta["n"]) == data


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_checkpoint_restores(name: str) -> None:
    """A driver restored from the committed state emits the recorded rows at the end of
    input (one per lane kind: time, count, policy)."""
    sample = CHECKPOINTS[name]
    state = MemoryKeyState()
    state.put_meta(bytes.fromhex(sample["meta_hex"]))
    state.add_events([(e["time"], e["seq"], bytes.fromhex(e["hex"])) for e in sample["log"]])
    rows = WindowDriver(sample["query"]).advance_watermark("k", "end", state).rows
    assert json.loads(json.dumps(rows)) == sample["rows_at_end"]
    assert decode_meta(state.get_meta() or b"")["codec"] == CODEC_VERSION


_DECODERS = {
    "meta": decode_meta,
    "value": decode_value,
    "entry": lambda data: decode_entry(0, 0, data),
    "spark_segment": decode_segment,
    "spark_bucket": lambda data: decode_bucket(data, 16),
    "kvs_page": decode_page,
    "kvs_local": decode_local,
    "kvs_locals": decode_locals,
    "kvs_mark": decode_mark,
}
#: the version byte's offset in each binary format's samples (the others are versioned by the
#: metadata's codec version, or carry it as JSON)
_VERSION_AT = {"spark_segment": 4, "spark_bucket": 4, "kvs_page": 1, "kvs_local": 1,
               "kvs_locals": 1, "kvs_mark": 1}
_SUPPORTED = {"meta": CODEC_VERSION, "value": CODEC_VERSION, "entry": CODEC_VERSION,
              "spark_segment": SEGMENT_VERSION, "spark_bucket": BUCKET_VERSION,
              "kvs_page": PAIRS_VERSION, "kvs_local": PAIRS_VERSION,
              "kvs_locals": PAIRS_VERSION, "kvs_mark": PAIRS_VERSION}
_ERRORS = {"StateError": StateError, "CodecError": CodecError}


def test_every_format_has_an_unknown_version_sample() -> None:
    assert {sample["format"] for sample in UNKNOWN.values()} == set(_DECODERS)


@pytest.mark.parametrize("name", sorted(UNKNOWN))
def test_unknown_version_is_refused_by_name(name: str) -> None:
    """The error names the format, the version found and the one supported."""
    sample = UNKNOWN[name]
    with pytest.raises(_ERRORS[sample["error"]], match=sample["match"]) as caught:
        _DECODERS[sample["format"]](bytes.fromhex(sample["hex"]))
    assert f"{_SUPPORTED[sample['format']]} only" in str(caught.value) or \
        f"codec version {CODEC_VERSION}" in str(caught.value)


@pytest.mark.parametrize(("fmt", "version"), [(fmt, version) for fmt in sorted(_VERSION_AT)
                                               for version in (0, 1, 2, 3, 5, 255)
                                               if version != _SUPPORTED[fmt]])
def test_every_other_version_byte_is_refused(fmt: str, version: int) -> None:
    """Any version byte but the one supported, in a sample that is otherwise valid."""
    data = bytearray(bytes.fromhex(next(s["hex"] for s in UNKNOWN.values()
                                        if s["format"] == fmt)))
    data[_VERSION_AT[fmt]] = version
    with pytest.raises((CodecError, StateError),
                       match=rf"version {version} is unknown.*version {_SUPPORTED[fmt]} only"):
        _DECODERS[fmt](bytes(data))


@pytest.mark.parametrize("version", [0, 1, 3, 99])
def test_every_other_codec_version_is_refused(version: int) -> None:
    data = bytes.fromhex(CHECKPOINTS["time_lane_sliding"]["meta_hex"])
    data = data.replace(b'"codec":2', f'"codec":{version}'.encode())
    with pytest.raises(StateError, match=rf"window-state metadata: codec version {version} "
                                         rf"is unknown.*codec version 2 only"):
        decode_meta(data)


def test_unknown_meta_version_stops_the_driver() -> None:
    sample = CHECKPOINTS["time_lane_sliding"]
    state = MemoryKeyState()
    state.put_meta(bytes.fromhex(UNKNOWN["meta_codec_3"]["hex"]))
    with pytest.raises(StateError, match=re.escape("codec version 3 is unknown")):
        WindowDriver(sample["query"]).process("k", [(1, {"v": 1})], state)


def test_unknown_entry_tag_stops_the_rebuild_naming_the_key() -> None:
    sample = CHECKPOINTS["time_lane_sliding"]
    state = MemoryKeyState()
    state.put_meta(bytes.fromhex(sample["meta_hex"]))
    state.add_events([(20, 0, bytes.fromhex(UNKNOWN["entry_tag_0x1f"]["hex"]))])
    with pytest.raises(StateError, match=r"key 'k'.*form tag 0x1f"):
        WindowDriver(sample["query"]).advance_watermark("k", "end", state)


KVS = _load("kvs_pairs.json")


def _kvs_state(sample: dict, pairs: bool = True) -> MemoryKeyState:
    state = MemoryKeyState()
    state.put_meta(bytes.fromhex(sample["meta_hex"]))
    state.add_events([(e["time"], e["seq"], bytes.fromhex(e["hex"])) for e in sample["log"]])
    if pairs:
        state.pair_map().put_many([(int(k), bytes.fromhex(v))
                                   for k, v in sample["pairs"].items()])
    return state


def test_every_kvs_sample_is_committed() -> None:
    assert set(KVS) == set(samples.KVS_CHECKPOINTS)


@pytest.mark.parametrize("name", sorted(KVS))
def test_kvs_checkpoint_restores(name: str) -> None:
    """A driver restored from a committed KVS-layout state (meta, the log of pending events,
    the pair map) emits the recorded rows; the map's records decode as documented
    (``adapters/state/pairs.py``); without the map the key is refused (its local part names
    a mark that the empty map does not hold)."""
    sample = KVS[name]
    rows = WindowDriver(sample["query"]).advance_watermark("k", "end", _kvs_state(sample)).rows
    assert json.loads(json.dumps(rows)) == sample["rows_at_end"]
    packed = stored = 0
    for k, v in sample["pairs"].items():
        data = bytes.fromhex(v)
        if int(k) & ((1 << LANE_SHIFT) - 1) == LOCAL:  # the mark of the last call that wrote
            assert data[:2] == bytes([PAIRS_MARK, PAIRS_VERSION]) and len(data) == 10
            assert decode_mark(data) >= 0
            continue
        assert is_page(int(k))
        for pair in decode_page(data).values():
            value = decode_pair(pair)
            assert type(value) is tuple and 1 <= len(value) <= 2
            packed += pair[0] == PACKED_PAIR
            stored += 1
    # the local part is in the metadata's extension (packed, with the tails)
    extension = split_meta(bytes.fromhex(sample["meta_hex"]))[1]
    assert extension is not None and extension[1] == PAIRS_VERSION
    (lane, record), = decode_locals(extension).items()
    _, ints, _, _, tails, _ = decode_local(record)
    assert lane == 0 and record[1] == PAIRS_VERSION and len(tails) == ints[1]
    # every pair of the built-in aggregations is packed (collect's lists of ints too)
    assert packed == stored
    with pytest.raises(StateError, match="different calls"):
        WindowDriver(sample["query"]).advance_watermark("k", "end", _kvs_state(sample, False))
