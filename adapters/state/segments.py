"""The packed event-log segment: several log entries as one blob (format version 1, the only
one: any other version is refused naming it).

For engines whose state calls cost a lot per element (PySpark pickles each element of a
state call and sends it to the JVM), the engine adapter stores the entries of one
``add_events`` call as one element: ``spark_adapter`` keeps its event log as a ``ListState``
of these segments. The entries' ``data`` are the codec's (:mod:`adapters.state.codec`); this
module only frames them. Big-endian, plain ``struct`` packing (no code runs on decoding)::

    b"SWGL" | u8 version (1) | int64 min time | int64 max time | u32 n
    n x ( int64 time | int64 seq | u32 len | len bytes data )

The header's time range lets a backend keep or drop a whole segment without decoding it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from adapters.errors import StateError
from adapters.state.backend import LogEntry
from adapters.state.codec import version_error

#: Format name, as errors name it.
SEGMENT_FORMAT = "swag event-log segment (SWGL)"
#: Version of the format: the only one read and written.
SEGMENT_VERSION = 1

_SEGMENT = struct.Struct(">4sBqqI")   # magic, version, min time, max time, entry count
_ENTRY = struct.Struct(">qqI")        # time, seq, data length (then the data bytes)
_MAGIC = b"SWGL"


def encode_segment(entries: Sequence[LogEntry]) -> bytes:
    """Log entries (at least one) as one segment."""
    times = [e[0] for e in entries]
    parts = [_SEGMENT.pack(_MAGIC, SEGMENT_VERSION, min(times), max(times), len(entries))]
    pack = _ENTRY.pack
    for t, s, d in entries:
        parts.append(pack(t, s, len(d)))
        parts.append(d)
    return b"".join(parts)


def _header(blob: bytes) -> tuple[int, int, int]:
    """``(min time, max time, n)`` of a segment; :class:`StateError` if ``blob`` is not a
    segment of :data:`SEGMENT_VERSION`."""
    try:
        magic, version, lo, hi, n = _SEGMENT.unpack_from(blob, 0)
    except struct.error:
        raise StateError(f"corrupt {SEGMENT_FORMAT}: {len(blob)} bytes, shorter than its "
                         f"{_SEGMENT.size}-byte header") from None
    if magic != _MAGIC:
        raise StateError(f"not a {SEGMENT_FORMAT}: it starts with {magic!r}")
    if version != SEGMENT_VERSION:
        raise version_error(SEGMENT_FORMAT, version, SEGMENT_VERSION)
    return lo, hi, n


def segment_range(blob: bytes) -> tuple[int, int]:
    """``(min time, max time)`` of a segment, from its header."""
    lo, hi, _ = _header(blob)
    return lo, hi


def decode_segment(blob: bytes) -> list[LogEntry]:
    """Inverse of :func:`encode_segment`."""
    n = _header(blob)[2]
    pos = _SEGMENT.size
    unpack, size = _ENTRY.unpack_from, _ENTRY.size
    out = []
    try:
        for _ in range(n):
            t, s, length = unpack(blob, pos)
            pos += size
            out.append((t, s, blob[pos:pos + length]))
            pos += length
    except struct.error:
        pos = -1
    if pos != len(blob):
        raise StateError(f"corrupt {SEGMENT_FORMAT} ({len(blob)} bytes, {n} entries)")
    return out


__all__ = ["SEGMENT_FORMAT", "SEGMENT_VERSION", "decode_segment", "encode_segment",
           "segment_range"]
