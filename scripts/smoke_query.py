"""A tiny ``sliding_aggregate`` on one engine, its result checked against brute force: what
``scripts/wheel_smoke.sh`` runs in a fresh environment that holds the installed wheel, from a
directory outside the checkout.

Usage: ``python smoke_query.py spark|beam|flink``. Exits non-zero on a wrong result, or when
swag is imported from anywhere but the environment's own site-packages.
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: (key, time in ms, value): each value a distinct power of two, so a window's sum names
#: exactly the events it holds.
EVENTS = [("a", 100, 1.0), ("a", 900, 2.0), ("b", 1_500, 4.0), ("a", 2_100, 8.0),
          ("b", 2_900, 16.0), ("a", 3_000, 32.0), ("b", 4_700, 64.0)]
RANGE, SLIDE = 2_000, 1_000
AGGREGATIONS = {"total": {"fn": "sum", "field": "v"}}


def expected() -> list[float]:
    """The sum of every non-empty window ``[start, start + RANGE)``, start a multiple of
    SLIDE, per key (sorted)."""
    totals = []
    for key in {k for k, _, _ in EVENTS}:
        ours = [(t, v) for k, t, v in EVENTS if k == key]
        first = min(t for t, _ in ours) // SLIDE * SLIDE - RANGE + SLIDE
        for start in range(first, max(t for t, _ in ours) + 1, SLIDE):
            inside = [v for t, v in ours if start <= t < start + RANGE]
            if inside:
                totals.append(sum(inside))
    return sorted(totals)


def spark_totals() -> list[float]:
    from pyspark.sql.connect.utils import check_dependencies

    from spark_adapter import local_session, sliding, sliding_aggregate

    check_dependencies()  # the Spark Connect client that the spark extra brings
    spark = local_session("swag-wheel-smoke", cores=1, shuffle_partitions=1)
    df = spark.createDataFrame(EVENTS, "k string, t long, v double")
    out = sliding_aggregate(df, key="k", time="t", window=sliding(RANGE, SLIDE),
                            aggregations=AGGREGATIONS)
    return [row["total"] for row in out.collect()]


def beam_totals() -> list[float]:
    import json
    import tempfile

    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.testing.util import assert_that

    from beam_adapter import SlidingAggregate, sliding

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "totals.json")

        def record(rows: list[Any]) -> None:  # runs pickled: hand the rows back by file
            with open(path, "w", encoding="utf-8") as f:
                json.dump([_field(row, "total") for row in rows], f)

        with beam.Pipeline(runner=FnApiRunner()) as p:
            rows = (p | beam.Create(EVENTS)
                    | beam.Map(lambda e: beam.window.TimestampedValue((e[0], {"v": e[2]}),
                                                                      e[1] / 1000))
                    | SlidingAggregate(window=sliding(RANGE, SLIDE),
                                       aggregations=AGGREGATIONS))
            assert_that(rows, record)
        with open(path, encoding="utf-8") as f:
            return list(json.load(f))


def flink_totals() -> list[float]:
    from pyflink.common import Row, Types
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    from flink_adapter import sliding, sliding_aggregate

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_python_executable(sys.executable)
    env.set_parallelism(1)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    stream = env.from_collection([Row(*e) for e in EVENTS], Types.ROW_NAMED(
        ["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.DOUBLE()]))
    out = sliding_aggregate(stream, key="k", time="t", window=sliding(RANGE, SLIDE),
                            aggregations=AGGREGATIONS)
    with getattr(out, "rows", out).execute_and_collect() as rows:  # (late output: .rows)
        return [_field(row, "total") for row in rows]


def _field(row: Any, name: str) -> Any:
    """A field of an output row, whatever the engine's row type."""
    if isinstance(row, dict):
        return row[name]
    return row.as_dict()[name] if hasattr(row, "as_dict") else getattr(row, name)


ENGINES = {"spark": ("spark_adapter", spark_totals), "beam": ("beam_adapter", beam_totals),
           "flink": ("flink_adapter", flink_totals)}


def main(engine: str) -> int:
    module, run = ENGINES[engine]
    where = __import__(module).__file__
    if not where or not os.path.realpath(where).startswith(os.path.realpath(sys.prefix)):
        print(f"{module} imported from {where}, not from this environment ({sys.prefix})",
              file=sys.stderr)
        return 1
    got, want = sorted(run()), expected()
    if got != want:
        print(f"{engine}: window sums {got}, expected {want}", file=sys.stderr)
        return 1
    print(f"{engine}: {len(got)} windows, as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
