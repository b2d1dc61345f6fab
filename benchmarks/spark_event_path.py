"""Spark batch, the queries that take the event path (not pre-sliced): this checkout
against the code of another commit (by default :data:`BASELINE`), same data, same machine,
same run: the A/B of a change to the event path.

Data: :func:`benchmarks.spark_windows.make_data` (10^6 events, 100 keys, event times uniform
over 6 hours, integer values ``v``) plus a double column ``x = v / 8 + 0.1``. Queries
(:data:`QUERIES`), each writing Parquet (the timed action):

* ``mean_double``: sliding 1 h every 10 min, the mean of ``x`` (a floating sum is summed
  exactly by swag, so Spark does not pre-aggregate it: ``docs/spark.md``, pre-slicing);
* ``over``: per event, count and max of ``v`` over ``[t - 1 h, t]``;
* ``custom``: sliding 1 h every 10 min, a user's ``swag_core.Aggregation`` (the range
  ``max(v) - min(v)``; Python lift / combine / lower).

Each tree runs in a process of its own (a local Spark whose Python workers import that
tree: ``PYTHONPATH``, checked from inside a worker); the processes alternate the trees, each
runs every query twice, timing the second (a fresh JVM compiles for seconds); medians over
the rounds. Engine-only references (:func:`floor`) bound what any path could reach. The rows
of the two trees are compared after the runs (:func:`same`).

Run: ``.venvs/spark/bin/python -m benchmarks spark_event_path`` (``--quick``: 10^5 events),
or ``.venvs/spark/bin/python -m benchmarks.spark_event_path [--events N] [--baseline REV]
[--rounds R]``. Stores ``benchmarks/results/spark_event_path.json``.

``--without PATH`` instead runs this checkout against itself with one path off (the
``without`` side): ``presliced`` (``presliced=False``), or ``kernels`` / ``over kernel``
(:data:`adapters.planning.BENCHMARK_WITHOUT` in that process's environment, which its Spark
and Python workers inherit); ``--save`` stores ``spark_event_path_without_<path>.json``.
The query ``max_long`` (sliding 1 h every 10 min, count and max of ``v``) is the one that
pre-slices.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from benchmarks import common

#: the default baseline: the event path before its NumPy runtimes (2026-11-22)
BASELINE = "1ff68a6"
QUERIES = ["mean_double", "over", "custom"]
#: every query :func:`query` knows (``max_long`` pre-slices: for ``--without presliced``)
ALL_QUERIES = [*QUERIES, "max_long"]
#: the paths ``--without`` can leave off
WITHOUT = ["presliced", "kernels", "over kernel"]
ROUNDS = 2
#: engine-only references (:func:`floor`), the same on every tree
FLOORS = ["floor_native", "floor_map", "floor_python"]
RANGE_MS, SLIDE_MS = 3_600_000, 600_000
REPO = Path(__file__).resolve().parent.parent
#: what a baseline tree needs: the three packages the Spark adapter imports, and the build of
#: the compiled reader (without pyproject.toml, whose metadata today's setuptools may refuse)
PACKAGES = ["swag_core", "adapters", "spark_adapter", "setup.py"]


def _spread() -> Any:
    from swag_core import Aggregation

    # (min, max) of v; the identity holds for any int
    return Aggregation(
        combine=lambda a, b: (min(a[0], b[0]), max(a[1], b[1])),
        identity=(float("inf"), float("-inf")), lift=lambda e: (e["v"], e["v"]),
        lower=lambda a: a[1] - a[0], commutative=True, name="spread")


def query(df: Any, name: str, presliced: bool | None = None) -> Any:
    """The DataFrame of query ``name`` over ``df`` (the same call on every tree;
    ``presliced``: ``sliding_aggregate``'s argument, only for ``max_long``)."""
    from spark_adapter import over, sliding, sliding_aggregate

    if name == "max_long":
        return sliding_aggregate(df, key="key", time="ts", window=sliding(RANGE_MS, SLIDE_MS),
                                 aggregations={"n": {"fn": "count"},
                                               "mx": {"fn": "max", "field": "v"}},
                                 order_by="seq", presliced=presliced)
    if name == "mean_double":
        return sliding_aggregate(df, key="key", time="ts", window=sliding(RANGE_MS, SLIDE_MS),
                                 aggregations={"mean": {"fn": "mean", "field": "x"}},
                                 order_by="seq")
    if name == "over":
        return sliding_aggregate(df, key="key", time="ts", window=over(RANGE_MS),
                                 aggregations={"n": {"fn": "count"},
                                               "mx": {"fn": "max", "field": "v"}},
                                 order_by="seq").select("key", "ts", "seq", "n", "mx")
    if name == "custom":
        return sliding_aggregate(df, key="key", time="ts", window=sliding(RANGE_MS, SLIDE_MS),
                                 aggregations={"spread": _spread()},
                                 output_types={"spread": "long"}, order_by="seq")
    raise ValueError(f"unknown query {name!r}; expected one of {ALL_QUERIES}")


def floor(df: Any, name: str) -> Any:
    """What any exact path for the sliding queries must at least do, by Spark alone:
    ``floor_native`` reads every event once and writes a row per (key, slice of 10 min)
    (Spark's own count per slice, map-side combined: the pre-sliced plan's first half);
    ``floor_map`` hands every event of the custom query's columns to a Python function per
    partition (``mapInArrow``: no shuffle) that returns nothing, the least a path computing
    per-slice partials in Python before the shuffle would cost; ``floor_python`` hands them
    to a Python function per key (``applyInArrow``, the event path's plan) that returns
    nothing."""
    from pyspark.sql import functions as F

    columns = df.select("key", F.unix_millis("ts").alias("t"), "v", "seq", "x")
    if name == "floor_map":
        def drain(batches: Any) -> Any:
            for _ in batches:
                pass
            return iter(())

        return columns.mapInArrow(drain, "key string")
    if name == "floor_native":
        return df.groupBy("key", F.window("ts", "10 minutes")).count() \
            .select("key", F.col("window.start").alias("start"), "count")
    if name == "floor_python":
        def nothing(_: Any, table: Any) -> Any:
            return table.schema.empty_table().select(["key"])

        return columns.groupBy("key").applyInArrow(nothing, "key string")
    raise ValueError(f"unknown floor {name!r}; expected one of {FLOORS}")


def _worker_module_file(spark: Any) -> str:
    """Where the Python workers import ``spark_adapter`` from."""
    def where(_: Any) -> Any:
        import spark_adapter
        yield spark_adapter.__file__

    return spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()[0]


def child(events: int, keys: int, queries: list[str], out_dir: str,
          floors: bool = True, presliced: bool | None = None) -> dict[str, Any]:
    """One process's round: every query once on this interpreter's tree (and the floors,
    with ``floors``); results to ``out_dir/<query>``; returns wall and CPU seconds per
    query."""
    from pyspark.sql import functions as F

    import spark_adapter
    from benchmarks.spark_windows import make_data, timed_noop, timed_parquet
    from spark_adapter import local_session

    spark = local_session("swag-bench-event-path", cores=2, shuffle_partitions=4,
                          conf={"spark.driver.memory": "6g"})
    tree = str(Path(spark_adapter.__file__).resolve().parent.parent)
    worker_tree = str(Path(_worker_module_file(spark)).resolve().parent.parent)
    if worker_tree != tree:
        raise RuntimeError(f"the Python workers import {worker_tree}, the driver {tree}")
    df = make_data(spark, events, keys).withColumn("x", F.col("v") / 8 + 0.1).cache()
    df.count()
    got: dict[str, Any] = {"tree": tree}
    builds: list[tuple[str, Any]] = [
        (name, lambda frame, n: query(frame, n, presliced)) for name in queries]
    builds += [(name, floor) for name in FLOORS] if floors else []
    for name, build in builds:
        # each query once untimed at full size first: a fresh JVM compiles for seconds
        # (measured: the first of three queries took 8.6 s, the same query third 4.2 s) and
        # each Python worker process pays its start (imports from pyspark.zip) once
        timed_noop(build(df, name))
        wall, cpu = timed_parquet(build(df, name), os.path.join(out_dir, name))
        got[name] = {"s": wall, "cpu": cpu}
        print(f"{tree}: {name} {wall:.2f} s", file=sys.stderr, flush=True)
    spark.stop()
    return got


def baseline_tree(rev: str, into: str) -> str:
    """The packages of commit ``rev`` in directory ``into`` (its compiled reader built where
    the commit has one); returns ``into``."""
    data = subprocess.run(["git", "archive", "--format=tar", rev, *PACKAGES], cwd=REPO,
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=into,
                           capture_output=True, text=True)
    if built.returncode != 0:
        print(f"baseline {rev}: compiled reader not built (the pure-Python reader runs):\n"
              f"{built.stderr[-2000:]}", file=sys.stderr)
    return into


def _run_child(tree: str, events: int, keys: int, queries: list[str], out_dir: str,
               without: str | None = None) -> Any:
    """One child process on ``tree``; ``without``: the path it leaves off (no floors)."""
    from adapters.planning import BENCHMARK_WITHOUT

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, str(REPO)]))
    env.pop(BENCHMARK_WITHOUT, None)
    cmd = [sys.executable, "-m", "benchmarks.spark_event_path", "--child", "--events",
           str(events), "--keys", str(keys), "--queries", ",".join(queries), "--out", out_dir]
    if without is not None:
        cmd += ["--without", without]
        if without != "presliced":
            env[BENCHMARK_WITHOUT] = without
    done = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), check=True,
                          stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def same(queries: list[str], a_dir: str, b_dir: str) -> dict[str, Any]:
    """Per query: whether the two trees wrote the same rows, and how many (means within a
    relative 1e-12: code before 2026-11-24 summed floats inexactly)."""
    from pyspark.sql import functions as F

    from spark_adapter import local_session

    spark = local_session("swag-bench-event-path-check", cores=2, shuffle_partitions=4)
    out = {}
    for name in queries:
        a = spark.read.parquet(os.path.join(a_dir, name))
        b = spark.read.parquet(os.path.join(b_dir, name))
        n = a.count()
        if "mean" in a.columns:
            # a float sum was not exact before 2026-11-24: means within a relative 1e-12
            # (rounding both to a number of decimals is not a check here: the data's means
            # often end in a 5 just past the last decimal kept)
            both = a.alias("a").join(b.alias("b"), [c for c in a.columns if c != "mean"])
            ok = n == b.count() == both.count() and both.filter(
                F.abs(F.col("a.mean") - F.col("b.mean"))
                > F.abs(F.col("b.mean")) * 1e-12).isEmpty()
        else:
            ok = n == b.count() and a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()
        out[name] = {"rows": n, "same": ok}
    spark.stop()
    return out


