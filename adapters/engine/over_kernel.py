"""The OVER kernel for an engine's finished keys: one or many keys' whole input as number
columns in, their per-event rows as columns out (:meth:`adapters.WindowDriver.finish_columns`;
the kernel itself, and what it covers: :mod:`adapters.crosskey.over_runtime`).

An engine turns its columns into :class:`KernelColumn` (values in input order, int64 or
float64, and a mask of missing values) and gets :class:`KernelRows`: the order of the rows
(a stable sort by time), the sorted times and each output's values, or ``None`` when the
columns break a kernel rule (then the engine hands the key's events to
:meth:`~adapters.WindowDriver.finish`, which reports or handles what it finds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from adapters.crosskey.over_runtime import Column, OverPlan, Values, frame_bounds, over_values

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy there is no kernel
    np = None  # type: ignore[assignment]

#: a field's values: ``data`` (int64 or float64, anything where missing), ``missing`` (a bool
#: array or ``None``)
KernelColumn = Column


class KernelRows(NamedTuple):
    """A finished key's per-event rows by the OVER kernel."""

    #: the input row of each output row (the stable time order)
    order: Any
    #: the output rows' times (int64, sorted)
    times: Any
    #: each output's values (:class:`~adapters.crosskey.over_runtime.Values`) by name
    values: dict[str, Values]


def over_rows(over: OverPlan, times: Any, columns: Mapping[str, Column],
              ids: Any = None) -> KernelRows | None:
    """The kernel over one key or many: ``times`` int64 in input order, ``columns`` the
    fields of ``over`` in input order (:attr:`OverPlan.fields`), ``ids`` each row's key
    (non-negative ints, non-decreasing; ``None``: one key); ``None`` if a column breaks a
    rule. Several keys: the rows come key by key, each key's in time order, and no frame
    crosses a key (:func:`~adapters.crosskey.over_runtime.frame_bounds`)."""
    if ids is None:
        order = np.argsort(times, kind="stable")
    else:
        order = np.lexsort((times, ids))  # stable: ties in input order
        ids = ids[order]
    times = times[order]
    lo, hi = frame_bounds(times, over.range, ids)
    sorted_columns = {name: Column(col.data[order],
                                   None if col.missing is None else col.missing[order])
                      for name, col in columns.items()}
    values: dict[str, Values] = {}
    for out in over.outputs:
        found = over_values(out, lo, hi,
                            None if out.field is None else sorted_columns[out.field])
        if found is None:
            return None
        values[out.name] = found
    return KernelRows(order, times, values)


__all__ = ["KernelColumn", "KernelRows", "over_rows"]
