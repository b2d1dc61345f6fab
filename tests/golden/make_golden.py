"""Writes the golden state samples ``tests/golden/*.json`` from ``samples.py``.

Run by hand, never by CI: ``PYTHONPATH=. python -m tests.golden.make_golden``, in the core
environment and in the Beam and Flink ones (for their state layouts). Run it only
to add samples; each format has one version, and the committed bytes of existing samples
must never change, because they stand for checkpoints that users hold. The script keeps
every sample already in a file as it is, unless ``--force`` is given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from adapters import WindowDriver
from adapters.state.backend import MemoryKeyState
from adapters.state.buckets import Bucket, KeyRecord, encode_bucket
from adapters.state.codec import (
    decode_meta,
    encode_entry,
    encode_meta,
    encode_value,
    split_meta,
)
from adapters.state.pairs import LOCAL, decode_locals, is_page
from adapters.state.segments import encode_segment
from tests.golden import samples

HERE = Path(__file__).parent


def _entry(time: int, seq: int, data: bytes) -> dict[str, Any]:
    return {"time": time, "seq": seq, "hex": data.hex()}


def _run_calls(spec: dict[str, Any]) -> MemoryKeyState:
    """A key's state after a sample's calls (its events, then its watermark, per call)."""
    state = MemoryKeyState()
    driver = WindowDriver(spec["query"])
    for call in spec["calls"]:
        events = [(t, {"v": v}) for t, v in call["events"]]
        driver.process("k", events, state)
        if call["watermark"] is not None:
            driver.advance_watermark("k", call["watermark"], state)
    return state


def _checkpoint(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs the calls on one key, then records its state and the rows a driver restored
    from that state emits at the end of input."""
    state = _run_calls(spec)
    meta = state.get_meta()
    assert meta is not None
    log = state.entries()
    restored = MemoryKeyState()
    restored.put_meta(meta)
    restored.add_events(log)
    rows = WindowDriver(spec["query"]).advance_watermark("k", "end", restored).rows
    return {"query": spec["query"], "meta_hex": meta.hex(), "meta": decode_meta(meta),
            "log": [_entry(*e) for e in log], "rows_at_end": json.loads(json.dumps(rows))}


