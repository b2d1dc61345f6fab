"""spark_adapter: restarts, Spark types in and out, output forms, bad input, and the pure
helpers (durations, JSON repair)."""

from __future__ import annotations

import datetime
import math

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, StringType, StructType, TimestampType

from adapters.engine.columns import json_fixer
from spark_adapter import (
    SparkConfigError,
    SparkTypeError,
    over,
    sliding,
    sliding_aggregate,
    tumbling,
)
from spark_adapter._types import json_shape
from tests.conformance import corpus
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.memory_sink import memory_table
from tests.spark.streaming import _write_file, streaming_run


# ----------------------------------------------------------------------------- restart
def test_restart_from_checkpoint_gives_the_uninterrupted_rows(spark):
    """Stop the streaming query in the middle, start a new one (new driver, cold caches) on
    the same checkpoint: the rows are exactly those of an uninterrupted run (the oracle's),
    with nothing lost or repeated; the late-event metric adds up."""
    scenario = corpus.expand(corpus.load("mixed_kinds_stream"))
    progress: list = []
    result = streaming_run(scenario, restart_after=2, progress=progress)
    assert compare(expected(scenario), result) is None
    observed = sum(int(p["observedMetrics"]["swag"]["late_events"]) for p in progress
                   if "swag" in (p.get("observedMetrics") or {}))
    assert observed == sum(result["late"].values()) > 0


# ----------------------------------------------------------------------------- types
def _ts(s: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(s)


@pytest.fixture(scope="module")
def trips(spark):
    rows = [
        ("a", 1, _ts("2024-03-01 10:00:00"), 5, 1.5, datetime.date(2024, 3, 1), "x"),
        ("a", 1, _ts("2024-03-01 10:20:00"), 9, None, datetime.date(2024, 3, 2), "y"),
        ("a", 1, _ts("2024-03-01 10:20:00"), 7, 2.5, None, "z"),
        ("a", 2, _ts("2024-03-01 10:50:00"), 1, float("nan"), datetime.date(2024, 3, 3), None),
        ("b", 1, _ts("2024-03-01 11:30:00"), 2**62 + 1, 0.25, datetime.date(2024, 3, 4), "w"),
    ]
    return spark.createDataFrame(
        rows, "city string, zone int, ts timestamp, n long, x double, day date, tag string"
    ).withColumn("seq", F.monotonically_increasing_id())


def test_sliding_output_types_and_values(trips):
    out = sliding_aggregate(
        trips, key=["city", "zone"], time="ts", window=sliding("1 hour", "30 minutes"),
        aggregations={"cnt": {"fn": "count"}, "top": {"fn": "max", "field": "n"},
                      "last_day": {"fn": "last", "field": "day"},
                      "tags": {"fn": "collect", "field": "tag"}},
        order_by="seq", nulls="error")  # last takes a null as a value
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields] == [
        ("city", "string"), ("zone", "int"), ("window_start", "timestamp"),
        ("window_end", "timestamp"), ("cnt", "bigint"), ("top", "bigint"),
        ("last_day", "date"), ("tags", "array<string>")]
    got = {(r.city, r.zone, r.window_start): r for r in out.collect()}
    r = got[("a", 1, _ts("2024-03-01 10:00:00"))]
    assert (r.window_end, r.cnt, r.top, r.last_day, r.tags) == (
        _ts("2024-03-01 11:00:00"), 3, 9, None, ["x", "y", "z"])
    r = got[("b", 1, _ts("2024-03-01 11:00:00"))]
    assert r.top == 2**62 + 1  # exact: never through a float
    assert len(got) == 6


