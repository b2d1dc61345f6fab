"""The bucket layout of streaming state (``spark_adapter._buckets`` over
``adapters.engine.buckets``) without a JVM: the
blob codec, and the driver over a bucket's state against the in-memory reference, through
rebuilds (another worker served the bucket) and log rewrites."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adapters.engine.buckets as buckets_module
from adapters import MemoryStateBackend, StateError, WindowDriver
from adapters.engine.buckets import BucketBackend, BucketPairs, run_bucket
from adapters.engine.columns import Typed, decode_key
from adapters.engine.worker import Plan
from adapters.query.specs import Query
from adapters.state.buckets import Bucket, KeyRecord, decode_bucket, encode_bucket
from adapters.state.codec import split_meta
from adapters.state.segments import segment_range


class FakeValue:
    """A Spark ``ValueState`` of one column, counting round trips."""

    def __init__(self, calls: list[str]) -> None:
        self.value: tuple[Any, ...] | None = None
        self.calls = calls

    def get(self) -> tuple[Any, ...] | None:
        self.calls.append("get")
        return self.value

    def update(self, v: tuple[Any, ...]) -> None:
        self.calls.append("update")
        self.value = v


class FakeMap:
    """A Spark ``MapState`` of ``(key id, slot)`` -> ``(pair,)``; :meth:`handle` is one
    task's connection to it (what the processor binds)."""

    def __init__(self) -> None:
        self.data: dict[tuple[bytes, int], tuple[bytes]] = {}

    def handle(self) -> Any:
        data = self.data

        class Handle:
            getValue = staticmethod(data.get)

            @staticmethod
            def updateValue(key: tuple[bytes, int], value: tuple[bytes]) -> None:
                data[key] = value

            @staticmethod
            def removeKey(key: tuple[bytes, int]) -> None:
                data.pop(key, None)

        return Handle()


class FakeList:
    """A Spark ``ListState``, counting round trips."""

    def __init__(self, calls: list[str]) -> None:
        self.items: list[tuple[Any, ...]] = []
        self.calls = calls

    def get(self) -> list[tuple[Any, ...]]:
        self.calls.append("list.get")
        return list(self.items)

    def appendList(self, rows: list[tuple[Any, ...]]) -> None:
        self.calls.append("appendList")
        self.items.extend(rows)

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.calls.append("put")
        self.items = list(rows)

    def clear(self) -> None:
        self.calls.append("clear")
        self.items = []


def test_blob_round_trip_and_clear_errors():
    b = Bucket(16, timer=5, live=3, dead=1, keys={
        b'{"k":"a"}': KeyRecord(b"meta-a", 10, None),
        b'{"k":null}': KeyRecord(None, None, -7),
        b'{"k":"\xc3\xa9"}': KeyRecord(b"", 2**40, 2**40)})
    back = decode_bucket(encode_bucket(b), 16)
    assert back.timer == 5 and (back.live, back.dead) == (3, 1)
    assert back.keys[b'{"k":"a"}'] == KeyRecord(b"meta-a", 10, None)
    assert back.keys[b'{"k":null}'] == KeyRecord(None, None, -7)
    assert back.keys[b'{"k":"\xc3\xa9"}'].timer == 2**40
    with pytest.raises(StateError, match=r"key_buckets=16.*key_buckets=8"):
        decode_bucket(encode_bucket(b), 8)
    blob = encode_bucket(b)
    with pytest.raises(StateError, match="version 9"):
        decode_bucket(blob[:4] + b"\x09" + blob[5:], 16)


def test_state_variables_are_the_golden_ones():
    """The bucket's state variables, names and schemas (``tests/golden/spark_state.json``):
    Spark reads a checkpoint back only with the same ones. Fix the code, never the
    sample."""
    from spark_adapter import _buckets as sb

    golden = json.loads((Path(__file__).parent.parent / "golden" / "spark_state.json")
                        .read_text())
    assert golden == {"meta": {"name": sb.BMETA_STATE, "value": sb.BMETA_SCHEMA},
                      "log": {"name": sb.BLOG_STATE, "element": sb.BLOG_SCHEMA},
                      "pairs": {"name": sb.BPAIRS_STATE, "key": sb.BPAIRS_KEY_SCHEMA,
                                "value": sb.BPAIRS_VALUE_SCHEMA}}


QUERY = Query.build([{"kind": "sliding", "range": 40, "slide": 10}],
                    {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}, 0, None, "skip")
PLAN = Plan(query=QUERY, key_names=("k",), time_name="t",
            value_fixer=None, agg_encoders={}, json_values=("v",), json_aggs=("n", "mx"),
            has_order=False, typed=Typed(keys=None, values=(), aggs=()), max_cached_keys=4)

