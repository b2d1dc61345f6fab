"""What runs in the Spark Python workers: the state mapping, the stateful processor
(streaming, ``transformWithStateInPandas``) and the grouped function (batch,
``applyInPandas``). Translation only: every decision about windows, lateness and state
lives in :class:`adapters.WindowDriver`.

Rows between Spark and Python (built by :mod:`spark_adapter.api`):

* input: ``swag_k`` (the key columns as JSON text, also the grouping column), ``swag_t``
  (event time: long ms, or the raw string for string time columns), ``swag_v`` (the value
  columns as JSON text) and optionally ``swag_o`` (the order-by column). No leading
  underscores: ``transformWithStateInPandas`` (4.3) rebuilds its input frames from
  ``itertuples()`` namedtuples, which rename such columns to ``_0``, ``_1``, ...;
* output (:data:`WIDE_SCHEMA`): one row per emitted window row, per-event row or late event.
"""

from __future__ import annotations

import json
import math
import struct
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters import END_OF_INPUT, MemoryKeyState, Output, Query, WindowDriver
from adapters.state import LogEntry

#: Output of the Python side (window index -1 marks a late event).
WIDE_SCHEMA = ("_swag_k string, _swag_w int, _swag_start long, _swag_end long, "
               "_swag_time long, _swag_event string, _swag_aggs string")
WIDE_COLUMNS = ("_swag_k", "_swag_w", "_swag_start", "_swag_end", "_swag_time", "_swag_event",
                "_swag_aggs")
LATE = -1

#: Names of the state variables (part of the checkpoint format: do not rename).
META_STATE = "swag_meta"
LOG_STATE = "swag_log"
META_SCHEMA = "m binary"
LOG_SCHEMA = "seg binary"


@dataclass
class Plan:
    """Everything the workers need, pickled with the processor / function.

    ``token`` identifies one plan (one ``sliding_aggregate`` call): workers keep one
    :class:`WindowDriver` per token, so its structure cache survives across micro-batches.
    """

    query: Query
    key_names: tuple[str, ...]
    time_name: str
    time_is_string: bool
    value_fixer: Callable[[Any], Any] | None
    agg_encoders: dict[str, Callable[[Any], Any]]
    agg_names: tuple[str, ...]
    has_order: bool
    max_cached_keys: int | None = 100_000
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


_DRIVERS: OrderedDict[str, WindowDriver] = OrderedDict()


def driver_for(plan: Plan) -> WindowDriver:
    """The worker process's driver for ``plan`` (created on first use)."""
    d = _DRIVERS.get(plan.token)
    if d is None:
        d = WindowDriver(plan.query, max_cached_keys=plan.max_cached_keys,
                         time_field=plan.time_name)
        _DRIVERS[plan.token] = d
        while len(_DRIVERS) > 8:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(plan.token)
    return d


# ----------------------------------------------------------------------------- decoding
def decode_key(plan: Plan, key_json: str) -> Any:
    """The driver's key: the single key column's value, or a tuple of them."""
    obj = json.loads(key_json)
    if len(plan.key_names) == 1:
        return obj[plan.key_names[0]]
    return tuple(obj[n] for n in plan.key_names)


def _time_value(t: Any) -> Any:
    # pandas gives float64 (NaN for null) for a long column with nulls.
    if type(t) is float:
        if math.isnan(t):
            return None
        return int(t) if t.is_integer() else t
    return t


def _order_key(x: Any) -> tuple[int, Any]:
    if x is None or x != x:  # null (None or NaN)
        return (1, 0)
    return (0, x)


def decode_events(plan: Plan, frames: Any,
                  texts: dict[int, str] | None = None) -> list[tuple[Any, Any]]:
    """``(time, value)`` events from pandas frames of ``swag_t, swag_v[, swag_o]``, in
    arrival order (or ``swag_o`` order when the plan has an order-by column). ``texts``, if
    given, receives ``id(value) -> JSON text`` so that :func:`encode_output` can send an
    event of this call back without serializing it again (the values stay alive, held by
    the returned list, while the ids are used)."""
    loads, fix = json.loads, plan.value_fixer
    events: list[tuple[Any, Any]] = []
    orders: list[Any] = []
    for pdf in frames:
        times = pdf["swag_t"].tolist()
        texts_in = pdf["swag_v"].tolist()
        if not plan.time_is_string:
            times = [_time_value(t) for t in times]
        values = [loads(v) for v in texts_in] if fix is None else [
            fix(loads(v)) for v in texts_in]
        events.extend(zip(times, values))
        if texts is not None:
            texts.update(zip(map(id, values), texts_in))
        if plan.has_order:
            orders.extend(pdf["swag_o"].tolist())
    if plan.has_order and events:
        # stable sort by the order-by column, nulls last
        idx = sorted(range(len(events)), key=lambda i: _order_key(orders[i]))
        events = [events[i] for i in idx]
    return events


