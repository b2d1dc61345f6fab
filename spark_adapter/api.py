"""``sliding_aggregate``: exact sliding, tumbling, per-event (OVER), count and policy windows on
Spark DataFrames, streaming (``transformWithStateInPandas`` with event-time timers, state in
Spark's state store) and batch (``groupBy().applyInArrow``), with one call.

The adapter only translates (columns <-> driver events and rows, driver state <-> Spark
state variables, driver timers <-> Spark timers); :class:`adapters.WindowDriver` does the
rest. See ``docs/spark.md``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from adapters import EngineFacts, Query, QueryPlan, WindowDriver
from adapters.engine.columns import (
    AGGS_OUT,
    END_OUT,
    EVENT_OUT,
    KEY_IN,
    KEY_OUT,
    LATE,
    ORDER_IN,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
    WINDOW_OUT,
    Typed,
    json_fixer,
)
from adapters.engine.fields import call_fields, shipped_fields
from adapters.engine.packed import make_packer
from adapters.engine.rows import OutputColumns, input_source, output_columns
from adapters.engine.worker import Plan
from adapters.query.specs import AggSpec, parse_query
from adapters.query.windows import (
    count_window,
    duration_ms,
    over,
    query_of_call,
    sliding,
    tumbling,
)

from . import _types as T
from ._batch import make_batch_function
from ._buckets import BUCKET_IN, make_bucket_processor
from ._engine_plan import own_plan_rows, with_own_plan
from ._packed import PACKED_IN_SCHEMA
from ._presliced import SlicePlan, null_times_checked, slice_kinds, time_block
from ._runtime import batch_schema
from .session import ROCKSDB

#: Default name of the observed metric of a streaming query (``lastProgress``'s
#: ``observedMetrics``): ``late_events`` and ``rows`` of each micro-batch.
METRIC = "swag"
LATE_ROWS = ("drop", "return", "include")
#: Default number of key buckets of a streaming query (see ``key_buckets``).
KEY_BUCKETS = 16


class SparkConfigError(RuntimeError):
    """The Spark session cannot run the adapter as configured (the message says what to set)."""


# ----------------------------------------------------------------------------- helpers
def _columns(df: DataFrame) -> dict[str, DataType]:
    return {f.name: f.dataType for f in df.schema.fields}


def _time_ms(col: Column, dt: DataType, name: str) -> tuple[Column, bool]:
    """The event time as long ms (or the raw string), and whether it is a string."""
    if isinstance(dt, TimestampType):
        return F.unix_millis(col), False
    if isinstance(dt, T.INTEGRAL):
        return col.cast("long"), False
    if isinstance(dt, StringType):
        return col, True
    raise T.SparkTypeError(
        f"time column {name!r} has type {dt.simpleString()}; use a timestamp, an integral "
        f"column of epoch milliseconds, or a string of epoch milliseconds")


def _restore_time(col: Column, dt: DataType) -> Column:
    if isinstance(dt, TimestampType):
        return F.timestamp_millis(col)
    if isinstance(dt, T.INTEGRAL):
        return col.cast(dt)
    return col


def _json_struct(cols: Sequence[str], types: Mapping[str, DataType], key: bool = False
                 ) -> Column:
    """The columns ``cols`` as the JSON text of a struct (``key``: key columns,
    :func:`spark_adapter._types.to_json_column`)."""
    if not cols:
        return F.lit("{}")
    return F.to_json(F.struct(*[T.to_json_column(F.col(c), types[c], key).alias(c)
                                for c in cols]), {"ignoreNullFields": "false"})


def _typed(df: DataFrame, key_names: Sequence[str], columns: Mapping[str, DataType],
           value_types: Mapping[str, DataType], agg_types: Mapping[str, DataType],
           encoders: Mapping[str, Any]) -> Typed:
    """Which key, value and aggregate columns travel as typed Arrow columns (every one of a
    scalar type; aggregates needing an encoder stay JSON): batch mode, and the packed
    streaming transport (:mod:`spark_adapter._packed`), whose keys come in as JSON text (a
    key's identity in the state and its bucket's hash) and go out typed unless a key column
    is floating-point (the driver's key is what ``json.loads`` makes of the key's JSON text,
    which holds NaN as a string)."""
    keys = None
    streaming = df.isStreaming
    if all(T.is_native(columns[k]) and not (streaming and isinstance(columns[k], T.FLOATING))
           for k in key_names):
        keys = tuple(T.json_type(columns[k], k) for k in key_names)
    return Typed(
        keys=keys,
        values=tuple((c, T.json_type(t, c)) for c, t in value_types.items() if T.is_native(t)),
        aggs=tuple((n, T.json_type(t, n)) for n, t in agg_types.items()
                   if T.is_native(t) and n not in encoders),
        large_var_types=_large_var_types(df), json_keys_in=streaming)


def _large_var_types(df: DataFrame) -> bool:
    """Whether Spark's Arrow string and binary types are the large ones."""
    large = df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
    return str(large).lower() == "true"


