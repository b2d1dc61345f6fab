"""Many keys in one engine state group, a *bucket* (engine-free): one blob of every key's
metadata, timer and log trim bound (:mod:`adapters.state.buckets`), one list of log
segments tagged with their key id (:mod:`adapters.state.segments`) and, for queries with
over windows, one map of every key's KVS pairs keyed by ``(key id, map key)``
(:class:`BucketPairs`), for an engine whose every state or timer call costs a round trip
(Spark's ``transformWithStateInPandas``: ``spark_adapter._buckets``). One call hands the
driver every key of the bucket that has events (:meth:`adapters.WindowDriver.process_batch`)
and advances its other due keys (:meth:`~adapters.WindowDriver.advance_keys`):
:func:`run_bucket`; the engine keeps one timer per bucket, the earliest of its keys'.

Removing a key's old entries only raises its trim bound (entries older than it are skipped
when read); the list is rewritten without them once dead elements outnumber live ones
(and :data:`COMPACT_MIN`), so the rewrite costs O(1) amortized per event. A call that reads
the list (a key rebuilt from its log) decodes only its live elements. (Rewriting the list
whenever such a read found its dead elements weighing as much as its live ones was tried and
measured slower in Spark's main streaming job: 38.1/47.0 s without, 42.8/53.5 s with, 120
days, interleaved; the live elements, a week of events each, are rewritten every time.)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from adapters.driver.results import Output
from adapters.driver.window_driver import WindowDriver
from adapters.engine.presliced import SliceLayout
from adapters.state.backend import LogEntry
from adapters.state.buckets import Bucket, KeyRecord, decode_bucket, encode_bucket
from adapters.state.segments import decode_segment, encode_segment, segment_range

#: dead log elements tolerated before a rewrite is considered
COMPACT_MIN = 64


class BucketBackend:
    """:class:`adapters.StateBackend` over one bucket's engine state for one call: reads the
    blob once, serves each key's meta from it, buffers the writes, and :meth:`flush` writes
    them back (one blob update, one list append, rarely a list rewrite).

    Args:
        meta_state: the bucket's value cell: ``get()`` (``None`` or a row whose first item
            is the blob) and ``update((blob,))``.
        log_state: the bucket's list of ``(key id, segment)`` rows: ``get()``,
            ``appendList(rows)``, ``put(rows)``, ``clear()``.
        buckets: the number of buckets (part of the blob: a changed count is refused).
        ids: driver key -> key id, for the keys of the call (learns the due keys' ids).
        decode: the driver key of a key id's text (keys whose timers are due).
        pairs: the bucket's pair maps (bound to this call's map state), or ``None``: its
            keys offer no pair map (no over window, :func:`adapters.driver.kvs_lanes.
            uses_pairs`).
    """

    def __init__(self, meta_state: Any, log_state: Any, buckets: int,
                 ids: dict[Hashable, bytes], decode: Callable[[str], Any],
                 pairs: BucketPairs | None = None) -> None:
        self._meta_state, self._log_state = meta_state, log_state
        self.decode = decode
        self.pairs = pairs
        row = meta_state.get()
        self.bucket = Bucket(buckets) if row is None else decode_bucket(bytes(row[0]), buckets)
        #: driver key -> key id (JSON text bytes)
        self.ids = ids
        self._new: list[tuple[bytes, bytes]] = []
        self._log: dict[bytes, list[LogEntry]] | None = None
        self._dirty = False

    def key_state(self, key: Hashable) -> BucketKeyState:
        kid = self.ids[key]
        rec = self.bucket.keys.get(kid)
        if rec is None:
            rec = self.bucket.keys[kid] = KeyRecord()
        return BucketKeyState(self, kid, rec)

    def entries(self, kid: bytes, trim: int | None) -> list[LogEntry]:
        """The key's live log entries (the whole list is read once per call, on demand)."""
        if self._log is None:
            self._log = self._read_log()
        found = self._log.get(kid, []) + [e for k, s in self._new if k == kid
                                           for e in decode_segment(s)]
        return found if trim is None else [e for e in found if e[0] >= trim]

    def _read_log(self) -> dict[bytes, list[LogEntry]]:
        """The whole list's live entries by key id; dead elements (all their entries below
        their key's trim bound, and bounds only rise) are not decoded."""
        b = self.bucket
        log: dict[bytes, list[LogEntry]] = {}
        for k, seg in self._log_state.get():
            kid, blob = bytes(k), bytes(seg)
            if _live(b, kid, blob):
                log.setdefault(kid, []).extend(decode_segment(blob))
        return log

    def added(self, kid: bytes, entries: Sequence[LogEntry]) -> None:
        self._new.append((kid, encode_segment(entries)))
        self.bucket.live += 1

    def removed(self, count: int) -> None:
        self.bucket.live -= count
        self.bucket.dead += count

    def changed(self) -> None:
        self._dirty = True

    def flush(self) -> None:
        """Write the call's changes (the list first: the blob records their counts)."""
        b = self.bucket
        if b.dead >= COMPACT_MIN and b.dead >= b.live:
            self._compact()
        elif self._new:
            self._log_state.appendList(self._new)
        if self._dirty or self._new:
            self._meta_state.update((encode_bucket(b),))
        self._new = []

    def _compact(self) -> None:
        """Rewrite the log without the elements below their key's trim bound (read as the
        engine streams it: the dead elements are never all in memory at once, which matters
        for the KVS layout, whose log holds the pending events only)."""
        b = self.bucket
        kept = [(kid, blob) for kid, blob in ((bytes(k), bytes(s))
                                              for k, s in self._log_state.get())
                if _live(b, kid, blob)]
        kept += [(k, s) for k, s in self._new if _live(b, k, s)]
        if kept:
            self._log_state.put(kept)
        else:
            self._log_state.clear()
        b.live, b.dead = len(kept), 0
        self._log = None


