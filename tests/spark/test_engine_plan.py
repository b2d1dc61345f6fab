"""Spark's own plan (``spark_adapter/_engine_plan.py``), which the planner chooses for a batch
query whose outputs are all exact in Spark (``adapters.planning.engine_plan``): its rows and
output schema equal swag's own path (``presliced=False``) and a brute force on random data
with nulls, several key columns, integer and timestamp times; ``explain`` names the path and
why; the cases it must leave to swag stay there."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Observation

from spark_adapter import explain, over, sliding, sliding_aggregate, tumbling
from spark_adapter._engine_plan import OWN_OVER_PLAN, OWN_PLAN, SEGMENT_TREE

SCHEMA = "k1 string, k2 int, t {time}, v int, w long"
AGGS = {"n": {"fn": "count"}, "c": {"fn": "count", "field": "v"},
        "mx": {"fn": "max", "field": "v"}, "mn": {"fn": "min", "field": "w"},
        "s": {"fn": "sum", "field": "v"}}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

events = st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from([1, 2, None]),
                            st.integers(-3_000, 3_000), st.one_of(st.none(), st.integers(-9, 9)),
                            st.one_of(st.none(), st.integers(-2**40, 2**40))),
                  min_size=1, max_size=40)


@contextmanager
def segment_tree(spark: Any, on: bool) -> Iterator[None]:
    spark.conf.set(SEGMENT_TREE, "true" if on else "false")
    try:
        yield
    finally:
        spark.conf.unset(SEGMENT_TREE)


def frame(spark: Any, rows: list[tuple[Any, ...]], timestamp: bool) -> Any:
    """The rows as a DataFrame; a timestamp time is the ms value plus 0.4 ms (swag reads
    times in whole ms)."""
    if timestamp:
        rows = [(*r[:2], EPOCH + dt.timedelta(milliseconds=r[2] + 0.4), *r[3:]) for r in rows]
    return spark.createDataFrame(rows, SCHEMA.format(time="timestamp" if timestamp else "long"))


def brute_sliding(rows: list[tuple[Any, ...]], rng: int, slide: int, offset: int
                  ) -> list[tuple[Any, ...]]:
    """``(k1, k2, start, end, n, c, mx, mn, s)`` of every non-empty window."""
    windows: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for r in rows:
        t = r[2]
        j = (t - offset) // slide
        while offset + j * slide > t - rng:
            windows.setdefault((r[0], r[1], offset + j * slide), []).append(r)
            j -= 1
    return sorted(((k1, k2, s, s + rng, *aggregates(group))
                   for (k1, k2, s), group in windows.items()), key=repr)


def aggregates(group: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    vs = [r[3] for r in group if r[3] is not None]
    ws = [r[4] for r in group if r[4] is not None]
    return (len(group), len(vs), max(vs, default=None), min(ws, default=None),
            sum(vs) if vs else None)


def brute_over(rows: list[tuple[Any, ...]], rng: int) -> list[tuple[Any, ...]]:
    """``(k1, k2, t, v, w, n, c, mx, mn, s)`` of every event."""
    return sorted(((*r, *aggregates([o for o in rows if o[:2] == r[:2]
                                     and r[2] - rng <= o[2] <= r[2]])) for r in rows), key=repr)


def collected(df: Any) -> list[tuple[Any, ...]]:
    """The rows, sorted, timestamps as epoch ms (floored: swag's times are whole ms)."""
    from pyspark.sql import functions as F

    cols = [F.unix_millis(c) if t == "timestamp" else F.col(c) for c, t in df.dtypes]
    return sorted((tuple(row) for row in df.select(*cols).collect()), key=repr)


def both_paths(df: Any, **arguments: Any) -> tuple[Any, Any]:
    """``(engine path, swag's own path)``, checking the planner chose the engine path."""
    assert "own plan" in explain(df, **arguments).path
    return sliding_aggregate(df, **arguments), sliding_aggregate(df, presliced=False,
                                                                 **arguments)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=events, slide=st.integers(1, 700), k=st.integers(1, 12),
       offset=st.integers(-1_000, 1_000), timestamp=st.booleans())