def _input_columns(plan: Plan, columns: Mapping[str, DataType], time_col: Column,
                   order_by: str | None) -> tuple[list[Column], list[str]]:
    """The columns the Python side reads (see :mod:`spark_adapter._runtime`) and the
    grouping columns among them."""
    typed = plan.typed
    cols = [time_col.alias(TIME_IN)]
    if typed.keys is None or typed.json_keys_in:
        cols.append(_json_struct(plan.key_names, columns, key=True).alias(KEY_IN))
        group = [KEY_IN]
    else:
        group = [f"{KEY_IN}{i}" for i in range(len(plan.key_names))]
        cols += [T.to_json_column(F.col(k), columns[k], key=True).alias(g)
                 for k, g in zip(plan.key_names, group)]
    if plan.json_values:
        cols.append(_json_struct(plan.json_values, columns).alias(VALUE_IN))
    cols += [T.to_json_column(F.col(c), columns[c]).alias(f"{VALUE_IN}{i}")
             for i, (c, _) in enumerate(typed.values)]
    if order_by is not None:
        cols.append(F.col(order_by).alias(ORDER_IN))
    return cols, group


def _sources(wide: DataFrame, call: _Call) -> tuple[DataFrame, dict[tuple[str, str], Column]]:
    """The Python side's output with its JSON columns parsed, and a column of each output
    source (:class:`adapters.engine.rows.OutputColumns`: ``("key", "")``, ``("field",
    name)``, ...) restored to its Spark type."""
    plan, columns, typed = call.plan, call.columns, call.plan.typed
    json_keys = typed.keys is None
    parsed_cols = []
    if json_keys:
        key_json = StructType([StructField(k, T.json_type(columns[k], k), True)
                               for k in plan.key_names])
        parsed_cols.append(F.from_json(KEY_OUT, key_json).alias("_swag_kp"))
    if plan.json_values:
        parsed_cols.append(F.from_json(EVENT_OUT, call.value_json).alias("_swag_ep"))
    if plan.json_aggs:
        parsed_cols.append(F.from_json(AGGS_OUT, call.agg_json).alias("_swag_ap"))
    parsed = wide.select("*", *parsed_cols)

    def field(typed_names: Sequence[str], prefix: str, json_col: str, name: str) -> Column:
        if name in typed_names:
            return F.col(f"{prefix}{typed_names.index(name)}")
        return F.col(json_col).getField(name)

    keys = [T.restore(F.col("_swag_kp").getField(k) if json_keys else F.col(f"{KEY_OUT}{i}"),
                      columns[k]) for i, k in enumerate(plan.key_names)]
    sources = {("key", "" if len(keys) == 1 else str(i)): c for i, c in enumerate(keys)}
    typed_values = [n for n, _ in typed.values]
    sources.update({("field", c): T.restore(field(typed_values, TYPED_EVENT_OUT, "_swag_ep", c),
                                            columns[c]) for c in call.event_names})
    typed_aggs = [n for n, _ in typed.aggs]
    sources.update({("agg", n): T.restore(field(typed_aggs, TYPED_AGG_OUT, "_swag_ap", n), t)
                    for n, t in call.agg_types.items()})
    window = F.col(WINDOW_OUT)
    sources[("window", "")] = F.when(window >= 0, window)
    for name, kind in ((TIME_OUT, "time"), (START_OUT, "start"),
                       (END_OUT, "end")):
        sources[(kind, "")] = _restore_time(F.col(name), call.time_type)
    return parsed, sources


