"""Spark batch: ``spark_adapter.sliding_aggregate`` against Spark's own
``groupBy(key, window(ts, R, S)).agg(...)`` on the same data, same results checked.

10^6 events, 100 keys, event times uniform over 6 hours (deterministic), integer values;
count, max and mean per window; R = 1 hour and S = 1 h, 10 min, 1 min, 10 s (k = R/S = 1, 6,
60, 360). Spark's window() copies every event into k windows before aggregating. swag runs
pre-sliced (``docs/spark.md``, "Pre-slicing"): Spark aggregates each (key, slice of width
S) once, map-side combined, and the Python driver combines the slice rows (100 keys x 6 h /
S) into windows with one structure per key, whatever k is. Both sides read the same cached
DataFrame and write their result to Parquet; the timed part is that action. The two result
sets are then read back and checked equal (``exceptAll`` both ways, means rounded to 1e-6),
outside the timing.
Besides wall time, each run records the CPU time of the JVM and of its Python workers, which
other jobs on a shared machine do not inflate.

Run: ``.venvs/spark/bin/python -m benchmarks spark_windows`` (``--quick``: 10^5 events), or
``.venvs/spark/bin/python -m benchmarks.spark_windows [--events N] [--slides 1h,10m]``.
Stores ``benchmarks/results/spark_windows.json`` and ``docs/img/spark_windows.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Any

from benchmarks import common

SLIDES = [("1 hour", 3_600_000), ("10 minutes", 600_000), ("1 minute", 60_000),
          ("10 seconds", 10_000)]
RANGE = ("1 hour", 3_600_000)
SPAN_MS = 6 * 3_600_000
START_MS = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def make_data(spark: Any, events: int, keys: int, seed: int = 42,
              span_ms: int = SPAN_MS) -> Any:
    """``events`` events of ``keys`` keys, times uniform over ``span_ms``, integer values."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    t = START_MS + rng.integers(0, span_ms, size=events)
    pdf = pd.DataFrame({
        "key": pd.Series(rng.integers(0, keys, size=events)).map(lambda k: f"k{k:03d}"),
        "ts": pd.to_datetime(t, unit="ms", utc=True),
        "v": rng.integers(0, 1000, size=events),
        "seq": np.arange(events),
    })
    df = spark.createDataFrame(pdf).repartition(4).cache()
    df.count()
    return df


def native(df: Any, slide: str) -> Any:
    from pyspark.sql import functions as F

    return (df.groupBy("key", F.window("ts", RANGE[0], slide))
            .agg(F.count("*").alias("n"), F.max("v").alias("mx"), F.avg("v").alias("mean"))
            .select("key", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "n", "mx", "mean"))


def swag(df: Any, slide_ms: int, algorithm: str = "auto") -> Any:
    from spark_adapter import sliding, sliding_aggregate

    return sliding_aggregate(
        df, key="key", time="ts", window=sliding(RANGE[1], slide_ms),
        aggregations={"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"},
                      "mean": {"fn": "mean", "field": "v"}},
        algorithm=algorithm, order_by="seq")


def process_tree_cpu(root: int) -> dict[int, float] | None:
    """CPU seconds used so far by process ``root`` (the JVM) and each of its live
    descendants (the Python daemon and workers), by pid (:func:`common.process_table`);
    ``None`` where there is no ``/proc`` or no such process."""
    table = common.process_table()
    if table is None or root not in table[1]:
        return None
    children, used = table
    return {pid: used.get(pid, 0.0) for pid in common.descendants(root, children)}


def cpu_used(before: dict[int, float], after: dict[int, float],
             root: int) -> tuple[float, float]:
    """CPU seconds of the JVM ``root`` and of its descendants between two
    :func:`process_tree_cpu` samples (a worker that exited in between is not counted; Spark
    keeps busy workers alive)."""
    deltas = {pid: cpu - before.get(pid, 0.0) for pid, cpu in after.items()}
    return deltas.pop(root, 0.0), sum(deltas.values())


def timed_noop(df: Any) -> float:
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def timed_parquet(df: Any, path: str) -> tuple[float, tuple[float, float] | None]:
    """Compute and write the result (the same sink for both sides); the files are then
    compared without recomputing anything. Returns the wall time and the CPU time of the
    JVM and of the Python workers (see :func:`process_tree_cpu`)."""
    jvm = df.sparkSession.sparkContext._gateway.proc.pid
    cpu0 = process_tree_cpu(jvm)
    start = time.perf_counter()
    df.write.mode("overwrite").parquet(path)
    wall = time.perf_counter() - start
    cpu1 = process_tree_cpu(jvm)
    if cpu0 is None or cpu1 is None:
        return wall, None
    return wall, cpu_used(cpu0, cpu1, jvm)


def same(a: Any, b: Any) -> tuple[bool, int]:
    from pyspark.sql import functions as F

    cols = ["key", "window_start", "window_end", "n", "mx"]
    a2 = a.select(*cols, F.round("mean", 6).alias("mean")).cache()
    b2 = b.select(*cols, F.round("mean", 6).alias("mean")).cache()
    n = a2.count()
    ok = n == b2.count() and a2.exceptAll(b2).isEmpty() and b2.exceptAll(a2).isEmpty()
    a2.unpersist()
    b2.unpersist()
    return ok, n


