"""Arrow columns in and out of the OVER kernel (:mod:`adapters.engine.over_kernel`), for
engines whose finished keys arrive as Arrow tables (Spark's ``applyInArrow``)."""

from __future__ import annotations

from typing import Any

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


__all__ = ["arrow_array", "kernel_column"]