def _aggregate_type(spec: AggSpec, value_types: Mapping[str, DataType],
                    event_names: Sequence[str], output_types: Mapping[str, Any]) -> DataType:
    """:func:`spark_adapter._types.aggregate_type`, except that a whole-row argmin/argmax
    is a struct of the event columns only (the key and time columns are not part of the
    row's value even when another aggregation reads them)."""
    dt = T.aggregate_type(spec, value_types, output_types)
    if spec.reads_event and spec.name not in output_types:
        return StructType([StructField(c, value_types[c], True) for c in event_names])
    return dt


def _facts(df: DataFrame, query: Query, value_types: Mapping[str, DataType], typed: Typed,
           time_is_string: bool, presliced: bool | None, blocked: str | None,
           key_buckets: int) -> EngineFacts:
    """What this call can do, for the driver's planner (:meth:`adapters.WindowDriver.plan`).
    ``typed``: the batch transport (whose typed number columns a finished key can hand to
    the OVER kernel); ``blocked``: why a streaming call cannot pre-slice whatever its query
    (:func:`_stream_block`)."""
    blocked = blocked or time_block(time_is_string)
    columns = None
    if not df.isStreaming and not time_is_string and all(T.is_native(t)
                                                         for t in value_types.values()):
        columns = frozenset(n for n, _ in typed.values)
        if len(typed.aggs) < len(query.aggregations):  # an aggregate travels as JSON
            columns = None
    if not df.isStreaming:
        calls, state = EngineFacts.FINISHED, ("none (batch: mapInArrow over partitions "
                                              "sorted by key, many finished keys per call)")
    else:
        calls, state = EngineFacts.MANY_KEYS, f"{key_buckets} key buckets, one state and timer each"
    return EngineFacts("spark", df.isStreaming, calls, state, pair_maps=df.isStreaming,
                       slice_kinds=slice_kinds(value_types), presliced=presliced,
                       preslice_block=blocked, column_fields=columns)


def _stream_block(streaming: bool, watermark: Any, late_rows: str) -> str | None:
    """Why a streaming call cannot pre-slice whatever its query (``None``: it may, or the
    call is batch; the query's own rules are the planner's)."""
    if not streaming:
        return None
    if watermark is None:
        return ("no watermark= (Spark's slice aggregation needs the watermark on the time "
                "column, which the adapter sets only when given the delay)")
    if late_rows != "drop":
        return f"late_rows={late_rows!r} (late events are returned one by one)"
    return None


def _has_watermark(df: DataFrame) -> bool:
    """Whether the streaming plan defines a watermark (``True`` if it cannot be told)."""
    try:  # Spark Connect has no _jdf: the server's plan text instead
        plan = (df._explain_string(extended=True) if hasattr(df, "_explain_string")
                else df._jdf.queryExecution().logical().toString())
    except Exception:  # neither: let Spark decide
        return True
    return "EventTimeWatermark" in plan


#: Spark's exchange reuse setting: streaming needs it off (see :func:`_check_streaming_conf`).
EXCHANGE_REUSE = "spark.sql.exchange.reuse"


