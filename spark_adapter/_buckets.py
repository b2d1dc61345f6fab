"""Streaming with many keys per Python call: the stateful grouping key is a *bucket*
(``pmod(hash(key JSON text), buckets)``, column ``swag_b``) and the real keys travel inside
its rows (``swag_k``, JSON text; the rows packed, :mod:`spark_adapter._packed`). One
``handleInputRows`` call hands the driver every key of its bucket that has events in the
micro-batch (:meth:`adapters.WindowDriver.process_batch`) and advances the bucket's other
due keys (:meth:`~adapters.WindowDriver.advance_keys`); one event-time timer per bucket
(the earliest of its keys' timers).

Why: every state or timer call of a ``transformWithStateInPandas`` processor is a socket round trip
to the JVM (milliseconds each, ``docs/spark.md``), and the one-key-per-call layout makes about
seven per key and micro-batch (meta read and write, log append, list/delete/register timer), which
dominated the streaming time. Here a bucket's call makes about five whatever its number of keys.

State of a bucket (layout version 2; the per-key layout of :class:`SparkKeyState` is
version 1, used with ``key_buckets=None``):

* ``swag_bmeta`` (``ValueState``, ``m binary``): one blob
  (:mod:`adapters.state.buckets`: bucket count, registered timer; per key its id (the key's
  JSON text), the driver's metadata bytes, its timer, and its log trim bound);
* ``swag_blog`` (``ListState``, ``k binary, seg binary``): per key and call that accepted
  events one element: the key id and the entry as a one-entry segment of the version-1
  segment format (:mod:`adapters.state.segments`, unchanged). Removing a
  key's old entries only raises its trim bound (entries older than it are skipped when
  read); the list is rewritten without them once dead elements outnumber live ones, so
  the rewrite costs O(1) amortized per event. A call that reads the list (a key rebuilt
  from its log) decodes only its live elements. (Rewriting the list whenever such a read
  found its dead elements weighing as much as its live ones was tried and measured slower
  in the main job: 38.1/47.0 s without, 42.8/53.5 s with, 120 days, interleaved; the live
  elements, a week of events each, are rewritten every time.)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from adapters import Output, WindowDriver
from adapters.engine.timers import rearm
from adapters.state import LogEntry
from adapters.state.buckets import Bucket, KeyRecord, decode_bucket, encode_bucket
from adapters.state.segments import decode_segment, encode_segment, segment_range

from ._names import KEY_IN, ORDER_IN, TIME_IN, VALUE_IN
from ._packed import packed_frame, unpack_frames
from ._runtime import (
    Plan,
    arrow_schema,
    arrow_table,
    arrow_values,
    decode_key,
    driver_for,
    order_key,
    pandas_frame,
    time_value,
    wide_columns,
)

BUCKET_IN = "swag_b"
BMETA_STATE, BLOG_STATE = "swag_bmeta", "swag_blog"
BMETA_SCHEMA, BLOG_SCHEMA = "m binary", "k binary, seg binary"
_COMPACT_MIN = 64  # dead elements tolerated before a rewrite is considered


class BucketBackend:
    """:class:`adapters.StateBackend` over one bucket's Spark state for one call: reads the
    blob once, serves each key's meta from it, buffers the writes, and :meth:`flush` writes
    them back (one blob update, one list append, rarely a list rewrite)."""

    def __init__(self, meta_state: Any, log_state: Any, buckets: int,
                 ids: dict[Hashable, bytes]) -> None:
        self._meta_state, self._log_state = meta_state, log_state
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
        if b.dead >= _COMPACT_MIN and b.dead >= b.live:
            self._compact()
        elif self._new:
            self._log_state.appendList(self._new)
        if self._dirty or self._new:
            self._meta_state.update((encode_bucket(b),))
        self._new = []

    def _compact(self) -> None:
        """Rewrite the log without the elements below their key's trim bound."""
        b = self.bucket
        read = [(bytes(k), bytes(s)) for k, s in self._log_state.get()]
        kept = [(k, s) for k, s in read + self._new if _live(b, k, s)]
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


