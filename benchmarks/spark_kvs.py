"""The KVS layout through Spark streaming: one key, an OVER window of ``n``
events with ``max``, ``layout="kvs"`` against ``layout="memory"`` (the bucket processor,
whose ``MapState`` ``swag_bpairs`` holds the pairs of its keys, ``docs/spark.md``).

Data: ``2 n`` events of one key, one per millisecond (so the window, range ``n - 1`` ms,
holds ``n`` events from the ``n``-th on), a long column ``v``, written as Parquet files of
:data:`PER_FILE` events read one per micro-batch (the same micro-batch size at every ``n``,
so the worker's memory for the batch in flight is the same), watermark 0 s, ``availableNow``
trigger into a Parquet sink (one row per event). Per cell a fresh SparkContext (fresh Python
workers, so their peak RSS is the cell's own); the layouts alternate within each ``n`` and
round (``--rounds``; each round starts with the layout the previous one ended with, so
neither always runs first), after a warm-up run of each on a small input (not recorded).

Measured: the wall time of the whole query (start to termination: events/s = ``2 n`` /
wall), and the Python workers' peak resident memory: the largest ``VmHWM`` (the kernel's
peak RSS) of a Python process below the JVM, sampled every 0.2 s and at the end. The rows
of both layouts are compared (same count, same maxima).

Run: ``.venvs/spark/bin/python -m benchmarks.spark_kvs [--sizes 16,19,22] [--rounds 1]`` (log2
of ``n``). Stores ``benchmarks/results/spark_kvs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from typing import Any

from benchmarks import common
from benchmarks.spark_streaming import timed_query, write_parts

START_MS = 1_700_000_000_000
PER_FILE = 1 << 16     # events per file, one file per micro-batch
LAYOUTS = ("memory", "kvs")


def write_files(directory: str, n: int, seed: int = 7) -> None:
    """``2 n`` events of key ``k``, one per ms, as Parquet files of :data:`PER_FILE` events
    in order."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    events = 2 * n
    pdf = pd.DataFrame({
        "key": ["k"] * events,
        "ts": pd.to_datetime(START_MS + np.arange(events), unit="ms", utc=True),
        "v": rng.integers(0, 1 << 40, size=events),
    })
    write_parts(pdf, directory, min(PER_FILE, events))


def _python_peaks(jvm: int, peaks: dict[int, int]) -> None:
    """Record the ``VmHWM`` (bytes) of every Python process below ``jvm`` into ``peaks``."""
    table = common.process_table()
    if table is None:
        return
    for pid in common.descendants(jvm, table[0]):
        try:
            with open(f"/proc/{pid}/status") as f:
                status = f.read()
        except OSError:
            continue
        if "\nName:\tpython" not in "\n" + status:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]) * 1024)