def _check_streaming_conf(df: DataFrame) -> None:
    spark = df.sparkSession
    provider = spark.conf.get("spark.sql.streaming.stateStore.providerClass", None)
    if provider != ROCKSDB:
        raise SparkConfigError(
            f"streaming sliding_aggregate uses transformWithStateInPandas, which needs the "
            f"RocksDB state store; set spark.sql.streaming.stateStore.providerClass={ROCKSDB} "
            f"(before starting the query; spark_adapter.local_session() does), got "
            f"{provider!r}")
    reuse = spark.conf.get(EXCHANGE_REUSE, "true")
    if str(reuse).lower() != "false":
        raise SparkConfigError(
            f"streaming sliding_aggregate needs {EXCHANGE_REUSE}=false (spark_adapter."
            f"local_session() sets it): with exchange reuse on, Spark plans a second stateful "
            f"operator over the same input (or one result used twice) on a reused exchange, "
            f"which never gets a watermark, so that operator would emit nothing (docs/spark.md, "
            f"pitfall 39); got {reuse!r}")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        raise SparkConfigError("transformWithStateInPandas needs the 'protobuf' package "
                               "(pip install 'swag[spark]')") from None


# ----------------------------------------------------------------------------- the API
def _check_key_buckets(key_buckets: int) -> None:
    if type(key_buckets) is not int or key_buckets < 1:
        raise ValueError(f"key_buckets must be a positive int, got {key_buckets!r}")


def _observed(wide: DataFrame, metric: str | Observation | None, streaming: bool) -> DataFrame:
    """``wide`` observed as ``metric`` (late events and rows), where there is one."""
    if isinstance(metric, Observation) or (metric is not None and streaming):
        wide = wide.observe(metric,
                            F.count(F.when(F.col(WINDOW_OUT) == LATE, 1)).alias("late_events"),
                            F.count(F.when(F.col(WINDOW_OUT) >= 0, 1)).alias("rows"))
    return wide


_SLIDING_AGGREGATE = """Exact window aggregates per key, on a streaming or a batch DataFrame.

    Args:
        df: input rows; streaming (``df.isStreaming``) or batch.
        key: the key column (or columns).
        time: the event-time column: a timestamp, or epoch milliseconds (integral, or a
            string of digits).
        window: one window spec, or a list of them. Specs are dicts (``{"kind": "sliding",
            "range": "1 hour", "slide": "5 minutes"}``; durations in ms, ``timedelta`` or
            interval strings) or built by :func:`sliding`, :func:`tumbling`, :func:`over`,
            :func:`count_window`, or :mod:`adapters` window objects.
        aggregations: ``{output column: {"fn": "max", "field": "delay"}, ...}`` (every fn of
            ``docs/adapters.md``), or a ``swag_core.Aggregation`` / Beam- or Flink-style
            aggregate object (then give its Spark type in ``output_types``).
        watermark: streaming only: the watermark delay (``"30 minutes"``, integer ms or a
            ``timedelta``, like every duration argument): the adapter calls
            ``df.withWatermark(time, watermark)``. ``None``: ``df`` already has a watermark
            (e.g. on another column).
        allowed_lateness: extra lateness (ms or a duration string): an event is late when its
            time is below ``watermark - allowed_lateness``; windows wait that much longer.
        algorithm: ``"auto"`` or a ``swag_core`` algorithm name.
        late_rows: ``"drop"``: late events are counted (streaming: observed metric
            ``metric``, ``late_events``) and left out; ``"return"``: also return them as a
            second DataFrame (the input rows, every column in input order);
            ``"include"``: one DataFrame in the several-specs form (below) with a boolean
            column ``late``: late events are rows with ``late`` true and ``window`` null
            (one streaming query gives both; split them in ``foreachBatch``).
        order_by: optional column of a scalar type giving the arrival order of events (ties
            in event time are broken by it; nulls and NaN come last); without it, arrival
            order is the order Spark delivers rows (in batch mode that order is unspecified).
        output_types: Spark types (DDL strings or DataTypes) of output columns, overriding
            the inferred ones; required for custom aggregations.
        metric: streaming: name of the observed metric (``None`` for none); batch: a
            ``pyspark.sql.Observation`` to observe, or ``None``.
        max_cached_keys: bound of the per-worker structure cache (keys beyond it are rebuilt
            from state when they come back).
        presliced: let Spark aggregate each key's events per slice before the driver
            combines slices into windows (``docs/spark.md``, "Pre-slicing (batch)", says which
            queries qualify). Batch: ``None`` (default) whenever the query allows it, same
            results, or Spark's own plan where it gives the same rows and measured faster
            (``docs/spark.md``, "Spark's own plan"); ``True``: required (``ValueError``
            saying why not); ``False``: never. Either keeps swag's own path.
            Streaming: only with ``True`` (late events then follow Spark's rule).
        nulls: ``"skip"`` (default, as Spark SQL): built-ins leave out null and NaN values
            (null for a window without others); ``"error"``: they are bad input
            (``BadEventError`` naming key and field). Custom aggregations get them as they are.
        key_buckets: streaming only: keys hashed into this many buckets, one Python call per
            bucket (part of the checkpoint, ``docs/spark.md``, "How it maps onto Spark").
        layout: where a key's over-window structures live (``Query.layout``: ``"memory"``,
            ``"kvs"``, ``"auto"``); the KVS layout needs streaming (the bucket's map state)
            and pays off for large windows (``docs/spark.md``).

    Returns:
        The rows in the columns every engine gives (``docs/adapters.md``, "Output rows"):
        one ``[start, end)`` spec: ``key..., window_start, window_end, <aggregations>``; one
        over spec: the input row (every column) plus ``<aggregations>``; several specs:
        ``window`` (the spec's index), ``key..., window_start, window_end``, the time and
        the other input columns only when a spec is an over spec, ``<aggregations>``. With
        ``late_rows="return"``, a pair ``(results, late)`` (late: the input columns); with
        ``"include"``, the several-specs form with the time and input columns, plus ``late``.

    Streaming queries must be written in ``append`` output mode and need the RocksDB state
    store provider; restarts from the checkpoint resume exactly.
    """