#: micro-batches: events (key, time, value) and the watermark after them
batches = st.lists(st.tuples(
    st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(0, 30), st.integers(-5, 5)),
             max_size=12),
    st.integers(0, 8),  # watermark step
    st.booleans()),     # another worker served the bucket before (cache dropped)
    min_size=1, max_size=25)


@pytest.mark.parametrize("compact_min", [2, buckets_module.COMPACT_MIN])
@settings(deadline=None, max_examples=60)
@given(steps=batches)
def test_driver_over_a_bucket_equals_the_reference(steps, compact_min):
    """Every micro-batch through a bucket's state (blob + log, rebuilt when the cache is
    dropped, rewritten once dead elements dominate) gives the rows and late events of the
    per-key reference run. With a minimum of 2 dead elements (not 64) short histories
    rewrite the log; with 64 they read past dead elements instead."""
    old = buckets_module.COMPACT_MIN
    buckets_module.COMPACT_MIN = compact_min
    try:
        _bucket_against_reference(steps)
    finally:
        buckets_module.COMPACT_MIN = old


def _bucket_against_reference(steps: list[Any], query: Query = QUERY,
                              pair_map: FakeMap | None = None) -> None:
    """``steps`` through a bucket's state (with the pair map ``pair_map``: the KVS layout)
    against the per-key reference run in memory."""
    ref = WindowDriver(replace(query, layout="memory"))
    ref_state = MemoryStateBackend()
    drv = WindowDriver(query, max_cached_keys=4)
    pairs = BucketPairs() if pair_map is not None else None
    calls: list[str] = []
    meta, log = FakeValue(calls), FakeList(calls)
    wm, clock = None, 0
    for events, step, dropped in steps:
        clock += 10
        evs = [(k, clock + t, {"v": v}) for k, t, v in events]
        if dropped:
            drv.drop_cache()
        if pairs is not None:  # each call a task of its own: a map state of its own
            pairs.bind(pair_map.handle())
        ids = {k: f'{{"k":"{k}"}}'.encode() for k, _, _ in evs}
        backend = BucketBackend(meta, log, 16, ids, lambda text: decode_key(PLAN, text),
                                pairs)
        got = run_bucket(drv, backend, evs, wm)
        live_before = _live_items(backend, log.items) + sorted(backend._new)
        backend.flush()
        b = backend.bucket
        # the counts are the list's; a rewrite keeps exactly the live elements
        assert b.live + b.dead == len(log.items)
        assert b.dead < buckets_module.COMPACT_MIN or b.dead < b.live
        assert _live_items(backend, log.items) == sorted(live_before)
        want = ref.process_batch(evs, ref_state, watermark=wm) if evs else None
        rows = list(want.rows) if want else []
        late = list(want.late) if want else []
        due = [k for k in ref_state.keys()  # noqa: SIM118 (a method, not a dict)
               if want is None or k not in want.timers]
        if wm is not None:
            for k in due:
                more = ref.advance_watermark(k, wm, ref_state.key_state(k))
                rows += more.rows
                late += more.late
        assert sorted(map(_row, got.rows)) == sorted(map(_row, rows))
        assert sorted(map(_late, got.late)) == sorted(map(_late, late))
        wm = clock - 20 + step  # rises by 2 or more per batch
    if pair_map is not None and meta.value is not None:
        keys = decode_bucket(bytes(meta.value[0]), 16).keys
        assert {kid for kid, _ in pair_map.data} <= set(keys)
        # the structures are in the KVS layout: their local parts ride with the metadata
        assert all(split_meta(rec.meta)[1] for rec in keys.values() if rec.meta)


OVER = Query.build([{"kind": "over", "range": 25}],
                   {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}, 0, None, "skip")


@settings(deadline=None, max_examples=60)
@given(steps=batches)
def test_kvs_layout_in_a_bucket_equals_the_reference(steps):
    """The KVS layout over the bucket's pair map (``(key id, map key)`` -> pair, several
    keys in one map), its structures reopened from it after every dropped cache, gives the
    rows and late events of the in-memory reference run."""
    _bucket_against_reference(steps, replace(OVER, layout="kvs"), FakeMap())


def test_kvs_layout_in_a_bucket_reads_its_pairs_back():
    """Long histories of two keys: their structures write pages to the shared map and
    reopen from them (the cache dropped every third call), as the reference."""
    rng = random.Random(5)
    steps = [([(k, rng.randint(0, 12), rng.randint(-5, 5)) for _ in range(12) for k in "ab"],
              8, i % 3 == 2) for i in range(40)]
    pair_map = FakeMap()
    _bucket_against_reference(steps, replace(OVER, layout="kvs"), pair_map)
    assert {kid for kid, _ in pair_map.data} == {b'{"k":"a"}', b'{"k":"b"}'}


