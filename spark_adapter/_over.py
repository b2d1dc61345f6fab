"""Batch (``applyInArrow``) per-event windows without per-row Python objects: one key's Arrow
table in, the driver's OVER kernel (:meth:`adapters.WindowDriver.finish_columns`) on its
columns as NumPy arrays, Arrow columns out.

What it covers: a query whose plan has an OVER kernel (:attr:`adapters.QueryPlan.over_kernel`:
the planner checked that the time column travels as epoch ms, and the value columns and
aggregates all travel typed), each aggregated field an integer or floating-point Arrow
column.
Anything else, and any table the kernel refuses (a null time, an infinity, a missing value
under ``nulls="error"``, a result its output column cannot hold), returns ``None``: the driver
runs the key as before and reports what it finds. The rows are the driver's: one per event,
in time order (ties in arrival order, or ``order_by`` order), the event's own typed columns,
the same aggregate values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapters import WindowDriver
from adapters.engine.arrow_kernel import arrow_array, kernel_column
from adapters.engine.over_kernel import KernelColumn

from ._names import (
    END_OUT,
    KEY_OUT,
    ORDER_IN,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
    WINDOW_OUT,
)
from ._runtime import Plan


def over_table(plan: Plan, over: Any, driver: WindowDriver, schema: Any, key: Any,
               table: Any) -> Any:
    """One key's output table (``schema``) from its input ``table``, or ``None`` (then the
    driver must run the key's events). ``over``: the plan's
    :attr:`~adapters.QueryPlan.over_kernel`; ``key``: the key as the output's key columns
    hold it."""
    import pyarrow as pa

    if plan.has_order and table.num_rows > 1:
        table = table.sort_by([(ORDER_IN, "ascending")])  # as arrow_events: stable, nulls last
    time_col = table.column(TIME_IN)
    if time_col.null_count or not pa.types.is_signed_integer(time_col.type):
        return None
    times = time_col.to_numpy().astype(np.int64, copy=False)
    assert plan.typed is not None
    names = [n for n, _ in plan.typed.values]
    columns: dict[str, KernelColumn] = {}
    for name in over.fields:
        column = kernel_column(table.column(f"{VALUE_IN}{names.index(name)}"))
        if column is None:
            return None
        columns[name] = column
    found = driver.finish_columns(times, columns)
    if found is None:
        return None
    return _output(plan, over, schema, key, table, found.order, found.times, found.values)


def _output(plan: Plan, over: Any, schema: Any, key: Any, table: Any, order: Any,
            times: Any, aggs: dict[str, Any]) -> Any:
    """The output table: per event its window index, time, key, typed value columns and
    aggregates (``None`` if an aggregate does not fit its column's type)."""
    import pyarrow as pa

    assert plan.typed is not None
    n = len(times)
    take = pa.array(order)
    agg_names = [name for name, _ in plan.typed.aggs]
    arrays = []
    for f in schema:
        name = f.name
        if name == WINDOW_OUT:
            arr = pa.array(np.full(n, over.window, np.int32))
        elif name in (START_OUT, END_OUT):
            arr = pa.nulls(n, f.type)
        elif name == TIME_OUT:
            arr = pa.array(times)
        elif name.startswith(KEY_OUT):
            part = key if name == KEY_OUT or len(plan.key_names) == 1 else \
                key[int(name[len(KEY_OUT):])]
            arr = pa.array([part], f.type).take(pa.array(np.zeros(n, np.intp)))
        elif name.startswith(TYPED_EVENT_OUT):
            arr = table.column(f"{VALUE_IN}{name[len(TYPED_EVENT_OUT):]}").take(take)
        else:
            assert name.startswith(TYPED_AGG_OUT)
            values = aggs[agg_names[int(name[len(TYPED_AGG_OUT):])]]
            arr = arrow_array(values, f.type)
            if arr is None:
                return None
        if arr.type != f.type:
            try:
                arr = arr.cast(f.type)
            except (pa.ArrowException, ValueError):
                return None
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)