def plot(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [r["k"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.plot(ks, [r["native_eps"] for r in results], "o-", label="Spark groupBy(window(ts, R, S))")
    ax.plot(ks, [r["swag_eps"] for r in results], "s-", label="swag sliding_aggregate")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([f"{r['k']}\n(S={r['slide']})" for r in results])
    ax.set_xlabel("windows per event k = R/S (R = 1 hour)")
    ax.set_ylabel("events / s")
    ax.set_title(f"Spark batch, {results[0]['events']:,} events, {results[0]['keys']} keys, "
                 f"local[2]")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def measure(events: int, keys: int, slides: set[str] | None = None) -> dict[str, Any]:
    from spark_adapter import local_session

    spark = local_session("swag-bench", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "6g"})
    load = os.getloadavg()[0]
    tmp = tempfile.mkdtemp(prefix="swag-bench-")
    df = make_data(spark, events, keys)
    short = {"1 hour": "1h", "10 minutes": "10m", "1 minute": "1m", "10 seconds": "10s"}
    # warm-up (JVM JIT, Python workers) on a small slice, not timed
    small = df.limit(20_000)
    timed_noop(native(small, "10 minutes"))
    timed_noop(swag(small, 600_000))
    results = []
    for slide, slide_ms in SLIDES:
        if slides is not None and short[slide] not in slides:
            continue
        k = RANGE[1] // slide_ms
        a, b = os.path.join(tmp, f"native_{k}"), os.path.join(tmp, f"swag_{k}")
        t_native, cpu_native = timed_parquet(native(df, slide), a)
        t_swag, cpu_swag = timed_parquet(swag(df, slide_ms), b)
        ok, rows = same(spark.read.parquet(a), spark.read.parquet(b))
        r = {"slide": short[slide], "k": k, "events": events, "keys": keys,
             "windows": rows, "native_s": round(t_native, 2), "swag_s": round(t_swag, 2),
             "native_eps": round(events / t_native), "swag_eps": round(events / t_swag),
             "speedup": round(t_native / t_swag, 2), "same_results": ok,
             "load_average": round(os.getloadavg()[0], 2)}
        for side, cpu in (("native", cpu_native), ("swag", cpu_swag)):
            if cpu is not None:
                r[f"{side}_cpu_jvm_s"], r[f"{side}_cpu_python_s"] = (round(x, 2) for x in cpu)
        results.append(r)
        print(json.dumps(r), flush=True)
    version = spark.version
    spark.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"spark": version, "load_average_at_start": round(load, 2),
            "platform": platform.platform(), "results": results}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_windows``."""

    payload = measure(100_000 if quick else 1_000_000, 100)
    common.save("spark_windows", payload,
                clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    common.IMAGES.mkdir(parents=True, exist_ok=True)
    if payload["results"]:
        plot(payload["results"], str(common.IMAGES / "spark_windows.png"))
    print(table(payload["results"]))


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks.report import goal, machine_line

    results = payload["results"]
    by_k = {r["k"]: r for r in results}
    lines = [
        "## Spark: swag vs `groupBy(window(ts, R, S))`\n",
        machine_line(payload) + f"_PySpark {payload.get('spark', '?')}, local[2], 4 shuffle "
        f"partitions, batch mode; load average {payload.get('load_average_at_start', '?')} "
        f"when it started (a shared machine)._\n",
        f"{results[0]['events']:,} events, {results[0]['keys']} keys, event times uniform "
        f"over 6 hours, integer values; count, max and mean per window, R = 1 hour. Both "
        f"read the same cached DataFrame and write their result to Parquet (the timed "
        f"action); the results are checked equal with `exceptAll` both ways. Spark's "
        f"`window()` copies each event into k = R/S windows; swag lets Spark aggregate each "
        f"(key, slice of width S) once and combines the slices into windows with one "
        f"structure per key (pre-slicing, `docs/spark.md`). Events/s are from wall time; the "
        f"CPU columns are the CPU seconds the job took "
        f"in the JVM and in the Python workers (from `/proc`, not inflated by other jobs on "
        f"the machine). Run: "
        f"`.venvs/spark/bin/python -m benchmarks spark_windows`.\n" if results else "",
        table(results),
        "![Spark windows](img/spark_windows.png)\n",
    ]
    if 6 in by_k:
        r = by_k[6]
        lines.append(goal("not slower than native at k = 6", r["swag_eps"] >= r["native_eps"],
                          f"{r['swag_eps']:,} vs {r['native_eps']:,} events/s"))
    if 360 in by_k:
        r = by_k[360]
        lines.append(goal("at least 10x faster than native at k = 360", r["speedup"] >= 10,
                          f"{r['speedup']}x"))
    return "\n".join(lines) + "\n"


def cpu_cell(r: dict[str, Any], side: str) -> str:
    """A table cell of a result's JVM (+ Python) CPU seconds on ``side``."""
    jvm, py = r.get(f"{side}_cpu_jvm_s"), r.get(f"{side}_cpu_python_s")
    if jvm is None:
        return "?"
    return f"{jvm:.1f} + {py:.1f}" if py >= 0.05 else f"{jvm:.1f}"


def table(results: list[dict[str, Any]]) -> str:
    from benchmarks import report

    return report.table(
        ["S", "k", "windows", "Spark native (events/s)", "swag (events/s)", "swag / native",
         "CPU s native", "CPU s swag (JVM + Python)", "same results"],
        [[r["slide"], r["k"], f"{r['windows']:,}", f"{r['native_eps']:,}",
          f"{r['swag_eps']:,}", f"{r['speedup']}x", cpu_cell(r, "native"), cpu_cell(r, "swag"),
          "yes" if r["same_results"] else "NO"] for r in results])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--slides", default=None,
                        help="comma-separated subset of: 1h,10m,1m,10s")
    args = parser.parse_args(argv)
    payload = measure(args.events, args.keys,
                      None if args.slides is None else set(args.slides.split(",")))
    print(table(payload["results"]))
    return 0 if all(r["same_results"] for r in payload["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
