"""Batch sliding windows that are not pre-sliced (e.g. a ``mean`` of a double column) run
the cross-key runtime (:mod:`adapters.crosskey.batch_runtime`) over the finished keys of each
record batch at once, without a JVM: the batch function's output over many keys, cut into
record batches anywhere (a key carried from one batch into the next), equals the per-key
path's row for row (values, nulls, NaN, -0.0, types), and the runtime did run for covered
tables."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DoubleType, LongType, StringType

from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.columnar import MIN_BATCH
from adapters.driver.window_driver import WindowDriver
from adapters.engine.columns import Typed
from adapters.engine.worker import Plan
from adapters.query.specs import Query
from tests.spark.batch_tables import batches_of, run_batches, same

FNS = ("count", "max", "min", "sum", "mean")


def plan_for(fns: list[str], r: int, s: int, is_int: bool, has_order: bool) -> Plan:
    aggs: dict[str, Any] = {f"a{i}": {"fn": "count"} if fn == "count" else
                            {"fn": fn, "field": "x"} for i, fn in enumerate(fns)}
    q = Query.build({"kind": "sliding", "range": r, "slide": s}, aggs)
    vt = LongType() if is_int else DoubleType()
    types = [(name, LongType() if fn == "count" else DoubleType() if fn == "mean" else vt)
             for name, fn in zip(aggs, fns)]
    typed = Typed(keys=(StringType(),), values=(("x", vt),), aggs=tuple(types))
    return Plan(q, ("k",), "t", None, {}, (), (), has_order, typed)


def table_of(times: list[int], xs: list[Any], is_int: bool, orders: list[Any],
             keys: list[str] | None = None) -> pa.Table:
    return pa.table({"swag_t": pa.array(times, pa.int64()),
                     "swag_k0": pa.array(keys or ["key"] * len(times)),
                     "swag_v0": pa.array(xs, pa.int64() if is_int else pa.float64()),
                     "swag_o": pa.array(orders, pa.int64())})


def run(plan: Plan, table: pa.Table, cross_key: bool, patch: Any,
        cuts: list[int] | None = None) -> pa.Table:
    with patch.context() as m:
        if not cross_key:
            m.setattr(WindowDriver, "batch_runtime", property(lambda self: False))
        return run_batches(plan, batches_of(table, ["swag_k0"], cuts or []))


@pytest.fixture(scope="module")
def patch() -> Any:
    with pytest.MonkeyPatch.context() as m:
        yield m


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each call of the cross-key runtime took its batch."""
    calls: list[bool] = []
    real = BatchRuntime.process

    def spy(self: BatchRuntime, *a: Any) -> bool:
        calls.append(real(self, *a))
        return calls[-1]

    monkeypatch.setattr(BatchRuntime, "process", spy)
    return calls


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 12), st.integers(1, 12),
       st.lists(st.sampled_from(FNS), min_size=1, max_size=4), st.booleans(), st.booleans())
def test_cross_key_table_equals_the_per_key_table(patch: Any, data: Any, r: int, s: int,
                                                  fns: list[str], is_int: bool,
                                                  has_order: bool) -> None:
    n = data.draw(st.integers(MIN_BATCH - 4, MIN_BATCH + 60))
    keys = data.draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=n,
                              max_size=n))
    cuts = data.draw(st.lists(st.integers(0, n), max_size=4))
    times = data.draw(st.lists(st.integers(-20, 60), min_size=n, max_size=n))
    values = st.integers(-2**40, 2**40) if is_int else (
        st.floats(allow_infinity=False, allow_nan=False, min_value=-1e300, max_value=1e300)
        | st.sampled_from([0.0, -0.0, 5e-324]))
    if data.draw(st.booleans()):  # missing values: the runtime declines, the per-key path runs
        values = values | st.none()
    xs = data.draw(st.lists(values, min_size=n, max_size=n))
    orders = data.draw(st.lists(st.integers(0, 5) | st.none(), min_size=n, max_size=n))
    plan = plan_for(fns, max(r, s), s, is_int, has_order)
    table = table_of(times, xs, is_int, orders, keys)
    same(run(plan, table, True, patch, cuts), run(plan, table, False, patch))


def test_the_runtime_runs_and_refusals_fall_back(patch: Any, ran: list[bool]) -> None:
    """A mean of a double column over a key's plain table runs the cross-key runtime; a key
    with an infinity (which the runtime's reader refuses) or too few events for it runs the
    per-key path; the tables equal the per-key path's either way."""
    plan = plan_for(["mean", "count"], 6, 2, False, False)
    n = MIN_BATCH + 10
    plain = table_of(list(range(n)), [i / 8 + 0.1 for i in range(n)], False, [0] * n)
    inf = table_of(list(range(n)), [math.inf] + [1.0] * (n - 1), False, [0] * n)
    short = table_of([1, 2], [1.0, 2.0], False, [0, 0])
    for table, used in ((plain, [True]), (inf, [False]), (short, [])):
        ran.clear()
        fast = run(plan, table, True, patch)
        assert ran == used
        same(fast, run(plan, table, False, patch))
    assert run(plan, plain, True, patch).num_rows == (n - 1) // 2 + 3
