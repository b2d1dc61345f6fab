"""What runs in the Spark Python workers: the plan, the drivers, and the rows' decoding and
encoding for the stateful processor (streaming, ``transformWithStateInPandas``,
:mod:`spark_adapter._buckets`) and the grouped function (batch, ``applyInArrow``).
Translation only: every decision about windows, lateness and state lives in
:class:`adapters.WindowDriver`.

Rows between Spark and Python (built by :mod:`spark_adapter.api`):

* input: ``swag_t`` (event time: long ms, or the raw string for string time columns),
  optionally ``swag_o`` (the order-by column), and the key and value columns:

  - streaming (:mod:`spark_adapter._buckets`): as in batch (:class:`Typed`), except that
    the keys are always ``swag_k`` JSON text, packed per bucket into Arrow IPC rows and back
    (:mod:`spark_adapter._packed`);
  - streaming, pre-sliced (pandas frames, :data:`WIDE_SCHEMA` out): ``swag_k`` (the key
    columns as JSON text) and ``swag_v`` (the value columns as JSON);
  - batch (Arrow tables, :func:`batch_schema` out; :class:`Typed` says which columns): the
    keys as typed columns ``swag_k0, swag_k1, ...`` (the grouping columns) if every key
    column has a scalar type, else ``swag_k`` as in streaming; each scalar value column as a
    typed column ``swag_v0, swag_v1, ...`` and the others (arrays, structs) in ``swag_v``;
  - batch, pre-sliced (:mod:`spark_adapter._presliced`): the same key columns, ``swag_t``
    the slice start and the per-slice partials: one row per key and slice.

  No leading underscores: ``transformWithStateInPandas`` (4.3) rebuilds its input frames
  from ``itertuples()`` namedtuples, which rename such columns to ``_0``, ``_1``, ...;
* output: one row per emitted window row, per-event row or late event: ``_swag_w`` (window
  index, -1 for a late event), ``_swag_start``, ``_swag_end``, ``_swag_time``, the key
  (``_swag_k`` JSON, or typed ``_swag_k0, ...``), the event value of per-event and late rows
  (typed ``_swag_e0, ...`` for the typed value columns, ``_swag_event`` JSON for the others)
  and the aggregates (typed ``_swag_a0, ...``, ``_swag_aggs`` JSON for the others).
"""

from __future__ import annotations

import json
import math
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from adapters import Output, Query, QueryPlan, WindowDriver
from adapters.engine.buckets import BucketPairs

from ._names import (
    AGGS_OUT,
    EVENT_OUT,
    KEY_OUT,
    LATE,
    ORDER_IN,
    TIME_IN,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
)
from ._presliced import SlicePlan
from ._types import SparkTypeError


@dataclass(frozen=True)
class Typed:
    """Batch mode and packed streaming: the columns that travel as typed Arrow columns, each
    with its transport type (:func:`spark_adapter._types.json_type`: timestamps as long
    microseconds, dates as int days)."""

    #: the key columns' types (``swag_k<i>`` in, ``_swag_k<i>`` out), or ``None``: the keys
    #: travel as JSON text (``swag_k`` / ``_swag_k``)
    keys: tuple[DataType, ...] | None
    #: value columns (``swag_v<i>`` in; ``_swag_e<i>`` out on per-event and late rows)
    values: tuple[tuple[str, DataType], ...]
    #: aggregates (``_swag_a<i>`` out)
    aggs: tuple[tuple[str, DataType], ...]
    #: Spark's ``spark.sql.execution.arrow.useLargeVarTypes`` (the Arrow string type)
    large_var_types: bool = False
    #: streaming: the keys travel in as JSON text ``swag_k`` whatever ``keys`` says (a key's
    #: identity in the state and its bucket's hash); ``keys`` then types only ``_swag_k<i>``
    #: out, which spares Spark a ``from_json`` per output row
    json_keys_in: bool = False


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


_DRIVERS: OrderedDict[str, tuple[WindowDriver, BucketPairs]] = OrderedDict()


def driver_entry(plan: Plan) -> tuple[WindowDriver, BucketPairs]:
    """The worker process's driver for ``plan`` (created on first use) and the pair maps its
    cached KVS structures use (:class:`~adapters.engine.buckets.BucketPairs`: the processor
    binds its map state to them before each call)."""
    entry = _DRIVERS.get(plan.token)
    if entry is None:
        query = plan.query if plan.slices is None else plan.slices.query
        entry = (WindowDriver(query, max_cached_keys=plan.max_cached_keys,
                              time_field=plan.time_name), BucketPairs())
        _DRIVERS[plan.token] = entry
        while len(_DRIVERS) > 8:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(plan.token)
    return entry


