"""Subtract-on-evict (DABA paper, section 8, Fig. 19), for invertible aggregations.

Keeps the running total of the window and the values (to know what to subtract). The paper
writes ``agg <- agg (+) inv(v)``, which is only right for commutative groups (note
``daba.md`` section 1.1); our ``subtract(total, oldest)`` removes a *prefix* from the front of
``total``, so evict does ``agg = subtract(agg, oldest)``, correct for non-commutative groups too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import reduce
from typing import Any, ClassVar, cast

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import FifoWindow


class SubtractOnEvict(FifoWindow):
    """Running total plus ``subtract`` on evict: O(1) worst case, needs ``subtract``.

    ``insert`` costs one ``combine`` (none into an empty window), ``evict`` one ``subtract``
    (none when it empties the window: the total is reset to the identity, which also drops any
    floating-point drift), ``query`` nothing. ``bulk_evict`` of m of n entries costs
    min(m subtracts, n - m - 1 combines): past half the window it re-folds the survivors.
    With floats the total may drift from an exact fold by rounding; it is re-anchored every
    time the window empties or a bulk eviction re-folds.
    """

    name: ClassVar[str] = "soe"
    needs_invertible: ClassVar[bool] = True
    complexity: ClassVar[str] = "O(1) worst-case per operation (1 combine or 1 subtract)"
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals",)

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._vals: list[Any] = []
        # Not None: Window.__init__ refused aggregations without subtract (needs_invertible).
        self._subtract = cast(Callable[[Any, Any], Any], aggregation.subtract)
        self._agg: Any = self._identity

    def _insert_lifted(self, time: int, value: Any) -> None:
        times = self._times
        self._agg = value if self._head == len(times) else self._combine(self._agg, value)
        times.append(time)
        self._vals.append(value)

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        new = [v for _, v in batch]
        total = reduce(self._combine, new)
        if self._head != len(self._times):
            total = self._combine(self._agg, total)
        self._agg = total
        self._times.extend([t for t, _ in batch])
        self._vals.extend(new)

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        head = self._head
        times = self._times
        size = len(times)
        if head == size:
            raise self._empty_evict()
        if head + 1 == size:
            self._agg = self._identity
        else:
            self._agg = self._subtract(self._agg, self._vals[head])
        self._advance(1)

    def _evict_prefix(self, count: int) -> None:
        head = self._head
        vals = self._vals
        remaining = len(vals) - head - count
        if remaining == 0:
            self._agg = self._identity
        elif remaining <= count:
            # Cheaper to re-fold the survivors (remaining - 1 combines) than to subtract.
            self._agg = reduce(self._combine, vals[head + count:])
        else:
            agg = self._agg
            subtract = self._subtract
            for i in range(head, head + count):
                agg = subtract(agg, vals[i])
            self._agg = agg
        self._advance(count)

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        return self._lower(self._agg)

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)
