"""The packed streaming transport (``spark_adapter._packed``): exact types through the packing
and the bucket processor's decoding, and a checkpoint written by the JSON-row transport
continued by the packed one."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType

from adapters.query.specs import Query
from spark_adapter._buckets import bucket_events
from spark_adapter._packed import PACKED, make_packer, unpack_frames
from spark_adapter._runtime import Plan, Typed

BIG = 2**60 + 7  # not a double: pandas' float64 for a nullable long would round it


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
    return Plan(query=query, key_names=("k",), time_name="t", time_is_string=False,
                value_fixer=None, agg_encoders={}, json_values=(), json_aggs=(),
                has_order=has_order, typed=typed)


def _packed_frames() -> list[Any]:
    import pandas as pd

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
    events = bucket_events(_plan(False), _packed_frames(), ids, {})
    assert [(k, t) for k, t, _ in events] == [("b", 3), ("b", 2), ("a", 5), ("a", None),
                                              ("a", 4), ("a", 9)]
    assert events[2][2]["v"] == BIG and math.isnan(events[2][2]["x"])
    assert events[0][2] == {"v": None, "x": None}
    assert ids == {"a": b'{"k":"a"}', "b": b'{"k":"b"}'}
    # order_by: stable, null and NaN tie last (as the JSON rows' order_key)
    ordered = bucket_events(_plan(True), _packed_frames(), {}, {})
    assert [t for _, t, _ in ordered] == [2, 3, 9, 5, None, 4]


# ----------------------------------------------------------------------------- restart
#: The last commit whose streaming bucket layout sent JSON rows (the checkpoint's writer).
JSON_ROWS_COMMIT = "5debdec"
_START = 1_700_000_000_000


def _rows(batch: int) -> list[dict[str, Any]]:
    out = []
    for i in range(30):
        out.append({"key": f"k{(i * 7 + batch) % 4}", "ts": _START + batch * 600_000 + i * 17_000,
                    "v": None if i % 11 == 3 else BIG + i * batch,
                    "x": "NaN" if i % 9 == 4 else (None if i % 9 == 5 else i * 0.1 + batch),
                    "o": (30 - i) if i % 13 else None})
    if batch == 2:  # late: before the watermark
        out.append({"key": "k1", "ts": _START, "v": 5, "x": 1.0, "o": 1})
    return out


def _write(src: str, batch: int) -> None:
    os.makedirs(src, exist_ok=True)
    path = os.path.join(src, f"b{batch}.json")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in _rows(batch))
    os.utime(path, (1_000_000 + batch, 1_000_000 + batch))


def run_phase(spark: Any, src: str, ckpt: str, out: str) -> None:
    """One ``availableNow`` run of the test's query (also run by the old code, in a
    subprocess: public API only)."""
    from spark_adapter import over, sliding, sliding_aggregate

    df = (spark.readStream.schema("key string, ts long, v long, x double, o int")
          .option("maxFilesPerTrigger", 1).option("allowNonNumericNumbers", "true").json(src))
    res = sliding_aggregate(
        df, key="key", time="ts", window=[sliding("20 minutes", "5 minutes"), over("10 minutes")],
        aggregations={"mx": {"fn": "max", "field": "v"}, "n": {"fn": "count"},
                      "m": {"fn": "mean", "field": "x"}, "f": {"fn": "first", "field": "v"},
                      "l": {"fn": "last", "field": "x"}},
        watermark="1 minute", order_by="o", late_rows="include", key_buckets=4)
    q = (res.writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", ckpt).outputMode("append")
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None


def _old_phase(src: str, ckpt: str, out: str) -> None:  # pragma: no cover (subprocess)
    import spark_adapter
    from spark_adapter import local_session

    print(spark_adapter.__file__)
    spark = local_session("swag-old", shuffle_partitions=1)
    run_phase(spark, src, ckpt, out)
    spark.stop()


def _old_tree(tmp: Path) -> Path:
    repo = Path(__file__).resolve().parents[2]
    old = tmp / "old"
    old.mkdir()
    try:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", JSON_ROWS_COMMIT, "spark_adapter", "adapters",
             "swag_core"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"commit {JSON_ROWS_COMMIT} not available: {exc}")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    return old


def _result(spark: Any, out: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                  for r in spark.read.parquet(out).collect())


def test_a_json_rows_checkpoint_continues_under_the_packed_transport(spark, tmp_path):
    """Micro-batches 0-1 by the JSON-row code (``JSON_ROWS_COMMIT``), 2-4 by this code, from
    the same checkpoint: the rows of one uninterrupted run by this code (late events, order_by,
    nulls, NaN, longs beyond 2^53, an over window and a sliding one)."""
    old = _old_tree(tmp_path)
    src, base = str(tmp_path / "in"), tmp_path
    _write(src, 0)
    _write(src, 1)
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=f"{old}{os.pathsep}{repo}")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.spark.test_packed import _old_phase; "
         "_old_phase(*sys.argv[1:])", src, str(base / "ck"), str(base / "split")],
        env=env, cwd=str(repo), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert str(old) in done.stdout  # the old code wrote the checkpoint
    for b in (2, 3, 4):
        _write(src, b)
    run_phase(spark, src, str(base / "ck"), str(base / "split"))
    run_phase(spark, src, str(base / "ck_full"), str(base / "full"))
    split, full = _result(spark, str(base / "split")), _result(spark, str(base / "full"))
    assert any('"late": true' in r for r in full)
    assert split == full