def _kvs_checkpoint(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`_checkpoint` for a KVS-layout query: also the key's pair map."""
    state = _run_calls(spec)
    meta = state.get_meta()
    assert meta is not None
    pairs = state.pair_map().data
    restored = state.copy()
    rows = WindowDriver(spec["query"]).advance_watermark("k", "end", restored).rows
    return {"query": spec["query"], "meta_hex": meta.hex(),
            "log": [_entry(*e) for e in state.entries()],
            "pairs": {str(k): v.hex() for k, v in sorted(pairs.items())},
            "rows_at_end": json.loads(json.dumps(rows))}


def bucket(spec: tuple[Any, ...]) -> Bucket:
    """The :class:`Bucket` a ``samples.SPARK_BUCKETS`` entry stands for."""
    buckets, timer, live, dead, keys = spec
    return Bucket(buckets, timer, live, dead, {kid: KeyRecord(*rec) for kid, rec in keys.items()})


def _with_version(data: bytes, at: int, version: int) -> bytes:
    """``data`` with its version byte (at ``at``) set to ``version``."""
    return data[:at] + bytes([version]) + data[at + 1:]


def _unknown(fmt: str, data: bytes, error: str, match: str) -> dict[str, Any]:
    return {"format": fmt, "hex": data.hex(), "error": error, "match": match}


def _unknown_kvs_versions() -> dict[str, Any]:
    """Each record of the KVS pair format with version byte 5."""
    state = _run_calls(samples.KVS_CHECKPOINTS["over_max_long"])
    meta = state.get_meta()
    assert meta is not None
    extension = split_meta(meta)[1]
    assert extension is not None
    record = decode_locals(extension)[0]
    pairs = state.pair_map().data
    page = next(v for k, v in sorted(pairs.items()) if is_page(k))
    mark = pairs[LOCAL]
    return {
        "kvs_page_version_5": _unknown("kvs_page", _with_version(page, 1, 5), "CodecError",
                                       r"^window pairs page: version 5 is unknown.*4 only"),
        "kvs_local_part_version_5": _unknown(
            "kvs_local", _with_version(record, 1, 5), "CodecError",
            r"^window pairs record: version 5 is unknown.*4 only"),
        "kvs_meta_extension_version_5": _unknown(
            "kvs_locals", _with_version(extension, 1, 5), "StateError",
            r"^window pairs in the metadata: version 5 is unknown.*4 only"),
        "kvs_mark_version_5": _unknown("kvs_mark", _with_version(mark, 1, 5), "CodecError",
                                       r"^window pairs mark: version 5 is unknown.*4 only"),
    }


def _unknown_versions() -> dict[str, Any]:
    """One sample of an unknown version of every format (a form tag for values and entries,
    which the metadata's codec version covers)."""
    meta3 = encode_meta({"codec": 3, "q": "0" * 16, "n": 1, "wm": None, "seq": 0, "rel": 0,
                         "late": 0, "pol": []})
    segment = encode_segment(samples.SPARK_SEGMENTS["three_entries"])
    blob = encode_bucket(bucket(samples.SPARK_BUCKETS["two_keys"]))
    return {
        "spark_bucket_version_3": _unknown("spark_bucket", _with_version(blob, 4, 3),
                                           "StateError",
                                           r"^bucket state \(SWGB\): version 3 is unknown.*"
                                           r"version 2 only"),
        "meta_codec_3": _unknown("meta", meta3, "StateError",
                                 r"^window-state metadata: codec version 3 is unknown.*"
                                 r"codec version 2 only"),
        "meta_without_codec": _unknown("meta", b'{"q":"x"}', "StateError",
                                       r"^window-state metadata: codec version None is "
                                       r"unknown.*codec version 2 only"),
        "value_tag_0x04": _unknown("value", b"\x04" + bytes(8), "CodecError",
                                   r"form tag 0x04.*codec version 2"),
        "entry_tag_0x1f": _unknown("entry", b"\x1f[1]", "CodecError",
                                   r"form tag 0x1f.*codec version 2"),
        "spark_segment_version_2": _unknown("spark_segment", _with_version(segment, 4, 2),
                                            "StateError",
                                            r"^swag event-log segment \(SWGL\): version 2 is "
                                            r"unknown.*version 1 only"),
        **_unknown_kvs_versions(),
    }


def _beam_layout() -> dict[str, Any] | None:
    """The Beam state cells: names, and the coders' bytes of the sample log entries (the
    ordered list's sort key is the event time in microseconds)."""
    try:
        from beam_adapter.state import BAG_LOG_SPEC, META_SPEC, ORDERED_LOG_SPEC
    except ImportError:
        return None
    meta = bytes.fromhex(_checkpoint(samples.CHECKPOINTS["policy_lanes"])["meta_hex"])
    entries = samples.ENGINE_LOG
    return {
        "meta": {"name": META_SPEC.name, "value_hex": meta.hex(),
                 "coded_hex": META_SPEC.coder.encode(meta).hex()},
        "ordered_list": {"name": ORDERED_LOG_SPEC.name, "entries": [
            {"sort_micros": t * 1000, "coded_hex": ORDERED_LOG_SPEC.coder.encode((s, d)).hex()}
            for t, s, d in entries]},
        "bag": {"name": BAG_LOG_SPEC.name, "entries": [
            {"coded_hex": BAG_LOG_SPEC.coder.encode((t, s, d)).hex()} for t, s, d in entries]},
    }


def _flink_layout() -> dict[str, Any] | None:
    """The Flink state descriptors: names and type information."""
    try:
        from flink_adapter.state import (
            log_descriptor,
            meta_descriptor,
            pairs_descriptor,
            timer_descriptor,
        )
    except ImportError:
        return None
    return {kind: {"name": d.name, "type": str(d.type_info)} for kind, d in
            [("meta", meta_descriptor()), ("log", log_descriptor()),
             ("timer", timer_descriptor()), ("pairs", pairs_descriptor())]}


def _spark_layout() -> dict[str, Any] | None:
    """The Spark streaming state variables of a bucket: names and schemas."""
    try:
        from spark_adapter import _buckets as sb
    except ImportError:
        return None
    return {"meta": {"name": sb.BMETA_STATE, "value": sb.BMETA_SCHEMA},
            "log": {"name": sb.BLOG_STATE, "element": sb.BLOG_SCHEMA},
            "pairs": {"name": sb.BPAIRS_STATE, "key": sb.BPAIRS_KEY_SCHEMA,
                      "value": sb.BPAIRS_VALUE_SCHEMA}}


def build() -> dict[str, dict[str, Any]]:
    """Every golden file's content, by file name (the engine layouts only where that engine
    is installed: run this once in each engine's environment)."""
    engines = {name: layout for name, layout in [("beam_state.json", _beam_layout()),
                                                 ("flink_state.json", _flink_layout()),
                                                 ("spark_state.json", _spark_layout())]
               if layout is not None}
    return {**engines,
        "values.json": {name: {"hex": encode_value(v).hex(), "canonical": True}
                        for name, v in samples.VALUES.items()},
        "entries.json": {name: _entry(time, seq, encode_entry(times, values))
                         for name, (time, seq, times, values) in samples.ENTRIES.items()},
        "spark_segments.json": {name: {"hex": encode_segment(entries).hex()}
                                for name, entries in samples.SPARK_SEGMENTS.items()},
        "spark_buckets.json": {name: {"hex": encode_bucket(bucket(spec)).hex()}
                               for name, spec in samples.SPARK_BUCKETS.items()},
        "checkpoints.json": {name: _checkpoint(spec)
                             for name, spec in samples.CHECKPOINTS.items()},
        "unknown_versions.json": _unknown_versions(),
        "kvs_pairs.json": {name: _kvs_checkpoint(spec)
                           for name, spec in samples.KVS_CHECKPOINTS.items()},
    }


def _merge(path: Path, new: dict[str, Any], force: bool) -> dict[str, Any]:
    """``new`` with every sample already in ``path`` kept as it is (or replaced with
    ``force``)."""
    old = json.loads(path.read_text()) if path.exists() else {}
    if force:
        return new
    return {**new, **old}


def main(argv: list[str]) -> None:
    force = "--force" in argv
    for name, content in build().items():
        path = HERE / name
        merged = _merge(path, content, force)
        path.write_text(json.dumps(merged, indent=1, ensure_ascii=True, sort_keys=True) + "\n")
        print(f"{path}: {len(merged)} samples")


if __name__ == "__main__":
    main(sys.argv[1:])