def sliding_aggregate(
    df: DataFrame,
    *,
    key: str | Sequence[str],
    time: str,
    window: Any,
    aggregations: Mapping[str, Any],
    watermark: Any = None,
    allowed_lateness: Any = 0,
    algorithm: str = "auto",
    late_rows: str = "drop",
    order_by: str | None = None,
    output_types: Mapping[str, Any] | None = None,
    metric: str | Observation | None = METRIC,
    max_cached_keys: int | None = 100_000,
    presliced: bool | None = None,
    nulls: str = "skip",
    key_buckets: int = KEY_BUCKETS,
    layout: str = "memory",
) -> DataFrame | tuple[DataFrame, DataFrame]:
    call = _prepare(df, key, time, window, aggregations, watermark, allowed_lateness,
                    algorithm, late_rows, order_by, output_types, max_cached_keys, presliced,
                    nulls, key_buckets, layout)
    if call.plan.route is not None and call.plan.route.engine_plan is not None:
        return own_plan_rows(df, call.plan, call.time_type, call.agg_types, call.output, metric)
    wide = _run(df, call, watermark, order_by, key_buckets)
    wide = _observed(wide, metric, df.isStreaming)
    return _results(wide, call, late_rows)


sliding_aggregate.__doc__ = _SLIDING_AGGREGATE


def explain(df: DataFrame, **arguments: Any) -> QueryPlan:
    """The path :func:`sliding_aggregate` with the same arguments takes on Spark, and why
    (:class:`adapters.QueryPlan`: ``print()`` it): pre-sliced or not and how many slice
    rows, the OVER kernel, the cross-key or per-key runtime, kernels or structures, the
    state and KVS layout. Nothing runs; the arguments are checked as
    :func:`sliding_aggregate` checks them (``metric`` is ignored)."""
    bound = inspect.signature(sliding_aggregate).bind(df, **arguments)
    bound.apply_defaults()
    del bound.arguments["metric"]
    call = _prepare(**bound.arguments)
    assert call.plan.route is not None
    return call.plan.route


explain.__signature__ = inspect.signature(sliding_aggregate).replace(  # type: ignore[attr-defined]
    return_annotation=QueryPlan)