# ----------------------------------------------------------------------------- the calls
def bucket_events(plan: Plan, frames: Any, ids: dict[Hashable, bytes],
                  texts: dict[int, str]) -> list[tuple[Any, Any, Any]]:
    """``(key, time, value)`` events of a bucket's pandas frames, each key's in arrival
    order (or ``swag_o`` order, nulls last); ``ids`` receives each key's id. The frames are
    packed (:mod:`spark_adapter._packed`) when the plan is typed, else pre-sliced JSON rows
    (one per key and slice: the partials)."""
    if plan.typed is not None:
        table = unpack_frames(frames)
        if table is None:
            return []
        return _events(_keys(plan, table.column(KEY_IN).to_pylist(), ids),
                       table.column(TIME_IN).to_pylist(), arrow_values(plan, table, texts),
                       table.column(ORDER_IN).to_pylist() if plan.has_order else None)
    keys: list[Any] = []
    times: list[Any] = []
    values: list[Any] = []
    orders: list[Any] = []
    dkeys: dict[str, Any] = {}
    for pdf in frames:
        keys.extend(_keys(plan, pdf[KEY_IN].tolist(), ids, dkeys))
        ts = pdf[TIME_IN].tolist()
        ts = ts if plan.time_is_string else [time_value(t) for t in ts]
        times.extend(ts)
        assert plan.slices is not None
        values.extend(plan.slices.layout.json_values(pdf[VALUE_IN].tolist(), ts,
                                                     keys[len(values):]))
        if plan.has_order:
            orders.extend(pdf[ORDER_IN].tolist())
    return _events(keys, times, values, orders if plan.has_order else None)


def _keys(plan: Plan, texts: list[str], ids: dict[Hashable, bytes],
          known: dict[str, Any] | None = None) -> list[Any]:
    """The driver keys of key JSON ``texts`` (each distinct one decoded once, through
    ``known``); ``ids`` receives each key's id."""
    known = {} if known is None else known
    keys = []
    for kj in texts:
        dk = known.get(kj)
        if dk is None:
            dk = known[kj] = decode_key(plan, kj)
            ids[dk] = kj.encode()
        keys.append(dk)
    return keys


def _events(keys: list[Any], times: list[Any], values: list[Any],
            orders: list[Any] | None) -> list[tuple[Any, Any, Any]]:
    """The events, in ``orders`` order if given (stable; nulls and NaN last)."""
    events = list(zip(keys, times, values))
    if orders is not None and events:
        idx = sorted(range(len(events)), key=lambda i: order_key(orders[i]))
        events = [events[i] for i in idx]
    return events


def run_bucket(plan: Plan, driver: WindowDriver, backend: BucketBackend,
               events: list[tuple[Any, Any, Any]], watermark: int | None) -> Output:
    """The driver over a bucket's events, then its other keys whose timers are due.

    Pre-sliced (``plan.slices``), the events are slice rows that Spark's aggregation let go
    once the watermark passed their slices' ends, so they are behind ``watermark`` by
    construction: the driver takes them against its own watermark (the previous call's,
    which no slice row is behind), then every key of the call moves to the start of the
    slice holding ``watermark`` (:meth:`~adapters.engine.presliced.SliceLayout.closed`)."""
    sliced = plan.slices is not None
    if plan.slices is not None and watermark is not None:
        watermark = plan.slices.layout.closed(watermark)
    out = (driver.process_batch(events, backend, None if sliced else watermark) if events
           else Output())
    if watermark is not None:
        seen = set(out.timers)
        due = [k for k in _due_keys(plan, backend, watermark) if k not in seen]
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


def _due_keys(plan: Plan, backend: BucketBackend, watermark: int) -> Iterator[Any]:
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
            k = decode_key(plan, kid.decode())
            backend.ids[k] = kid
        yield k