def _live_items(backend: BucketBackend, items: list[tuple[bytes, bytes]]
                ) -> list[tuple[bytes, bytes]]:
    """The log elements at or after their key's trim bound, sorted."""
    keys = backend.bucket.keys
    return sorted((k, seg) for k, seg in items
                  if keys[k].trim is None or segment_range(seg)[1] >= keys[k].trim)


def _late(e: Any) -> tuple[Any, ...]:
    return (e.key, e.time, e.value["v"])


def _row(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["key"], r["window"], r.get("start"), r.get("end"), r.get("time"), r["n"],
            r["mx"])


def test_few_round_trips_per_bucket_call():
    """A bucket call reads the blob once, appends once and writes the blob once, whatever
    its number of keys (no per-key state call)."""
    drv = WindowDriver(QUERY, max_cached_keys=100)
    calls: list[str] = []
    meta, log = FakeValue(calls), FakeList(calls)
    evs = [(f"k{i}", 5 + i % 7, {"v": i}) for i in range(50)]
    ids = {k: k.encode() for k, _, _ in evs}
    backend = BucketBackend(meta, log, 4, ids, lambda text: decode_key(PLAN, text))
    run_bucket(drv, backend, evs, None)
    backend.flush()
    assert calls == ["get", "appendList", "update"]


# ----------------------------------------------------------------------------- with Spark
def _query_on(spark: Any, src: str, ckpt: str, out: str, key_buckets: Any) -> Any:
    from spark_adapter import sliding, sliding_aggregate

    df = spark.readStream.schema("key string, ts timestamp, v long").json(src)
    res = sliding_aggregate(df, key="key", time="ts", window=sliding("10 minutes", "5 minutes"),
                            aggregations={"mx": {"fn": "max", "field": "v"}},
                            watermark="0 seconds", key_buckets=key_buckets)
    return (res.writeStream.format("parquet").option("path", out)
            .option("checkpointLocation", ckpt).outputMode("append")
            .trigger(availableNow=True).start())


def _write(src: str, name: str, rows: list[tuple[str, str, int]]) -> None:
    import json
    import os

    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, name), "w") as f:
        for k, ts, v in rows:
            f.write(json.dumps({"key": k, "ts": ts, "v": v}) + "\n")


def test_a_checkpoint_of_another_bucket_count_fails_clearly(spark, tmp_path):
    """A restart with another ``key_buckets`` (keys would land in other buckets) fails the
    query with our StateError (no row computed from misread state); the checkpoint's count
    resumes."""
    first, then, error = 16, 8, r"key_buckets=16.*key_buckets=8"
    src, ckpt, out = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out")
    _write(src, "a.json", [("a", "2024-01-01 00:01:00", 1), ("b", "2024-01-01 00:02:00", 2)])
    q = _query_on(spark, src, ckpt, out, first)
    q.awaitTermination()
    assert q.exception() is None
    _write(src, "b.json", [("a", "2024-01-01 00:31:00", 3), ("b", "2024-01-01 00:32:00", 4)])
    with pytest.raises(Exception, match=error):
        q = _query_on(spark, src, ckpt, out, then)
        q.awaitTermination()
    q = _query_on(spark, src, ckpt, out, first)
    q.awaitTermination()
    assert q.exception() is None
    rows = {(r["key"], r["window_start"].minute, r["mx"])
            for r in spark.read.parquet(out).collect()}
    assert rows == {("a", 55, 1), ("a", 0, 1), ("b", 55, 2), ("b", 0, 2)}


#: the typed transport of the packed rows: ``v`` a long column (``swag_v0``)
TYPED_PLAN = replace(PLAN, json_values=(), json_aggs=(),
                     typed=Typed(keys=None, values=(("v", "long"),), aggs=()))
BIG = 2**62 + 1  # not exact as a float


def _bucket_table(events: list[tuple[str, int, Any]], float_values: bool) -> Any:
    import pyarrow as pa

    return pa.table({"swag_k": [f'{{"k":"{k}"}}' for k, _, _ in events],
                     "swag_t": pa.array([t for _, t, _ in events], pa.int64()),
                     "swag_v0": pa.array([v for _, _, v in events],
                                         pa.float64() if float_values else pa.int64())})


column_event = st.tuples(st.sampled_from("abcd"), st.integers(0, 30),
                         st.sampled_from([0, -3, 7, BIG, -BIG]))
calls_of_columns = st.lists(st.tuples(
    st.one_of(st.lists(column_event, max_size=8),
              st.lists(column_event, min_size=64, max_size=150)),
    st.integers(0, 12),  # watermark step
    st.booleans(),       # another worker served the bucket before (cache dropped)
    st.booleans()),      # a null value (the events are read row by row)
    min_size=1, max_size=8)


