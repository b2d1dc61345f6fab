"""Batch per-event windows through the driver's OVER kernel (``adapters.engine.arrow_kernel``,
``WindowDriver.finish_columns``) without a JVM, over the finished keys of each record batch at
once: the batch function's output over many keys, cut into record batches anywhere, equals
the driver path's row for row (values, nulls, NaN, -0.0, types), for long and double
columns, ties, nulls and ``order_by``, and no frame crosses a key."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DoubleType, LongType, StringType

import adapters.engine.finished_keys as batch_module
from adapters import EngineFacts, WindowDriver
from adapters.engine.columns import Typed
from adapters.engine.worker import Plan
from adapters.query.specs import Query
from tests.spark.batch_tables import batches_of, run_batches, same

FNS = ("max", "min", "sum", "mean")


def plan_for(fns: list[str], r: int, is_int: bool, has_order: bool) -> Plan:
    aggs: dict[str, Any] = {f"a{i}": {"fn": fn, "field": "x"} for i, fn in enumerate(fns)}
    aggs["n"] = {"fn": "count"}
    q = Query.build({"kind": "over", "range": r}, aggs)
    vt = LongType() if is_int else DoubleType()
    types = [(name, DoubleType() if fn == "mean" else vt) for name, fn in
             zip(aggs, fns)] + [("n", LongType())]
    typed = Typed(keys=(StringType(),), values=(("x", vt),), aggs=tuple(types))
    route = WindowDriver(q).plan(EngineFacts("spark", False, EngineFacts.FINISHED,
                                             column_fields=frozenset({"x"})))
    assert route.over_kernel is not None
    return Plan(q, ("k",), "t", None, {}, (), (), has_order, typed, route=route)


def run(plan: Plan, table: pa.Table, fast: bool, monkeypatch: Any,
        cuts: list[int] | None = None) -> pa.Table:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(WindowDriver, "finish_columns", lambda *a: None)
        return run_batches(plan, batches_of(table, ["swag_k0"], cuts or []))


def table_of(times: list[int], xs: list[Any], is_int: bool, orders: list[Any],
             keys: list[str] | None = None) -> pa.Table:
    return pa.table({"swag_t": pa.array(times, pa.int64()),
                     "swag_k0": pa.array(keys or ["key"] * len(times)),
                     "swag_v0": pa.array(xs, pa.int64() if is_int else pa.float64()),
                     "swag_o": pa.array(orders, pa.int64())})


@pytest.fixture(scope="module")
def patch() -> Any:
    with pytest.MonkeyPatch.context() as m:
        yield m


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(0, 30), st.lists(st.sampled_from(FNS), min_size=1, max_size=4),
       st.booleans(), st.booleans())
def test_kernel_table_equals_the_driver_table(patch: Any, data: Any, r: int, fns: list[str],
                                              is_int: bool, has_order: bool) -> None:
    n = data.draw(st.integers(1, 40))
    keys = data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    cuts = data.draw(st.lists(st.integers(0, n), max_size=4))
    times = data.draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    values = st.integers(-2**40, 2**40) if is_int else (
        st.floats(allow_infinity=False) | st.sampled_from([0.0, -0.0]))
    xs = data.draw(st.lists(values | st.none(), min_size=n, max_size=n))
    orders = data.draw(st.lists(st.integers(0, 5) | st.none(), min_size=n, max_size=n))
    plan = plan_for(fns, r, is_int, has_order)
    table = table_of(times, xs, is_int, orders, keys)
    same(run(plan, table, True, patch, cuts), run(plan, table, False, patch))


def test_the_kernel_runs_and_refusals_fall_back(monkeypatch: Any) -> None:
    """The kernel answers a plain table; an infinity goes to the driver (same output)."""
    calls: list[int] = []
    real = batch_module.over_table

    def spy(*a: Any) -> Any:
        got = real(*a)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(batch_module, "over_table", spy)
    plan = plan_for(["max", "mean"], 3, False, False)
    plain = table_of([1, 2, 2, 5], [1.0, -0.0, 0.0, 2.5], False, [0, 0, 0, 0])
    inf = table_of([1, 2], [1.0, math.inf], False, [0, 0])
    for table, used in ((plain, True), (inf, False)):
        fast = run(plan, table, True, monkeypatch)
        assert calls[-1] is used
        same(fast, run(plan, table, False, monkeypatch))


def test_no_kernel_without_one_in_the_plan(monkeypatch: Any) -> None:
    """A plan without the OVER kernel (the facts offer no number columns) never asks for it;
    the rows are the driver's all the same."""
    calls: list[int] = []
    monkeypatch.setattr(batch_module, "over_table", lambda *a: calls.append(1))
    plan = plan_for(["max"], 3, True, False)
    plan.route = WindowDriver(plan.query).plan(EngineFacts("spark", False,
                                                           EngineFacts.FINISHED))
    assert plan.route.over_kernel is None
    table = table_of([1, 2, 5], [3, 1, 2], True, [0, 0, 0])
    out = run_batches(plan, batches_of(table, ["swag_k0"], []))
    assert not calls and out.column("_swag_a0").to_pylist() == [3, 3, 2]
