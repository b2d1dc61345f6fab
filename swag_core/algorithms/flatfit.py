"""FlatFIT, the "Flat and Fast Index Traverser" (Shein, Chrysanthis, Labrinidis, SSDBM 2017).

The paper is not among the seeds: this follows the description in the SlickDeque paper
(Shein et al. 2018, section 2.2) and the single-query algorithm of the IBM reference code
``FlatFIT.hpp`` / ``DynamicFlatFIT.hpp``.

Two circular arrays indexed by slot, ``partials`` and ``pointers``: the entry in slot ``i``
stores ``partials[i] = v_i (+) ... (+) v_j`` where ``pointers[i]`` is the slot after ``j``:
either a later live entry or the slot just past the youngest entry (where the next insert
goes). A fresh entry holds its own lifted value and points to the next slot, so the entries
that covered up to the previous youngest now point to it: an insert needs no pointer write
elsewhere.

A query follows the pointers from the oldest entry until one points past the youngest,
pushing every visited slot on a stack ("Positions"), then unwinds the stack building suffix
aggregates and re-points every visited slot past the youngest: path compression, so the next
query skips the whole run in one step. Its ``combine`` calls are the number of pointers
followed minus one (none when the oldest entry already covers the window).

Difference from the IBM code: there the compressed entries cover up to *excluding* the
youngest, which costs one more ``combine`` per query (about 4 per slide for large windows
instead of 3). Covering through the youngest gives the paper's figures: with one query per
slide, n - 1 calls for the "window reset" slide and 3 per slide amortized (SlickDeque paper
section 4, Table 1). For arbitrary interleavings of insert, evict and query, an exhaustive
check of every operation sequence on windows of up to 10 entries (a model of the pointer
structure) finds at most 4 calls per inserted entry, the worst cycle costing
(4S - 9) / (S - 1) per insert for windows of at most S entries; a checked bound, not a
proof. Worst case O(n) for the query that walks a never-compressed run.

Capacity doubles when full and halves when fewer than a quarter of the slots are used, as in
``DynamicFlatFIT.hpp``; the rescale packs the entries from slot 0 and rebases the pointers
without any ``combine`` call.

Path compression overwrites ``partials``, so the lifted values are kept in a third array for
``items()`` (the contract's snapshot), the price of the Python API.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import (
    NO_CACHE,
    RingWindow,
    grown_capacity,
    ring_assign,
    ring_slice,
    shrunk_capacity,
)
from swag_core.window import as_time


class FlatFit(RingWindow):
    """FlatFIT sliding window: amortized O(1) ``combine`` calls (3 per slide, n - 1 worst).

    Args:
        aggregation: the aggregation to maintain (any associative ``combine``).
        capacity: initial number of slots (default 8).
        min_capacity: the capacity never shrinks below this (default 1).

    ``combine`` calls: ``insert``, ``evict``, ``bulk_insert`` and ``bulk_evict`` none; a query
    one per pointer it follows before the one that points past the youngest entry (0 when
    the oldest entry already covers the window, or for a repeated, cached query).
    """

    name: ClassVar[str] = "flatfit"
    complexity: ClassVar[str] = "O(1) amortized per operation (worst case O(n) query)"

    def __init__(self, aggregation: Aggregation, capacity: int = 8,
                 min_capacity: int = 1) -> None:
        super().__init__(aggregation)
        if (type(capacity) is not int or type(min_capacity) is not int
                or min_capacity < 1 or capacity < min_capacity):
            raise ValueError(f"flatfit needs 1 <= min_capacity <= capacity, got "
                             f"capacity={capacity!r}, min_capacity={min_capacity!r}")
        self._min_capacity = min_capacity
        self._partials: list[Any] = [None] * capacity
        self._values: list[Any] = [None] * capacity   # lifted values, for items()
        self._pointers: list[int] = [0] * capacity
        self._times: list[int] = [0] * capacity
        self._front = 0          # slot of the oldest entry
        self._size = 0
        self._cache: Any = NO_CACHE

    # ------------------------------------------------------------------ sizes and times
    @property
    def capacity(self) -> int:
        """Current number of slots of the circular arrays."""
        return len(self._times)

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        cap = len(self._times)
        front = self._front
        size = self._size
        return zip(ring_slice(self._times, cap, front, size),
                   ring_slice(self._values, cap, front, size), strict=True)

    # ------------------------------------------------------------------ insert
    def _insert_lifted(self, time: int, value: Any) -> None:
        size = self._size
        cap = len(self._times)
        if size == cap:
            self._rescale(cap + cap)
            cap += cap
        back = self._front + size          # the new entry's slot
        if back >= cap:
            back -= cap
        self._partials[back] = value
        self._values[back] = value
        self._times[back] = time
        # A fresh entry covers itself and points to the next slot (where the next insert
        # goes); the entries that pointed past the previous youngest now point to it.
        self._pointers[back] = back + 1 if back + 1 < cap else 0
        self._size = size + 1
        self._cache = NO_CACHE

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        size = self._size
        total = size + len(batch)
        cap = len(self._times)
        if total > cap:
            cap = grown_capacity(cap, total)
            self._rescale(cap)
        partials = self._partials
        values = self._values
        pointers = self._pointers
        times = self._times
        slot = self._front + size
        if slot >= cap:
            slot -= cap
        for time, value in batch:
            partials[slot] = value
            values[slot] = value
            times[slot] = time
            slot += 1
            if slot == cap:
                slot = 0
            pointers[slot - 1 if slot else cap - 1] = slot
        self._size = total
        self._cache = NO_CACHE

    # ------------------------------------------------------------------ evict
    def _evict_oldest(self) -> None:
        front = self._front
        self._partials[front] = None      # release the references
        self._values[front] = None
        self._pop_front(1)
        cap = len(self._times)
        if 4 * self._size < cap and cap > self._min_capacity:
            self._rescale(max(cap >> 1, self._min_capacity))

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed
        (a binary search, then the front moves; no ``combine`` call)."""
        if type(time) is not int:
            time = as_time(time)
        count = self._count_through(time)
        if not count:
            return 0
        cap = len(self._times)
        released = [None] * count
        ring_assign(self._partials, cap, self._front, released)
        ring_assign(self._values, cap, self._front, released)
        self._pop_front(count)
        new_cap = shrunk_capacity(cap, self._size, self._min_capacity)
        if new_cap != cap:
            self._rescale(new_cap)
        return count

    def _rescale(self, capacity: int) -> None:
        """Move the entries to slots ``0 .. size - 1`` of arrays of ``capacity`` slots,
        rebasing the pointers (``DynamicFlatFIT.hpp`` ``rescale_to``); no ``combine``."""
        old_cap = len(self._times)
        front = self._front
        size = self._size
        pad = capacity - size
        self._partials = ring_slice(self._partials, old_cap, front, size) + [None] * pad
        self._values = ring_slice(self._values, old_cap, front, size) + [None] * pad
        self._times = ring_slice(self._times, old_cap, front, size) + [0] * pad
        # Pointers go forward, at most to the slot after the youngest entry, so
        # (pointer - front) mod old_cap is the new slot; 0 there means "after the youngest"
        # of a full buffer, i.e. `size`. A rescale always leaves a free slot (size < capacity).
        self._pointers = [(p - front) % old_cap or size
                          for p in ring_slice(self._pointers, old_cap, front, size)] + [0] * pad
        self._front = 0

    # ------------------------------------------------------------------ query
    def _aggregate(self) -> Any:
        """Raw aggregate of the window: follow the pointers from the oldest entry, then
        compress the path (SlickDeque paper section 2.2; IBM ``FlatFIT.hpp`` ``query``)."""
        agg = self._cache
        if agg is not NO_CACHE:
            return agg
        size = self._size
        if not size:
            return self._identity
        partials = self._partials
        pointers = self._pointers
        end = self._front + size            # the slot after the youngest entry
        cap = len(partials)
        if end >= cap:
            end -= cap
        stack = []                          # the paper's "Positions" stack
        slot = self._front
        target = pointers[slot]
        while target != end:
            stack.append(slot)
            slot = target
            target = pointers[slot]
        # `slot` covers [slot, youngest]; unwind, storing suffix aggregates through the
        # youngest entry and pointing every visited slot past it.
        agg = partials[slot]
        if stack:
            combine = self._combine
            for slot in reversed(stack):
                agg = combine(partials[slot], agg)
                partials[slot] = agg
                pointers[slot] = end
        self._cache = agg
        return agg

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        return self._lower(self._aggregate())
