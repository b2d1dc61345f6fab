"""Batch pre-slicing (``spark_adapter._presliced``): Spark aggregates each (key, slice), the
driver combines slices. Every eligible query must give exactly the event path's DataFrame
(rows, values bit for bit, schema); ineligible ones must keep the event path; bad input fails
the same way on both."""

from __future__ import annotations

import datetime
import math
import random
import struct
from fractions import Fraction

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_adapter import count_window, over, sliding, sliding_aggregate, tumbling
from spark_adapter._presliced import _scaled

T0 = datetime.datetime(2024, 3, 1, 10, 0, 0)

INT_AGGS = {"n": {"fn": "count"}, "top": {"fn": "max", "field": "v"},
            "low": {"fn": "min", "field": "i"}, "total": {"fn": "sum", "field": "w"},
            "avg": {"fn": "mean", "field": "i"}, "avg_v": {"fn": "mean", "field": "v"}}
FLOAT_AGGS = {"n": {"fn": "count"}, "hi": {"fn": "max", "field": "x"},
              "lo": {"fn": "min", "field": "x"}, "s": {"fn": "sum", "field": "i"}}
FLOAT_SUMS = {"n": {"fn": "count"}, "sx": {"fn": "sum", "field": "x"},
              "ax": {"fn": "mean", "field": "x"}, "hi": {"fn": "max", "field": "x"},
              "lo": {"fn": "min", "field": "x"}, "top": {"fn": "max", "field": "v"}}
#: doubles where an exact sum differs from any floating one, and the ends of the range
EXTREMES = [0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, math.nextafter(2.0**-1022, 0),
            1.7976931348623157e308, 1.7976931348623157e308, -1.7976931348623157e308, 0.1,
            1e-300, 1e300, 2.0**53, 1.0, math.nextafter(1.0, 2), math.nextafter(1.0, 0),
            float("inf"), float("-inf"), float("nan"), None]


def _presliced(out: DataFrame) -> bool:
    """Whether the plan aggregates per key and slice before the Python function (the event
    path has no aggregate at all: the batch metric is an Observation, not an aggregate)."""
    plan = out._jdf.queryExecution().executedPlan().toString()
    return "Aggregate(key" in plan and "swag_batch" in plan


def _find(node, name: str):
    """The first node called ``name`` in an executed plan (query stages entered)."""
    if node.nodeName() == name:
        return node
    if node.nodeName().endswith("QueryStage"):
        return _find(node.plan(), name)
    children = node.children().iterator()
    while children.hasNext():
        found = _find(children.next(), name)
        if found is not None:
            return found
    return None


def _rows_fed(out: DataFrame) -> int:
    """After ``out`` ran: the rows the aggregate under the Python function produced."""
    plan = out._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.executedPlan()
    agg = _find(_find(plan, "MapInArrow"), "HashAggregate")
    return agg.metrics().apply("numOutputRows").value()


def _rows(out: DataFrame) -> list[str]:
    """The rows as sorted reprs: floats compared bit for bit (-0.0 is not 0.0, NaN is NaN)."""
    return sorted(repr(tuple(r)) for r in out.collect())


def _same_both_ways(df: DataFrame, **kwargs) -> list[str]:
    """Run with pre-slicing (asserted to happen) and without; same schema and rows."""
    on = sliding_aggregate(df, presliced=True, **kwargs)
    off = sliding_aggregate(df, presliced=False, **kwargs)
    assert _presliced(on) and not _presliced(off)
    assert on.schema == off.schema
    got, want = _rows(on), _rows(off)
    assert got == want
    return got


#: Several shuffle partitions for this module (the session has one, for speed), with AQE's
#: coalescing off: it merges this module's small shuffles back into one partition.
SPREAD = {"spark.sql.shuffle.partitions": "4",
          "spark.sql.adaptive.coalescePartitions.enabled": "false"}


@pytest.fixture(scope="module", autouse=True)
def several_partitions(spark):
    """Keys spread over several tasks (the final aggregate of pre-slicing, applyInArrow's
    groups, the batch metric summed over tasks); the session's settings come back after."""
    old = {name: spark.conf.get(name) for name in SPREAD}
    for name, value in SPREAD.items():
        spark.conf.set(name, value)
    yield
    for name, value in old.items():
        spark.conf.set(name, value)


