"""Two-Stacks Lite (Tangwongsan, Hirzel, Schneider, "In-Order Sliding-Window Aggregation in
Worst-Case Constant Time", VLDB J. 2021; IBM reference ``TwoStacksLite.hpp``).

Like Two-Stacks, but the back stack keeps no per-entry aggregates: only the values plus one
running ``back_sum``. The front stack keeps aggregates only. Entries live in one FIFO list of
values ``_vals[_head:]``; positions ``[_head, _split)`` are the front stack (``_front[-1]``,
its top, belongs to the oldest entry, ``_front[i] = vals of that entry (+) ... (+) vals[_split-1]``)
and ``[_split, len)`` the back stack, summed in ``_back_sum``.

The values are kept (the Python contract's ``items()`` must return them), so the saving over
Two-Stacks is in aggregate objects: none are created for the back stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import reduce
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import NO_CACHE, FifoWindow, suffix_sums


class TwoStacksLite(FifoWindow):
    """Two-Stacks Lite: amortized O(1) ``combine`` calls, one running sum for the back stack.

    ``combine`` calls: ``insert`` 1 (0 into an empty back stack), ``query`` 1 (0 when either
    part is empty or the result is cached), ``evict`` 0, except when the front stack is empty:
    then it flips the k back entries for k - 1 calls. A steady evict + insert + query round
    costs at most 3 calls amortized (k inserts at most k, k queries at most k, one flip k - 1).
    """

    name: ClassVar[str] = "two_stacks_lite"
    complexity: ClassVar[str] = "O(1) amortized per operation (worst case O(n) evict)"
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals",)
    _fifo_positions: ClassVar[tuple[str, ...]] = ("_split",)

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._vals: list[Any] = []
        self._front: list[Any] = []   # aggregates; top (last) = oldest entry
        self._split = 0               # absolute position where the back stack starts
        self._back_sum: Any = self._identity
        self._cache: Any = NO_CACHE

    def _insert_lifted(self, time: int, value: Any) -> None:
        vals = self._vals
        # backSum <- backSum (+) v; no combine with the identity when the back stack is empty.
        self._back_sum = (value if self._split == len(vals)
                          else self._combine(self._back_sum, value))
        vals.append(value)
        self._times.append(time)
        self._cache = NO_CACHE

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        new = [v for _, v in batch]
        total = reduce(self._combine, new)
        vals = self._vals
        if self._split != len(vals):
            total = self._combine(self._back_sum, total)
        self._back_sum = total
        vals.extend(new)
        self._times.extend([t for t, _ in batch])
        self._cache = NO_CACHE

    def _flip(self, start: int) -> None:
        """Replace the front stack by the values ``[start, len)``, all of which become front
        entries (youngest first: each goes on the LEFT of the sum below); the back stack
        becomes empty. k values cost k - 1 calls; nothing changes if ``combine`` raises."""
        vals = self._vals
        end = len(vals)
        self._front = suffix_sums(self._combine, vals, start, end)
        self._split = end
        self._back_sum = self._identity

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        head = self._head
        if head == len(self._times):
            raise self._empty_evict()
        if head == self._split:
            self._flip(head)
        self._front.pop()
        self._cache = NO_CACHE
        self._advance(1)

    def _evict_prefix(self, count: int) -> None:
        """Pops the front stack while it lasts; if more go, only the surviving back entries
        are flipped (their count minus one ``combine`` calls)."""
        front = self._front
        size = len(front)
        if count <= size:
            del front[size - count:]
        else:
            self._flip(self._head + count)
        self._cache = NO_CACHE
        self._advance(count)

    def query(self) -> Any:
        """``lower(Sigma_front (+) back_sum)``; cached until the next change."""
        agg = self._cache
        if agg is NO_CACHE:
            front = self._front
            if self._split == len(self._vals):
                agg = front[-1] if front else self._identity
            elif front:
                agg = self._combine(front[-1], self._back_sum)
            else:
                agg = self._back_sum
            self._cache = agg
        return self._lower(agg)

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)
