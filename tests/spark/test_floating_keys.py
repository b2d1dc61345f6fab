"""Floating-point key columns group as Spark's ``groupBy`` groups them, in batch and in
streaming: ``-0.0`` and ``0.0`` are one key, named ``0.0`` (nested in a struct too), NaN is
one key; Spark's own plans, the pre-sliced path and the event path key them alike."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import functions as F

from spark_adapter import explain, over, sliding_aggregate, tumbling
from tests.spark.memory_sink import memory_table
from tests.spark.test_engine_plan import segment_tree
from tests.spark.test_finished_keys import BATCH_ROWS

AGGS = {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}
#: -0.0 first: the first row of a key must not name it
ZEROS = [-0.0, 0.0, float("nan"), 1.5, -0.0, 0.0, float("nan"), 0.0]


def named(x: Any) -> Any:
    """A key value with its sign (NaN as one value): ``-0.0`` and ``0.0`` differ here."""
    if isinstance(x, float):
        return "nan" if x != x else (x, math.copysign(1.0, x))
    if hasattr(x, "asDict"):
        return tuple(named(v) for v in x.asDict().values())
    if isinstance(x, list):
        return tuple(named(v) for v in x)
    return x


def spark_groups(df: Any, keys: list[str]) -> dict[Any, tuple[int, int]]:
    """Spark's own ``groupBy``: count and max of ``v`` by each key's name."""
    return {tuple(named(r[k]) for k in keys): (r.n, r.mx) for r in
            df.groupBy(*keys).agg(F.count("*").alias("n"), F.max("v").alias("mx")).collect()}


def test_batch_floating_keys_are_spark_groups_on_every_path(spark: Any) -> None:
    """Rows spread over partitions and 7-row Arrow batches, a key's first row ``-0.0``:
    Spark's own plan, the pre-sliced path and the event path give Spark's groups."""
    data = [(ZEROS[i % len(ZEROS)], i, i) for i in range(200)]
    df = spark.createDataFrame(data, "f double, t long, v long").repartition(5)
    args = {"key": "f", "time": "t", "window": tumbling(1_000), "aggregations": AGGS}
    paths = {"own plan": {}, "pre-sliced": {"presliced": True}, "": {"presliced": False}}
    want = spark_groups(df, ["f"])
    assert len(want) == 3
    spark.conf.set(BATCH_ROWS, "7")
    try:
        for name, path in paths.items():
            taken = explain(df, **args, **path).path
            assert ("own plan" in taken) == (name == "own plan"), taken
            assert ("pre-sliced" in taken) == (name == "pre-sliced"), taken
            got = sliding_aggregate(df, **args, **path).collect()
            assert {(named(r.f),): (r.n, r.mx) for r in got} == want, taken
    finally:
        spark.conf.unset(BATCH_ROWS)


def test_batch_over_names_floating_keys_on_both_paths_alike(spark: Any) -> None:
    data = [(ZEROS[i % len(ZEROS)], i, i) for i in range(40)]
    df = spark.createDataFrame(data, "f double, t long, v long").repartition(3)

    def rows(**path: Any) -> list[tuple[Any, ...]]:
        out = sliding_aggregate(df, key="f", time="t", window=over(9), aggregations=AGGS,
                                **path)
        return sorted(((named(r.f), r.t, r.n, r.mx) for r in out.collect()), key=repr)

    with segment_tree(spark, True):
        own, swag = rows(), rows(presliced=False)
    assert own == swag
    assert {r[0] for r in own} == {(0.0, 1.0), (1.5, 1.0), "nan"}


@pytest.mark.parametrize("presliced", [False, True])
def test_streaming_floating_keys_are_spark_groups(spark: Any, tmp_path: Any,
                                                  presliced: bool) -> None:
    """A double, a float, a struct's double and an array of doubles as key columns: one
    key per Spark group, not one per JSON spelling, on the event path and pre-sliced."""
    schema = "f double, g float, s struct<x: double>, a array<double>, t long, v long"
    data = [(ZEROS[i % 8], ZEROS[i % 3], (ZEROS[i % 5],), [1.0, ZEROS[i % 7]], 5, i)
            for i in range(120)]
    spark.createDataFrame(data, schema).coalesce(1).write.parquet(str(tmp_path / "in" / "a"))
    # a later event in its own file: the watermark passes the events' window
    spark.createDataFrame([(9.0, 9.0, (9.0,), [9.0], 10**6, 0)], schema).coalesce(1) \
        .write.parquet(str(tmp_path / "in" / "b"))
    src = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1) \
        .parquet(str(tmp_path / "in" / "*"))
    out = sliding_aggregate(src, key=["f", "g", "s", "a"], time="t", window=tumbling(1_000),
                            aggregations=AGGS, watermark="1 second", presliced=presliced)
    with memory_table(out, "swag_floating_keys", str(tmp_path / "ckpt")) as table:
        got = table.collect()
    keys = ["f", "g", "s", "a"]
    want = spark_groups(spark.createDataFrame(data, schema), keys)
    assert len(got) == len(want)
    assert {tuple(named(r[k]) for k in keys): (r.n, r.mx) for r in got} == want
