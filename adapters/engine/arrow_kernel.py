"""Per-event windows of finished keys without per-row Python objects, for engines whose
finished keys arrive as Arrow tables of :mod:`adapters.engine.columns` (Spark's
``mapInArrow`` over partitions sorted by key, :mod:`adapters.engine.finished_keys`): the
complete keys of a batch in, the driver's OVER kernel
(:meth:`adapters.WindowDriver.finish_columns`, :mod:`adapters.engine.over_kernel`) on its
columns as NumPy arrays, Arrow columns out.

What it covers: a query whose plan has an OVER kernel (:attr:`adapters.QueryPlan.over_kernel`:
the planner checked that the time column travels as epoch ms, and the value columns and
aggregates all travel typed), each aggregated field an integer or floating-point Arrow column.
Anything else, and any table the kernel refuses (a null time, an infinity, a missing value
under ``nulls="error"``, a result its output column cannot hold), gives ``None``: the engine
runs the keys through the driver, which reports what it finds. The rows are the driver's: one
per event, in time order within its key (ties in arrival order, or ``order_by`` order:
:mod:`adapters.engine.finished_keys` sorts each key's rows by it), the event's own typed
columns and key columns, the same aggregate values.
"""

from __future__ import annotations

from typing import Any

from adapters.driver.window_driver import WindowDriver
from adapters.engine.columns import (
    END_OUT,
    KEY_IN,
    KEY_OUT,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    VALUE_IN,
    WINDOW_OUT,
    ColumnPlan,
)
from adapters.engine.over_kernel import KernelColumn

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy there is no kernel
    np = None  # type: ignore[assignment]


def kernel_column(col: Any) -> KernelColumn | None:
    """A field's Arrow column as a kernel column in input order: signed integers as int64,
    floats as float64 (null and NaN missing); ``None``: not a number column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_signed_integer(col.type):
        kind: Any = np.int64
    elif pa.types.is_floating(col.type):
        kind = np.float64
    else:
        return None
    missing = col.is_null()
    if kind is np.float64:
        missing = pc.or_(missing, pc.fill_null(pc.is_nan(col), False))
    data = col.fill_null(0).to_numpy().astype(kind, copy=False)
    miss = missing.to_numpy(zero_copy_only=False) if col.null_count or \
        kind is np.float64 else None
    return KernelColumn(data, miss)


def arrow_array(values: Any, arrow_type: Any) -> Any:
    """An output's kernel values as an Arrow array of ``arrow_type``, or ``None`` if they do
    not fit it (then the engine runs the key through the driver, which names the column)."""
    import pyarrow as pa

    data = values.data
    fits = (data.dtype == np.int64 and pa.types.is_int64(arrow_type)) or (
        data.dtype == np.float64 and pa.types.is_float64(arrow_type))
    try:
        if fits:
            return pa.array(data, type=arrow_type, mask=values.missing)
        return pa.array(values.tolist(), type=arrow_type)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return None


def over_table(plan: ColumnPlan, over: Any, driver: WindowDriver, schema: Any, table: Any,
               starts: Any) -> Any:
    """The output table (``schema``) of the finished keys in ``table`` (each key's rows
    together, in arrival or ``order_by`` order; ``starts``: the first row of
    each key, int64), or ``None`` (then the driver must run their events). ``over``: the
    plan's :attr:`~adapters.QueryPlan.over_kernel`."""
    import pyarrow as pa

    time_col = table.column(TIME_IN)
    if time_col.null_count or not pa.types.is_signed_integer(time_col.type):
        return None
    times = time_col.to_numpy().astype(np.int64, copy=False)
    names = [n for n, _ in plan.typed.values]
    columns: dict[str, KernelColumn] = {}
    for name in over.fields:
        column = kernel_column(table.column(f"{VALUE_IN}{names.index(name)}"))
        if column is None:
            return None
        columns[name] = column
    ids = None
    if len(starts) > 1:
        ids = np.zeros(len(times), np.int64)
        ids[starts[1:]] = 1
        ids = np.cumsum(ids)
    found = driver.finish_columns(times, columns, ids)
    if found is None:
        return None
    return _output(plan, over, schema, table, found.order, found.times, found.values)


def _output(plan: ColumnPlan, over: Any, schema: Any, table: Any, order: Any, times: Any,
            aggs: dict[str, Any]) -> Any:
    """The output table: per event its window index, time, key, typed value columns and
    aggregates (``None`` if an aggregate does not fit its column's type)."""
    import pyarrow as pa

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
        elif name.startswith(KEY_OUT):  # swag_k<i> in, _swag_k<i> out (or swag_k, _swag_k)
            arr = table.column(KEY_IN + name[len(KEY_OUT):]).take(take)
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


__all__ = ["arrow_array", "kernel_column", "over_table"]