def _prepare(df: DataFrame, key: str | Sequence[str], time: str, window: Any,
             aggregations: Mapping[str, Any], watermark: Any, allowed_lateness: Any,
             algorithm: str, late_rows: str, order_by: str | None,
             output_types: Mapping[str, Any] | None, max_cached_keys: int | None,
             presliced: bool | None, nulls: str, key_buckets: int, layout: str
             ) -> _Call:
    """The arguments checked and the workers' plan (:func:`sliding_aggregate`)."""
    columns, key_names, time_type = _check_arguments(df, key, time, watermark, late_rows,
                                                     order_by)
    _check_key_buckets(key_buckets)
    spec = query_of_call(None, list(window) if isinstance(window, (list, tuple)) else [window],
                         aggregations, allowed_lateness, nulls=nulls, layout=layout,
                         algorithm=None if algorithm in (None, "auto") else algorithm)
    query = parse_query(spec)
    blocked = _stream_block(df.isStreaming, watermark, late_rows)
    return _plan_call(df, query, columns, key_names, time, time_type, output_types,
                      late_rows, order_by, max_cached_keys, presliced, blocked, key_buckets)


def _check_arguments(df: DataFrame, key: str | Sequence[str], time: str, watermark: Any,
                     late_rows: str, order_by: str | None
                     ) -> tuple[dict[str, DataType], tuple[str, ...], DataType]:
    """Validates the call's column arguments; ``(columns, key names, time type)``."""
    if late_rows not in LATE_ROWS:
        raise ValueError(f"late_rows must be one of {LATE_ROWS}, got {late_rows!r}")
    if watermark is not None and not df.isStreaming:
        raise ValueError(
            f"watermark={watermark!r}: a batch DataFrame has no watermark (every window is "
            f"released at the end of input and no event is late); drop the argument, or "
            f"pass a streaming DataFrame")
    columns = _columns(df)
    key_names = call_fields(list(columns), key, time, order_by, "the DataFrame")
    if order_by is not None and isinstance(columns[order_by], (ArrayType, MapType, StructType)):
        raise T.SparkTypeError(f"order_by column {order_by!r} has type "
                               f"{columns[order_by].simpleString()}, which has no order; give "
                               f"a column of a scalar type (e.g. a sequence number)")
    return columns, key_names, columns[time]


@dataclass
class _Call:
    """What :func:`sliding_aggregate` derived from its arguments."""

    plan: Plan
    event_names: list[str]
    agg_types: dict[str, DataType]
    value_json: StructType
    agg_json: StructType
    time_col: Column
    columns: dict[str, DataType]
    time_type: DataType
    #: the output columns (:func:`adapters.engine.rows.output_columns`)
    output: OutputColumns
    #: Spark's slice aggregation when the query runs pre-sliced
    slices: SlicePlan | None


def _plan_call(df: DataFrame, query: Query, columns: dict[str, DataType],
               key_names: tuple[str, ...], time: str, time_type: DataType,
               output_types: Mapping[str, Any] | None, late_rows: str,
               order_by: str | None, max_cached_keys: int | None, presliced: bool | None,
               blocked: str | None, key_buckets: int) -> _Call:
    """The workers' :class:`Plan`: which columns travel how (:class:`Typed`), the output
    types, slicing. The driver's input has an order-by column only when it gets events
    (a slice row has none: its partials took the order into account)."""
    event_names, value_names = shipped_fields(query, list(columns), key_names, time,
                                              every_field=late_rows != "drop")
    value_types = {c: columns[c] for c in value_names}
    out_types = dict(output_types or {})
    agg_types = {a.name: _aggregate_type(a, value_types, event_names, out_types)
                 for a in query.aggregations}
    encoders = {}
    for a in query.aggregations:
        enc = T.aggregate_encoder(a, agg_types[a.name])
        if enc is not None:
            encoders[a.name] = enc
    typed = _typed(df, key_names, columns, value_types, agg_types, encoders)
    time_col, time_is_string = _time_ms(F.col(time), time_type, time)
    facts = with_own_plan(df, _facts(df, query, value_types, typed, time_is_string,
                                     presliced, blocked, key_buckets),
                          typed.keys, late_rows, out_types, time_is_string)
    route = WindowDriver(query).plan(facts)
    slices = None
    if route.presliced is not None:
        slices = SlicePlan(route.presliced,
                           {n: f"{VALUE_IN}{i}" for i, (n, _) in enumerate(typed.values)})
    typed_values, typed_aggs = dict(typed.values), dict(typed.aggs)
    json_values = tuple(c for c in value_names if c not in typed_values)
    json_aggs = tuple(n for n in agg_types if n not in typed_aggs)
    value_json = StructType([StructField(c, T.json_type(value_types[c], c), True)
                             for c in json_values])
    agg_json = StructType([StructField(n, T.json_type(agg_types[n], n, output=True), True)
                           for n in json_aggs])
    plan = Plan(query=query, key_names=key_names, time_name=time,
                value_fixer=json_fixer(T.json_shape(value_json)), agg_encoders=encoders,
                json_values=json_values, json_aggs=json_aggs,
                has_order=order_by is not None and slices is None,
                typed=typed, max_cached_keys=max_cached_keys, slices=route.presliced,
                route=route)
    return _Call(plan, event_names, agg_types, value_json, agg_json, time_col, columns,
                 time_type, _output(query, columns, key_names, time, event_names, late_rows),
                 slices)


