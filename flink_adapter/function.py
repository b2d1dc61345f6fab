"""The ``KeyedProcessFunction`` behind :func:`flink_adapter.sliding_aggregate`.

It only translates between Flink and :class:`adapters.WindowDriver`:

* ``process_element``: the event time (the element's timestamp, or the ``time`` field or
  function) and the value go to ``driver.process`` with the operator's current watermark
  (``W = wm + 1``, :mod:`flink_adapter._time`); late events go to the late ``OutputTag``
  (when there is one) and the ``swag.late_events`` counter.
* **One live event-time timer per key**, kept at the driver's next timer ``N`` (registered at
  ``N - 1``): its time is held in the ``swag_timer`` value state, so a new target deletes the
  old registration first. A firing calls ``driver.advance_watermark`` with the current
  watermark, which at the end of bounded input (or in batch execution, where each key's
  timers fire after its elements) is ``Long.MAX_VALUE``: everything left is released at once.
* State: :class:`flink_adapter.state.FlinkKeyState` over managed keyed state (declared per
  execution mode: :mod:`flink_adapter.state`).

Rows leave as ``Row`` objects in the declared output order (:mod:`flink_adapter._types`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pyflink.datastream import KeyedProcessFunction, OutputTag, RuntimeContext

from adapters import BadEventError, EngineFacts, WindowDriver
from adapters.engine.event_time import time_extractor
from adapters.engine.timers import rearm

from . import _time
from ._types import OutputLayout
from .state import (
    MISSING,
    FlinkKeyState,
    KeyCache,
    log_descriptor,
    meta_descriptor,
    pairs_descriptor,
    runs_embedded,
    timer_descriptor,
)

#: Metric group of the adapter's counters (``late_events``, ``rows``).
METRICS_GROUP = "swag"
#: What the adapter tells the driver's planner (:meth:`adapters.WindowDriver.plan`): one
#: key per call, and each key's state offers a pair map (``swag_pairs``, the KVS layout).
FACTS = EngineFacts("flink", streaming=True, calls=EngineFacts.PER_KEY,
                    state="keyed state per key (meta, log, timer, pair map)", pair_maps=True)


class SwagProcessFunction(KeyedProcessFunction):
    """Exact window aggregates of one query, per key, over managed keyed state.

    Args:
        query: the driver's query dict (``adapters.parse_query`` form), already validated.
        layout: how driver values and rows map to Flink ``Row`` objects.
        late_tag: the id of the side output of late elements (the original input elements;
            the Python side only needs the id, and a typed ``OutputTag`` holds Java objects
            that cannot be pickled), or ``None``: late elements are only counted. Give a tag
            only when the job reads that side output: in thread mode PyFlink 2.3 passes a
            side output no operator reads into the main output, as ``(tag, element)``.
        time: ``None`` (the element's timestamp), a field name, or a function
            ``element -> time`` (int ms, ``datetime``, ``Instant``).
        algorithm, max_cached_keys: passed to the driver.
    """

    def __init__(self, query: dict[str, Any], layout: OutputLayout, late_tag: str | None, *,
                 time: str | Callable[[Any], Any] | None = None,
                 algorithm: str | None = None, max_cached_keys: int | None = None) -> None:
        self._query = query
        self._layout = layout
        self._late_tag_id = late_tag
        self._time = time
        self._algorithm = algorithm
        self._max_cached_keys = max_cached_keys

    # ------------------------------------------------------------------ lifecycle
    def open(self, runtime_context: RuntimeContext) -> None:
        time_field = self._time if isinstance(self._time, str) else "timestamp"
        self._driver = WindowDriver(self._query, algorithm=self._algorithm,
                                    max_cached_keys=self._max_cached_keys,
                                    time_field=time_field)
        embedded = runs_embedded(runtime_context)  # thread mode declares bytes differently
        pairs = (runtime_context.get_map_state(pairs_descriptor(embedded))
                 if self._driver.plan(FACTS).pair_map else None)
        self._state = FlinkKeyState(runtime_context.get_state(meta_descriptor(embedded)),
                                    runtime_context.get_map_state(log_descriptor(embedded)),
                                    pairs)
        self._timer = runtime_context.get_state(timer_descriptor())
        self._armed = KeyCache()  # copy of swag_timer: one state read less per element
        self._extract = (None if self._time is None else
                         time_extractor(self._time, self._layout.read, _time.to_ms))
        self._late_tag = None if self._late_tag_id is None else OutputTag(self._late_tag_id)
        group = runtime_context.get_metrics_group().add_group(METRICS_GROUP)
        self._late_counter = group.counter("late_events")
        self._rows_counter = group.counter("rows")

    # ------------------------------------------------------------------ element and timer
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        key = ctx.get_current_key()
        driver, layout = self.driver_for(key)
        time = self.event_time(key, value, ctx)
        self._state.key = key
        out = driver.process(key, ((time, layout.to_driver(key, value)),), self._state,
                             watermark=self.watermark(ctx))
        self._arm(ctx, key, out.next_timer, fired=False)
        if out.late:
            self._late_counter.inc(len(out.late))
            if self._late_tag is not None:
                yield self._late_tag, value
        yield from self._emit(out.rows, layout)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
                 ) -> Iterator[Any]:
        key = ctx.get_current_key()
        w = self.watermark(ctx)
        if w is None or w < timestamp + 1:
            w = timestamp + 1  # the firing itself proves wm >= timestamp
        yield from self.fire(ctx, key, w)

    def fire(self, ctx: Any, key: Any, w: int | float) -> Iterator[Any]:
        """Advance ``key`` to the driver watermark ``w`` (its armed timer is due) and emit."""
        driver, layout = self.driver_for(key)
        self._state.key = key
        out = driver.advance_watermark(key, w, self._state)
        self._arm(ctx, key, out.next_timer, fired=True)
        return self._emit(out.rows, layout)

    # ------------------------------------------------------------------ mappings
    def driver_for(self, key: Any) -> tuple[WindowDriver, OutputLayout]:
        """The driver and output layout serving ``key`` (one query: always the same)."""
        return self._driver, self._layout

    def watermark(self, ctx: Any) -> int | float | None:
        """The driver's watermark for the operator's current Flink watermark."""
        return _time.driver_watermark(ctx.timer_service().current_watermark())

    def event_time(self, key: Any, value: Any, ctx: Any) -> Any:
        """The event time of an input element, as the driver parses it."""
        if self._extract is None:
            ts = ctx.timestamp()
            if ts is None or ts <= _time.LONG_MIN:  # a record without a timestamp
                raise BadEventError(
                    f"key {key!r}: the element has no event timestamp; assign timestamps "
                    f"(watermark=..., or assign_timestamps_and_watermarks) or pass "
                    f"time=<field or function>", key=key, field="timestamp", time=None)
            return ts
        return self._extract(key, value)

    def armed_timer(self, key: Any) -> int | None:
        """The event-time timer ``key`` (the current key) has registered, if any."""
        armed = self._armed.get(key)
        if armed is MISSING:
            armed = self._timer.value()
            self._armed.put(key, armed)
        return armed

    def _arm(self, ctx: Any, key: Any, n: int | None, fired: bool) -> None:
        """Keep the key's single event-time timer at the driver's next timer ``n``
        (:func:`adapters.engine.timers.rearm`; the armed time is kept in state and in the
        task's write-through copy)."""
        current = None if fired else self.armed_timer(key)
        change = rearm(_time.timer_for(n), () if current is None else (current,))
        if change is None:
            return
        service = ctx.timer_service()
        change.carry_out(service.delete_event_time_timer, service.register_event_time_timer)
        if change.register is not None:
            self._timer.update(change.register)
        else:
            self._timer.clear()
        self._armed.put(key, change.register)

    def _emit(self, rows: list[dict[str, Any]], layout: OutputLayout) -> Iterator[Any]:
        if not rows:
            return
        self._rows_counter.inc(len(rows))
        to_row = layout.to_row
        for row in rows:
            yield to_row(row)


__all__ = ["METRICS_GROUP", "SwagProcessFunction"]