@pytest.fixture(scope="module")
def events(spark):
    """Three keys (two key columns), timestamps and epoch ms, long values near +-2^62 (slice
    sums beyond 2^63: exact only if Spark's long sums do not overflow), longs up to 2^50 to
    sum (window sums fit 64 bits), ints,
    doubles with -0.0/0.0 ties, infinities; seq gives the arrival order."""
    rng = random.Random(7)
    rows = []
    for seq in range(240):
        city, zone = rng.choice([("a", 1), ("a", 2), ("b", 1)])
        ms = rng.randrange(0, 60_000)
        if seq % 9 == 0:
            ms -= ms % 1000  # events on slice boundaries
        v = rng.choice([2**62 - rng.randrange(1000), -(2**62) + rng.randrange(1000),
                        rng.randrange(-5, 5)])
        x = rng.choice([0.0, -0.0, 0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf")])
        rows.append((city, zone, T0 + datetime.timedelta(milliseconds=ms), 1_000_000 + ms,
                     v, rng.randrange(-2**50, 2**50), rng.randrange(-100, 100), x, seq))
    return spark.createDataFrame(
        rows, "city string, zone int, ts timestamp, ms long, v long, w long, i int, x double, "
              "seq long").cache()


@pytest.mark.parametrize("window", [
    tumbling(10_000),
    sliding(10_000, 3_000),
    sliding(9_000, 3_000, offset=1_000),
    [sliding(10_000, 4_000), tumbling(6_000, offset=2_000)],
], ids=["tumbling", "sliding", "offset", "two-specs"])
def test_integer_aggregates_identical(events, window):
    got = _same_both_ways(events, key=["city", "zone"], time="ts", window=window,
                          aggregations=INT_AGGS)
    assert len(got) > 10


def test_epoch_ms_time_one_key_and_sums_beyond_64_bits_in_a_slice(events):
    # mean of v: slice sums pass 2^63 (several values near 2^62), the mean stays exact
    _same_both_ways(events.where("v > 1000"), key="city", time="ms",
                    window=sliding(20_000, 5_000),
                    aggregations={"avg_v": {"fn": "mean", "field": "v"},
                                  "n": {"fn": "count"}})


def test_float_max_min_keep_the_oldest_zero(events):
    """-0.0 == 0.0: both paths give the sign of the oldest zero (time, then order_by)."""
    got = _same_both_ways(events.withColumn("ms", F.col("ms") - F.col("ms") % 7), key="city",
                          time="ms", window=tumbling(2_000), aggregations=FLOAT_AGGS,
                          order_by="seq")
    assert any("-0.0" in r for r in got) and any(", 0.0" in r for r in got)


def test_float_sums_and_means_exact(events):
    """A sum and a mean of a double column pre-sliced (split into integers by scale) are the
    event path's bit for bit: zeros of both signs, infinities of both signs in one slice
    (NaN), with the column's max/min (the oldest zero) beside them."""
    got = _same_both_ways(events.withColumn("ms", F.col("ms") - F.col("ms") % 7), key="city",
                          time="ms", window=[tumbling(2_000), sliding(9_000, 3_000)],
                          aggregations=FLOAT_SUMS, order_by="seq")
    assert any("nan" in r for r in got) and any("inf" in r for r in got)


@pytest.mark.parametrize("nulls", ["skip", "error"])
def test_float_sums_of_extreme_values_exact(spark, nulls):
    """Subnormals, the largest doubles (whose sum overflows a double but not the exact
    partial), neighbours of powers of two, and floats no floating sum adds exactly; NaN and
    null are missing values (skip) or fail on both paths (error)."""
    rng = random.Random(5)
    rows = []
    for seq in range(400):
        x = rng.choice(EXTREMES) if rng.random() < 0.6 else \
            rng.uniform(-1, 1) * 10.0 ** rng.randrange(-300, 300)
        rows.append((rng.choice("ab"), rng.randrange(0, 20_000), x, seq))
    df = spark.createDataFrame(rows, "k string, t long, x double, seq long")
    kwargs = dict(key="k", time="t", window=[tumbling(1_000), sliding(3_000, 1_000)],
                  aggregations={"s": {"fn": "sum", "field": "x"},
                                "m": {"fn": "mean", "field": "x"}}, order_by="seq")
    if nulls == "error":
        _error_both_ways(df, r"(?s)BadEventError.*field 'x' = (None|nan)", nulls="error",
                         **kwargs)
        finite = df.where("x is not null and not isnan(x)")
        _same_both_ways(finite, nulls="error", **kwargs)
    else:
        got = _same_both_ways(df, **kwargs)
        assert any("1.7976931348623157e+308" in r for r in got)


def test_scaled_splits_every_double_exactly(spark):
    """``_scaled``: x = m * 2**q with integers |m| < 2**62 and q on its grid for every power
    of two, its neighbours, subnormals and random bit patterns; null for zeros, infinities,
    NaN and null."""
    rng = random.Random(1)
    xs = [5e-324, 1.7976931348623157e308, 0.1, -0.1, 2.0**53 + 2]
    for e in range(-1074, 1024):
        p = 2.0 ** e
        xs += [p, -math.nextafter(p, 0), math.nextafter(p, math.inf)]
    xs = [x for x in xs if x != 0]  # (the neighbour of 2**-1074 towards 0)
    while len(xs) < 10_000:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(x) and x != 0:
            xs.append(x)
    others = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), None]
    df = spark.createDataFrame([(x,) for x in xs + others], "x double")
    q, m = _scaled(F.col("x"))
    got = df.select("x", q.alias("q"), m.alias("m")).collect()
    for r in got[:len(xs)]:
        assert abs(r.m) < 2**62 and (r.q + 1074) % 10 == 0, r
        assert Fraction(r.m) * Fraction(2) ** r.q == Fraction(r.x), r
    assert all(r.q is None and r.m is None for r in got[len(xs):])