def _output(query: Query, columns: Mapping[str, DataType], key_names: Sequence[str],
            time: str, event_names: Sequence[str], late_rows: str) -> OutputColumns:
    """The output columns; an aggregation's name must not clash with another column."""
    carried = {*event_names, *key_names, time}
    output = output_columns(query, key_names=key_names, time_name=time,
                            event_fields=[c for c in columns if c in carried],
                            late_events=late_rows == "include")
    if late_rows == "include" and "late" in output.names:
        raise ValueError("output column 'late' (late_rows='include') clashes with an input "
                         "column or aggregation of the same name; rename it")
    return output


def _watermarked(df: DataFrame, time: str, time_type: DataType,
                 watermark: Any) -> DataFrame:
    """Streaming: ``df`` with the session checked and the watermark defined."""
    _check_streaming_conf(df)
    if watermark is None:
        if not _has_watermark(df):
            raise SparkConfigError(
                "a streaming sliding_aggregate needs a watermark: pass watermark='<delay>' "
                "(e.g. '30 minutes') or call df.withWatermark(...) before")
        return df
    # Spark reads interval strings itself; the other forms every duration argument takes
    # (integer ms, timedelta) become one
    delay = (watermark if isinstance(watermark, str)
             else f"{duration_ms(watermark, 'watermark')} milliseconds")
    if isinstance(time_type, TimestampType):
        return df.withWatermark(time, delay)
    if isinstance(time_type, T.INTEGRAL):
        return df.withColumn("_swag_wm", F.timestamp_millis(F.col(time))) \
            .withWatermark("_swag_wm", delay)
    raise T.SparkTypeError(f"watermark: Spark needs a timestamp (or epoch-ms) "
                           f"time column; {time!r} is a string column")


def bucket_column(key_buckets: int) -> Column:
    """The streaming bucket of each row: a hash of its key's JSON text (``swag_k``, the
    key's identity in the state), modulo ``key_buckets``."""
    return F.pmod(F.hash(F.col(KEY_IN)), F.lit(key_buckets))


def _run(df: DataFrame, call: _Call, watermark: Any, order_by: str | None,
         key_buckets: int) -> DataFrame:
    """The Python side's wide output (one row per window row, per-event row or late
    event): ``transformWithStateInPandas`` in streaming, ``applyInArrow`` in batch."""
    plan = call.plan
    columns, time, time_type = call.columns, plan.time_name, call.time_type
    if not df.isStreaming:
        return _run_batch(df, call, order_by)
    source = _watermarked(df, time, time_type, watermark)
    if call.slices is not None:
        prepared = _sliced_stream(source, plan, call.slices, columns, call.time_col, time,
                                  time_type, order_by)
    else:
        prepared = source.select(*_input_columns(plan, columns, call.time_col, order_by)[0])
    # one row per bucket and Arrow batch in (spark_adapter._packed); the rows out as they are
    packed = prepared.withColumn(BUCKET_IN, bucket_column(key_buckets)).mapInArrow(
        make_packer(BUCKET_IN, _large_var_types(df)), PACKED_IN_SCHEMA)
    return packed.groupBy(BUCKET_IN).transformWithStateInPandas(
        statefulProcessor=make_bucket_processor(plan, key_buckets),
        outputStructType=batch_schema(plan), outputMode="Append", timeMode="EventTime")


