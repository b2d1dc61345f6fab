"""Spark batch, a matrix of data shapes: swag against Spark's own best plan for the same rows,
for sliding windows and per-event (OVER) windows; the matrix the planner's choice of Spark's
own plan (:data:`adapters.planning.ENGINE_PLAN_MAX_K`) comes from.

Every cell aggregates count + max of an integer column (exact on every side) and checks the
rows equal (``exceptAll`` both ways on the Parquet files the timed runs wrote).

* **sliding**: keys 3 / 100 / 10^4 x events per key and slice (S = 1 minute) about 1 / 10 /
  1,000 x windows per event k = R/S 1 / 6 / 60 / 360. Sides: Spark's
  ``groupBy(key, window(ts, R, S)).agg(count, max)`` (``spark``); swag's own path
  (``swag``: ``sliding_aggregate`` with the planner's choice of Spark's plan switched off,
  ``SWAG_BENCHMARK_WITHOUT=engine plan``: pre-sliced here); and, where the planner chooses
  Spark's plan, ``sliding_aggregate`` as planned (``planned``).
* **over**: keys 3 / 100 / 10^4 x frame width 1 / 6 / 60 / 360 events (each key's events
  1 s apart, ``rangeBetween(-(w - 1) s, 0)``). Sides: Spark's default frame, its
  segment-tree frame (``spark.sql.window.segmentTree.enabled=true``), swag's OVER kernel.

:data:`EVENTS` events per cell; a sliding cell at k windows per event has at most
:data:`EXPANDED` / k events (Spark's ``window()`` copies each event k times: 360 x 10^5 would
take minutes). A cell is skipped, with its reason recorded, when a key would hold fewer
events than a slice or a frame needs, or when the run passed :data:`BUDGET_S`. Per cell: one
warm-up on 500 of its events (not timed; the session's JIT warm-up: :func:`warm_up`), then
:data:`ROUNDS` rounds rotating the sides; medians.

Run: ``.venvs/spark/bin/python -m benchmarks spark_matrix`` (``--quick``: 2 * 10^4 events), or
``.venvs/spark/bin/python -m benchmarks.spark_matrix --keys 3,10000 --resume``: those key
counts first, keeping the cells the stored run measured.
Stores ``benchmarks/results/spark_matrix.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks import common
from benchmarks.spark_windows import timed_noop, timed_parquet

EVENTS = 30_000
#: the most rows Spark's window() may expand a sliding cell to (events x k)
EXPANDED = 6_000_000
KEYS = (3, 100, 10_000)
KEYS_FIRST = (100, 3, 10_000)
PER_SLICE = (1, 10, 1_000)
WINDOWS_PER_EVENT = (1, 6, 60, 360)
FRAME_EVENTS = (1, 6, 60, 360)
SLIDE_MS = 60_000
GAP_MS = 1_000
ROUNDS = 2
#: wall seconds after which the remaining cells are skipped (the matrix's budget is 12 min)
BUDGET_S = 600.0
START_MS = 1_700_000_000_000
COLUMNS = {"sliding": ["key", "window_start", "window_end", "n", "mx"],
           "over": ["key", "ts", "v", "seq", "n", "mx"]}
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"
WITHOUT_ENGINE = "engine plan"


def sliding_data(spark: Any, events: int, keys: int, per_slice: int) -> Any:
    """``events`` events of ``keys`` keys; each key's events fill consecutive slices of width
    :data:`SLIDE_MS`, ``per_slice`` events in each (uniform times inside it)."""
    import numpy as np

    rng = np.random.default_rng(7)
    idx = np.arange(events)
    key = idx % keys
    nth = idx // keys  # the event's index within its key
    t = START_MS + (nth // per_slice) * SLIDE_MS + rng.integers(0, SLIDE_MS, size=events)
    return _frame(spark, key, t, rng.integers(0, 1000, size=events))


def over_data(spark: Any, events: int, keys: int) -> Any:
    """``events`` events of ``keys`` keys, each key's events :data:`GAP_MS` apart."""
    import numpy as np

    rng = np.random.default_rng(7)
    idx = np.arange(events)
    t = START_MS + (idx // keys) * GAP_MS
    return _frame(spark, idx % keys, t, rng.integers(0, 1000, size=events))


def _frame(spark: Any, key: Any, t: Any, v: Any) -> Any:
    import numpy as np
    import pandas as pd

    pdf = pd.DataFrame({"key": pd.Series(key).map(lambda k: f"k{k:05d}"),
                        "ts": pd.to_datetime(t, unit="ms", utc=True), "v": v,
                        "seq": np.arange(len(t))})
    df = spark.createDataFrame(pdf).repartition(4).cache()
    df.count()
    return df


def sliding_spark(df: Any, k: int) -> Any:
    from pyspark.sql import functions as F

    w = F.window("ts", f"{k * SLIDE_MS} milliseconds", f"{SLIDE_MS} milliseconds")
    return (df.groupBy("key", w).agg(F.count("*").alias("n"), F.max("v").alias("mx"))
            .select("key", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "n", "mx"))


def sliding_swag(df: Any, k: int) -> Any:
    from spark_adapter import sliding, sliding_aggregate

    return sliding_aggregate(df, key="key", time="ts", window=sliding(k * SLIDE_MS, SLIDE_MS),
                             aggregations=_AGGS, order_by="seq").select(*COLUMNS["sliding"])


def over_spark(df: Any, w: int) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frame = (Window.partitionBy("key").orderBy(F.unix_millis("ts"))
             .rangeBetween(-(w - 1) * GAP_MS, 0))
    return df.select("key", "ts", "v", "seq", F.count("*").over(frame).alias("n"),
                     F.max("v").over(frame).alias("mx"))


def over_swag(df: Any, w: int) -> Any:
    from spark_adapter import over, sliding_aggregate

    return sliding_aggregate(df, key="key", time="ts", window=over((w - 1) * GAP_MS),
                             aggregations=_AGGS, order_by="seq").select(*COLUMNS["over"])


_AGGS = {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}

#: a side: (plan builder (df, k or w), segment tree on, engine plan switched off)
Side = tuple[Callable[[Any, int], Any], bool, bool]
SIDES: dict[str, dict[str, Side]] = {
    "sliding": {"spark": (sliding_spark, False, False), "swag": (sliding_swag, False, True),
                "planned": (sliding_swag, False, False)},
    "over": {"default_frame": (over_spark, False, False),
             "segment_tree": (over_spark, True, False), "swag": (over_swag, False, True)},
}


def _run_side(spark: Any, side: Side, df: Any, shape: int, path: str | None) -> float:
    build, tree, without = side
    spark.conf.set(SEGMENT_TREE, "true" if tree else "false")
    os.environ["SWAG_BENCHMARK_WITHOUT"] = WITHOUT_ENGINE if without else ""
    try:  # (the planner reads the variable when the plan is built, on the driver)
        out = build(df, shape)
        return timed_parquet(out, path)[0] if path else timed_noop(out)
    finally:
        spark.conf.unset(SEGMENT_TREE)
        os.environ.pop("SWAG_BENCHMARK_WITHOUT", None)


def _same(spark: Any, paths: dict[str, str], columns: list[str]) -> bool:
    """Whether every side wrote the same rows (collected and sorted: a cell's output is
    at most about its events)."""
    from pyspark.sql import functions as F

    def rows(path: str) -> list[tuple[Any, ...]]:
        df = spark.read.parquet(path)
        cols = [F.unix_micros(c) if t == "timestamp" else F.col(c)
                for c, t in df.select(*columns).dtypes]
        return sorted(tuple(r) for r in df.select(*cols).collect())

    swag = rows(paths["swag"])
    return all(rows(p) == swag for s, p in paths.items() if s != "swag")


def planned_path(df: Any, k: int) -> str:
    """The path ``sliding_aggregate`` takes for the sliding cell (``explain``)."""
    from spark_adapter import explain, sliding

    return explain(df, key="key", time="ts", window=sliding(k * SLIDE_MS, SLIDE_MS),
                   aggregations=_AGGS, order_by="seq").path


def measure_cell(spark: Any, kind: str, df: Any, shape: int, sides: list[str],
                 rounds: int) -> dict[str, Any]:
    """The sides of one cell, rounds rotating the order: medians (s, events/s), rows
    checked equal."""
    table = SIDES[kind]
    small = df.limit(500)
    for s in sides:
        _run_side(spark, table[s], small, shape, None)
    tmp = tempfile.mkdtemp(prefix=f"swag-bench-matrix-{kind}-")
    paths = {s: os.path.join(tmp, s) for s in sides}
    runs: dict[str, list[float]] = {s: [] for s in sides}
    for i in range(rounds):
        for s in sides[i % len(sides):] + sides[:i % len(sides)]:
            runs[s].append(_run_side(spark, table[s], df, shape, paths[s]))
    same = _same(spark, paths, COLUMNS[kind])
    shutil.rmtree(tmp, ignore_errors=True)
    events = df.count()
    r: dict[str, Any] = {"events": events, "same_results": same}
    for s, got in runs.items():
        r[f"{s}_round_s"] = [round(t, 3) for t in got]
        r[f"{s}_s"] = round(statistics.median(got), 3)
        r[f"{s}_eps"] = round(events / statistics.median(got))
    spark_sides = [s for s in sides if s not in ("swag", "planned")]
    best = min(spark_sides, key=lambda s: r[f"{s}_s"])
    r["best_spark"] = best
    r["swag_vs_best"] = round(r[f"{best}_s"] / r["swag_s"], 2)
    if "planned" in runs:
        r["planned_vs_best"] = round(r[f"{best}_s"] / r["planned_s"], 2)
    return r


def sliding_cells() -> list[dict[str, Any]]:
    """The sliding cells, each with its events or why it is skipped."""
    cells = []
    for k in WINDOWS_PER_EVENT:
        for keys in KEYS:
            for d in PER_SLICE:
                events = min(EVENTS, EXPANDED // k)
                cell: dict[str, Any] = {"kind": "sliding", "keys": keys, "per_slice": d,
                                        "k": k, "events": events}
                if events // keys < d:
                    cell["skipped"] = (f"{events // keys} events per key (at {events:,} "
                                       f"events), fewer than {d} per slice")
                cells.append(cell)
    return cells


def over_cells() -> list[dict[str, Any]]:
    """The OVER cells, each with its events or why it is skipped."""
    cells = []
    for w in FRAME_EVENTS:
        for keys in KEYS:
            cell: dict[str, Any] = {"kind": "over", "keys": keys, "frame_events": w,
                                    "events": EVENTS}
            if EVENTS // keys < w:
                cell["skipped"] = (f"{EVENTS // keys} events per key, fewer than a frame "
                                   f"of {w}")
            cells.append(cell)
    return cells


def _run_cell(spark: Any, cell: dict[str, Any], events: int, rounds: int) -> None:
    """Measures ``cell`` in place (``events``: the total it may hold)."""
    n = min(events, cell["events"])
    if cell["kind"] == "sliding":
        df = sliding_data(spark, n, cell["keys"], cell["per_slice"])
        cell["planned_path"] = planned_path(df, cell["k"])
        sides = ["spark", "swag"] + (["planned"] if "own plan" in cell["planned_path"] else [])
        cell.update(measure_cell(spark, "sliding", df, cell["k"], sides, rounds))
    else:
        df = over_data(spark, n, cell["keys"])
        cell.update(measure_cell(spark, "over", df, cell["frame_events"], list(SIDES["over"]),
                                 rounds))
    df.unpersist()


def warm_up(spark: Any) -> None:
    """Every side once on a small data set (the JVM's JIT, the Python workers), not timed."""
    for kind, df, shape in (("sliding", sliding_data(spark, 5_000, 10, 10), 6),
                            ("over", over_data(spark, 5_000, 10), 6)):
        for side in SIDES[kind].values():
            _run_side(spark, side, df, shape, None)
        df.unpersist()


def _cell_id(cell: dict[str, Any]) -> tuple[Any, ...]:
    return (cell["kind"], cell["keys"], cell.get("per_slice"), cell.get("k"),
            cell.get("frame_events"), cell["events"])


def measure(events: int = EVENTS, rounds: int = ROUNDS, budget_s: float = BUDGET_S,
            keys: tuple[int, ...] = KEYS_FIRST, earlier: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """The matrix's cells of ``keys`` (in that order) within ``budget_s``; the cells
    ``earlier`` (a stored payload) measured are kept, not run again."""
    from spark_adapter import local_session

    done = {_cell_id(c): c for c in (earlier or {}).get("cells", []) if "skipped" not in c}
    spark = local_session("swag-bench-matrix", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "4g"})
    warm_up(spark)
    cells = sliding_cells() + over_cells()
    order = sorted(cells, key=lambda c: (keys.index(c["keys"]) if c["keys"] in keys
                                         else len(keys), c["kind"] == "over"))
    start = time.perf_counter()
    for cell in order:
        if _cell_id(cell) in done:
            cell.update(done[_cell_id(cell)])
        elif "skipped" in cell:
            continue
        elif cell["keys"] not in keys or time.perf_counter() - start > budget_s:
            cell["skipped"] = f"over the matrix's time budget ({budget_s:.0f} s per run)"
        else:
            _run_cell(spark, cell, events, rounds)
            print({k: v for k, v in cell.items() if not k.endswith("round_s")}, flush=True)
    version = spark.version
    spark.stop()
    runs = [*(earlier or {}).get("runs_s", []), round(time.perf_counter() - start)]
    return {"spark": version, "platform": platform.platform(), "rounds": rounds,
            "runs_s": runs, "cells": cells}


def derived_rule(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Per windows per event k of the measured sliding cells: how many there were, in how
    many Spark's plan was faster than swag's own path, and swag's worst ratio; ``max_k``:
    the largest k at which Spark's plan was faster in most cells (``0``: none)."""
    by_k: dict[int, list[float]] = {}
    for c in cells:
        if c["kind"] == "sliding" and "swag_vs_best" in c:
            by_k.setdefault(c["k"], []).append(c["swag_vs_best"])
    return {"max_k": max((k for k, r in by_k.items() if 2 * sum(x < 1 for x in r) > len(r)),
                         default=0),
            "by_k": {str(k): {"cells": len(r), "spark_faster": sum(x < 1 for x in r),
                              "worst_swag_vs_spark": min(r)} for k, r in sorted(by_k.items())}}


def _floor_sides(df: Any) -> dict[str, Any]:
    """No-op Python functions over ``df`` (``key``, ``ts``, ``v``): one call per key
    (``groupBy(key).applyInArrow``) against one call per Arrow batch of a partition of keys
    (``repartition(key).sortWithinPartitions(key, ts).mapInArrow``)."""
    schema = "n long"

    def per_key(key: Any, table: Any) -> Any:
        import pyarrow as pa

        return pa.table({"n": pa.array([table.num_rows], pa.int64())})

    def per_batch(batches: Any) -> Any:
        import pyarrow as pa

        for b in batches:
            yield pa.RecordBatch.from_pydict({"n": pa.array([b.num_rows], pa.int64())})

    return {"per_key_applyInArrow": df.groupBy("key").applyInArrow(per_key, schema),
            "per_batch_mapInArrow": df.repartition("key").sortWithinPartitions("key", "ts")
            .mapInArrow(per_batch, schema)}


def floors(sizes: tuple[int, ...] = (30_000, 300_000), keys: int = 10_000,
           rounds: int = 3) -> dict[str, Any]:
    """The engine's floors at many small keys: :func:`_floor_sides` on the sliding data of
    ``keys`` keys, one event per key and slice; medians of ``rounds`` rotating rounds."""
    from spark_adapter import local_session

    spark = local_session("swag-bench-floors", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "4g"})
    cells = []
    for events in sizes:
        df = sliding_data(spark, events, keys, 1)
        sides = _floor_sides(df)
        for out in sides.values():
            timed_noop(out)
        runs: dict[str, list[float]] = {s: [] for s in sides}
        names = list(sides)
        for i in range(rounds):
            for s in names[i % len(names):] + names[:i % len(names)]:
                runs[s].append(round(timed_noop(sides[s]), 3))
        cell: dict[str, Any] = {"keys": keys, "events": events}
        for s, got in runs.items():
            cell[f"{s}_round_s"] = got
            cell[f"{s}_s"] = statistics.median(got)
        cells.append(cell)
        print(cell, flush=True)
        df.unpersist()
    version = spark.version
    spark.stop()
    return {"spark": version, "platform": platform.platform(), "rounds": rounds,
            "cells": cells}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_matrix``."""
    payload = measure(20_000 if quick else EVENTS)
    common.save("spark_matrix", payload,
                clock="wall (time.perf_counter), medians of the rounds")
    print(markdown(payload))


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.spark_matrix [--keys 3,10000] [--resume]``: the cells of some
    key counts first; ``--resume`` keeps the stored run's measured cells."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", default=",".join(map(str, KEYS_FIRST)))
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--floors", action="store_true",
                        help="only the no-op floors at 10^4 keys (spark_matrix_floors.json)")
    args = parser.parse_args(argv)
    if args.floors:
        common.save("spark_matrix_floors", floors(), clock="wall (time.perf_counter)")
        return
    keys = tuple(int(k) for k in args.keys.split(","))
    payload = measure(keys=keys, earlier=common.load("spark_matrix") if args.resume else None)
    common.save("spark_matrix", payload,
                clock="wall (time.perf_counter), medians of the rounds")
    print(markdown(payload))


def _sliding_rows(cells: list[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for c in (c for c in cells if c["kind"] == "sliding"):
        head = [c["keys"], c["per_slice"], c["k"], f"{c['events']:,}"]
        if "skipped" in c:
            rows.append([*head, "skipped: " + c["skipped"], "", "", "", "", ""])
            continue
        planned = (f"{c['planned_vs_best']}x" if "planned_vs_best" in c
                   else f"{c['swag_vs_best']}x")
        rows.append([*head, f"{c['spark_eps']:,}", f"{c['swag_eps']:,}",
                     f"{c['swag_vs_best']}x", c["planned_path"], planned,
                     "yes" if c["same_results"] else "NO"])
    return rows


def _over_rows(cells: list[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for c in (c for c in cells if c["kind"] == "over"):
        head = [c["keys"], c["frame_events"], f"{c['events']:,}"]
        if "skipped" in c:
            rows.append([*head, "skipped: " + c["skipped"], "", "", "", ""])
            continue
        rows.append([*head, f"{c['default_frame_eps']:,}", f"{c['segment_tree_eps']:,}",
                     f"{c['swag_eps']:,}", f"{c['swag_vs_best']}x",
                     "yes" if c["same_results"] else "NO"])
    return rows


def _floors_line() -> str:
    """The stored floors (:func:`floors`) as a sentence, or nothing."""
    stored = common.load("spark_matrix_floors")
    if stored is None:
        return ""
    cells = "; ".join(f"{c['events']:,} events: one call per key (`groupBy(key).applyInArrow`) "
                      f"{c['per_key_applyInArrow_s']} s, one call per Arrow batch "
                      f"(`repartition(key).sortWithinPartitions(key, ts).mapInArrow`) "
                      f"{c['per_batch_mapInArrow_s']} s" for c in stored["cells"])
    return (f"Floors at {stored['cells'][0]['keys']:,} keys, one event per key and slice, "
            f"no-op Python functions (medians of {stored['rounds']} rounds; `.venvs/spark/bin/"
            f"python -m benchmarks.spark_matrix --floors`): {cells}. Spark's per-group cost, "
            f"not swag's, is what one call per key pays; swag's batch path makes one call per "
            f"Arrow batch.\n")


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from adapters.planning import ENGINE_PLAN_MAX_K
    from benchmarks import report

    cells = payload["cells"]
    rule = derived_rule(cells)
    measured = [c for c in cells if "skipped" not in c]
    planned = [c.get("planned_vs_best", c["swag_vs_best"]) for c in measured]
    on_spark = [c["planned_vs_best"] for c in measured if "planned_vs_best" in c]
    worst = "; ".join(f"k = {k}: {v['spark_faster']} of {v['cells']} (worst "
                      f"{v['worst_swag_vs_spark']}x)" for k, v in rule["by_k"].items())
    lines = [
        "## Spark batch: a matrix of data shapes against Spark's own best plan\n",
        report.machine_line(payload) + f"_PySpark {payload.get('spark', '?')}, local[2], 4 "
        f"shuffle partitions, batch mode; the matrix's runs took "
        f"{' + '.join(str(t) for t in payload['runs_s'])} s (a run measures the cells an "
        f"earlier one left for the time budget: `--resume`)._\n",
        f"count + max of an integer column per window (exact on every side), rows checked "
        f"equal; up to {EVENTS:,} events per cell (a sliding cell at most "
        f"{EXPANDED:,} / k: Spark's `window()` copies each event k times), one warm-up and "
        f"{payload['rounds']} rounds rotating the sides, medians. Sliding: slide 1 minute, "
        f"range k minutes; `swag own` is `sliding_aggregate` with the planner's choice of "
        f"Spark's plan switched off, `as planned` what `sliding_aggregate` runs by default "
        f"(its path from `explain`). OVER: each key's events 1 s apart, a frame of w events. "
        f"Run: `.venvs/spark/bin/python -m benchmarks spark_matrix`.\n",
        report.table(["keys", "events per key and slice", "k", "events",
                      "Spark `window()` (events/s)", "swag own (events/s)",
                      "swag own / Spark", "path as planned", "as planned / Spark",
                      "same rows"], _sliding_rows(cells)),
        report.table(["keys", "frame (events)", "events", "Spark default frame (events/s)",
                      "Spark segment tree (events/s)", "swag (events/s)",
                      "swag / Spark's best", "same rows"], _over_rows(cells)),
        f"Sliding cells where Spark's plan beat swag's own path, by k: {worst}. Spark's plan "
        f"was faster in most cells up to k = {rule['max_k']}; `spark_flights` (3 keys, 4.4 "
        f"events per key and slice) adds Spark faster at k = 8, `spark_windows` (100 keys, "
        f"dense) swag 6x and 11x faster at k = 60 and 360. The planner runs Spark's own plan "
        f"for a batch sliding query whose outputs are all exact in Spark at k <= "
        f"{ENGINE_PLAN_MAX_K} (`adapters/planning.py`, `ENGINE_PLAN_MAX_K`), and an exact OVER "
        f"query only when the session enables the segment-tree frame.\n",
        _floors_line(),
        report.goal("every measured cell as planned at least 1x Spark's best plan (a cell "
                    "on Spark's own plan runs that plan: 1x but for noise, "
                    f"{min(on_spark, default=1)}-{max(on_spark, default=1)}x here)",
                    min(planned, default=1) >= 1,
                    f"{sum(p < 1 for p in planned)} of {len(planned)} cells below 1x, lowest "
                    f"{min(planned, default=1)}x"),
        report.goal("every cell's rows equal on every side",
                    all(c["same_results"] for c in measured), f"{len(measured)} cells"),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