def test_late_rows_include_and_return(events):
    kwargs = dict(key="city", time="ts", window=sliding(10_000, 5_000),
                  aggregations={"n": {"fn": "count"}, "top": {"fn": "max", "field": "i"}})
    _same_both_ways(events, late_rows="include", **kwargs)
    (on, _) = sliding_aggregate(events, late_rows="return", **kwargs)
    (off, _) = sliding_aggregate(events, late_rows="return", presliced=False, **kwargs)
    assert _presliced(on) and _rows(on) == _rows(off)


def test_randomized_queries_against_the_event_path(spark):
    """Random data and random eligible queries (fixed seed) against the event path."""
    rng = random.Random(2024)
    for _ in range(3):
        rows = [(rng.choice("pqr"), rng.randrange(-50_000, 50_000),
                 rng.randrange(-10**6, 10**6), rng.uniform(-1, 1)) for _ in range(150)]
        df = spark.createDataFrame(rows, "k string, t long, v long, x double")
        slide = rng.choice([1_000, 2_000, 5_000])
        offset = 250 * rng.randrange(0, slide // 250)
        specs = [sliding(slide * rng.randrange(1, 5), slide, offset=offset)]
        if rng.random() < 0.5:
            specs.append(tumbling(slide * 2, offset=slide))
        fns = rng.sample([("count", None), ("max", "v"), ("min", "v"), ("sum", "v"),
                          ("mean", "v"), ("max", "x"), ("min", "x"), ("sum", "x"),
                          ("mean", "x")], 4)
        aggs = {f"a{j}": ({"fn": fn} if f is None else {"fn": fn, "field": f})
                for j, (fn, f) in enumerate(fns)}
        _same_both_ways(df, key="k", time="t", window=specs, aggregations=aggs)


def test_keys_spread_over_several_partitions(events):
    """The module's point: both paths run the Python function in several tasks (with the
    ``city`` key of most tests; the three ``(city, zone)`` keys can hash to one partition)."""
    for presliced in (True, False):
        out = sliding_aggregate(events, key="city", time="ms",
                                window=tumbling(10_000), aggregations={"n": {"fn": "count"}},
                                presliced=presliced)
        parts = out.select(F.spark_partition_id().alias("p")).distinct().count()
        assert parts > 1, f"presliced={presliced}: one partition"


# ----------------------------------------------------------------------------- eligibility
@pytest.mark.parametrize("case", [
    dict(window=tumbling(10_000), aggregations={"m": {"fn": "mean", "field": "x"},
                                                "s": {"fn": "sum", "field": "y"}}),
    dict(window=tumbling(10_000), aggregations={"s": {"fn": "sum", "field": "x"},
                                                "m": {"fn": "max", "field": "y"}}),
    dict(window=over(10_000), aggregations={"n": {"fn": "count"}}),
    dict(window=count_window(5), aggregations={"n": {"fn": "count"}}),
    dict(window=sliding(10, 3), aggregations={"n": {"fn": "count"}}),  # slices of 1 ms
    dict(window=tumbling(10_000), aggregations={"n": {"fn": "count", "field": "v"}}),
    dict(window=tumbling(10_000), aggregations={"f": {"fn": "first", "field": "v"}}),
], ids=["two-float-sums", "float-max-beside-float-sum", "over", "count-window", "1ms-slices",
        "count-field", "first"])
def test_ineligible_queries_keep_the_event_path(events, case):
    events = events.withColumn("y", F.col("i") / 4)
    out = sliding_aggregate(events, key="city", time="ms", **case)
    assert not _presliced(out)
    with pytest.raises(ValueError, match="cannot be pre-sliced"):
        sliding_aggregate(events, key="city", time="ms", presliced=True, **case)


def test_auto_mode_pre_slices_eligible_queries_and_string_times_do_not(events):
    # (13 windows per event: more than Spark's own plan takes, adapters/planning.py)
    aggs, window = {"n": {"fn": "count"}}, sliding(130_000, 10_000)
    assert _presliced(sliding_aggregate(events, key="city", time="ms", window=window,
                                        aggregations=aggs))
    strings = events.withColumn("ms", F.col("ms").cast("string"))
    assert not _presliced(sliding_aggregate(strings, key="city", time="ms",
                                            window=window, aggregations=aggs))


def test_pre_slicing_feeds_one_row_per_key_and_slice(events):
    """The Python function's input: one row per non-empty (key, slice), here slices of
    2.5 s (gcd of 10 s and 7.5 s)."""
    out = sliding_aggregate(events, key="city", time="ms",
                            window=[sliding(10_000, 5_000), tumbling(7_500)],
                            aggregations={"n": {"fn": "count"}})
    got = out.collect()
    slices = events.select("city", (F.col("ms") - F.col("ms") % 2_500).alias("s")).distinct()
    assert _rows_fed(out) == slices.count() < events.count() / 4
    assert sum(r.n for r in got if r.window == 0) == 2 * events.count()  # in two windows


# ----------------------------------------------------------------------------- bad input
def _error_both_ways(df: DataFrame, match: str, **kwargs) -> None:
    for presliced in (True, False):
        out = sliding_aggregate(df, presliced=presliced, **kwargs)
        with pytest.raises(Exception, match=match):
            out.collect()


def test_null_time_fails_naming_key_and_time_field(spark):
    df = spark.createDataFrame([("k1", 1, 5), ("k2", None, 6)], "key string, t long, v long")
    _error_both_ways(df, r"(?s)BadEventError.*'k2'.*event time None \(field 't'\) is null",
                     key="key", time="t", window=tumbling(10),
                     aggregations={"m": {"fn": "max", "field": "v"}})


@pytest.mark.parametrize("dtype, bad", [("long", None), ("double", None),
                                        ("double", float("nan"))])
def test_null_or_nan_value_fails_naming_key_and_field(spark, dtype, bad):
    one, two = (2, 3) if dtype == "long" else (2.0, 3.0)
    df = spark.createDataFrame([("k1", 1, one), ("k2", 5, two), ("k2", 7, bad)],
                               f"key string, t long, v {dtype}")
    what = "None" if bad is None else "nan"
    _error_both_ways(df, rf"(?s)BadEventError.*'k2'.*field 'v' = {what}.*output 'm'",
                     key="key", time="t", window=tumbling(10), nulls="error",
                     aggregations={"n": {"fn": "count"}, "m": {"fn": "min", "field": "v"}})


# ----------------------------------------------------------------------------- nulls
NULL_AGGS = {"n": {"fn": "count"}, "s": {"fn": "sum", "field": "v"},
             "avg": {"fn": "mean", "field": "v"}, "hi": {"fn": "max", "field": "v"},
             "lo": {"fn": "min", "field": "v"}, "xhi": {"fn": "max", "field": "x"},
             "xlo": {"fn": "min", "field": "x"}}


def test_nulls_skipped_identically(spark):
    """nulls="skip": Spark's partials leave nulls (and NaN, made null) out; slices and
    windows with only nulls give null, exactly as the event path; a long column's results
    stay longs."""
    rng = random.Random(11)
    rows = []
    for seq in range(300):
        t = rng.randrange(0, 40_000)
        v = None if t >= 30_000 or rng.random() < 0.3 else rng.randrange(-2**50, 2**50)
        x = rng.choice([None, float("nan"), -0.0, 0.0, 1.5, float("inf")]) \
            if t < 30_000 else rng.choice([None, float("nan")])
        rows.append((rng.choice("pq"), t, v, x, seq))
    df = spark.createDataFrame(rows, "k string, t long, v long, x double, seq long")
    got = _same_both_ways(df, key="k", time="t", order_by="seq", aggregations=NULL_AGGS,
                          window=[tumbling(2_000), sliding(6_000, 2_000)])
    assert any("None, None, None, None, None, None)" in r for r in got)  # all-null windows
    out = sliding_aggregate(df, key="k", time="t", window=tumbling(10_000),
                            aggregations=NULL_AGGS).collect()
    assert all(r.s is None or type(r.s) is int for r in out) and any(r.s for r in out)
    by_window = {(r.k, r.window_start.timestamp() if hasattr(r.window_start, "timestamp")
                  else r.window_start): r for r in out}
    for (k, _), r in by_window.items():
        vs = [v for kk, t, v, _, _ in rows if kk == k and v is not None
              and t // 10_000 * 10_000 == _window_ms(r.window_start)]
        assert r.s == (sum(vs) if vs else None) and r.hi == (max(vs) if vs else None)


def _window_ms(start) -> int:
    """A window start (a timestamp or epoch ms) as epoch ms."""
    if isinstance(start, datetime.datetime):
        return round(start.timestamp() * 1000)
    return int(start)
