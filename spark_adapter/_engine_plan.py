"""Spark's own plan of a batch query, run instead of swag where the planner chose it
(:func:`adapters.planning.engine_plan`: every output exact in Spark; a sliding query at few
windows per event, an OVER query when the session's frame is the segment tree):

    groupBy(keys..., window(time, range, slide, offset)).agg(count / max / min / sum)
    select(*, count / max / min / sum over partitionBy(keys).orderBy(ms).rangeBetween(-R, 0))

in the output columns of swag's own path (:func:`adapters.engine.rows.output_columns`: the
key columns, ``window_start``, ``window_end`` in the time column's type, or the input row
with its time at swag's millisecond precision; the aggregations in swag's output types).
Batch has no lateness, and Spark's aggregates of integers skip nulls and are exact, so the
rows are the same; a null time raises the event path's :class:`adapters.BadEventError`
(``window()`` itself would drop the row).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, TimestampType

from adapters import EngineFacts
from adapters.engine.rows import OutputColumns
from adapters.engine.worker import Plan
from adapters.query.specs import AggSpec, OverWindow, SlidingWindow

from ._presliced import null_times_checked, time_block
from ._types import FLOATING, grouping_key

#: the names of Spark's own plans in ``explain`` and the planner's facts
OWN_PLAN = "Spark's window() groupBy"
OWN_OVER_PLAN = "Spark's rangeBetween frame (segment tree)"
#: Spark's switch of its segment-tree frame (opt-in since Spark 4.2)
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"


def with_own_plan(df: DataFrame, facts: EngineFacts, key_types: Sequence[DataType] | None,
                  late_rows: str, output_types: Mapping[str, Any], time_is_string: bool
                  ) -> EngineFacts:
    """``facts`` with Spark's own plans offered to the planner in batch (the OVER one when
    ``df``'s session enables the segment-tree frame), and why this call cannot take them
    whatever its query (``key_types``: the typed key columns, ``None`` when a key column is
    not a scalar)."""
    if facts.streaming:
        return facts
    block = None
    if late_rows != "drop":
        block = f"late_rows={late_rows!r} (swag's output forms)"
    elif output_types:
        block = "output_types= overrides an output's type"
    else:
        block = time_block(time_is_string)
        if block is None and key_types is None:
            block = "a key column is not a scalar"
    tree = str(df.sparkSession.conf.get(SEGMENT_TREE, "false")).lower() == "true"
    return dataclasses.replace(
        facts, own_plan=OWN_PLAN, own_plan_block=block,
        own_over_plan=OWN_OVER_PLAN if tree else None,
        own_over_missing=f"{SEGMENT_TREE} is off: Spark's default frame costs more the more "
                         f"events a frame holds (docs/benchmarks.md)")


def own_plan_rows(df: DataFrame, plan: Plan, time_type: DataType,
                  agg_types: Mapping[str, DataType], output: OutputColumns,
                  metric: Any) -> DataFrame:
    """The query's rows by Spark's own plan, in swag's output columns (``metric``: a
    ``pyspark.sql.Observation`` observes ``late_events`` (0) and ``rows`` as swag's path
    does)."""
    checked = null_times_checked(df, plan)
    types = {f.name: f.dataType for f in df.schema.fields}
    # a floating key's -0.0 is 0.0, as on swag's path (an OVER row would keep its own -0.0)
    sources: dict[tuple[str, str], Column] = {
        ("key", "" if len(plan.key_names) == 1 else str(i)):
            grouping_key(F.col(k)).cast(types[k]) if isinstance(types[k], FLOATING) else F.col(k)
        for i, k in enumerate(plan.key_names)}
    window = plan.query.windows[0]
    aggs = [_aggregate(a) for a in plan.query.aggregations]
    if isinstance(window, OverWindow):
        rows = _over(checked, plan, window, time_type, aggs, sources)
    else:
        assert isinstance(window, SlidingWindow)
        rows = _sliding(checked, plan, window, time_type, aggs, sources)
    sources.update({("agg", a.name): F.col(f"_swag_a{i}").cast(agg_types[a.name])
                    for i, a in enumerate(plan.query.aggregations)})
    # every column nullable, as swag's path gives them (Python's output has no NOT NULL)
    out = rows.select(*[F.when(sources[s].isNotNull(), sources[s]).alias(n)
                        for n, s in zip(output.names, output.sources)])
    if isinstance(metric, Observation):
        out = out.observe(metric, F.lit(0).cast("long").alias("late_events"),
                          F.count(F.lit(1)).alias("rows"))
    return out


def _sliding(df: DataFrame, plan: Plan, window: SlidingWindow, time_type: DataType,
             aggs: Sequence[Column], sources: dict[tuple[str, str], Column]) -> DataFrame:
    """``groupBy(keys, window())`` with the aggregates ``_swag_a<i>``; adds the bounds'
    sources in the time column's type."""
    time = F.col(plan.time_name)
    ts = time if isinstance(time_type, TimestampType) else F.timestamp_millis(time.cast("long"))
    ms = "{} milliseconds".format
    slices = F.window(ts, ms(window.range), ms(window.slide), ms(window.offset % window.slide))
    grouped = df.groupBy(*[F.col(k) for k in plan.key_names], slices.alias("_swag_w"))
    for kind in ("start", "end"):
        bound = F.col(f"_swag_w.{kind}")
        sources[(kind, "")] = (bound if isinstance(time_type, TimestampType)
                               else F.unix_millis(bound).cast(time_type))
    return grouped.agg(*[a.alias(f"_swag_a{i}") for i, a in enumerate(aggs)])


def _over(df: DataFrame, plan: Plan, window: OverWindow, time_type: DataType,
          aggs: Sequence[Column], sources: dict[tuple[str, str], Column]) -> DataFrame:
    """Each row with the aggregates ``_swag_a<i>`` over ``rangeBetween(-range, 0)`` of its
    key's millisecond times; adds the sources of the time (at swag's millisecond precision)
    and of the event's fields."""
    time = F.col(plan.time_name)
    timestamp = isinstance(time_type, TimestampType)
    ms = F.unix_millis(time) if timestamp else time.cast("long")
    frame = (Window.partitionBy(*[F.col(k) for k in plan.key_names]).orderBy(ms)
             .rangeBetween(-window.range, 0))
    sources[("time", "")] = F.timestamp_millis(F.unix_millis(time)) if timestamp else time
    for name in df.columns:
        sources[("field", name)] = F.col(name)
    return df.select("*", *[a.over(frame).alias(f"_swag_a{i}") for i, a in enumerate(aggs)])


def _aggregate(a: AggSpec) -> Column:
    """Spark's aggregate of output ``a`` (a built-in the planner found exact in Spark)."""
    if a.field is None:  # count of events
        return F.count(F.lit(1))
    fns = {"count": F.count, "max": F.max, "min": F.min, "sum": F.sum}
    return fns[a.fn or ""](F.col(a.field))


__all__ = ["OWN_PLAN", "own_plan_rows", "with_own_plan"]
