"""Driver events and rows as flat columns, for an engine that moves them between its own
process and Python in column batches (Spark: Arrow tables and pandas frames).

**In**, per event: the time (``swag_t``), optionally an order-by value (``swag_o``), the key
(``swag_k``, the key's columns as one JSON object, or typed ``swag_k0, swag_k1, ...``) and the
value's fields: typed columns ``swag_v0, swag_v1, ...`` (:class:`Typed`) and the others as one
JSON object (``swag_v``). No leading underscores: PySpark's ``transformWithStateInPandas``
rebuilds its input frames from ``itertuples()``, which renames such columns.

**Out** (:func:`wide_columns`), one row per window row, per-event row or late event:
``_swag_w`` (the spec's index, :data:`LATE` for a late event), ``_swag_start``,
``_swag_end``, ``_swag_time``, the key (``_swag_k`` JSON, or typed ``_swag_k0, ...``), the
event's fields on per-event and late rows (typed ``_swag_e0, ...``, ``_swag_event`` JSON for
the others) and the aggregates (typed ``_swag_a0, ...``, ``_swag_aggs`` JSON for the others).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from adapters.driver.results import Output

# Column names. Typed columns are "<prefix><index>".
KEY_IN, VALUE_IN, TIME_IN, ORDER_IN = "swag_k", "swag_v", "swag_t", "swag_o"
WINDOW_OUT, START_OUT, END_OUT, TIME_OUT = "_swag_w", "_swag_start", "_swag_end", "_swag_time"
KEY_OUT, EVENT_OUT, AGGS_OUT = "_swag_k", "_swag_event", "_swag_aggs"
TYPED_EVENT_OUT, TYPED_AGG_OUT = "_swag_e", "_swag_a"
#: the window index of a late event's row
LATE = -1


@dataclass(frozen=True)
class Typed:
    """The columns that travel as typed columns, each with its engine type (the engine's
    transport type: Spark's timestamps as long microseconds, dates as int days)."""

    #: the key columns' types (``swag_k<i>`` in, ``_swag_k<i>`` out), or ``None``: the keys
    #: travel as JSON text (``swag_k`` / ``_swag_k``)
    keys: tuple[Any, ...] | None
    #: value columns (``swag_v<i>`` in; ``_swag_e<i>`` out on per-event and late rows)
    values: tuple[tuple[str, Any], ...]
    #: aggregates (``_swag_a<i>`` out)
    aggs: tuple[tuple[str, Any], ...]
    #: Arrow's large string and binary types (Spark's ``spark.sql.execution.arrow.
    #: useLargeVarTypes``)
    large_var_types: bool = False
    #: the keys travel in as JSON text ``swag_k`` whatever ``keys`` says (a key's identity in
    #: streaming state); ``keys`` then types only ``_swag_k<i>`` out
    json_keys_in: bool = False


class ColumnPlan(Protocol):
    """What the column codec reads of an engine's plan."""

    key_names: tuple[str, ...]
    #: repairs what ``json.loads`` makes of the JSON value columns (``None``: nothing to do)
    value_fixer: Callable[[Any], Any] | None
    #: the aggregates' encoders into JSON (by output name)
    agg_encoders: dict[str, Callable[[Any], Any]]
    #: the value fields and aggregates that travel as JSON text, in order
    json_values: tuple[str, ...]
    json_aggs: tuple[str, ...]
    #: the typed columns
    typed: Typed
    #: whether the input has the order-by column ``swag_o``
    has_order: bool


# ----------------------------------------------------------------------------- decoding
def decode_key(plan: ColumnPlan, key_json: str) -> Any:
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


def order_key(x: Any) -> tuple[int, Any]:
    """The sort key of an order-by value: nulls and NaN last."""
    if x is None or x != x:
        return (1, 0)
    return (0, x)


def json_values(plan: ColumnPlan, texts_in: Sequence[str],
                texts: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The event values (dicts) of the JSON texts of the value columns. ``texts``, if given,
    receives ``id(value) -> text``, so that :func:`wide_columns` can send an event of this
    call back without serializing it again (the values stay alive, held by the returned
    list, while the ids are used)."""
    loads, fix = json.loads, plan.value_fixer
    values = [loads(v) for v in texts_in] if fix is None else [fix(loads(v)) for v in texts_in]
    if texts is not None:
        texts.update(zip(map(id, values), texts_in))
    return values


#: the strings some JSON writers (Spark's ``to_json``) write for the non-finite floats
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float(x: Any) -> Any:
    return _NON_FINITE.get(x, x) if type(x) is str else x


def json_fixer(shape: Any) -> Callable[[Any], Any] | None:
    """A function repairing what ``json.loads`` makes of a value whose non-finite floats were
    written as strings (``"NaN"``, ``"Infinity"``), or ``None`` if nothing needs repair.
    ``shape``: ``"float"``, ``("array", element shape)``, ``("struct", ((name, shape),
    ...))``, or anything else (no floats inside)."""
    if shape == "float":
        return _float
    kind = shape[0] if isinstance(shape, tuple) else None
    if kind == "array":
        inner = json_fixer(shape[1])
        if inner is None:
            return None
        fix_element = inner

        def fix_array(x: Any) -> Any:
            return x if x is None else [fix_element(v) for v in x]
        return fix_array
    if kind != "struct":
        return None
    todo = [(name, f) for name, inner in shape[1] if (f := json_fixer(inner)) is not None]
    if not todo:
        return None

    def fix_struct(x: Any) -> Any:
        if x is None:
            return None
        for name, f in todo:
            if name in x:
                x[name] = f(x[name])
        return x
    return fix_struct


def arrow_values(plan: ColumnPlan, table: Any, texts: dict[int, str] | None = None) -> list[Any]:
    """The event values (dicts) of an Arrow table's :class:`Typed` value columns and JSON
    value column; ``texts`` as in :func:`json_values`."""
    names = [name for name, _ in plan.typed.values]
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


def arrow_events(plan: ColumnPlan, table: Any,
                 texts: dict[int, str] | None = None) -> list[tuple[Any, Any]]:
    """``(time, value)`` events from one key's Arrow table (:class:`Typed` columns), in
    arrival order (or ``swag_o`` order: a stable sort, nulls and NaN last). ``texts`` as in
    :func:`json_values`."""
    if plan.has_order and table.num_rows > 1:
        table = table.sort_by([(ORDER_IN, "ascending")])  # stable; nulls last
    return list(zip(table.column(TIME_IN).to_pylist(), arrow_values(plan, table, texts)))


# ----------------------------------------------------------------------------- encoding
def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def wide_columns(plan: ColumnPlan, key: Any, out: Output,
                 texts: dict[int, str] | None = None) -> dict[str, list[Any]] | None:
    """The driver's output as lists, one per output column (``None`` if there is nothing to
    emit). ``key``: the key's JSON text (keys as JSON) or the driver's key (typed keys).
    ``texts``: JSON texts of this call's event values (see :func:`json_values`)."""
    rows, late = out.rows, out.late
    if not rows and not late:
        return None
    events = [row.get("event") for row in rows] + [ev.value for ev in late]
    n = len(events)
    no_late = [None] * len(late)
    cols: dict[str, list[Any]] = {
        WINDOW_OUT: [row["window"] for row in rows] + [LATE] * len(late),
        START_OUT: [row.get("start") for row in rows] + no_late,
        END_OUT: [row.get("end") for row in rows] + no_late,
        TIME_OUT: [row.get("time") for row in rows] + [ev.time for ev in late]}
    typed = plan.typed
    if typed.keys is None:
        cols[KEY_OUT] = [key] * n
    elif len(typed.keys) == 1:
        cols[f"{KEY_OUT}0"] = [key] * n
    else:
        for i, part in enumerate(key):
            cols[f"{KEY_OUT}{i}"] = [part] * n
    for i, (name, _) in enumerate(typed.values):
        cols[f"{TYPED_EVENT_OUT}{i}"] = [None if v is None else v[name] for v in events]
    for i, (name, _) in enumerate(typed.aggs):
        cols[f"{TYPED_AGG_OUT}{i}"] = [row[name] for row in rows] + no_late
    if plan.json_values:
        cols[EVENT_OUT] = _event_texts(plan, events, texts or {})
    if plan.json_aggs:
        cols[AGGS_OUT] = _agg_texts(plan, rows) + no_late
    return cols


def _event_texts(plan: ColumnPlan, events: list[Any], known: dict[int, str]
                 ) -> list[str | None]:
    """The JSON texts of the JSON value columns of ``events`` (``None`` stays ``None``)."""
    names = plan.json_values
    out: list[str | None] = []
    for value in events:
        if value is None:
            out.append(None)
            continue
        text = known.get(id(value))
        if text is None:
            text = _dumps({n: value[n] for n in names})
        out.append(text)
    return out


def _agg_texts(plan: ColumnPlan, rows: list[dict[str, Any]]) -> list[str]:
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


def arrow_table(plan: ColumnPlan, schema: Any, cols: dict[str, list[Any]],
                error: type[Exception] = TypeError) -> Any:
    """:func:`wide_columns` as an Arrow table of ``schema``. A value that does not fit its
    column's type (e.g. a custom aggregation's result against its declared type, a sum
    beyond 64 bits) raises ``error`` naming the column."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        try:
            arrays.append(pa.array(cols[f.name], type=f.type))
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            raise error(
                f"{_column_meaning(plan, f.name)}: the value {_misfit(cols[f.name], f.type)!r:.80} "
                f"does not fit its type ({f.type}: {exc}); output_types sets the type of an "
                f"aggregation") from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _column_meaning(plan: ColumnPlan, column: str) -> str:
    """What an output column holds, for error messages."""
    typed = plan.typed
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


__all__ = ["AGGS_OUT", "END_OUT", "EVENT_OUT", "KEY_IN", "KEY_OUT", "LATE", "ORDER_IN",
           "START_OUT", "TIME_IN", "TIME_OUT", "TYPED_AGG_OUT", "TYPED_EVENT_OUT", "VALUE_IN",
           "WINDOW_OUT", "ColumnPlan", "Typed", "arrow_events", "arrow_table", "arrow_values",
           "decode_key", "json_fixer", "json_values", "order_key", "wide_columns"]
