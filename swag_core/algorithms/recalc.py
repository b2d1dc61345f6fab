"""Recalc: recalculate-from-scratch, the baseline (DABA paper, section 8, Fig. 20).

Keeps the entries in order and folds all of them on every query: O(n) ``combine`` calls per
query, none per insert or evict. Works for any monoid; only sensible for small windows or as
a reference.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from functools import reduce
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import FifoWindow
from swag_core.window import as_time


class Recalc(FifoWindow):
    """Recalculate-from-scratch: ``query`` folds every entry, oldest first.

    ``query()`` costs n - 1 ``combine`` calls (none when the window has at most one entry),
    ``insert``/``evict``/``bulk_evict`` cost none. ``query_since(t)`` folds the entries with
    ``time >= t`` the same way.
    """

    name: ClassVar[str] = "recalc"
    range_queries: ClassVar[bool] = True
    complexity: ClassVar[str] = "O(n) per query, O(1) per insert/evict (no combine)"
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals",)

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._vals: list[Any] = []

    def _insert_lifted(self, time: int, value: Any) -> None:
        self._times.append(time)
        self._vals.append(value)

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        self._times.extend([t for t, _ in batch])
        self._vals.extend([v for _, v in batch])

    def _evict_prefix(self, count: int) -> None:
        self._advance(count)

    def _fold_from(self, start: int) -> Any:
        vals = self._vals
        if start == len(vals):
            return self._lower(self._identity)
        # Start from the oldest value itself: no combine with the identity.
        return self._lower(reduce(self._combine, vals[start:] if start else vals))

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``, folded now; ``lower(identity)`` if empty."""
        return self._fold_from(self._head)

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time``, folded now."""
        if type(time) is not int:
            time = as_time(time)
        return self._fold_from(bisect_left(self._times, time, self._head))

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)
