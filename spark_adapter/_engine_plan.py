"""Spark's own plan of a batch sliding-window query, run instead of swag where the planner
chose it (:func:`adapters.planning.engine_plan`: every output exact in Spark, few windows per
event):

    groupBy(keys..., window(time, range, slide, offset)).agg(count / max / min / sum)

in the output columns of swag's own path (:func:`adapters.engine.rows.output_columns`: the
key columns, ``window_start``, ``window_end`` in the time column's type, the aggregations in
swag's output types). Batch has no lateness, and Spark's aggregates of integers skip nulls
and are exact, so the rows are the same; a null time raises the event path's
:class:`adapters.BadEventError` (``window()`` itself would drop the row).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, TimestampType

from adapters import EngineFacts
from adapters.engine.rows import OutputColumns
from adapters.query.specs import AggSpec, SlidingWindow

from . import _types as T
from ._runtime import Plan

#: the name of Spark's own plan in ``explain`` and the planner's facts
OWN_PLAN = "Spark's window() groupBy"


def with_own_plan(facts: EngineFacts, key_types: Sequence[DataType] | None, late_rows: str,
                  output_types: Mapping[str, Any], time_is_string: bool) -> EngineFacts:
    """``facts`` with Spark's own plan offered to the planner in batch, and why this call
    cannot take it whatever its query (``key_types``: the typed key columns, ``None`` when
    a key column is not a scalar)."""
    if facts.streaming:
        return facts
    block = None
    if late_rows != "drop":
        block = f"late_rows={late_rows!r} (swag's output forms)"
    elif output_types:
        block = "output_types= overrides an output's type"
    elif time_is_string:
        block = "the time column is a string (Spark and the driver parse it differently)"
    elif key_types is None:
        block = "a key column is not a scalar"
    elif any(isinstance(t, T.FLOATING) for t in key_types):
        block = "a key column is floating (Spark's groupBy merges -0.0 with 0.0 and NaN keys)"
    return dataclasses.replace(facts, own_plan=OWN_PLAN, own_plan_block=block)


def own_plan_rows(df: DataFrame, plan: Plan, time_type: DataType,
                  agg_types: Mapping[str, DataType], output: OutputColumns,
                  metric: Any) -> DataFrame:
    """The query's rows by Spark's own plan, in swag's output columns (``metric``: a
    ``pyspark.sql.Observation`` observes ``late_events`` (0) and ``rows`` as swag's path
    does)."""
    query = plan.query
    window = query.windows[0]
    assert isinstance(window, SlidingWindow)
    time = F.col(plan.time_name)
    ts = time if isinstance(time_type, TimestampType) else F.timestamp_millis(time.cast("long"))
    checked = df.observe(f"swag_null_times_{plan.token[:12]}",
                         F.count(F.when(time.isNull(), _null_time(df, plan))).alias("null_times"))
    ms = "{} milliseconds".format
    slices = F.window(ts, ms(window.range), ms(window.slide), ms(window.offset % window.slide))
    grouped = checked.groupBy(*[F.col(k) for k in plan.key_names], slices.alias("_swag_w"))
    rows = grouped.agg(*[_aggregate(a).alias(a.name) for a in query.aggregations])
    sources = {("key", "" if len(plan.key_names) == 1 else str(i)): F.col(k)
               for i, k in enumerate(plan.key_names)}
    for kind in ("start", "end"):
        bound = F.col(f"_swag_w.{kind}")
        sources[(kind, "")] = (bound if isinstance(time_type, TimestampType)
                               else F.unix_millis(bound).cast(time_type))
    sources.update({("agg", n): F.col(n).cast(t) for n, t in agg_types.items()})
    out = rows.select(*[sources[s].alias(n) for n, s in zip(output.names, output.sources)])
    if isinstance(metric, Observation):
        out = out.observe(metric, F.lit(0).cast("long").alias("late_events"),
                          F.count(F.lit(1)).alias("rows"))
    return out


def _aggregate(a: AggSpec) -> Column:
    """Spark's aggregate of output ``a`` (a built-in the planner found exact in Spark)."""
    if a.field is None:  # count of events
        return F.count(F.lit(1))
    fns = {"count": F.count, "max": F.max, "min": F.min, "sum": F.sum}
    return fns[a.fn or ""](F.col(a.field))


def _null_time(df: DataFrame, plan: Plan) -> Column:
    """Raises the event path's error for a null time, naming the key as Python shows it."""
    types = {f.name: f.dataType for f in df.schema.fields}
    parts = [_shown(F.col(k), types[k]) for k in plan.key_names]
    key = parts[0] if len(parts) == 1 else F.concat(
        F.lit("("), F.concat_ws(", ", *parts), F.lit(")"))
    return F.raise_error(F.concat(F.lit("BadEventError: key "), key,
                                  F.lit(f": event time None (field {plan.time_name!r}) is "
                                        f"null")))


def _shown(col: Column, dt: DataType) -> Column:
    """A key column's value about as ``repr`` shows it (strings quoted, null as None)."""
    text = col.cast(StringType())
    if isinstance(dt, StringType):
        text = F.concat(F.lit("'"), text, F.lit("'"))
    return F.coalesce(text, F.lit("None"))


__all__ = ["OWN_PLAN", "own_plan_rows", "with_own_plan"]