def driver_for(plan: Plan) -> WindowDriver:
    """The worker process's driver for ``plan`` (created on first use)."""
    return driver_entry(plan)[0]


# ----------------------------------------------------------------------------- decoding
def decode_key(plan: Plan, key_json: str) -> Any:
    """The driver's key: the single key column's value, or a tuple of them; the JSON text
    itself if that is not hashable (a key column of an array or struct type)."""
    obj = json.loads(key_json)
    if len(plan.key_names) == 1:
        key = obj[plan.key_names[0]]
    else:
        key = tuple(obj[n] for n in plan.key_names)
    try:
        hash(key)
    except TypeError:
        return key_json
    return key


def time_value(t: Any) -> Any:
    # pandas gives float64 (NaN for null) for a long column with nulls.
    if type(t) is float:
        if math.isnan(t):
            return None
        return int(t) if t.is_integer() else t
    return t


def order_key(x: Any) -> tuple[int, Any]:
    if x is None or x != x:  # null (None or NaN)
        return (1, 0)
    return (0, x)


def json_values(plan: Plan, texts_in: Sequence[str],
                texts: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The event values (dicts) of the JSON texts of the value columns. ``texts``, if
    given, receives ``id(value) -> text`` so that :func:`wide_columns` can send an event of
    this call back without serializing it again (the values stay alive, held by the
    caller's events, while the ids are used)."""
    loads, fix = json.loads, plan.value_fixer
    values = [loads(v) for v in texts_in] if fix is None else [fix(loads(v)) for v in texts_in]
    if texts is not None:
        texts.update(zip(map(id, values), texts_in))
    return values


def arrow_events(plan: Plan, table: Any,
                 texts: dict[int, str] | None = None) -> list[tuple[Any, Any]]:
    """Batch: ``(time, value)`` events from one key's Arrow table (:class:`Typed` columns),
    in arrival order (or ``swag_o`` order: a stable sort, nulls and NaN last). ``texts`` as
    in :func:`json_values` (the texts of the JSON value columns)."""
    if plan.has_order and table.num_rows > 1:
        table = table.sort_by([(ORDER_IN, "ascending")])  # stable; nulls last
    return list(zip(table.column(TIME_IN).to_pylist(), arrow_values(plan, table, texts)))


def arrow_values(plan: Plan, table: Any, texts: dict[int, str] | None = None) -> list[Any]:
    """The event values (dicts) of an Arrow table's :class:`Typed` value columns and JSON
    value column; ``texts`` as in :func:`json_values`."""
    typed = plan.typed
    assert typed is not None
    names = [name for name, _ in typed.values]
    columns = [table.column(f"{VALUE_IN}{i}").to_pylist() for i in range(len(names))]
    if plan.json_values:
        values = json_values(plan, table.column(VALUE_IN).to_pylist(), texts)
        for value, row in zip(values, zip(*columns)):
            value.update(zip(names, row))
    elif len(names) == 1:
        name = names[0]
        values = [{name: x} for x in columns[0]]
    elif names:
        values = [dict(zip(names, row)) for row in zip(*columns)]
    else:  # no value column is read (e.g. only count)
        values = [{} for _ in range(table.num_rows)]
    return values


# ----------------------------------------------------------------------------- encoding
def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def wide_columns(plan: Plan, key: Any, out: Output,
                 texts: dict[int, str] | None = None) -> dict[str, list[Any]] | None:
    """The driver's output as Python lists, one per output column of the plan's mode
    (``None`` if there is nothing to emit). ``key``: the key's JSON text (keys as JSON) or
    the driver's key (typed keys). ``texts``: JSON texts of this call's event values (see
    :func:`json_values`)."""
    rows, late = out.rows, out.late
    if not rows and not late:
        return None
    typed = plan.typed
    w: list[int] = []
    start: list[Any] = []
    end: list[Any] = []
    time: list[Any] = []
    events: list[Any] = []
    for row in rows:
        w.append(row["window"])
        if "event" in row:
            start.append(None)
            end.append(None)
            time.append(row["time"])
            events.append(row["event"])
        else:
            start.append(row["start"])
            end.append(row["end"])
            time.append(None)
            events.append(None)
    for ev in late:
        w.append(LATE)
        start.append(None)
        end.append(None)
        time.append(ev.time)
        events.append(ev.value)
    n = len(w)
    cols: dict[str, list[Any]] = {"_swag_w": w, "_swag_start": start, "_swag_end": end,
                                  "_swag_time": time}
    if typed is None or typed.keys is None:
        cols[KEY_OUT] = [key] * n
    elif len(typed.keys) == 1:
        cols[f"{KEY_OUT}0"] = [key] * n
    else:
        for i, part in enumerate(key):
            cols[f"{KEY_OUT}{i}"] = [part] * n
    no_late = [None] * len(late)
    if typed is not None:
        for i, (name, _) in enumerate(typed.values):
            cols[f"{TYPED_EVENT_OUT}{i}"] = [None if v is None else v[name] for v in events]
        for i, (name, _) in enumerate(typed.aggs):
            cols[f"{TYPED_AGG_OUT}{i}"] = [row[name] for row in rows] + no_late
    if plan.json_values or typed is None:
        cols[EVENT_OUT] = _event_texts(plan, events, texts or {})
    if plan.json_aggs or typed is None:
        cols[AGGS_OUT] = _agg_texts(plan, rows) + no_late
    return cols


def _event_texts(plan: Plan, events: list[Any], known: dict[int, str]) -> list[str | None]:
    """The JSON texts of the JSON value columns of ``events`` (``None`` stays ``None``)."""
    whole = plan.typed is None  # streaming: the value is exactly the JSON columns
    names = plan.json_values
    out: list[str | None] = []
    for value in events:
        if value is None:
            out.append(None)
            continue
        text = known.get(id(value))
        if text is None:
            text = _dumps(value if whole else {n: value[n] for n in names})
        out.append(text)
    return out


def _agg_texts(plan: Plan, rows: list[dict[str, Any]]) -> list[str]:
    """The JSON texts of the JSON aggregates of the driver's ``rows``."""
    names, encoders = plan.json_aggs, plan.agg_encoders
    out = []
    for row in rows:
        values = {}
        for name in names:
            v = row[name]
            enc = encoders.get(name)
            values[name] = v if enc is None else enc(v)
        out.append(_dumps(values))
    return out


def pandas_frame(cols: dict[str, list[Any]]) -> Any:
    """Streaming: :func:`wide_columns` (JSON layout) as one pandas frame of
    :data:`WIDE_SCHEMA`."""
    import pandas as pd

    return pd.DataFrame({
        KEY_OUT: cols[KEY_OUT],
        "_swag_w": pd.array(cols["_swag_w"], dtype="int32"),
        "_swag_start": pd.array(cols["_swag_start"], dtype="Int64"),
        "_swag_end": pd.array(cols["_swag_end"], dtype="Int64"),
        "_swag_time": pd.array(cols["_swag_time"], dtype="Int64"),
        EVENT_OUT: cols[EVENT_OUT],
        AGGS_OUT: cols[AGGS_OUT],
    })


def batch_schema(plan: Plan) -> StructType:
    """Batch: the schema of the grouped function's output (see the module docstring)."""
    typed = plan.typed
    assert typed is not None
    fields = [StructField("_swag_w", IntegerType()), StructField("_swag_start", LongType()),
              StructField("_swag_end", LongType()), StructField("_swag_time", LongType())]
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


def _column_meaning(plan: Plan, column: str) -> str:
    """What an output column holds, for error messages."""
    typed = plan.typed
    assert typed is not None
    for prefix, named, what in ((TYPED_AGG_OUT, typed.aggs, "aggregation"),
                                (TYPED_EVENT_OUT, typed.values, "column")):
        if column.startswith(prefix) and column[len(prefix):].isdigit():
            return f"{what} {named[int(column[len(prefix):])][0]!r}"
    if column.startswith(KEY_OUT) and column[len(KEY_OUT):].isdigit():
        return f"key column {plan.key_names[int(column[len(KEY_OUT):])]!r}"
    return f"column {column!r}"


def _misfit(values: list[Any], arrow_type: Any) -> Any:
    """The first of ``values`` that Arrow cannot store as ``arrow_type``."""
    import pyarrow as pa

    for v in values:
        try:
            pa.array([v], type=arrow_type)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            return v
    return None


def arrow_table(plan: Plan, schema: Any, cols: dict[str, list[Any]]) -> Any:
    """Batch: :func:`wide_columns` as an Arrow table of ``schema`` (the Arrow form of
    :func:`batch_schema`). A value that does not fit its column's type (e.g. a custom
    aggregation's result against ``output_types``, a sum beyond 64 bits) raises
    :class:`SparkTypeError` naming the column."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        try:
            arrays.append(pa.array(cols[f.name], type=f.type))
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            raise SparkTypeError(
                f"{_column_meaning(plan, f.name)}: the value {_misfit(cols[f.name], f.type)!r:.80} "
                f"does not fit its Spark type ({f.type}: {exc}); output_types sets the type of "
                f"an aggregation") from None
    return pa.Table.from_arrays(arrays, schema=schema)