@settings(deadline=None, max_examples=40)
@given(steps=calls_of_columns, float_values=st.booleans())
def test_a_buckets_columns_give_the_rows_of_its_events(steps, float_values):
    """A bucket's Arrow rows handed to the driver as columns (``bucket_events`` of numbers
    without nulls, 64 rows or more: :class:`ArrowEvents`) give the rows and late events of
    the same events as Python tuples, through rebuilds; they read as the same tuples."""
    from adapters.crosskey.columnar import ArrowEvents
    from adapters.engine.bucket_rows import bucket_events

    columnar, tuples = WindowDriver(QUERY, max_cached_keys=4), WindowDriver(QUERY)
    states = [(FakeValue([]), FakeList([])) for _ in range(2)]
    wm, clock, taken = None, 0, 0
    for events, step, dropped, null in steps:
        clock += 10
        evs = [(k, clock + t, float(v) if float_values else v) for k, t, v in events]
        if null and evs:
            evs[-1] = (*evs[-1][:2], None)
        ids: dict[Any, bytes] = {}
        got = bucket_events(TYPED_PLAN, _bucket_table(evs, float_values), ids, {})
        want = [(k, t, {"v": v}) for k, t, v in evs]
        assert isinstance(got, ArrowEvents) == (len(evs) >= 64 and None not in
                                                [v for _, _, v in evs])
        taken += isinstance(got, ArrowEvents)
        assert list(got) == want
        if dropped:
            columnar.drop_cache()
        outs = []
        for drv, batch, (meta, log) in ((columnar, got, states[0]), (tuples, want, states[1])):
            backend = BucketBackend(meta, log, 16, dict(ids),
                                    lambda text: decode_key(PLAN, text))
            outs.append(run_bucket(drv, backend, batch, wm))
            backend.flush()
        assert sorted(map(_row, outs[0].rows)) == sorted(map(_row, outs[1].rows))
        assert sorted(map(_late, outs[0].late)) == sorted(map(_late, outs[1].late))
        wm = clock - 20 + step
    assert taken or all(len(e) < 64 or null for e, _, _, null in steps)


def test_a_buckets_columns_of_two_fields_give_the_rows_of_its_events():
    """Two value fields (a long and a double): the columns give what the tuples give, and
    read as the same tuples; a non-finite double sends the batch row by row."""
    import math

    import pyarrow as pa

    from adapters.crosskey.columnar import ArrowEvents
    from adapters.engine.bucket_rows import bucket_events

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["key"], r["window"], r.get("end"), r["mx"], r["s"])

    query = Query.build([{"kind": "sliding", "range": 40, "slide": 10}],
                        {"mx": {"fn": "max", "field": "v"}, "s": {"fn": "sum", "field": "x"}},
                        0, None, "skip")
    plan = replace(TYPED_PLAN, query=query,
                   typed=Typed(keys=None, values=(("v", "long"), ("x", "double")), aggs=()))
    rng = random.Random(5)
    columnar, tuples = WindowDriver(query, max_cached_keys=2), WindowDriver(query)
    states = [(FakeValue([]), FakeList([])) for _ in range(2)]
    for call in range(6):
        evs = [(rng.choice("abc"), call * 10 + rng.randrange(30), rng.choice([BIG, -3, 7]),
                rng.choice([0.5, -0.0, 1e300])) for _ in range(100)]
        if call == 3:
            evs[5] = (*evs[5][:3], math.inf)
        table = pa.table({"swag_k": [f'{{"k":"{k}"}}' for k, _, _, _ in evs],
                          "swag_t": pa.array([t for _, t, _, _ in evs], pa.int64()),
                          "swag_v0": pa.array([v for _, _, v, _ in evs], pa.int64()),
                          "swag_v1": pa.array([x for _, _, _, x in evs], pa.float64())})
        ids: dict[Any, bytes] = {}
        got = bucket_events(plan, table, ids, {})
        want = [(k, t, {"v": v, "x": x}) for k, t, v, x in evs]
        assert isinstance(got, ArrowEvents) and list(got) == want
        cols = columnar._columnar.read(got)
        assert (cols is None) == (call == 3)
        if cols is not None:
            assert cols.order == ("v", "x") and cols.ints == (True, False)
        outs = []
        for drv, batch, (meta, log) in ((columnar, got, states[0]), (tuples, want, states[1])):
            backend = BucketBackend(meta, log, 16, dict(ids), lambda text: decode_key(plan, text))
            outs.append(run_bucket(drv, backend, batch, call * 10 - 15 if call else None))
            backend.flush()
        assert sorted(map(key, outs[0].rows)) == sorted(map(key, outs[1].rows))
        assert len(outs[0].late) == len(outs[1].late)
