"""What runs in the Spark Python workers: the state mapping, the stateful processor
(streaming, ``transformWithStateInPandas``) and the grouped function (batch,
``applyInArrow``). Translation only: every decision about windows, lateness and state
lives in :class:`adapters.WindowDriver`.

The rows between Spark and Python are :mod:`adapters.engine.columns`' (built by
:mod:`spark_adapter.api`):

* streaming, bucket layout: typed rows as in batch, except that the keys are always
  ``swag_k`` JSON text, packed per bucket into Arrow IPC rows and back
  (:mod:`spark_adapter._packed`);
* streaming, per-key layout and pre-sliced (pandas frames, :data:`WIDE_SCHEMA` out): the
  keys and the values as JSON text;
* batch (Arrow tables, :func:`batch_schema` out): the keys typed if every key column has a
  scalar type, each scalar value column typed, the others (arrays, structs) as JSON;
* batch, pre-sliced (:mod:`spark_adapter._presliced`): the same key columns, ``swag_t`` the
  slice start and the per-slice partials: one row per key and slice.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from adapters import Output, Query, QueryPlan, WindowDriver
from adapters.engine import columns
from adapters.engine.columns import (
    AGGS_OUT,
    END_OUT,
    EVENT_OUT,
    KEY_OUT,
    ORDER_IN,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
    WINDOW_OUT,
    Typed,
    decode_key,
    json_values,
    order_key,
    time_value,
    wide_columns,
)
from adapters.engine.columns import arrow_values as arrow_values  # spark_adapter._buckets
from adapters.engine.segment_log import SegmentLogPairsState, SegmentLogState
from adapters.engine.timers import rearm

from ._presliced import SlicePlan
from ._types import SparkTypeError

#: Names of the state variables (part of the checkpoint format: do not rename).
META_STATE = "swag_meta"
LOG_STATE = "swag_log"
META_SCHEMA = "m binary"
LOG_SCHEMA = "seg binary"
#: The pair map of the KVS layout (``MapState``; declared when the driver's plan offers it,
#: :func:`declares_pairs`).
PAIRS_STATE = "swag_pairs"
PAIRS_KEY_SCHEMA = "slot long"
PAIRS_VALUE_SCHEMA = "pair binary"


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
    #: repairs what ``json.loads`` makes of the JSON value columns (``None``: nothing to do)
    value_fixer: Callable[[Any], Any] | None
    agg_encoders: dict[str, Callable[[Any], Any]]
    #: the value columns that travel as JSON text (``swag_v``), in order
    json_values: tuple[str, ...]
    #: the aggregates that travel as JSON text (``_swag_aggs``), in order
    json_aggs: tuple[str, ...]
    has_order: bool
    #: the typed columns (batch, and packed streaming); ``None``: JSON rows
    typed: Typed | None = None
    max_cached_keys: int | None = 100_000
    #: batch pre-slicing (:mod:`spark_adapter._presliced`): the input is one row per key and
    #: slice, and the driver runs ``slices.query``; ``None``: one row per event
    slices: SlicePlan | None = None
    #: the driver's plan of the query on this call (``None``: no OVER kernel, no pair map)
    route: QueryPlan | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


class SparkPairMap:
    """:class:`adapters.state.pairs.PairMap` over a ``MapState`` ``swag_pairs``
    (``slot long`` -> ``pair binary``) of the current grouping key.

    One per driver, not per task: the driver's cached KVS structures keep the pair map they
    were built with across micro-batches, while each task's processor has its own
    ``MapState`` (a connection of that task). So the processor binds (:meth:`bind`) its
    ``MapState`` before every call into the driver, and a cached structure only touches the
    map inside a call for its own key (Spark sets that key on the JVM side). Each element is
    one JVM round trip (PySpark 4.3 has no batched map calls); the driver reads the few
    pairs a call needs and writes at most a buffer's worth per call.
    """

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: Any = None

    def bind(self, map_state: Any) -> None:
        """Direct the calls to ``map_state`` (the running task's)."""
        self._map = map_state

    def get_many(self, keys: Sequence[int]) -> list[bytes | None]:
        get = self._map.getValue
        out: list[bytes | None] = []
        for k in keys:
            row = get((k,))
            out.append(None if row is None else bytes(row[0]))
        return out

    def put_many(self, items: Sequence[tuple[int, bytes]]) -> None:
        update = self._map.updateValue
        for k, v in items:
            update((k,), (v,))

    def delete_many(self, keys: Sequence[int]) -> None:
        remove = self._map.removeKey
        for k in keys:
            remove((k,))


_DRIVERS: OrderedDict[str, tuple[WindowDriver, SparkPairMap]] = OrderedDict()


def _driver_entry(plan: Plan) -> tuple[WindowDriver, SparkPairMap]:
    entry = _DRIVERS.get(plan.token)
    if entry is None:
        query = plan.query if plan.slices is None else plan.slices.query
        entry = (WindowDriver(query, max_cached_keys=plan.max_cached_keys,
                              time_field=plan.time_name), SparkPairMap())
        _DRIVERS[plan.token] = entry
        while len(_DRIVERS) > 8:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(plan.token)
    return entry


def driver_for(plan: Plan) -> WindowDriver:
    """The worker process's driver for ``plan`` (created on first use)."""
    return _driver_entry(plan)[0]


def decode_events(plan: Plan, frames: Any,
                  texts: dict[int, str] | None = None) -> list[tuple[Any, Any]]:
    """Streaming: ``(time, value)`` events from pandas frames of ``swag_t, swag_v[, swag_o]``,
    in arrival order (or ``swag_o`` order when the plan has an order-by column). ``texts``,
    if given, receives ``id(value) -> JSON text`` so that :func:`wide_columns` can send an
    event of this call back without serializing it again (the values stay alive, held by
    the returned list, while the ids are used)."""
    events: list[tuple[Any, Any]] = []
    orders: list[Any] = []
    for pdf in frames:
        times = pdf[TIME_IN].tolist()
        if not plan.time_is_string:
            times = [time_value(t) for t in times]
        events.extend(zip(times, json_values(plan, pdf[VALUE_IN].tolist(), texts)))
        if plan.has_order:
            orders.extend(pdf[ORDER_IN].tolist())
    if plan.has_order and events:
        # stable sort by the order-by column, nulls last
        idx = sorted(range(len(events)), key=lambda i: order_key(orders[i]))
        events = [events[i] for i in idx]
    return events


def pandas_frame(cols: dict[str, list[Any]]) -> Any:
    """Streaming: :func:`wide_columns` (JSON layout) as one pandas frame of
    :data:`WIDE_SCHEMA`."""
    import pandas as pd

    return pd.DataFrame({
        KEY_OUT: cols[KEY_OUT],
        WINDOW_OUT: pd.array(cols[WINDOW_OUT], dtype="int32"),
        START_OUT: pd.array(cols[START_OUT], dtype="Int64"),
        END_OUT: pd.array(cols[END_OUT], dtype="Int64"),
        TIME_OUT: pd.array(cols[TIME_OUT], dtype="Int64"),
        EVENT_OUT: cols[EVENT_OUT],
        AGGS_OUT: cols[AGGS_OUT],
    })


def encode_output(plan: Plan, key_json: str, out: Output,
                  texts: dict[int, str] | None = None) -> Any:
    """Streaming: the driver's output as one pandas frame of :data:`WIDE_SCHEMA` (``None`` if
    empty). ``texts``: JSON texts of this call's event values (see :func:`decode_events`)."""
    cols = wide_columns(plan, key_json, out, texts)
    return None if cols is None else pandas_frame(cols)


def batch_schema(plan: Plan) -> StructType:
    """Batch: the schema of the grouped function's output (see the module docstring)."""
    typed = plan.typed
    assert typed is not None
    fields = [StructField(WINDOW_OUT, IntegerType()), StructField(START_OUT, LongType()),
              StructField(END_OUT, LongType()), StructField(TIME_OUT, LongType())]
    if typed.keys is None:
        fields.append(StructField(KEY_OUT, StringType()))
    else:
        fields += [StructField(f"{KEY_OUT}{i}", t) for i, t in enumerate(typed.keys)]
    fields += [StructField(f"{TYPED_EVENT_OUT}{i}", t) for i, (_, t) in enumerate(typed.values)]
    if plan.json_values:
        fields.append(StructField(EVENT_OUT, StringType()))
    fields += [StructField(f"{TYPED_AGG_OUT}{i}", t) for i, (_, t) in enumerate(typed.aggs)]
    if plan.json_aggs:
        fields.append(StructField(AGGS_OUT, StringType()))
    return StructType(fields)


def arrow_schema(plan: Plan) -> Any:
    """The Arrow form of :func:`batch_schema` (Spark's string and binary types)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    assert plan.typed is not None
    return to_arrow_schema(batch_schema(plan), timezone="UTC",
                           prefers_large_types=plan.typed.large_var_types)


def arrow_table(plan: Plan, schema: Any, cols: dict[str, list[Any]]) -> Any:
    """Batch: :func:`adapters.engine.columns.arrow_table` of :func:`batch_schema`'s Arrow
    form, a misfit value raising :class:`SparkTypeError`."""
    return columns.arrow_table(plan, schema, cols, SparkTypeError)


# ----------------------------------------------------------------------------- streaming
def declares_pairs(plan: Plan) -> bool:
    """Whether the per-key processor declares the pair map state (the driver's plan says
    whether the query can use the KVS layout, :attr:`adapters.QueryPlan.pair_map`)."""
    return plan.route is not None and plan.route.pair_map


class KeyProcessor:
    """Feeds each key's micro-batch to the driver; one event-time timer per key.
    The methods of the ``StatefulProcessor`` that :func:`make_processor` makes (it adds
    Spark's base class, which only the streaming extras provide)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.with_pairs = declares_pairs(plan)

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.meta = handle.getValueState(META_STATE, META_SCHEMA)
        self.log = handle.getListState(LOG_STATE, LOG_SCHEMA)
        self.driver, self.pairs = _driver_entry(self.plan)
        # A checkpoint written without the map state restores with it: Spark accepts a
        # new state variable (tests/spark/test_kvs_state.py).
        self.pair_state = (handle.getMapState(PAIRS_STATE, PAIRS_KEY_SCHEMA,
                                              PAIRS_VALUE_SCHEMA)
                           if self.with_pairs else None)

    def _state(self) -> SegmentLogState:
        # the key's meta (ValueState swag_meta) and log (ListState swag_log of segments)
        if self.pair_state is None:
            return SegmentLogState(self.meta, self.log)
        self.pairs.bind(self.pair_state)
        return SegmentLogPairsState(self.meta, self.log, self.pairs)

    def _watermark(self, timer_values: Any) -> int | None:
        # Spark reports 0 before the first watermark exists (and its watermarks never go
        # below 0): treat it as "no watermark yet".
        wm = timer_values.getCurrentWatermarkInMs()
        return wm if wm > 0 else None

    def _timer(self, dkey: Any, out: Output) -> None:
        # Parameter names of handleExpiredTimer/handleInputRows are fixed by Spark (it
        # calls them with keywords). One timer per key (adapters.engine.timers); Spark
        # fires at watermark >= T and its watermark means the driver's, so T = N.
        want = out.timers.get(dkey)
        change = rearm(None if want is None else int(want), list(self.handle.listTimers()))
        if change is not None:
            change.carry_out(self.handle.deleteTimer, self.handle.registerTimer)

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Iterator[Any]:
        key_json = key[0]
        dkey = decode_key(self.plan, key_json)
        texts: dict[int, str] = {}
        events = decode_events(self.plan, rows, texts)
        state = self._state()
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
        state = self._state()
        out = self.driver.advance_watermark(dkey, wm, state)
        self._timer(dkey, out)
        frame = encode_output(self.plan, key_json, out)
        if frame is not None:
            yield frame

    def close(self) -> None:
        pass


def make_processor(plan: Plan) -> Any:
    """The :class:`StatefulProcessor` for ``transformWithStateInPandas`` (built lazily so
    that importing this module does not need the streaming extras)."""
    from pyspark.sql.streaming import StatefulProcessor

    class SwagProcessor(KeyProcessor, StatefulProcessor):
        """Feeds each key's micro-batch to the driver; one event-time timer per key."""

    return SwagProcessor(plan)