def _live(b: Bucket, kid: bytes, seg: bytes) -> bool:
    rec = b.keys.get(kid)
    return rec is not None and (rec.trim is None or segment_range(seg)[1] >= rec.trim)


class BucketKeyState:
    """:class:`adapters.KeyState` of one key inside a :class:`BucketBackend`."""

    __slots__ = ("_backend", "_kid", "_rec")

    def __init__(self, backend: BucketBackend, kid: bytes, rec: KeyRecord) -> None:
        self._backend, self._kid, self._rec = backend, kid, rec

    def get_meta(self) -> bytes | None:
        return self._rec.meta

    def put_meta(self, data: bytes) -> None:
        self._rec.meta = data
        self._backend.changed()

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        if entries:
            self._backend.added(self._kid, entries)

    def read_events(self) -> Iterator[LogEntry]:
        yield from self._backend.entries(self._kid, self._rec.trim)

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        if not keys:
            return
        if self._rec.trim is None or before > self._rec.trim:
            self._rec.trim = before
        self._backend.removed(len(keys))
        self._backend.changed()

    def pair_map(self) -> KeyPairs | None:
        """The key's pair map (the KVS layout), ``None`` if the bucket has none."""
        pairs = self._backend.pairs
        return None if pairs is None else KeyPairs(pairs, self._kid)


class BucketPairs:
    """The pair maps (:class:`adapters.state.pairs.PairMap`) of a bucket's keys in one
    engine map state keyed by ``(key id, map key)`` (Spark: ``MapState`` of ``k binary,
    slot long`` to ``pair binary``); each key sees its own through :class:`KeyPairs`.

    One per driver, not per call: the driver's cached KVS structures keep the
    :class:`KeyPairs` they were built with across calls, while each engine task has its own
    map state (Spark: a connection of that task). So the engine binds (:meth:`bind`) its
    map state before every call into the driver; a cached structure only touches the map
    inside a call for its own bucket. Each element is one engine call (PySpark has no
    batched map calls): the driver reads the few pages a call needs and writes at most a
    buffer's worth per call (:mod:`adapters.state.pairs`).
    """

    __slots__ = ("map_state",)

    def __init__(self) -> None:
        #: the bound map state: ``getValue(key)`` (``None`` or a row whose first item is the
        #: bytes), ``updateValue(key, (bytes,))``, ``removeKey(key)``; keys ``(id, int)``
        self.map_state: Any = None

    def bind(self, map_state: Any) -> None:
        """Direct the calls to ``map_state`` (the running task's)."""
        self.map_state = map_state


class KeyPairs:
    """:class:`adapters.state.pairs.PairMap` of one key of a :class:`BucketPairs`."""

    __slots__ = ("_kid", "_pairs")

    def __init__(self, pairs: BucketPairs, kid: bytes) -> None:
        self._pairs, self._kid = pairs, kid

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        get, kid = self._pairs.map_state.getValue, self._kid
        out: list[bytes | None] = []
        for k in keys:
            row = get((kid, k))
            out.append(None if row is None else bytes(row[0]))
        return out

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        update, kid = self._pairs.map_state.updateValue, self._kid
        for k, v in items:
            update((kid, k), (v,))

    def delete_many(self, keys: Sequence[int]) -> None:
        remove, kid = self._pairs.map_state.removeKey, self._kid
        for k in keys:
            remove((kid, k))


def run_bucket(driver: WindowDriver, backend: BucketBackend,
               events: Sequence[tuple[Any, Any, Any]], watermark: int | None,
               slices: SliceLayout | None = None) -> Output:
    """The driver over a bucket's events, then its other keys whose timers are due.

    Pre-sliced (``slices``), the events are slice rows that the engine's aggregation let go
    once the watermark passed their slices' ends, so they are behind ``watermark`` by
    construction: the driver takes them against its own watermark (the previous call's,
    which no slice row is behind), then every key of the call moves to the start of the
    slice holding ``watermark`` (:meth:`~adapters.engine.presliced.SliceLayout.closed`)."""
    sliced = slices is not None
    if slices is not None and watermark is not None:
        watermark = slices.closed(watermark)
    out = (driver.process_batch(events, backend, None if sliced else watermark) if events
           else Output())
    if watermark is not None:
        seen = set(out.timers)
        due = [k for k in _due_keys(backend, watermark) if k not in seen]
        if sliced:
            due = list(dict.fromkeys([k for k, _, _ in events] + due))
        if due:
            more = driver.advance_keys(due, watermark, backend)
            out.rows.extend(more.rows)
            out.late.extend(more.late)
            out.timers.update(more.timers)
    for key, t in out.timers.items():
        backend.bucket.keys[backend.ids[key]].timer = t
    if out.timers:
        backend.changed()
    return out


def _due(timer: int | None, watermark: int) -> bool:
    return timer is not None and timer <= watermark


def _due_keys(backend: BucketBackend, watermark: int) -> Iterator[Any]:
    """The bucket's keys whose timers are due at ``watermark`` (only those are decoded;
    ``backend.ids`` learns them)."""
    by_id: dict[bytes, Any] | None = None
    for kid, rec in backend.bucket.keys.items():
        if not _due(rec.timer, watermark):
            continue
        if by_id is None:
            by_id = {i: k for k, i in backend.ids.items()}
        k = by_id.get(kid)
        if k is None:
            k = backend.decode(kid.decode())
            backend.ids[k] = kid
        yield k


__all__ = ["COMPACT_MIN", "BucketBackend", "BucketKeyState", "BucketPairs", "KeyPairs",
           "run_bucket"]
