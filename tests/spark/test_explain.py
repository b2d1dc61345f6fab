"""``spark_adapter.explain`` says what ``sliding_aggregate`` with the same arguments runs:
pre-sliced exactly when Spark's plan holds the per-(key, slice) aggregation, the OVER kernel
exactly when the kernel answers the keys, the state layout of the streaming processor."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pyspark.sql import DataFrame

from spark_adapter import explain, over, sliding, sliding_aggregate, tumbling

T0 = datetime.datetime(2024, 3, 1, 10, 0, 0)


@pytest.fixture(scope="module")
def flights(spark: Any) -> DataFrame:
    rows = [(f"k{i % 3}", T0 + datetime.timedelta(minutes=7 * i), i % 11, float(i % 5) / 4,
             str(i)) for i in range(90)]
    return spark.createDataFrame(rows, "k string, t timestamp, v long, x double, s string")


def _presliced(out: DataFrame) -> bool:
    plan = out._jdf.queryExecution().executedPlan().toString()
    return "Aggregate(key" in plan and "swag_batch" in plan


SHAPES = [
    ("sliding max of a long", sliding("1 hour", "15 minutes"), {"m": {"fn": "max", "field": "v"}}),
    ("tumbling mean of a double", tumbling("30 minutes"), {"a": {"fn": "mean", "field": "x"}}),
    ("sliding last", sliding("1 hour", "30 minutes"), {"l": {"fn": "last", "field": "v"}}),
    ("over mean", over("20 minutes"), {"a": {"fn": "mean", "field": "x"}}),
    ("over of a string", over("20 minutes"), {"n": {"fn": "count", "field": "s"}}),
]


@pytest.mark.parametrize("name, window, aggs", SHAPES, ids=[s[0] for s in SHAPES])
def test_batch_explain_matches_what_runs(flights: DataFrame, name: str, window: Any,
                                         aggs: dict[str, Any]) -> None:
    args = {"key": "k", "time": "t", "window": window, "aggregations": aggs}
    plan = explain(flights, **args)
    out = sliding_aggregate(flights, **args)
    # (Spark's own plan, where the planner takes it, runs instead of everything below)
    assert _presliced(out) == (plan.presliced is not None and plan.engine_plan is None), \
        str(plan)
    assert ("swag_batch" in out._jdf.queryExecution().executedPlan().toString()) == (
        plan.engine_plan is None)
    assert out.count() > 0
    # (the grouped function runs in the workers; that it takes the OVER kernel exactly when
    # the plan has one is tests/spark/test_over_batch.py's, without a JVM)
    assert (plan.over_kernel is not None) == (name == "over mean"), str(plan)
    assert "spark batch" in str(plan) and plan.runtime in ("cross-key", "per-key")
    if plan.presliced is not None:
        assert "slice rows per key and window slide" in plan.reasons["presliced"]


def test_presliced_false_and_true(flights: DataFrame) -> None:
    args = {"key": "k", "time": "t", "window": sliding("1 hour", "15 minutes"),
            "aggregations": {"m": {"fn": "max", "field": "v"}}}
    assert explain(flights, presliced=False, **args).presliced is None
    assert not _presliced(sliding_aggregate(flights, presliced=False, **args))
    with pytest.raises(ValueError, match="cannot be pre-sliced"):
        explain(flights, key="k", time="t", window=over("1 hour"), presliced=True,
                aggregations={"m": {"fn": "max", "field": "v"}})


def test_streaming_explain_names_the_state_layout(spark: Any, tmp_path: Any) -> None:
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
              .selectExpr("cast(value % 3 as string) as k", "timestamp as t", "value as v"))
    args = {"key": "k", "time": "t", "window": over("10 minutes"),
            "aggregations": {"m": {"fn": "max", "field": "v"}}, "watermark": "1 minute"}
    buckets = explain(stream, **args)
    assert buckets.runtime == "per-key"  # the cross-key runtime takes no over window
    assert "does not cover this query" in buckets.reasons["runtime"]
    assert "16 key buckets" in str(buckets) and buckets.pair_map
    assert "KVS layout" not in buckets.path
    kvs = explain(stream, layout="kvs", key_buckets=4, **args)
    assert "4 key buckets" in str(kvs) and "KVS layout" in kvs.path
    assert "the key's pair map from its next load" in kvs.reasons["kvs layout"]
    for bad in (None, 0, 2.0):
        with pytest.raises(ValueError, match=f"key_buckets must be a positive int, got {bad}"):
            explain(stream, key_buckets=bad, **args)
    sliced = explain(stream, presliced=True, window=sliding("10 minutes", "5 minutes"),
                     **{k: v for k, v in args.items() if k != "window"})
    assert sliced.presliced is not None and sliced.presliced.width == 300_000


@pytest.mark.parametrize("delay", ["10 minutes", 600_000, datetime.timedelta(minutes=10)],
                         ids=["string", "ms", "timedelta"])
def test_watermark_takes_every_duration_form(spark: Any, delay: Any) -> None:
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
              .selectExpr("cast(value % 3 as string) as k", "timestamp as t", "value as v"))
    out = sliding_aggregate(stream, key="k", time="t", window=sliding("1 hour", "10 minutes"),
                            aggregations={"m": {"fn": "max", "field": "v"}}, watermark=delay)
    plan = out._jdf.queryExecution().analyzed().toString()
    assert "EventTimeWatermark" in plan and ("10 minutes" in plan or "600000" in plan)