def measure(events: int, keys: int, rev: str, rounds: int = ROUNDS,
            queries: list[str] | None = None) -> dict[str, Any]:
    queries = queries or QUERIES
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="swag-bench-event-path-")
    load = os.getloadavg()[0]
    try:
        trees = {"baseline": baseline_tree(rev, os.path.join(tmp, "tree")),
                 "head": str(REPO)}
        runs: dict[str, list[Any]] = {side: [] for side in trees}
        for i in range(rounds):
            order = list(trees) if i % 2 == 0 else list(trees)[::-1]
            for side in order:
                runs[side].append(_run_child(trees[side], events, keys, queries,
                                             os.path.join(tmp, f"out_{side}")))
        checks = same(queries, os.path.join(tmp, "out_baseline"), os.path.join(tmp, "out_head"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = []
    for name in queries:
        r: dict[str, Any] = {"query": name, "events": events, "keys": keys, **checks[name]}
        for side, got in runs.items():
            walls = [g[name]["s"] for g in got]
            r[f"{side}_round_s"] = [round(w, 2) for w in walls]
            r[f"{side}_eps"] = round(events / statistics.median(walls))
            cpus = [g[name]["cpu"] for g in got if g[name]["cpu"] is not None]
            if cpus:
                r[f"{side}_cpu_jvm_s"] = round(statistics.median(c[0] for c in cpus), 2)
                r[f"{side}_cpu_python_s"] = round(statistics.median(c[1] for c in cpus), 2)
        r["speedup"] = round(r["head_eps"] / r["baseline_eps"], 2)
        results.append(r)
    floors = {}
    for name in FLOORS:  # every child ran them: medians over all
        got = [g[name] for side in runs.values() for g in side]
        floors[name] = {"s": round(statistics.median(g["s"] for g in got), 2),
                        "cpu": [round(statistics.median(g["cpu"][i] for g in got), 2)
                                for i in (0, 1)] if all(g["cpu"] for g in got) else None}
    return {"baseline": commit, "rounds": rounds, "load_average_at_start": round(load, 2),
            "load_average_at_end": round(os.getloadavg()[0], 2), "results": results,
            "floors": floors}


def without_name(path: str) -> str:
    """The results name of ``--without path``."""
    return "spark_event_path_without_" + path.replace(" ", "_")


def measure_without(path: str, events: int, keys: int, rounds: int,
                    queries: list[str]) -> dict[str, Any]:
    """This checkout with ``path`` on (``with``) and off (``without``), alternating processes,
    ``rounds`` each; rows compared."""
    tmp = tempfile.mkdtemp(prefix="swag-bench-without-")
    load = os.getloadavg()[0]
    sides = {"with": "none", "without": path}
    try:
        runs: dict[str, list[Any]] = {side: [] for side in sides}
        for i in range(rounds):
            for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
                runs[side].append(_run_child(str(REPO), events, keys, queries,
                                             os.path.join(tmp, f"out_{side}"), sides[side]))
        checks = same(queries, os.path.join(tmp, "out_with"), os.path.join(tmp, "out_without"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = []
    for name in queries:
        r: dict[str, Any] = {"query": name, "events": events, "keys": keys, **checks[name]}
        for side, got in runs.items():
            walls = [g[name]["s"] for g in got]
            r[f"{side}_round_s"] = [round(w, 2) for w in walls]
            r[f"{side}_eps"] = round(events / statistics.median(walls))
            cpus = [sum(g[name]["cpu"]) for g in got if g[name]["cpu"] is not None]
            if cpus:  # JVM + Python workers: less moved by other jobs than wall time
                r[f"{side}_cpu_s"] = round(statistics.median(cpus), 2)
        r["ratio"] = round(r["with_eps"] / r["without_eps"], 2)
        if "with_cpu_s" in r and "without_cpu_s" in r:
            r["cpu_ratio"] = round(r["without_cpu_s"] / r["with_cpu_s"], 2)
        results.append(r)
    return {"without": path, "rounds": rounds, "load_average_at_start": round(load, 2),
            "load_average_at_end": round(os.getloadavg()[0], 2), "results": results,
            "command": (f".venvs/spark/bin/python -m benchmarks.spark_event_path --without "
                        f"'{path}' --events {events} --keys {keys} --rounds {rounds} "
                        f"--queries {','.join(queries)} --save")}


def run(quick: bool = False) -> None:
    """Entry point of ``python -m benchmarks spark_event_path``."""
    payload = measure(100_000 if quick else 1_000_000, 100, BASELINE)
    common.save("spark_event_path", payload,
                clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    print(markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks import report
    from benchmarks.spark_windows import cpu_cell

    results = payload["results"]
    what = {"mean_double": "sliding 1 h / 10 min, mean of a double column",
            "over": "over 1 h, count + max of a long column",
            "custom": "sliding 1 h / 10 min, a custom `Aggregation` (max - min)"}
    lines = [
        "## Spark batch event-path queries, against a baseline tree\n",
        report.machine_line(payload) + "_PySpark 4.3.0, local[2], 4 shuffle partitions, "
        "batch mode._\n",
        f"{results[0]['events']:,} events, {results[0]['keys']} keys, event times uniform "
        f"over 6 hours (the data of the Spark batch sections above, plus a double column "
        f"`x = v / 8 + 0.1`); queries that do not take pre-slicing. This checkout and a "
        f"baseline tree (`--baseline REV`; the revision is stored in the JSON) each run in "
        f"a Spark of its own (its Python workers checked to import that tree), alternating, "
        f"{payload['rounds']} rounds each, medians. Rows of the two trees compared "
        f"(`exceptAll` both ways; means joined on key and window and equal within a "
        f"relative 1e-12). Run: `.venvs/spark/bin/python -m benchmarks spark_event_path`.\n",
        report.table(
            ["query", "rows", "baseline (events/s)", "this tree (events/s)", "ratio",
             "CPU s baseline (JVM + Python)", "CPU s this tree (JVM + Python)", "same rows"],
            [[what.get(r["query"], r["query"]), f"{r['rows']:,}", f"{r['baseline_eps']:,}",
              f"{r['head_eps']:,}", f"{r['speedup']}x", cpu_cell(r, "baseline"),
              cpu_cell(r, "head"), "yes" if r["same"] else "NO"] for r in results]),
    ]
    floors = payload.get("floors")
    if floors:
        events = results[0]["events"]
        cells = {name: f"{f['s']} s ({events / f['s']:,.0f} events/s"
                 + (f"; CPU {f['cpu'][0]} + {f['cpu'][1]} s)" if f["cpu"] else ")")
                 for name, f in floors.items()}
        lines.append(
            f"What any exact path must at least do here, by Spark alone (same data, medians "
            f"over every process): read the events once and write a count per (key, 10-minute "
            f"slice), Spark's own map-side combined aggregation: "
            f"{cells['floor_native']}; hand every event of the custom query's columns to a "
            f"Python function that returns nothing, per partition before any shuffle "
            f"(`mapInArrow`): {cells['floor_map']}, per key (`applyInArrow`, the event "
            f"path's plan): {cells['floor_python']}.\n")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--save", action="store_true",
                        help="store the result as benchmarks/results/spark_event_path.json")
    parser.add_argument("--without", choices=[*WITHOUT, "none"],
                        help="this checkout against itself with one path off")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    queries = args.queries.split(",")
    if args.child:
        off = args.without if args.without in WITHOUT else None
        print(json.dumps(child(args.events, args.keys, queries, args.out,
                               floors=args.without is None,
                               presliced=False if off == "presliced" else None)))
        return 0
    if args.without:
        payload = measure_without(args.without, args.events, args.keys, args.rounds, queries)
        if args.save:
            common.save(without_name(args.without), payload,
                        clock="wall (time.perf_counter), plus JVM and Python-worker CPU")
        print(json.dumps(payload["results"], indent=1))
        return 0 if all(r["same"] for r in payload["results"]) else 1
    payload = measure(args.events, args.keys, args.baseline, args.rounds, queries)
    if args.save:
        common.save("spark_event_path", payload,
                    clock="wall (time.perf_counter), plus JVM and Python-worker CPU from /proc")
    print(markdown(payload))
    return 0 if all(r["same"] for r in payload["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
