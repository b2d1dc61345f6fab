"""Spark batch, per-event windows: ``sliding_aggregate(window=over(1 hour))`` against Spark's
own ``Window.partitionBy(key).orderBy(ts).rangeBetween(-R, 0)`` with max + count, run two
ways: Spark's default frame and its segment-tree frame
(``spark.sql.window.segmentTree.enabled=true``, opt-in since Spark 4.2: Spark's best plan for
built-in aggregates over sliding frames). Same data, rows checked equal.

Two data sets (:func:`benchmarks.spark_windows.make_data`, 10^6 events, 100 keys, integer
values), which differ in how many events one frame holds:

* ``dense``: event times uniform over 6 hours, about 1,700 events per key in each frame;
* ``sparse``: event times uniform over 1,000 hours, about 10 events per key in each frame.

All sides read the same cached DataFrame and write their result to Parquet; the timed part
is that action (rounds rotate the order of the sides; medians). The results are then read
back and checked equal with ``exceptAll`` both ways, outside the timing. swag runs the NumPy
OVER kernel per key. Besides wall time, each run records the CPU seconds of the JVM and of its
Python workers.

Run: ``.venvs/spark/bin/python -m benchmarks spark_over`` (``--quick``: 10^5 events).
Stores ``benchmarks/results/spark_over.json``.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

from benchmarks import common
from benchmarks.spark_windows import cpu_cell, make_data, timed_noop, timed_parquet

RANGE_MS = 3_600_000
ROUNDS = 3
COLUMNS = ["key", "ts", "v", "seq", "n", "mx"]
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"
#: data set name -> span of the event times (100 keys, 10^6 events)
DATA_SETS = {"dense": 6 * RANGE_MS, "sparse": 1_000 * RANGE_MS}
SIDES = ("default_frame", "segment_tree", "swag")


def native(df: Any) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("key").orderBy(F.unix_millis("ts")).rangeBetween(-RANGE_MS, 0)
    return df.select("key", "ts", "v", "seq", F.count("*").over(w).alias("n"),
                     F.max("v").over(w).alias("mx"))


def swag(df: Any) -> Any:
    from spark_adapter import over, sliding_aggregate

    return sliding_aggregate(df, key="key", time="ts", window=over(RANGE_MS),
                             aggregations={"n": {"fn": "count"},
                                           "mx": {"fn": "max", "field": "v"}},
                             order_by="seq").select(*COLUMNS)


def same(a: Any, b: Any) -> tuple[bool, int]:
    a2, b2 = a.select(*COLUMNS).cache(), b.select(*COLUMNS).cache()
    n = a2.count()
    ok = n == b2.count() and a2.exceptAll(b2).isEmpty() and b2.exceptAll(a2).isEmpty()
    a2.unpersist()
    b2.unpersist()
    return ok, n


def _timed_side(spark: Any, side: str, df: Any, path: str) -> tuple[float, Any]:
    """One timed run of ``side``; the segment-tree conf is on only for its own side."""
    build: Callable[[Any], Any] = swag if side == "swag" else native
    spark.conf.set(SEGMENT_TREE, "true" if side == "segment_tree" else "false")
    try:
        return timed_parquet(build(df), path)
    finally:
        spark.conf.unset(SEGMENT_TREE)


def side_medians(events: int, runs: dict[str, list[tuple[float, Any]]]) -> dict[str, Any]:
    """Per side: the rounds' wall seconds, their median, events/s and median CPU seconds of
    the JVM and the Python workers (``runs``: side -> :func:`timed_parquet` results)."""
    r: dict[str, Any] = {}
    for side, got in runs.items():
        wall = statistics.median(t for t, _ in got)
        r[f"{side}_round_s"] = [round(t, 2) for t, _ in got]
        r[f"{side}_s"] = round(wall, 2)
        r[f"{side}_eps"] = round(events / wall)
        cpus = [c for _, c in got if c is not None]
        if cpus:
            r[f"{side}_cpu_jvm_s"] = round(statistics.median(c[0] for c in cpus), 2)
            r[f"{side}_cpu_python_s"] = round(statistics.median(c[1] for c in cpus), 2)
    return r


def _summary(events: int, runs: dict[str, list[tuple[float, Any]]]) -> dict[str, Any]:
    """:func:`side_medians` and swag's ratio to each Spark plan."""
    r = side_medians(events, runs)
    for spark_side in ("default_frame", "segment_tree"):
        r[f"vs_{spark_side}"] = round(r[f"{spark_side}_s"] / r["swag_s"], 2)
    return r