def _run_batch(df: DataFrame, call: _Call, order_by: str | None) -> DataFrame:
    """Batch: the input (or its slice rows) hash-partitioned by key and sorted by key within
    each partition, through ``mapInArrow``: many finished keys per Python call
    (:mod:`spark_adapter._batch`). The exchange and sort are those ``groupBy(keys)
    .applyInArrow`` plans, and a key is a run of rows equal by Spark's ordering (NaN beside
    NaN, as its groups are; ``-0.0`` is already ``0.0`` in key columns)."""
    plan = call.plan
    prepared_cols, group_cols = _input_columns(plan, call.columns, call.time_col, order_by)
    prepared = df.select(*prepared_cols)
    if call.slices is not None:
        prepared = call.slices.frame(prepared, group_cols, order_by is not None)
    return prepared.repartition(*group_cols).sortWithinPartitions(*group_cols).mapInArrow(
        make_batch_function(plan), batch_schema(plan))


def _sliced_stream(source: DataFrame, plan: Plan, slices: SlicePlan,
                   columns: Mapping[str, DataType], time_col: Column, time: str,
                   time_type: DataType, order_by: str | None) -> DataFrame:
    """Streaming pre-slicing, stage 1: Spark's stateful aggregation per key and slice
    (:meth:`SlicePlan.stream_frame`) over the watermarked source, as the input of the
    driver's stage (``swag_k`` JSON key, ``swag_t`` slice start and the typed partial
    columns: one row per non-empty key and slice)."""
    event_time = time if isinstance(time_type, TimestampType) else "_swag_wm"
    key_json = _json_struct(plan.key_names, columns, key=True)
    source = null_times_checked(source, plan)
    cols = [F.col(k) for k in plan.key_names] + [time_col.alias(TIME_IN)]
    cols += [T.to_json_column(F.col(c), columns[c]).alias(name)
             for c, name in slices.transport.items()]
    if order_by is not None:
        cols.append(F.col(order_by).alias(ORDER_IN))
    cols.append(F.col(event_time))
    sliced = slices.stream_frame(source.select(*cols), list(plan.key_names), event_time,
                                 order_by is not None)
    partials = [c for c in sliced.columns if c not in plan.key_names]
    return sliced.select(key_json.alias(KEY_IN), *partials)


def _results(wide: DataFrame, call: _Call, late_rows: str
             ) -> DataFrame | tuple[DataFrame, DataFrame]:
    """The user's DataFrame(s) from the wide output (see :func:`sliding_aggregate`): the
    rows in :func:`adapters.engine.rows.output_columns`'s columns; late events (``late_rows=
    "return"``) as the input columns in input order."""
    parsed, sources = _sources(wide, call)
    output = [sources[s].alias(n) for n, s in zip(call.output.names, call.output.sources)]
    if late_rows == "include":
        return parsed.select(*output, (F.col(WINDOW_OUT) == LATE).alias("late"))
    results = parsed.where(F.col(WINDOW_OUT) >= 0).select(*output)
    if late_rows == "drop":
        return results
    plan = call.plan
    late = [sources[input_source(c, plan.key_names, plan.time_name)].alias(c)
            for c in call.columns]
    return results, parsed.where(F.col(WINDOW_OUT) == LATE).select(*late)


__all__ = ["METRIC", "SparkConfigError", "count_window", "explain", "over", "sliding",
           "sliding_aggregate", "tumbling"]