def test_over_window_returns_the_input_row(trips):
    out = sliding_aggregate(
        trips, key="city", time="ts", window=over("30 minutes"),
        aggregations={"k": {"fn": "count", "field": "x"}, "xs": {"fn": "collect", "field": "x"}},
        order_by="seq", nulls="error")  # collect keeps null and NaN: values arrive exactly
    assert out.columns == ["city", "zone", "ts", "n", "x", "day", "tag", "seq", "k", "xs"]
    rows = sorted(out.collect(), key=lambda r: (r.city, r.ts, r.seq))
    assert [r.ts for r in rows] == [_ts("2024-03-01 10:00:00"), _ts("2024-03-01 10:20:00"),
                                    _ts("2024-03-01 10:20:00"), _ts("2024-03-01 10:50:00"),
                                    _ts("2024-03-01 11:30:00")]
    assert [r.day for r in rows[:3]] == [datetime.date(2024, 3, 1), datetime.date(2024, 3, 2),
                                         None]
    # the 10:20 peers see each other; null is not counted, NaN is a value (not a null)
    assert [(r.k, r.xs) for r in rows[1:3]] == [(2, [1.5, None, 2.5])] * 2
    assert rows[3].k == 2 and rows[3].xs[:2] == [None, 2.5] and math.isnan(rows[3].xs[2])
    assert math.isnan(rows[3].x) and rows[4].n == 2**62 + 1
    assert isinstance(out.schema["ts"].dataType, TimestampType)
    assert out.schema["xs"].dataType.simpleString() == "array<double>"
    skip = sliding_aggregate(
        trips, key="city", time="ts", window=over("30 minutes"), order_by="seq",
        aggregations={"k": {"fn": "count", "field": "x"}, "xs": {"fn": "collect", "field": "x"},
                      "last_day": {"fn": "last", "field": "day"}})
    rows = sorted(skip.collect(), key=lambda r: (r.city, r.ts, r.seq))
    # the default skips null and NaN; the 10:20 peers' last day is the one that is not null
    assert [(r.k, r.xs, r.last_day) for r in rows[1:4]] == [
        (2, [1.5, 2.5], datetime.date(2024, 3, 2))] * 2 + [(1, [2.5], datetime.date(2024, 3, 3))]


def test_epoch_millis_time_and_late_rows_return(spark):
    df = spark.createDataFrame([("k", 1000, 1), ("k", 1500, 2), ("k", 2500, 3)],
                               "key string, t long, v long")
    out, late = sliding_aggregate(df, key="key", time="t", window=tumbling(1000),
                                  aggregations={"s": {"fn": "sum", "field": "v"}},
                                  late_rows="return")
    assert isinstance(out.schema["window_start"].dataType, LongType)
    assert sorted((r.window_start, r.window_end, r.s) for r in out.collect()) == [
        (1000, 2000, 3), (2000, 3000, 3)]
    assert late.columns == ["key", "t", "v"] and late.count() == 0  # batch: nothing late


def test_several_specs_carry_event_columns_only_with_a_per_event_spec(spark):
    """The several-specs form (``adapters.engine.rows.output_columns``): the time and value
    columns only when a spec is per-event, or when the rows also carry late events."""
    df = spark.createDataFrame([("k", 1000, 1), ("k", 1500, 2), ("k", 2500, 3)],
                               "key string, t long, v long")
    aggs = {"s": {"fn": "sum", "field": "v"}}
    ranges = sliding_aggregate(df, key="key", time="t", window=[tumbling(1000), tumbling(2000)],
                               aggregations=aggs)
    assert ranges.columns == ["window", "key", "window_start", "window_end", "s"]
    assert sorted(tuple(r) for r in ranges.collect()) == [
        (0, "k", 1000, 2000, 3), (0, "k", 2000, 3000, 3), (1, "k", 0, 2000, 3),
        (1, "k", 2000, 4000, 3)]
    mixed = sliding_aggregate(df, key="key", time="t", window=[tumbling(1000), over(1000)],
                              aggregations=aggs)
    assert mixed.columns == ["window", "key", "window_start", "window_end", "t", "v", "s"]
    assert sorted((r.t, r.v) for r in mixed.collect() if r.window == 1) == [
        (1000, 1), (1500, 2), (2500, 3)]
    included = sliding_aggregate(df, key="key", time="t", window=tumbling(1000),
                                 aggregations=aggs, late_rows="include")
    assert included.columns == ["window", "key", "window_start", "window_end", "t", "v", "s",
                                "late"]