def test_sliding_rows_equal_swag_and_brute_force(spark: Any, rows: list[tuple[Any, ...]],
                                                 slide: int, k: int, offset: int,
                                                 timestamp: bool) -> None:
    rng = slide * k - (slide // 2 if k > 1 else 0)  # range need not be a multiple of slide
    df = frame(spark, rows, timestamp)
    args = {"key": ["k1", "k2"], "time": "t", "aggregations": AGGS,
            "window": {"kind": "sliding", "range": rng, "slide": slide, "offset": offset}}
    engine, own = both_paths(df, **args)
    assert engine.schema == own.schema  # names, order, types, nullability
    assert collected(engine) == collected(own) == brute_sliding(rows, rng, slide, offset)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=events, rng=st.integers(0, 2_000), timestamp=st.booleans())
def test_over_rows_equal_swag_and_brute_force(spark: Any, rows: list[tuple[Any, ...]],
                                              rng: int, timestamp: bool) -> None:
    df = frame(spark, rows, timestamp)
    with segment_tree(spark, True):
        engine, own = both_paths(df, key=["k1", "k2"], time="t", window=over(rng),
                                 aggregations=AGGS)
        assert engine.schema == own.schema  # names, order, types, nullability
        assert collected(engine) == collected(own) == brute_over(rows, rng)


def test_explain_names_the_engine_path_and_why(spark: Any) -> None:
    df = frame(spark, [("a", 1, 5, 1, 2)], False)
    plan = explain(df, key="k1", time="t", window=sliding(60, 10), aggregations=AGGS)
    assert plan.engine_plan == OWN_PLAN
    assert f"path: the engine's own plan ({OWN_PLAN})" in str(plan)
    assert "engine plan: yes" in str(plan) and "6 windows per event (at most 12)" in str(plan)
    with segment_tree(spark, True):
        assert explain(df, key="k1", time="t", window=over(60),
                       aggregations=AGGS).engine_plan == OWN_OVER_PLAN
    text = str(explain(df, key="k1", time="t", window=over(60), aggregations=AGGS))
    assert "engine plan: no" in text and SEGMENT_TREE in text


@pytest.mark.parametrize("change, why", [
    ({"presliced": False}, "presliced=False asks for swag's own path"),
    ({"presliced": True}, "presliced=True asks for swag's own path"),
    ({"algorithm": "two_stacks"}, "algorithm='two_stacks' asks"),
    ({"window": sliding(130, 10)}, "13 windows per event, above 12"),
    ({"aggregations": {"m": {"fn": "mean", "field": "v"}}}, "'m': mean of int field 'v'"),
    ({"aggregations": {"m": {"fn": "max", "field": "f"}}}, "float field 'f' is not exact"),
    ({"nulls": "error"}, "nulls='error'"),
    ({"late_rows": "return"}, "late_rows='return'"),
    ({"output_types": {"n": "int"}}, "output_types="),
    ({"window": [sliding(20, 10), tumbling(10)]}, "not one sliding, tumbling or over"),
])
def test_what_stays_on_swags_path(spark: Any, change: dict[str, Any], why: str) -> None:
    df = spark.createDataFrame([("a", 1, 5, 1, 2, 0.5, 0.5)],
                               "k1 string, k2 int, t long, v int, w long, f double, g double")
    args = {"key": "k1", "time": "t", "window": sliding(20, 10),
            "aggregations": {"n": {"fn": "count"}}, **change}
    plan = explain(df, **args)
    assert plan.engine_plan is None and "own plan" not in plan.path
    assert why in plan.reasons["engine plan"], plan.reasons["engine plan"]


def test_null_time_raises_as_on_swags_path(spark: Any) -> None:
    df = frame(spark, [("k1", 1, 5, 1, 2), ("k2", 2, None, 6, 3)], False)  # type: ignore[list-item]
    out = sliding_aggregate(df, key="k1", time="t", window=tumbling(10), aggregations=AGGS)
    with pytest.raises(Exception, match=r"(?s)BadEventError.*'k2'.*event time None \(field "
                                        r"'t'\) is null"):
        out.collect()


def test_an_observation_counts_rows_as_on_swags_path(spark: Any) -> None:
    df = frame(spark, [("a", 1, 5, 1, 2), ("a", 1, 15, 2, 3), ("b", 2, 5, 3, 4)], False)
    seen = {}
    for presliced in (None, False):
        metric = Observation()
        sliding_aggregate(df, key="k1", time="t", window=tumbling(10), aggregations=AGGS,
                          metric=metric, presliced=presliced).collect()
        seen[presliced] = metric.get
    assert seen[None] == seen[False] == {"late_events": 0, "rows": 3}