def bucket_frame(plan: Plan, backend: BucketBackend, out: Output,
                 texts: dict[int, str] | None = None, schema: Any = None) -> Any:
    """The output of a bucket's call as one pandas frame (``None`` if empty): packed
    (one row, :mod:`spark_adapter._packed`) of the Arrow ``schema`` when the plan is typed,
    else JSON rows of :data:`~spark_adapter._runtime.WIDE_SCHEMA`."""
    parts: dict[Any, Output] = {}
    for row in out.rows:
        parts.setdefault(row["key"], Output()).rows.append(row)
    for ev in out.late:
        parts.setdefault(ev.key, Output()).late.append(ev)
    typed_keys = plan.typed is not None and plan.typed.keys is not None
    cols: dict[str, list[Any]] | None = None
    for key, part in parts.items():
        c = wide_columns(plan, key if typed_keys else backend.ids[key].decode(), part, texts)
        if c is None:
            continue
        if cols is None:
            cols = c
        else:
            for name, values in c.items():
                cols[name].extend(values)
    if cols is None:
        return None
    if plan.typed is not None:
        return packed_frame(arrow_table(plan, schema, cols))
    return pandas_frame(cols)


class BucketProcessor:
    """Feeds a bucket's keys to the driver together; one event-time timer per bucket.
    The methods of the ``StatefulProcessor`` that :func:`make_bucket_processor` makes (it
    adds Spark's base class, which only the streaming extras provide)."""

    def __init__(self, plan: Plan, buckets: int) -> None:
        self.plan, self.buckets = plan, buckets

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.meta = handle.getValueState(BMETA_STATE, BMETA_SCHEMA)
        self.log = handle.getListState(BLOG_STATE, BLOG_SCHEMA)
        self.driver = driver_for(self.plan)
        self.schema = None if self.plan.typed is None else arrow_schema(self.plan)

    def _call(self, frames: Any, timer_values: Any, fired_at: int | None) -> Iterator[Any]:
        """One call for the bucket: its new events (``frames``), or the bucket's timer
        that fired at ``fired_at``."""
        wm = timer_values.getCurrentWatermarkInMs()
        watermark = wm if wm > 0 else fired_at  # Spark reports 0 before the first one
        ids: dict[Hashable, bytes] = {}
        texts: dict[int, str] = {}
        events = bucket_events(self.plan, frames, ids, texts) if frames is not None else []
        backend = BucketBackend(self.meta, self.log, self.buckets, ids)
        if fired_at is not None:  # Spark dropped the timer that fired
            backend.bucket.timer = None
            backend.changed()
        out = run_bucket(self.plan, self.driver, backend, events, watermark)
        self._arm(backend)
        backend.flush()
        frame = bucket_frame(self.plan, backend, out, texts, self.schema)
        if frame is not None:
            yield frame

    def _arm(self, backend: BucketBackend) -> None:
        """One timer per bucket: the earliest of its keys' timers."""
        b = backend.bucket
        timers = [r.timer for r in b.keys.values() if r.timer is not None]
        want = int(min(timers)) if timers else None
        change = rearm(want, () if b.timer is None else (b.timer,))
        if change is None:
            return
        change.carry_out(self.handle.deleteTimer, self.handle.registerTimer)
        b.timer = want
        backend.changed()

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Iterator[Any]:
        # Parameter names are fixed by Spark (it calls them with keywords).
        yield from self._call(rows, timerValues, None)

    def handleExpiredTimer(self, key: Any, timerValues: Any,
                           expiredTimerInfo: Any) -> Iterator[Any]:
        yield from self._call(None, timerValues, expiredTimerInfo.getExpiryTimeInMs())

    def close(self) -> None:
        pass


def make_bucket_processor(plan: Plan, buckets: int) -> Any:
    """The :class:`StatefulProcessor` of the bucket layout (built lazily so that importing
    this module does not need the streaming extras)."""
    from pyspark.sql.streaming import StatefulProcessor

    class SwagBucketProcessor(BucketProcessor, StatefulProcessor):
        """Feeds a bucket's keys to the driver together; one event-time timer per bucket."""

    return SwagBucketProcessor(plan, buckets)