def test_custom_aggregation_needs_and_uses_output_types(spark):
    from swag_core import Aggregation

    df = spark.createDataFrame([("k", 1, "ab"), ("k", 2, "cd")], "key string, t long, s string")
    concat = Aggregation(combine=lambda a, b: a + b, identity="", lift=lambda v: v["s"],
                         name="concat")
    with pytest.raises(SparkTypeError, match="output_types"):
        sliding_aggregate(df, key="key", time="t", window=tumbling(10),
                          aggregations={"c": concat})
    out = sliding_aggregate(df, key="key", time="t", window=tumbling(10),
                            aggregations={"c": concat}, output_types={"c": "string"})
    assert [r.c for r in out.collect()] == ["abcd"]


# ----------------------------------------------------------------------------- key and time
def _key_time_aggs(ts: str, key: str, suffix: str = "") -> dict:
    """Aggregations of the time column ``ts`` and the key column ``key`` (outputs named with
    ``suffix``): run on the columns themselves and on plain copies, they must agree."""
    return {f"latest{suffix}": {"fn": "max", "field": ts},
            f"earliest{suffix}": {"fn": "min", "field": ts},
            f"when_top{suffix}": {"fn": "argmax", "field": "n", "result": ts},
            f"keys{suffix}": {"fn": "collect", "field": key}}


_KT = ("latest", "earliest", "when_top", "keys")


def test_key_and_time_columns_can_be_aggregated(trips):
    """max/min/argmax(result=)/collect of the time and key columns give the same rows as
    the same aggregations of plain copies of them (value columns); the time's aggregates
    keep its type (timestamp); the over rows and a whole-row argmax hold the input columns
    once (the key and time are not repeated as values)."""
    df = trips.withColumn("ts2", F.col("ts")).withColumn("city2", F.col("city"))
    aggs = {**_key_time_aggs("ts", "city"), **_key_time_aggs("ts2", "city2", "_copy"),
            "top": {"fn": "argmax", "field": "n"}}
    for window in (sliding("1 hour", "30 minutes"), over("30 minutes")):
        out = sliding_aggregate(df, key="city", time="ts", window=window, aggregations=aggs,
                                order_by="seq")
        assert [out.schema[n].dataType for n in _KT] == [
            TimestampType(), TimestampType(), TimestampType(), ArrayType(StringType())]
        assert out.schema["top"].dataType.names == [c for c in df.columns
                                                    if c not in ("city", "ts")]
        got = out.collect()
        assert len(got) >= 5 and all(r[n] == r[f"{n}_copy"] for r in got for n in _KT), got
        if window["kind"] == "over":
            assert out.columns == df.columns + list(aggs)
    # the sliding windows' latest time, by definition
    start = _ts("2024-03-01 10:00:00")
    want = {}
    for r in trips.collect():
        for k in range(-1, 1):
            s = start + (r.ts - start) // datetime.timedelta(minutes=30) * \
                datetime.timedelta(minutes=30) + k * datetime.timedelta(minutes=30)
            want[(r.city, s)] = max(want.get((r.city, s), r.ts), r.ts)
    out = sliding_aggregate(trips, key="city", time="ts", window=sliding("1 hour", "30 minutes"),
                            aggregations={"latest": {"fn": "max", "field": "ts"}})
    assert {(r.city, r.window_start): r.latest for r in out.collect()} == want