# ----------------------------------------------------------------------------- encoding
def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def encode_output(plan: Plan, key_json: str, out: Output,
                  texts: dict[int, str] | None = None) -> Any:
    """The driver's output as one pandas frame of :data:`WIDE_SCHEMA` (``None`` if empty).
    ``texts``: JSON texts of this call's event values (see :func:`decode_events`)."""
    import pandas as pd

    rows, late = out.rows, out.late
    if not rows and not late:
        return None
    n = len(rows) + len(late)
    w: list[int] = []
    start: list[Any] = []
    end: list[Any] = []
    time: list[Any] = []
    event: list[Any] = []
    aggs: list[Any] = []
    names, encoders = plan.agg_names, plan.agg_encoders
    known = texts or {}
    for row in rows:
        w.append(row["window"])
        if "event" in row:
            start.append(None)
            end.append(None)
            time.append(row["time"])
            ev_value = row["event"]
            text = known.get(id(ev_value))
            event.append(_dumps(ev_value) if text is None else text)
        else:
            start.append(row["start"])
            end.append(row["end"])
            time.append(None)
            event.append(None)
        values = {}
        for name in names:
            v = row[name]
            enc = encoders.get(name)
            values[name] = v if enc is None else enc(v)
        aggs.append(_dumps(values))
    for ev in late:
        w.append(LATE)
        start.append(None)
        end.append(None)
        time.append(ev.time)
        text = known.get(id(ev.value))
        event.append(_dumps(ev.value) if text is None else text)
        aggs.append(None)
    return pd.DataFrame({
        "_swag_k": [key_json] * n,
        "_swag_w": pd.array(w, dtype="int32"),
        "_swag_start": pd.array(start, dtype="Int64"),
        "_swag_end": pd.array(end, dtype="Int64"),
        "_swag_time": pd.array(time, dtype="Int64"),
        "_swag_event": event,
        "_swag_aggs": aggs,
    })


# ----------------------------------------------------------------------------- state
_SEGMENT = struct.Struct(">4sBqqI")   # magic, version, min time, max time, entry count
_ENTRY = struct.Struct(">qqI")        # time, seq, data length (then the data bytes)
_MAGIC = b"SWGL"
SEGMENT_VERSION = 1


def encode_segment(entries: Sequence[LogEntry]) -> bytes:
    """Log entries as one binary segment (see :class:`SparkKeyState`)."""
    times = [e[0] for e in entries]
    parts = [_SEGMENT.pack(_MAGIC, SEGMENT_VERSION, min(times), max(times), len(entries))]
    pack = _ENTRY.pack
    for t, s, d in entries:
        parts.append(pack(t, s, len(d)))
        parts.append(d)
    return b"".join(parts)


def segment_range(blob: bytes) -> tuple[int, int]:
    """``(min time, max time)`` of a segment, from its header."""
    magic, version, lo, hi, _ = _SEGMENT.unpack_from(blob, 0)
    if magic != _MAGIC or version != SEGMENT_VERSION:
        from adapters import StateError
        raise StateError(f"swag event-log segment with magic {magic!r} version {version}: "
                         f"not written by this version of spark_adapter")
    return lo, hi


def decode_segment(blob: bytes) -> list[LogEntry]:
    """Inverse of :func:`encode_segment` (plain struct unpacking: no code runs)."""
    segment_range(blob)
    n = _SEGMENT.unpack_from(blob, 0)[4]
    pos = _SEGMENT.size
    unpack, size = _ENTRY.unpack_from, _ENTRY.size
    out = []
    for _ in range(n):
        t, s, length = unpack(blob, pos)
        pos += size
        out.append((t, s, blob[pos:pos + length]))
        pos += length
    if pos != len(blob):
        from adapters import StateError
        raise StateError(f"corrupt swag event-log segment ({len(blob)} bytes, {n} entries)")
    return out


