"""Streaming with many keys per Python call: the stateful grouping key is a *bucket*
(``pmod(hash(key JSON text), buckets)``, column ``swag_b``) and the real keys travel inside
its rows (``swag_k``, JSON text; the rows packed, :mod:`spark_adapter._packed`). One
``handleInputRows`` call hands the driver every key of its bucket that has events in the
micro-batch (:meth:`adapters.WindowDriver.process_batch`) and advances the bucket's other
due keys (:meth:`~adapters.WindowDriver.advance_keys`); one event-time timer per bucket
(the earliest of its keys' timers).

Why: every state or timer call of a ``transformWithStateInPandas`` processor is a socket
round trip to the JVM (milliseconds each, ``docs/spark.md``); one key per call would make
about seven per key and micro-batch (meta read and write, log append, list/delete/register
timer), which dominated the streaming time when Spark ran that way. Here a bucket's call
makes about five whatever its number of keys.

State of a bucket (the only streaming layout):

* ``swag_bmeta`` (``ValueState``, ``m binary``): one blob
  (:mod:`adapters.state.buckets`: bucket count, registered timer; per key its id (the key's
  JSON text), the driver's metadata bytes, its timer, and its log trim bound);
* ``swag_blog`` (``ListState``, ``k binary, seg binary``): per key and call that accepted
  events one element: the key id and the call's log entries as one segment
  (:mod:`adapters.state.segments`);
* ``swag_bpairs`` (``MapState``, ``k binary, slot long`` -> ``pair binary``), declared when
  the query has an over window (:attr:`adapters.QueryPlan.pair_map`): the KVS layout's pair
  map of every key of the bucket (``Query.layout``, ``docs/adapters.md``, "KVS layout"),
  keyed by the key id and the map key of :mod:`adapters.state.pairs`. A key's per-event
  structure is read from it a few pages at a time, so a worker holds a key's head and tail
  pages, not its window.

The backend over these state variables (trim bounds, rewrites) and the bucket's call
are engine-free: :mod:`adapters.engine.buckets`. This module reads and writes Spark's rows.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from adapters import Output
from adapters.engine.buckets import BucketBackend, BucketPairs, run_bucket
from adapters.engine.columns import (
    KEY_IN,
    ORDER_IN,
    TIME_IN,
    arrow_values,
    decode_key,
    order_key,
    wide_columns,
)
from adapters.engine.timers import rearm

from ._packed import packed_frame, unpack_frames
from ._runtime import Plan, arrow_schema, arrow_table, driver_entry

BUCKET_IN = "swag_b"
#: Names of the state variables (part of the checkpoint format: do not rename).
BMETA_STATE, BLOG_STATE, BPAIRS_STATE = "swag_bmeta", "swag_blog", "swag_bpairs"
BMETA_SCHEMA, BLOG_SCHEMA = "m binary", "k binary, seg binary"
BPAIRS_KEY_SCHEMA, BPAIRS_VALUE_SCHEMA = "k binary, slot long", "pair binary"


# ----------------------------------------------------------------------------- the calls
def bucket_events(plan: Plan, frames: Any, ids: dict[Hashable, bytes],
                  texts: dict[int, str]) -> list[tuple[Any, Any, Any]]:
    """``(key, time, value)`` events of a bucket's packed pandas frames
    (:mod:`spark_adapter._packed`), each key's in arrival order (or ``swag_o`` order, nulls
    last); ``ids`` receives each key's id. Pre-sliced: one event per key and slice, at the
    slice's start, whose value holds the partials."""
    table = unpack_frames(frames)
    if table is None:
        return []
    keys = _keys(plan, table.column(KEY_IN).to_pylist(), ids)
    times = table.column(TIME_IN).to_pylist()
    if plan.slices is not None:
        return list(zip(keys, times, plan.slices.layout.table_values(table, keys)))
    return _events(keys, times, arrow_values(plan, table, texts),
                   table.column(ORDER_IN).to_pylist() if plan.has_order else None)


def _keys(plan: Plan, texts: list[str], ids: dict[Hashable, bytes]) -> list[Any]:
    """The driver keys of key JSON ``texts`` (each distinct one decoded once); ``ids``
    receives each key's id."""
    known: dict[str, Any] = {}
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


def bucket_frame(plan: Plan, backend: BucketBackend, out: Output,
                 texts: dict[int, str] | None = None, schema: Any = None) -> Any:
    """The output of a bucket's call as one packed pandas frame (one row of the Arrow
    ``schema``'s table, :mod:`spark_adapter._packed`; ``None`` if empty)."""
    parts: dict[Any, Output] = {}
    for row in out.rows:
        parts.setdefault(row["key"], Output()).rows.append(row)
    for ev in out.late:
        parts.setdefault(ev.key, Output()).late.append(ev)
    typed_keys = plan.typed.keys is not None
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
    return packed_frame(arrow_table(plan, schema, cols))


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
        self.driver, pairs = driver_entry(self.plan)
        # the pair map whenever the query has an over window, whatever its layout: a key
        # whose structure is in the map keeps it there (kvs_lanes.uses_pairs)
        route = self.plan.route
        self.pair_state = (handle.getMapState(BPAIRS_STATE, BPAIRS_KEY_SCHEMA,
                                              BPAIRS_VALUE_SCHEMA)
                           if route is not None and route.pair_map else None)
        self.pairs: BucketPairs | None = pairs if self.pair_state is not None else None
        self.schema = arrow_schema(self.plan)

    def _call(self, frames: Any, timer_values: Any, fired_at: int | None) -> Iterator[Any]:
        """One call for the bucket: its new events (``frames``), or the bucket's timer
        that fired at ``fired_at``."""
        wm = timer_values.getCurrentWatermarkInMs()
        watermark = wm if wm > 0 else fired_at  # Spark reports 0 before the first one
        ids: dict[Hashable, bytes] = {}
        texts: dict[int, str] = {}
        events = bucket_events(self.plan, frames, ids, texts) if frames is not None else []
        if self.pairs is not None:
            self.pairs.bind(self.pair_state)
        backend = BucketBackend(self.meta, self.log, self.buckets, ids,
                                lambda text: decode_key(self.plan, text), self.pairs)
        if fired_at is not None:  # Spark dropped the timer that fired
            backend.bucket.timer = None
            backend.changed()
        slices = self.plan.slices.layout if self.plan.slices is not None else None
        out = run_bucket(self.driver, backend, events, watermark, slices)
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