def test_epoch_millis_time_aggregated_pre_sliced_and_streaming(spark, tmp_path):
    """An epoch-ms time column aggregated on the pre-sliced batch path (it is a long
    column: Spark's per-slice max/min) and in streaming (every key: the time and key
    columns and their copies agree)."""
    rows = [("k", 1000 + 37 * i, i % 5) for i in range(30)]
    df = spark.createDataFrame(rows, "key string, t long, n long").withColumn(
        "t2", F.col("t"))
    aggs = {"hi": {"fn": "max", "field": "t"}, "lo": {"fn": "min", "field": "t"},
            "hi2": {"fn": "max", "field": "t2"}, "lo2": {"fn": "min", "field": "t2"}}
    out = sliding_aggregate(df, key="key", time="t", window=sliding(300, 100),
                            aggregations=aggs, presliced=True)
    got = out.collect()
    assert len(got) >= 10 and all((r.hi, r.lo) == (r.hi2, r.lo2) for r in got)
    assert isinstance(out.schema["hi"].dataType, LongType)

    src_dir = tmp_path / "in"
    src_dir.mkdir()
    base = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
    events = [{"k": "ab"[i % 2], "ts": (base + datetime.timedelta(seconds=7 * i)).isoformat(),
               "n": i % 4} for i in range(20)]
    _write_file(str(src_dir), 0, events)
    _write_file(str(src_dir), 1, [{"k": "end", "ts": "2030-01-01T00:00:00+00:00"}])
    end_ms = int(datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    src = (spark.readStream.schema("k string, ts timestamp, n long")
           .option("maxFilesPerTrigger", 1).json(str(src_dir))
           .withWatermark("ts", "0 seconds").where(F.unix_millis(F.col("ts")) < end_ms)
           .withColumn("ts2", F.col("ts")).withColumn("k2", F.col("k")))
    out = sliding_aggregate(src, key="k", time="ts", window=tumbling("1 minute"),
                            aggregations={**_key_time_aggs("ts", "k"),
                                          **_key_time_aggs("ts2", "k2", "_copy")},
                            order_by="n")
    with memory_table(out, "swag_key_time", str(tmp_path / "ckpt")) as table:
        got = table.collect()
        latest = {(r[0], r[1]): r[2] for r in table.select(
            "k", F.unix_millis("window_start"), F.unix_millis("latest")).collect()}
    assert isinstance(out.schema["latest"].dataType, TimestampType)
    assert len(got) == 6 and all(r[n] == r[f"{n}_copy"] for r in got for n in _KT), got
    want: dict = {}
    for e in events:  # by definition: the latest time of each key and minute
        ms = int(datetime.datetime.fromisoformat(e["ts"]).timestamp() * 1000)
        w = (e["k"], ms - ms % 60_000)
        want[w] = max(want.get(w, ms), ms)
    assert latest == want


# ----------------------------------------------------------------------------- typed columns
_ALL_TYPES = ("k string, t long, seq long, b boolean, i8 tinyint, i16 smallint, i32 int, "
              "i64 long, f32 float, f64 double, s string, ts timestamp, d date, "
              "xs array<double>, st struct<a: long, when: timestamp>")


def _same(a, b) -> bool:
    """Equal, with NaN equal to NaN and -0.0 told apart from 0.0 (also inside rows/lists)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def all_types(spark):
    """Rows with every supported value type, nulls, NaN, -0.0, infinities, 64-bit integers
    and non-ASCII text; distinct times, so that each over(0) window holds only its event."""
    when = _ts("2024-03-01 10:00:00.123456")
    rows = [
        ("a", 1, 0, True, -128, -32768, -2**31, -2**63, 0.1, -0.0, "é\u2603\n\"", when,
         datetime.date(1969, 12, 31), [1.5, None, float("nan")], (2**62 + 1, when)),
        ("a", 2, 1, None, None, None, None, None, None, None, None, None, None, None, None),
        ("a", 3, 2, False, 127, 32767, 2**31 - 1, 2**63 - 1, float("inf"), float("nan"), "",
         _ts("1960-01-01 00:00:00"), datetime.date(2262, 1, 1), [], (None, None)),
        ("b", 4, 3, True, 0, 0, 0, 2**53 + 1, -3.4e38, float("-inf"), "x", when,
         datetime.date(2024, 2, 29), [float("-inf")], (-1, None)),
    ]
    return spark.createDataFrame(rows, _ALL_TYPES)


def test_batch_typed_columns_round_trip_exactly(all_types):
    """Every value type through batch mode, both ways: the per-event rows give back the
    input rows exactly, and ``last`` of each column (typed or JSON aggregate) equals the
    event's own value: nulls stay nulls, NaN stays NaN, -0.0 stays -0.0, 64-bit integers are
    exact, float stays float32, timestamps keep their microseconds (``nulls="error"``: there
    ``last`` takes null and NaN as values; the default skips them)."""
    names = [c for c in all_types.columns if c not in ("k", "t", "seq")]
    aggs = {f"last_{c}": {"fn": "last", "field": c} for c in names}
    out = sliding_aggregate(all_types, key="k", time="t", window=over(0), aggregations=aggs,
                            order_by="seq", nulls="error")
    assert [(f.name, f.dataType) for f in out.schema.fields[:len(all_types.columns)]] == \
        [(f.name, f.dataType) for f in all_types.schema.fields]
    assert [out.schema[f"last_{c}"].dataType for c in names] == \
        [all_types.schema[c].dataType for c in names]
    want = {r.seq: r for r in all_types.collect()}
    got = out.collect()
    assert len(got) == len(want)
    for r in got:
        w = want[r.seq]
        for c in all_types.columns:
            assert _same(r[c], w[c]), (c, r[c], w[c])
        for c in names:
            assert _same(r[f"last_{c}"], w[c]), (c, r[f"last_{c}"], w[c])


def test_streaming_keys_go_out_typed_except_floating_ones(spark, tmp_path):
    """Streaming (bucket layout): keys of scalar columns come back as their own typed columns
    (no ``from_json`` of the key per output row), exactly, null key parts included; a key
    with a floating-point column stays JSON text (``json.loads`` holds NaN as a string) and
    comes back exactly too. Rows per key and window equal those of batch mode."""
    base = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
    keys = [(True, 2**63 - 1, "é\u2603", "2024-02-29", "1960-01-01T00:00:00.123456+00:00", 0.1),
            (None, -2**63, None, None, None, None),
            (False, 0, "", "1969-12-31", "2024-03-01T10:00:00+00:00", float("nan"))]
    events = [{"b": b, "i64": i, "s": s, "d": d, "kts": kts, "f64": f,
               "ts": (base + datetime.timedelta(seconds=13 * n)).isoformat(), "n": n}
              for n in range(30) for b, i, s, d, kts, f in [keys[n % 3]]]
    src_dir = tmp_path / "in"
    src_dir.mkdir()
    _write_file(str(src_dir), 0, events)
    _write_file(str(src_dir), 1, [{"ts": "2030-01-01T00:00:00+00:00"}])
    schema = ("b boolean, i64 long, s string, d date, kts timestamp, f64 double, ts timestamp, "
              "n long")
    end = F.lit("2030-01-01 00:00:00").cast("timestamp")
    batch = spark.read.schema(schema).json(str(src_dir)).where(F.col("ts") < end)
    stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
              .json(str(src_dir)).withWatermark("ts", "0 seconds").where(F.col("ts") < end))
    for key, typed in ((["b", "i64", "s", "d", "kts"], True), (["i64", "f64"], False)):
        args = {"key": key, "time": "ts", "window": tumbling("1 minute"),
                "aggregations": {"n": {"fn": "count"}, "hi": {"fn": "max", "field": "n"}}}
        out = sliding_aggregate(stream, **args)
        # count and max of a long are typed: only a JSON key would be parsed
        assert ("from_json" in out._jdf.queryExecution().logical().toString()) is not typed
        name = f"swag_typed_keys_{typed}"
        with memory_table(out, name, str(tmp_path / name)) as table:
            got = table.collect()
        want = sliding_aggregate(batch, **args).collect()
        assert out.schema == sliding_aggregate(batch, **args).schema
        assert len(got) == len(want) > 3
        as_list = sorted(([r[c] for c in out.columns] for r in got), key=repr)
        assert all(_same(g, w) for g, w in zip(
            as_list, sorted(([r[c] for c in out.columns] for r in want), key=repr))), got


def test_batch_typed_keys_of_several_columns_and_json_keys(all_types):
    """Keys of several scalar columns travel typed; a key with a struct column travels as
    JSON; both come back exactly (null key parts included; a floating key's -0.0 as 0.0,
    as Spark's groupBy keys it)."""
    for key in (["b", "i64", "f64", "s", "ts", "d"], ["k", "st"]):
        out = sliding_aggregate(all_types, key=key, time="t", window=tumbling(1000),
                                aggregations={"n": {"fn": "count"}}, order_by="seq")
        got = sorted(([r[c] for c in key] for r in out.collect()), key=repr)
        want = sorted(([r[c] + 0.0 if isinstance(r[c], float) else r[c] for c in key]
                       for r in all_types.collect()), key=repr)
        assert len(got) == len(want) == 4
        assert all(_same(g, w) for g, w in zip(got, want)), (got, want)


def test_batch_float_sum_matches_spark(spark):
    """A float (32-bit) column arrives as its exact value, as Spark's own sum sees it."""
    df = spark.createDataFrame([("k", i, 0.1 * i) for i in range(1, 40)],
                               "k string, t long, x float")
    out = sliding_aggregate(df, key="k", time="t", window=tumbling(100),
                            aggregations={"s": {"fn": "sum", "field": "x"}})
    native = df.groupBy("k").agg(F.sum("x").alias("s")).collect()
    assert [r.s for r in out.collect()] == [native[0].s]


def test_batch_order_by_puts_nulls_last(spark):
    df = spark.createDataFrame([("k", 5, "a", None), ("k", 5, "b", 2), ("k", 5, "c", 1)],
                               "k string, t long, v string, o long")
    out = sliding_aggregate(df, key="k", time="t", window=tumbling(10),
                            aggregations={"vs": {"fn": "collect", "field": "v"}}, order_by="o")
    assert [r.vs for r in out.collect()] == [["c", "b", "a"]]
    with pytest.raises(SparkTypeError, match="'xs'"):
        sliding_aggregate(df.withColumn("xs", F.array("o")), key="k", time="t",
                          window=tumbling(10), aggregations={"n": {"fn": "count"}},
                          order_by="xs")


def test_batch_result_that_does_not_fit_its_type_names_the_aggregation(spark):
    from swag_core import Aggregation

    df = spark.createDataFrame([("k", 1, "ab")], "key string, t long, s string")
    concat = Aggregation(combine=lambda a, b: a + b, identity="", lift=lambda v: v["s"],
                         name="concat")
    out = sliding_aggregate(df, key="key", time="t", window=tumbling(10),
                            aggregations={"joined": concat}, output_types={"joined": "long"})
    with pytest.raises(Exception, match=r"(?s)SparkTypeError.*aggregation 'joined'.*'ab'"):
        out.collect()


# ----------------------------------------------------------------------------- errors
def test_bad_columns_and_types_name_the_column(spark):
    df = spark.createDataFrame([("k", 1, 2.0)], "key string, t long, v double") \
        .withColumn("d", F.lit(1).cast("decimal(10,2)"))
    agg = {"m": {"fn": "max", "field": "v"}}
    with pytest.raises(ValueError, match="key column 'nope'"):
        sliding_aggregate(df, key="nope", time="t", window=tumbling(10), aggregations=agg)
    with pytest.raises(ValueError, match="time column 'when'"):
        sliding_aggregate(df, key="key", time="when", window=tumbling(10), aggregations=agg)
    with pytest.raises(ValueError, match="'w'"):
        sliding_aggregate(df, key="key", time="t", window=tumbling(10),
                          aggregations={"m": {"fn": "max", "field": "w"}})
    with pytest.raises(SparkTypeError, match=r"'d'.*decimal"):
        sliding_aggregate(df, key="key", time="t", window=over(10), aggregations=agg)
    with pytest.raises(ValueError, match=r"windows\[0\].slide"):
        sliding_aggregate(df, key="key", time="t", window={"kind": "sliding", "range": 10,
                                                          "slide": 20}, aggregations=agg)
    with pytest.raises(ValueError, match="late_rows"):
        sliding_aggregate(df, key="key", time="t", window=tumbling(10), aggregations=agg,
                          late_rows="keep")
    with pytest.raises(ValueError, match=r"watermark='5 s'.*batch"):
        sliding_aggregate(df, key="key", time="t", window=tumbling(10), aggregations=agg,
                          watermark="5 s")


def test_bad_value_fails_the_job_with_key_and_field(spark):
    df = spark.createDataFrame([("k1", 1, 2.0), ("k2", 5, None)], "key string, t long, v double")
    out = sliding_aggregate(df, key="key", time="t", window=tumbling(10), nulls="error",
                            aggregations={"m": {"fn": "mean", "field": "v"}})
    with pytest.raises(Exception, match=r"(?s)BadEventError.*'k2'") as info:
        out.collect()
    assert "'v'" in str(info.value)


def test_streaming_refuses_exchange_reuse(spark):
    """With exchange reuse on, a second operator over the same input would never get a
    watermark and emit nothing (tests/spark/test_multiple_transforms.py): refused up front."""
    src = spark.readStream.format("rate").load().select(
        F.lit("k").alias("key"), F.col("timestamp").alias("ts"), F.col("value").alias("v"))
    key = "spark.sql.exchange.reuse"
    old = spark.conf.get(key, None)
    spark.conf.set(key, "true")
    try:
        with pytest.raises(SparkConfigError, match=r"exchange\.reuse=false.*'true'"):
            sliding_aggregate(src, key="key", time="ts", window=tumbling("1 minute"),
                              aggregations={"n": {"fn": "count"}}, watermark="10 seconds")
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def test_streaming_needs_the_rocksdb_state_store(spark, tmp_path):
    src = spark.readStream.format("rate").load().select(
        F.lit("k").alias("key"), F.col("timestamp").alias("ts"), F.col("value").alias("v"))
    key = "spark.sql.streaming.stateStore.providerClass"
    old = spark.conf.get(key)
    spark.conf.set(key, "org.apache.spark.sql.execution.streaming.state."
                        "HDFSBackedStateStoreProvider")
    try:
        with pytest.raises(SparkConfigError, match="RocksDB"):
            sliding_aggregate(src, key="key", time="ts", window=tumbling("1 minute"),
                              aggregations={"n": {"fn": "count"}}, watermark="10 seconds")
    finally:
        spark.conf.set(key, old)
    with pytest.raises(SparkConfigError, match="watermark"):
        sliding_aggregate(src, key="key", time="ts", window=tumbling("1 minute"),
                          aggregations={"n": {"fn": "count"}})


# ----------------------------------------------------------------------------- helpers
def test_json_fixer_restores_non_finite_floats():
    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": "x", "type": "double", "nullable": True, "metadata": {}},
        {"name": "xs", "type": {"type": "array", "elementType": "double", "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}}]})
    fix = json_fixer(json_shape(schema))
    v = fix({"x": "NaN", "xs": ["Infinity", 1.0, None, "-Infinity"], "s": "NaN"})
    assert math.isnan(v["x"]) and v["xs"][0] == math.inf and v["xs"][3] == -math.inf
    assert v["s"] == "NaN" and v["xs"][1:3] == [1.0, None]
    assert json_fixer(json_shape(StructType.fromJson({"type": "struct", "fields": []}))) is None