class SparkKeyState:
    """:class:`adapters.KeyState` over one key's Spark state variables.

    * meta: ``ValueState`` ``swag_meta`` (``m binary``): the driver's metadata bytes;
    * event log: ``ListState`` ``swag_log`` (``seg binary``) of *segments*: each
      ``add_events`` call (one per key and micro-batch) appends one element holding all its
      entries, packed as a header (``b"SWGL"``, version 1, min time, max time, count; big
      endian) followed by ``(time: int64, seq: int64, length: uint32, data)`` per entry.
      ``remove_events`` drops the segments entirely before ``before``, rewrites the one(s)
      straddling it and keeps the others as they are.

    Why not one state entry per event (a ``MapState`` keyed by ``seq``): each element of a
    PySpark state call is pickled, sent to the JVM and written to RocksDB one by one, about
    0.2-0.4 ms per element on this machine, which capped the main job at ~1,000 events/s;
    with segments a micro-batch costs a few calls per key whatever its size.
    """

    __slots__ = ("_log", "_meta")

    def __init__(self, meta: Any, log: Any) -> None:
        self._meta = meta
        self._log = log

    def get_meta(self) -> bytes | None:
        row = self._meta.get()
        if row is None:
            return None
        return bytes(row[0])

    def put_meta(self, data: bytes) -> None:
        self._meta.update((data,))

    def add_events(self, entries: Sequence[LogEntry]) -> None:
        if entries:
            self._log.appendValue((encode_segment(entries),))

    def read_events(self) -> Iterator[LogEntry]:
        for row in self._log.get():
            yield from decode_segment(bytes(row[0]))

    def remove_events(self, before: int, keys: Sequence[tuple[int, int]]) -> None:
        if not keys:
            return
        kept: list[tuple[bytes]] = []
        changed = False
        for row in self._log.get():
            blob = bytes(row[0])
            lo, hi = segment_range(blob)
            if lo >= before:
                kept.append((blob,))
            elif hi < before:
                changed = True
            else:
                survivors = [e for e in decode_segment(blob) if e[0] >= before]
                kept.append((encode_segment(survivors),))
                changed = True
        if not changed:
            return
        if kept:
            self._log.put(kept)
        else:
            self._log.clear()


# ----------------------------------------------------------------------------- streaming
def make_processor(plan: Plan) -> Any:
    """The :class:`StatefulProcessor` for ``transformWithStateInPandas`` (built lazily so
    that importing this module does not need the streaming extras)."""
    from pyspark.sql.streaming import StatefulProcessor

    class SwagProcessor(StatefulProcessor):
        """Feeds each key's micro-batch to the driver; one event-time timer per key."""

        def __init__(self, plan: Plan) -> None:
            self.plan = plan

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.meta = handle.getValueState(META_STATE, META_SCHEMA)
            self.log = handle.getListState(LOG_STATE, LOG_SCHEMA)
            self.driver = driver_for(self.plan)

        def _watermark(self, timer_values: Any) -> int | None:
            # Spark reports 0 before the first watermark exists (and its watermarks never go
            # below 0): treat it as "no watermark yet".
            wm = timer_values.getCurrentWatermarkInMs()
            return wm if wm > 0 else None

        def _timer(self, dkey: Any, out: Output) -> None:
            # Parameter names of handleExpiredTimer/handleInputRows are fixed by Spark (it
            # calls them with keywords). One timer per key: replace the old one.
            want = out.timers.get(dkey)
            have = list(self.handle.listTimers())
            for t in have:
                if t != want:
                    self.handle.deleteTimer(t)
            if want is not None and want not in have:
                self.handle.registerTimer(int(want))

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Iterator[Any]:
            key_json = key[0]
            dkey = decode_key(self.plan, key_json)
            texts: dict[int, str] = {}
            events = decode_events(self.plan, rows, texts)
            state = SparkKeyState(self.meta, self.log)
            out = self.driver.process(dkey, events, state, watermark=self._watermark(timerValues))
            self._timer(dkey, out)
            frame = encode_output(self.plan, key_json, out, texts)
            if frame is not None:
                yield frame

        def handleExpiredTimer(self, key: Any, timerValues: Any,
                               expiredTimerInfo: Any) -> Iterator[Any]:
            key_json = key[0]
            dkey = decode_key(self.plan, key_json)
            wm = self._watermark(timerValues)
            if wm is None:  # cannot happen: a timer fires only once the watermark passed it
                wm = expiredTimerInfo.getExpiryTimeInMs()
            state = SparkKeyState(self.meta, self.log)
            out = self.driver.advance_watermark(dkey, wm, state)
            self._timer(dkey, out)
            frame = encode_output(self.plan, key_json, out)
            if frame is not None:
                yield frame

        def close(self) -> None:
            pass

    return SwagProcessor(plan)


# ----------------------------------------------------------------------------- batch
def make_batch_function(plan: Plan) -> Callable[[Any], Any]:
    """The ``applyInPandas`` function: one key's whole input, released at end of input."""
    import pandas as pd

    empty = pd.DataFrame({c: [] for c in WIDE_COLUMNS})

    def swag_batch(pdf: Any) -> Any:
        if len(pdf) == 0:
            return empty
        key_json = pdf["swag_k"].iat[0]
        driver = driver_for(plan)
        dkey = decode_key(plan, key_json)
        texts: dict[int, str] = {}
        events = decode_events(plan, [pdf], texts)
        state = MemoryKeyState(strict=False)
        try:
            out = driver.process(dkey, events, state)
            out.extend(driver.advance_watermark(dkey, END_OF_INPUT, state))
        finally:
            driver.drop_cache(dkey)
        frame = encode_output(plan, key_json, out, texts)
        return empty if frame is None else frame

    return swag_batch
