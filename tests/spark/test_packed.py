"""The packed streaming transport (``spark_adapter._packed``), the one way rows go into and
out of streaming's Python processor: exact types through the packing and the bucket
processor's decoding (events, and pre-sliced slice rows), and a checkpoint written by the
JSON-row transport continued by the packed one."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.types import DoubleType, LongType

from adapters.engine.bucket_rows import bucket_events
from adapters.engine.columns import Typed
from adapters.engine.packed import PACKED, make_packer, unpack_frames
from adapters.engine.presliced import FLOAT, LONG, slice_layout
from adapters.engine.worker import Plan
from adapters.query.specs import Query
from tests.spark import packed_phase
from tests.spark.packed_phase import BIG


def _batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "swag_t": pa.array([5, 3, None, 4, 2, 9], pa.int64()),
        "swag_k": ['{"k":"a"}', '{"k":"b"}', '{"k":"a"}', '{"k":"a"}', '{"k":"b"}',
                   '{"k":"a"}'],
        "swag_v0": pa.array([BIG, None, 1, BIG + 1, -BIG, 2], pa.int64()),
        "swag_v1": pa.array([math.nan, None, 0.5, -0.0, 1.0, math.inf], pa.float64()),
        "swag_o": pa.array([2.0, 1.0, None, math.nan, 0.0, 1.0], pa.float64()),
        "swag_b": pa.array([1, 0, 1, 1, 0, 1], pa.int32()),
    })


def _plan(has_order: bool) -> Plan:
    query = Query.build([{"kind": "sliding", "range": 10, "slide": 10}],
                        {"n": {"fn": "count"}}, 0, None, "skip")
    typed = Typed(keys=None, values=(("v", LongType()), ("x", DoubleType())), aggs=())
    return Plan(query=query, key_names=("k",), time_name="t",
                value_fixer=None, agg_encoders={}, json_values=(), json_aggs=(),
                has_order=has_order, typed=typed)


def _packed_frames() -> list[Any]:
    packed = list(make_packer("swag_b", False)(iter([_batch()])))
    return [pd.DataFrame({"swag_b": b.column(0).to_pylist(),
                          PACKED: b.column(1).to_pylist()}) for b in packed]


def test_packing_keeps_each_buckets_rows_in_order_with_their_types():
    (out,) = list(make_packer("swag_b", False)(iter([_batch()])))
    assert out.schema.names == ["swag_b", PACKED]
    assert out.column(0).to_pylist() == [0, 1]
    table = unpack_frames(_packed_frames())
    assert table.column("swag_v0").to_pylist() == [None, -BIG, BIG, 1, BIG + 1, 2]
    assert table.column("swag_v0").type == pa.int64()
    xs = table.column("swag_v1").to_pylist()
    assert xs[0] is None and xs[1] == 1.0 and math.isnan(xs[2])
    assert math.copysign(1.0, xs[4]) == -1.0  # -0.0 stays negative
    assert "swag_b" not in table.schema.names


def test_bucket_events_of_packed_frames_are_exact_and_ordered():
    ids: dict[Any, bytes] = {}
    events = bucket_events(_plan(False), unpack_frames(_packed_frames()), ids, {})
    assert [(k, t) for k, t, _ in events] == [("b", 3), ("b", 2), ("a", 5), ("a", None),
                                              ("a", 4), ("a", 9)]
    assert events[2][2]["v"] == BIG and math.isnan(events[2][2]["x"])
    assert events[0][2] == {"v": None, "x": None}
    assert ids == {"a": b'{"k":"a"}', "b": b'{"k":"b"}'}
    # order_by: stable, null and NaN tie last (as the JSON rows' order_key)
    ordered = bucket_events(_plan(True), unpack_frames(_packed_frames()), {}, {})
    assert [t for _, t, _ in ordered] == [2, 3, 9, 5, None, 4]


def test_bucket_events_of_packed_slice_rows_are_their_partials():
    """Pre-sliced streaming sends slice rows through the same packing: the key's JSON text,
    the slice start and the typed partial columns (no order-by column: the partials took
    the order into account), read as one event per key and slice."""
    query = Query.build([{"kind": "sliding", "range": 20, "slide": 10}],
                        {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"},
                         "lo": {"fn": "min", "field": "x"}}, 0, None, "skip")
    layout = slice_layout(query, {"v": LONG, "x": FLOAT})
    assert not isinstance(layout, str)
    typed = Typed(keys=None, values=(("v", LongType()), ("x", DoubleType())), aggs=())
    plan = Plan(query=query, key_names=("k",), time_name="t",
                value_fixer=None, agg_encoders={}, json_values=(), json_aggs=(),
                has_order=False, typed=typed,
                slices=layout)
    rows = pa.RecordBatch.from_pydict({
        "swag_k": ['{"k":"a"}', '{"k":"b"}', '{"k":"a"}'],
        "swag_t": pa.array([0, 10, 10], pa.int64()),
        "swag_n": pa.array([2, 1, 1], pa.int64()),
        "swag_c0": pa.array([2, 1, 0], pa.int64()), "swag_x0": pa.array([BIG, 3, None]),
        "swag_c1": pa.array([2, 1, 1], pa.int64()), "swag_x1": [1.5, math.inf, -0.0],
        "swag_m1": [-0.0, math.inf, 0.0], "swag_z1": [-0.0, None, -0.0],
        "swag_b": pa.array([1, 0, 1], pa.int32())})
    frames = [pd.DataFrame({"swag_b": b.column(0).to_pylist(), PACKED: b.column(1).to_pylist()})
              for b in make_packer("swag_b", False)(iter([rows]))]
    ids: dict[Any, bytes] = {}
    events = bucket_events(plan, unpack_frames(frames), ids, {})
    assert [(k, t, v["#n"], v["max:v"]) for k, t, v in events] == [
        ("b", 10, 1, 3), ("a", 0, 2, BIG), ("a", 10, 1, None)]
    assert [repr(v["min:x"]) for _, _, v in events] == ["inf", "-0.0", "-0.0"]
    assert ids == {"a": b'{"k":"a"}', "b": b'{"k":"b"}'}


# ----------------------------------------------------------------------------- a query
def _result(spark: Any, out: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                  for r in spark.read.parquet(out).collect())


def test_large_var_types_pack_and_unpack(spark, tmp_path):
    """With ``spark.sql.execution.arrow.useLargeVarTypes`` Spark's Arrow string and binary
    types are the large ones: both ``mapInArrow`` stages follow it."""
    key = "spark.sql.execution.arrow.useLargeVarTypes"
    src = str(tmp_path / "in")
    packed_phase.write(src, 0)
    packed_phase.write(src, 1)
    spark.conf.set(key, "true")
    try:
        packed_phase.run(spark, src, str(tmp_path / "ck_large"), str(tmp_path / "large"))
    finally:
        spark.conf.unset(key)
    packed_phase.run(spark, src, str(tmp_path / "ck"), str(tmp_path / "plain"))
    large = _result(spark, str(tmp_path / "large"))
    assert large and large == _result(spark, str(tmp_path / "plain"))


def test_the_plan_shipped_to_workers_runs_the_cross_key_runtime():
    """Spark pickles the plan (its parsed query) to the Python workers. The driver a worker
    builds from it must still find the field readers plain, or it loses the kernels and with
    them the cross-key runtime and runs everything per key (a process-local registry of
    plain readers did exactly that, unseen by every test that built the query in-process)."""
    from pyspark import cloudpickle

    from adapters.engine.worker import driver_for

    query = Query.build([{"kind": "sliding", "range": 3_600_000, "slide": 10_000}],
                        {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}, 0, None,
                        "skip")
    typed = Typed(keys=None, values=(("v", LongType()),), aggs=())
    plan = Plan(query=query, key_names=("k",), time_name="t",
                value_fixer=None, agg_encoders={}, json_values=(), json_aggs=(),
                has_order=False, typed=typed)
    shipped = cloudpickle.loads(cloudpickle.dumps(plan))
    driver = driver_for(shipped)
    assert driver.batch_runtime
    events = [("a" if i % 2 else "b", 1_000 * i, {"v": i}) for i in range(200)]
    from adapters import MemoryStateBackend
    from adapters.crosskey.batch_runtime import BatchRuntime

    assert isinstance(driver._batch, BatchRuntime)
    out = driver.process_batch(events, MemoryStateBackend(), watermark=None)
    assert not out.rows and set(out.timers) == {"a", "b"}
    assert len(driver._batch._keys) == 2  # held by the cross-key runtime
