"""The bucket blob: what one Spark streaming *bucket* (many keys per stateful group,
``spark_adapter._buckets``) keeps in its ``ValueState``: for each key its id, the driver's
metadata bytes (:mod:`adapters.state.codec`), its timer and its log trim bound.

Format ``SWGB`` version 2 (:data:`BUCKET_VERSION`, the only one read and written; big endian;
``-2**63`` means "none"): a header ``b"SWGB"``, version (1 byte), bucket count (u32), the
bucket's registered timer (i64), live and dead log elements (u32, u32), the number of keys
(u32); then per key: id length (u32), metadata length (u32, 0: none), timer (i64), trim bound
(i64), the id bytes, the metadata bytes. Golden samples: ``tests/golden/spark_buckets.json``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from adapters.errors import StateError
from adapters.state.codec import version_error

#: Format name, as errors name it.
BUCKET_FORMAT = "bucket state (SWGB)"
#: Version of the format: the only one read and written.
BUCKET_VERSION = 2
_MAGIC = b"SWGB"
_HEAD = struct.Struct(">4sBIqIII")  # magic, version, buckets, timer, live, dead, keys
_KEY = struct.Struct(">IIqq")  # id length, meta length, timer, trim bound
_NONE = -(1 << 63)  # "no timer" / "no trim bound"


@dataclass
class KeyRecord:
    """What a bucket remembers of one of its keys."""

    meta: bytes | None = None
    timer: int | None = None
    trim: int | None = None


@dataclass
class Bucket:
    """A bucket's decoded metadata blob."""

    buckets: int
    timer: int | None = None
    live: int = 0
    dead: int = 0
    keys: dict[bytes, KeyRecord] = field(default_factory=dict)


def encode_bucket(b: Bucket) -> bytes:
    """The ``swag_bmeta`` blob of a bucket (big endian; ``_NONE`` for a missing value)."""
    parts = [_HEAD.pack(_MAGIC, BUCKET_VERSION, b.buckets, _opt(b.timer), b.live, b.dead,
                        len(b.keys))]
    pack = _KEY.pack
    for kid, rec in b.keys.items():
        meta = rec.meta or b""
        parts += [pack(len(kid), len(meta), _opt(rec.timer), _opt(rec.trim)), kid, meta]
    return b"".join(parts)


def _opt(x: int | None) -> int:
    return _NONE if x is None else int(x)


def _unopt(x: int) -> int | None:
    return None if x == _NONE else x


def decode_bucket(blob: bytes, buckets: int) -> Bucket:
    """Inverse of :func:`encode_bucket`; checks the version, the bucket count and that the
    blob holds exactly its keys (a cut or padded blob raises :class:`StateError`: a key
    silently missing would lose its state)."""
    if len(blob) < _HEAD.size:
        raise _corrupt(f"{len(blob)} bytes, shorter than its {_HEAD.size}-byte header")
    magic, version, n_buckets, timer, live, dead, n_keys = _HEAD.unpack_from(blob, 0)
    if magic != _MAGIC:
        raise StateError(f"not a {BUCKET_FORMAT}: it starts with {magic!r}")
    if version != BUCKET_VERSION:
        raise version_error(BUCKET_FORMAT, version, BUCKET_VERSION)
    if n_buckets != buckets:
        raise StateError(f"the checkpoint's state was written with key_buckets={n_buckets}, "
                         f"this query has key_buckets={buckets}: keys would land in other "
                         f"buckets; keep key_buckets={n_buckets} or start from empty state")
    b = Bucket(n_buckets, _unopt(timer), live, dead)
    pos, size, unpack, end = _HEAD.size, _KEY.size, _KEY.unpack_from, len(blob)
    for i in range(n_keys):
        if pos + size > end:
            raise _corrupt(f"cut inside key {i} of {n_keys}")
        kl, ml, t, trim = unpack(blob, pos)
        pos += size
        if pos + kl + ml > end:
            raise _corrupt(f"cut inside key {i} of {n_keys}")
        kid = blob[pos:pos + kl]
        pos += kl
        b.keys[kid] = KeyRecord(blob[pos:pos + ml] if ml else None, _unopt(t), _unopt(trim))
        pos += ml
    if pos != end:
        raise _corrupt(f"{end - pos} bytes after its {n_keys} keys")
    return b


def _corrupt(what: str) -> StateError:
    return StateError(f"{BUCKET_FORMAT} is corrupt: {what}")


__all__ = ["BUCKET_FORMAT", "BUCKET_VERSION", "Bucket", "KeyRecord", "decode_bucket",
           "encode_bucket"]