def measure_data_set(spark: Any, name: str, events: int, keys: int,
                     rounds: int) -> dict[str, Any]:
    """All three sides on one data set, rounds rotating the order; rows checked equal."""
    df = make_data(spark, events, keys, span_ms=DATA_SETS[name])
    small = df.limit(20_000)  # warm-up (JIT, Python workers), not timed
    for side in SIDES:
        spark.conf.set(SEGMENT_TREE, "true" if side == "segment_tree" else "false")
        timed_noop((swag if side == "swag" else native)(small))
    spark.conf.unset(SEGMENT_TREE)
    tmp = tempfile.mkdtemp(prefix="swag-bench-over-")
    paths = {side: os.path.join(tmp, side) for side in SIDES}
    runs: dict[str, list[tuple[float, Any]]] = {side: [] for side in SIDES}
    for i in range(rounds):
        for side in SIDES[i % 3:] + SIDES[:i % 3]:
            runs[side].append(_timed_side(spark, side, df, paths[side]))
            print(name, side, round(runs[side][-1][0], 2), flush=True)
    checks = [same(spark.read.parquet(paths["swag"]), spark.read.parquet(paths[side]))
              for side in ("default_frame", "segment_tree")]
    df.unpersist()
    shutil.rmtree(tmp, ignore_errors=True)
    frame_events = events / keys * RANGE_MS / DATA_SETS[name]
    return {"data": name, "events": events, "keys": keys, "rows": checks[0][1],
            "events_per_frame": round(frame_events), "same_results": all(c[0] for c in checks),
            "rounds": rounds, "range_ms": RANGE_MS, **_summary(events, runs)}


def measure(events: int, keys: int, rounds: int = ROUNDS) -> dict[str, Any]:
    from spark_adapter import local_session

    spark = local_session("swag-bench-over", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "6g"})
    results = [measure_data_set(spark, name, events, keys, rounds) for name in DATA_SETS]
    version = spark.version
    spark.stop()
    return {"spark": version, "platform": platform.platform(), "results": results}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_over``."""
    payload = measure(100_000 if quick else 1_000_000, 100)
    common.save("spark_over", payload,
                clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    print(markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks import report

    results = payload["results"]
    rows = [[r["data"], f"{r['events_per_frame']:,}", f"{r['default_frame_eps']:,}",
             f"{r['segment_tree_eps']:,}", f"{r['swag_eps']:,}", f"{r['vs_default_frame']}x",
             f"{r['vs_segment_tree']}x", cpu_cell(r, "segment_tree"), cpu_cell(r, "swag"),
             "yes" if r["same_results"] else "NO"] for r in results]
    lines = [
        "## Spark batch per-event windows: swag `over` vs Spark's `rangeBetween` frames\n",
        report.machine_line(payload) + f"_PySpark {payload.get('spark', '?')}, local[2], 4 "
        f"shuffle partitions, batch mode._\n",
        f"{results[0]['events']:,} events, {results[0]['keys']} keys, integer values; per "
        f"event the count and max of the events of its key in `[t - 1 h, t]`. Spark: "
        f"`Window.partitionBy(\"key\").orderBy(unix_millis(ts)).rangeBetween(-3600000, 0)`, "
        f"with its default frame and with its segment-tree frame (`{SEGMENT_TREE}=true`); "
        f"swag: `sliding_aggregate(window=over(3600000))`, which runs each key's Arrow "
        f"columns through a NumPy OVER kernel (frames by binary search, max by a sparse "
        f"table). All write Parquet (the timed action), {results[0]['rounds']} rounds "
        f"rotating the sides, medians; rows checked equal with `exceptAll` both ways. Run: "
        f"`.venvs/spark/bin/python -m benchmarks spark_over`.\n",
        report.table(
            ["data", "events per frame", "Spark default frame (events/s)",
             "Spark segment tree (events/s)", "swag (events/s)", "swag / default frame",
             "swag / segment tree", "CPU s segment tree", "CPU s swag (JVM + Python)",
             "same rows"], rows),
    ]
    for r in results:
        lines.append(report.goal(
            f"Spark batch OVER at least 1x Spark's segment-tree frame ({r['data']} data)",
            r["vs_segment_tree"] >= 1, f"{r['vs_segment_tree']}x wall (medians)"))
    return "\n".join(lines) + "\n"
