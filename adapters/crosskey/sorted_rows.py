"""Rows of many keys in shared NumPy arrays, sorted by (key id, time): the cross-key
runtime's pending events and closed slices (:mod:`adapters.crosskey.batch_runtime`).

A key's rows are one contiguous run of the arrays, so a key's part is two binary searches on
``ids`` and a call's new rows are merged in with one binary search per new row
(:func:`merge_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.crosskey.columnar import key_time_order

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

#: the int64 range: times and partials the arrays hold
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


@dataclass(frozen=True, slots=True)
class SortedRows:
    """Rows sorted by (key id, time), ties in arrival order.

    Pending events: ``times`` are event times, ``columns`` one value array per field.
    Closed slices: ``times`` are slice starts, ``columns`` one partial array per
    :class:`~adapters.crosskey.partials.Component`.
    """

    #: per row: the key's id (int64)
    ids: Any
    #: per row: its time or slice start (int64)
    times: Any
    columns: tuple[Any, ...]

    @classmethod
    def empty(cls, dtypes: Sequence[Any]) -> SortedRows:
        """No rows, with a column of each of ``dtypes``."""
        no_ints = np.zeros(0, np.int64)
        return cls(no_ints, no_ints, tuple(np.zeros(0, dtype) for dtype in dtypes))

    @classmethod
    def of_key(cls, ident: int, times: Any, columns: Sequence[Any]) -> SortedRows:
        """One key's rows (``times`` sorted)."""
        return cls(np.full(len(times), ident, np.int64), times, tuple(columns))

    @classmethod
    def of_arrays(cls, arrays: Sequence[Any]) -> SortedRows:
        """Rows of ``(ids, times, *columns)``."""
        return cls(arrays[0], arrays[1], tuple(arrays[2:]))

    def arrays(self) -> tuple[Any, ...]:
        """``(ids, times, *columns)``."""
        return (self.ids, self.times, *self.columns)

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, selection: Any) -> SortedRows:
        """The rows a boolean mask, index array or slice selects."""
        return SortedRows(self.ids[selection], self.times[selection],
                          tuple(column[selection] for column in self.columns))

    def without_keys(self, ids: Any) -> SortedRows:
        """The rows of keys not in ``ids``."""
        return self.take(~np.isin(self.ids, ids))


def concat_rows(parts: Sequence[SortedRows]) -> SortedRows:
    """The rows of ``parts`` one after the other (not sorted)."""
    if len(parts) == 1:
        return parts[0]
    return SortedRows.of_arrays([np.concatenate(arrays)
                                 for arrays in zip(*(part.arrays() for part in parts))])


def sort_rows(parts: Sequence[SortedRows]) -> SortedRows:
    """Rows of ``parts`` (each sorted by (id, time)) as one, ties in the order given."""
    if len(parts) == 1:
        return parts[0]
    joined = concat_rows(parts)
    return joined.take(key_time_order(joined.ids, joined.times))


def merge_rows(older: SortedRows, newer: SortedRows) -> SortedRows:
    """``older`` and ``newer`` as one, ``older`` first on ties: one binary search per
    ``newer`` row on a combined int64 key when the span of ids and times allows it, else a
    sort."""
    if not len(older.ids):
        return newer
    if not len(newer.ids):
        return older
    lo = min(int(older.times.min()), int(newer.times.min()))
    span = max(int(older.times.max()), int(newer.times.max())) - lo + 1
    top = max(int(older.ids.max()), int(newer.ids.max())) + 1
    if span * top >= 2**62:
        return sort_rows([older, newer])
    # each newer row lands after the older rows not greater than it, and after earlier
    # newer rows
    at = np.searchsorted(older.ids * span + (older.times - lo),
                         newer.ids * span + (newer.times - lo), "right")
    at += np.arange(len(at))
    from_older = np.ones(len(older.ids) + len(newer.ids), bool)
    from_older[at] = False
    merged = []
    for old_column, new_column in zip(older.arrays(), newer.arrays()):
        column = np.empty(len(from_older), old_column.dtype)
        column[at] = new_column
        column[from_older] = old_column
        merged.append(column)
    return SortedRows.of_arrays(merged)


__all__ = ["INT64_MAX", "INT64_MIN", "SortedRows", "concat_rows", "merge_rows", "sort_rows"]