def one_run(data: str, tmp: str, n: int, layout: str) -> dict[str, Any]:
    """One query on a fresh SparkContext: wall seconds, micro-batches, worker peak RSS."""
    from spark_adapter import local_session, over, sliding_aggregate

    spark = local_session("swag-kvs-bench", cores=2, shuffle_partitions=1,
                          conf={"spark.python.authenticate.socketTimeout": "120s"})
    jvm = spark.sparkContext._gateway.proc.pid
    src = (spark.readStream.schema("key string, ts timestamp, v long")
           .option("maxFilesPerTrigger", 1).parquet(data))
    result = sliding_aggregate(src, key="key", time="ts", window=over(n - 1),
                               aggregations={"mx": {"fn": "max", "field": "v"}},
                               watermark="0 seconds", layout=layout)
    peaks: dict[int, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            _python_peaks(jvm, peaks)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = os.path.join(tmp, f"out_{n}_{layout}")
    try:
        wall, _, batches, _ = timed_query(result, out, out + "_ckpt")
    finally:
        stop.set()
        sampler.join()
    _python_peaks(jvm, peaks)
    rows = spark.read.parquet(out).selectExpr("count(*) AS c", "sum(mx % 1000003) AS h").first()
    spark.stop()
    return {"n": n, "layout": layout, "events": 2 * n, "seconds": round(wall, 2),
            "events_per_s": round(2 * n / wall), "micro_batches": batches,
            "worker_peak_rss_mb": round(max(peaks.values(), default=0) / 2**20, 1),
            "rows": int(rows["c"]), "rows_digest": int(rows["h"] or 0)}


def started(data: str, tmp: str, n: int, layout: str, attempts: int = 3) -> dict[str, Any]:
    """:func:`one_run`, again (from scratch) when Spark gave up on a Python worker's start
    (it waits 10 s for a new worker to connect back, which a loaded machine can miss; the
    run records how many starts it took)."""
    for attempt in range(1, attempts + 1):
        shutil.rmtree(os.path.join(tmp, f"out_{n}_{layout}"), ignore_errors=True)
        shutil.rmtree(os.path.join(tmp, f"out_{n}_{layout}_ckpt"), ignore_errors=True)
        try:
            return {**one_run(data, tmp, n, layout), "starts": attempt}
        except Exception as exc:
            if "failed to connect back" not in str(exc) or attempt == attempts:
                raise
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                active.stop()
    raise AssertionError("unreachable")


def measure(sizes: list[int], rounds: int = 1) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="swag-kvs-bench-")
    load = os.getloadavg()[0]
    results = []
    try:
        # warm-up, not recorded: the JVM's JIT would otherwise slow the first cell only
        write_files(os.path.join(tmp, "warm"), 1 << 10)
        for layout in LAYOUTS:
            started(os.path.join(tmp, "warm"), tmp, 1 << 10, layout)
        for log2 in sizes:
            n = 1 << log2
            data = os.path.join(tmp, f"in_{n}")
            write_files(data, n)
            for i in range(rounds):
                order = LAYOUTS if i % 2 == 0 else LAYOUTS[::-1]
                cell = [started(data, tmp, n, layout) for layout in order]
                same = len({(r["rows"], r["rows_digest"]) for r in cell}) == 1
                for r in cell:
                    r["same_rows"], r["round"] = same, i
                    r["load_average"] = round(os.getloadavg()[0], 2)
                    print(json.dumps(r), flush=True)
                    results.append(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    import pyspark

    return {"spark": pyspark.__version__, "load_average_at_start": round(load, 2),
            "per_file": PER_FILE, "rounds": rounds, "results": results}


def table(results: list[dict[str, Any]], per_file: int | None = None) -> str:
    """The table of ``results``; ``per_file``: events per file (one file per micro-batch),
    whose count the table gives instead of the micro-batches recorded (runs before the fix
    of ``timed_query`` recorded at most 100, Spark's count of kept progress reports)."""
    batches_head = "micro-batches" if per_file is None else "files (one per micro-batch)"
    head = (f"| n | layout | events/s | Python worker peak RSS (MB) | {batches_head} "
            f"| same rows |")
    lines = [head, "|---|---|---|---|---|---|"]
    for r in results:
        batches = r["micro_batches"] if per_file is None else -(-r["events"] // per_file)
        lines.append(f"| 2^{r['n'].bit_length() - 1} | {r['layout']} | {r['events_per_s']:,} "
                     f"| {r['worker_peak_rss_mb']} | {batches} | {r['same_rows']} |")
    return "\n".join(lines)


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (numbers from the stored run only)."""
    from benchmarks.report import machine_line

    results = payload["results"]
    out = ["### The KVS layout through Spark streaming\n",
           machine_line(payload),
           f"Spark {payload['spark']}, `local[2]`, one shuffle partition. One key, an OVER "
           f"window of n events (`range = n - 1` ms, one event per ms) with max, 2n events "
           f"in Parquet files of {payload['per_file']:,} events read one per micro-batch, "
           "the bucket processor (`swag_bpairs` `MapState` for the KVS layout), the two "
           f"layouts alternating per n in {payload.get('rounds', 1)} round(s), each on a "
           "fresh SparkContext after an unrecorded warm-up of both "
           "(`python -m benchmarks.spark_kvs`; `benchmarks/results/spark_kvs.json`). "
           "events/s: 2n / wall time of the whole query (start to termination, with "
           "Spark's planning and per-micro-batch costs); memory: the Python workers' peak "
           "RSS (largest `VmHWM` of a Python process below the JVM), which includes the "
           "worker's pyspark, pandas and Arrow and the micro-batch in flight. The machine "
           "was shared with other jobs (load average at each cell in the JSON).\n",
           table(results, payload.get("per_file")), _reading(results), ""]
    return "\n".join(out) + "\n"


def _reading(results: list[dict[str, Any]]) -> str:
    """What the table says (every number from ``results``)."""
    cells = _medians(results)
    sizes = sorted({r["n"] for r in results})
    rss = "; ".join(f"{cells[n, 'kvs']['worker_peak_rss_mb']} vs "
                    f"{cells[n, 'memory']['worker_peak_rss_mb']} MB at 2^{n.bit_length() - 1}"
                    for n in sizes)
    speed = ", ".join(f"{cells[n, 'kvs']['events_per_s'] / cells[n, 'memory']['events_per_s']:.2f}x"
                      f" at 2^{n.bit_length() - 1}" for n in sizes)
    kvs = [cells[n, "kvs"]["worker_peak_rss_mb"] for n in sizes]
    return (f"\nPython worker peak RSS, KVS vs memory: {rss}. The KVS layout's stays within "
            f"{max(kvs) - min(kvs):.0f} MB from 2^{sizes[0].bit_length() - 1} to "
            f"2^{sizes[-1].bit_length() - 1} (the worker itself, pyspark, pandas, Arrow and "
            f"the micro-batch in flight, the same size at every n); the memory layout's grows "
            f"with the window. KVS events/s over memory events/s: {speed}. The pairs go to "
            "`MapState` in pages of 64 (pair format version 4): PySpark 4.3's `MapState` has "
            "no batched calls and each element is a JVM round trip of 0.2-0.4 ms, so one pair "
            "per element (version 3) made the KVS layout several times slower than the "
            "memory layout here (the earlier table below). Spark's default stays "
            "`layout=\"memory\"`; `layout=\"kvs\"` (or `\"auto\"`, from 1,024 entries, "
            "`docs/adapters.md`) is for windows that do not fit the worker.\n")


def _medians(results: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    """Per ``(n, layout)``: the median events/s and the largest peak RSS over the rounds."""
    import statistics

    runs: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in results:
        runs.setdefault((r["n"], r["layout"]), []).append(r)
    return {cell: {"events_per_s": statistics.median(r["events_per_s"] for r in rs),
                   "worker_peak_rss_mb": max(r["worker_peak_rss_mb"] for r in rs)}
            for cell, rs in runs.items()}


def _record(sizes: list[int], rounds: int = 1) -> None:
    payload = measure(sizes, rounds)
    common.save("spark_kvs", payload,
                clock="wall (time.perf_counter) of the whole streaming query; Python worker "
                      "peak RSS = max VmHWM from /proc")
    print(table(payload["results"]))


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_kvs`` (``make bench``)."""
    _record([12] if quick else [16, 19, 22])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,19,22", help="log2 of the window sizes")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of each layout per size, alternating which goes first")
    args = parser.parse_args(argv)
    _record([int(s) for s in args.sizes.split(",")], args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
