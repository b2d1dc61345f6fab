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
(:mod:`adapters.engine.buckets`), and the bucket's rows as columns
(:mod:`adapters.engine.bucket_rows`) are engine-free. This module unpacks and packs Spark's
rows and calls Spark's state and timers.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from adapters.engine.bucket_rows import bucket_columns, bucket_events
from adapters.engine.buckets import BucketBackend, BucketPairs, run_bucket
from adapters.engine.columns import decode_key
from adapters.engine.packed import arrow_frame, unpack_frames
from adapters.engine.timers import rearm
from adapters.engine.worker import Plan, driver_entry

from ._runtime import arrow_schema, arrow_table

BUCKET_IN = "swag_b"
#: Names of the state variables (part of the checkpoint format: do not rename).
BMETA_STATE, BLOG_STATE, BPAIRS_STATE = "swag_bmeta", "swag_blog", "swag_bpairs"
BMETA_SCHEMA, BLOG_SCHEMA = "m binary", "k binary, seg binary"
BPAIRS_KEY_SCHEMA, BPAIRS_VALUE_SCHEMA = "k binary, slot long", "pair binary"


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
        table = unpack_frames(frames) if frames is not None else None
        events = bucket_events(self.plan, table, ids, texts) if table is not None else ()
        if self.pairs is not None:
            self.pairs.bind(self.pair_state)
        backend = BucketBackend(self.meta, self.log, self.buckets, ids,
                                lambda text: decode_key(self.plan, text), self.pairs)
        if fired_at is not None:  # Spark dropped the timer that fired
            backend.bucket.timer = None
            backend.changed()
        out = run_bucket(self.driver, backend, events, watermark, self.plan.slices)
        self._arm(backend)
        backend.flush()
        cols = bucket_columns(self.plan, out, backend.ids, texts)
        if cols is not None:  # the call's output rows, Arrow-backed
            yield arrow_frame(arrow_table(self.plan, self.schema, cols))

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
