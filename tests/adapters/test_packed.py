"""``adapters.engine.packed``: a record batch packed per group into IPC rows and back, exact
(64-bit integers, null and NaN apart, rows in their order within a group)."""

from __future__ import annotations

import math

import pytest

pa = pytest.importorskip("pyarrow")

from adapters.engine.packed import PACKED, pack_batch, unpack  # noqa: E402


def test_rows_come_back_per_group_in_their_order_with_exact_values():
    batch = pa.RecordBatch.from_pydict({
        "b": pa.array([1, 0, 1, 0, 1], pa.int32()),
        "v": pa.array([2**62 + 1, None, 3, -1, 5], pa.int64()),
        "x": pa.array([math.nan, 1.5, None, 0.0, -0.0], pa.float64())})
    packed = pack_batch(batch, "b", large=True)
    assert packed.schema.names == ["b", PACKED] and packed.column(1).type == pa.large_binary()
    assert packed.column(0).to_pylist() == [0, 1]
    zero, one = (unpack([blob]) for blob in packed.column(1).to_pylist())
    assert zero.column_names == ["v", "x"]
    assert zero.to_pydict() == {"v": [None, -1], "x": [1.5, 0.0]}
    assert one.column("v").to_pylist() == [2**62 + 1, 3, 5]
    xs = one.column("x").to_pylist()
    assert math.isnan(xs[0]) and xs[1] is None and math.copysign(1, xs[2]) == -1
    both = unpack(packed.column(1).to_pylist())
    assert both.num_rows == 5


def test_an_empty_batch_packs_to_nothing():
    empty = pa.RecordBatch.from_pydict({"b": pa.array([], pa.int32()), "v": pa.array([])})
    assert pack_batch(empty, "b") is None and unpack([]) is None
