"""Spark batch, per-event windows: ``sliding_aggregate(window=over(1 hour))`` against Spark's
own ``Window.partitionBy(key).orderBy(ts).rangeBetween(-R, 0)`` with max + count, same data,
rows checked equal.

Data: :func:`benchmarks.spark_windows.make_data` (10^6 events, 100 keys, event times uniform
over 6 hours: about 1,700 events per key in each frame, integer values). Both sides read the
same cached DataFrame and write their result to Parquet; the timed part is that action
(rounds alternate the two sides; medians). The results are then read back and checked equal
with ``exceptAll`` both ways, outside the timing. swag runs the NumPy OVER kernel per key
(``spark_adapter/_over.py``). Besides wall time, each run records the CPU seconds of the JVM
and of its Python workers.

Run: ``.venvs/spark/bin/python -m benchmarks spark_over`` (``--quick``: 10^5 events).
Stores ``benchmarks/results/spark_over.json``.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import tempfile
from typing import Any

from benchmarks import common
from benchmarks.spark_windows import cpu_cell, make_data, timed_noop, timed_parquet

RANGE_MS = 3_600_000
ROUNDS = 3
COLUMNS = ["key", "ts", "v", "seq", "n", "mx"]


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


def measure(events: int, keys: int, rounds: int = ROUNDS) -> dict[str, Any]:
    from spark_adapter import local_session

    spark = local_session("swag-bench-over", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "6g"})
    load = os.getloadavg()[0]
    tmp = tempfile.mkdtemp(prefix="swag-bench-over-")
    df = make_data(spark, events, keys)
    small = df.limit(20_000)  # warm-up (JIT, Python workers), not timed
    timed_noop(native(small))
    timed_noop(swag(small))
    a, b = os.path.join(tmp, "native"), os.path.join(tmp, "swag")
    runs: dict[str, list[tuple[float, Any]]] = {"native": [], "swag": []}
    for i in range(rounds):
        sides = [("native", native, a), ("swag", swag, b)]
        for side, build, path in (sides if i % 2 == 0 else sides[::-1]):
            runs[side].append(timed_parquet(build(df), path))
            print(side, round(runs[side][-1][0], 2), flush=True)
    ok, rows = same(spark.read.parquet(a), spark.read.parquet(b))
    version = spark.version
    spark.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    r: dict[str, Any] = {"events": events, "keys": keys, "rows": rows, "same_results": ok,
                         "rounds": rounds, "range_ms": RANGE_MS}
    for side, got in runs.items():
        wall = statistics.median(t for t, _ in got)
        r[f"{side}_round_s"] = [round(t, 2) for t, _ in got]
        r[f"{side}_s"] = round(wall, 2)
        r[f"{side}_eps"] = round(events / wall)
        cpus = [c for _, c in got if c is not None]
        if cpus:
            r[f"{side}_cpu_jvm_s"] = round(statistics.median(c[0] for c in cpus), 2)
            r[f"{side}_cpu_python_s"] = round(statistics.median(c[1] for c in cpus), 2)
    r["speedup"] = round(r["native_s"] / r["swag_s"], 2)
    r["round_speedups"] = [round(x / y, 2) for x, y in zip(r["native_round_s"],
                                                           r["swag_round_s"])]
    return {"spark": version, "load_average_at_start": round(load, 2),
            "load_average_at_end": round(os.getloadavg()[0], 2),
            "platform": platform.platform(), "result": r}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_over``."""
    payload = measure(100_000 if quick else 1_000_000, 100)
    common.save("spark_over", payload,
                clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    print(markdown(payload))


def _cpu_ratio(r: dict[str, Any]) -> str:
    """Spark's CPU seconds over swag's (JVM + Python workers), or ``?``."""
    if "native_cpu_jvm_s" not in r or "swag_cpu_jvm_s" not in r:
        return "?"
    native = r["native_cpu_jvm_s"] + r["native_cpu_python_s"]
    return f"{native / (r['swag_cpu_jvm_s'] + r['swag_cpu_python_s']):.1f}x"


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks import report

    r = payload["result"]
    lines = [
        "## Spark batch per-event windows: swag `over` vs `rangeBetween` (issue 14)\n",
        report.machine_line(payload) + f"_PySpark {payload.get('spark', '?')}, local[2], 4 "
        f"shuffle partitions, batch mode; load average {payload.get('load_average_at_start')}"
        f" at the start, {payload.get('load_average_at_end')} at the end (a shared "
        f"machine)._\n",
        f"{r['events']:,} events, {r['keys']} keys, event times uniform over 6 hours, integer "
        f"values (the data of the section above); per event the count and max of the events "
        f"of its key in `[t - 1 h, t]`. Spark: `Window.partitionBy(\"key\").orderBy("
        f"unix_millis(ts)).rangeBetween(-3600000, 0)`; swag: `sliding_aggregate(window="
        f"over(3600000))`, whose Python side runs each key's Arrow columns through the NumPy "
        f"OVER kernel (`adapters/crosskey/over_runtime.py`: frames by binary search, max by a "
        f"sparse table). Both write Parquet (the timed action), {r['rounds']} rounds "
        f"alternating the sides, medians; rows checked equal with `exceptAll` both ways. Run: "
        f"`.venvs/spark/bin/python -m benchmarks spark_over`.\n",
        report.table(
            ["rows", "Spark rangeBetween (events/s)", "swag over (events/s)", "swag / Spark",
             "Spark s / swag s per round", "CPU s Spark", "CPU s swag (JVM + Python)",
             "same rows"],
            [[f"{r['rows']:,}", f"{r['native_eps']:,}", f"{r['swag_eps']:,}",
              f"{r['speedup']}x", ", ".join(f"{x}x" for x in r["round_speedups"]),
              cpu_cell(r, "native"), cpu_cell(r, "swag"),
              "yes" if r["same_results"] else "NO"]]),
        report.goal("Spark batch OVER at least 10x `rangeBetween`", r["speedup"] >= 10,
                    f"{r['speedup']}x wall (median of each side); "
                    f"{_cpu_ratio(r)} in CPU seconds, JVM + Python"),
    ]
    return "\n".join(lines) + "\n"
