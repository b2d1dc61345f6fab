"""FlatFAT as an in-order sliding window: a circular buffer on the leaves of a FlatFAT.

Tangwongsan, Hirzel, Schneider, Wu, "General Incremental Sliding-Window Aggregation",
PVLDB 8(7), 2015: the tree is section 4 (in :mod:`swag_core.algorithms._fat`), the circular
buffer with resizing is section 5.1.1 and the FIFO case section 5.2 (note
``reactive-flatfat.md`` sections 1.8 and 5.1).

* The leaves are a circular buffer: the window is the ``size`` slots from ``front`` on;
  inserts write the slot after the back, evictions write :data:`~._fat.EMPTY` to the front
  slot (FIFO: no holes, so no compaction).
* Capacity (a power of two) doubles when an insert finds the buffer full and halves after an
  eviction leaves ``size < capacity / 4`` (pitfall 8), never below ``min_capacity``; both
  rebuild the tree with the live entries from slot 0 (``size - 1`` ``combine`` calls).
* Leaf writes are propagated lazily, in one batch per query (Algorithm 2), so a slide of one
  eviction and one insertion, or a bulk insertion of m entries, pays the paper's
  ``m (1 + log(n / m))`` bound once per query.
* Query: the root when the window does not wrap; ``suffix(front) (+) prefix(back)`` when it
  does ("inverted buffer", section 5.1.2, pitfall 1): the root would then combine the
  entries in slot order, not window order, which is wrong for non-commutative aggregations.
* ``query_since(t)``: binary search for the first entry with ``time >= t``, then the tree's
  range aggregate to the back: O(log n) ``combine`` calls.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._fat import FlatFAT, is_power_of_two
from swag_core.algorithms._queues import (
    EMPTY,
    NO_CACHE,
    RingWindow,
    grown_capacity,
    ring_assign,
    ring_bisect,
    ring_slice,
    shrunk_capacity,
)
from swag_core.window import as_time


class FlatFat(RingWindow):
    """FlatFAT sliding window: O(log n) ``combine`` calls per slide, O(log n) ``query_since``.

    Args:
        aggregation: the aggregation to maintain (any associative ``combine``).
        capacity: initial number of leaves, a power of two (default 8).
        min_capacity: the capacity never shrinks below this power of two (default 1); set it
            to ``capacity`` to pre-allocate a large buffer that is never resized.

    ``combine`` calls: ``insert`` and ``evict`` none (the leaf write is propagated at the next
    query); a query after m leaf writes at most ``m (1 + ceil(log2(capacity / m)))`` for the
    propagation (fewer: empty subtrees and unchanged nodes cost nothing), plus at most
    ``2 log2(capacity)`` when the window wraps around the buffer, plus ``size - 1`` on a
    resize (amortized O(1) per operation). A repeated query is cached.
    """

    name: ClassVar[str] = "flatfat"
    range_queries: ClassVar[bool] = True
    complexity: ClassVar[str] = ("O(log n) per slide, O(m + m log(n/m)) per bulk of m; "
                                 "query O(1) (O(log n) when the buffer wraps); "
                                 "query_since O(log n)")

    def __init__(self, aggregation: Aggregation, capacity: int = 8,
                 min_capacity: int = 1) -> None:
        super().__init__(aggregation)
        if (type(capacity) is not int or type(min_capacity) is not int
                or not is_power_of_two(capacity) or not is_power_of_two(min_capacity)):
            raise ValueError(f"flatfat capacity and min_capacity must be powers of two, got "
                             f"capacity={capacity!r}, min_capacity={min_capacity!r}")
        if min_capacity > capacity:
            raise ValueError(f"flatfat min_capacity {min_capacity} exceeds the initial "
                             f"capacity {capacity}")
        self._min_capacity = min_capacity
        self._fat = FlatFAT(self._combine, capacity)
        self._times: list[int] = [0] * capacity   # parallel to the leaves
        self._front = 0                           # slot of the oldest entry
        self._size = 0
        self._cache: Any = NO_CACHE               # raw aggregate of the window

    # ------------------------------------------------------------------ sizes and times
    @property
    def capacity(self) -> int:
        """Current number of leaves (slots) of the circular buffer."""
        return self._fat.capacity

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        times, values = self._live()
        return zip(times, values, strict=True)

    def _live(self) -> tuple[list[int], list[Any]]:
        """Times and lifted values of the window, oldest first (list slices)."""
        front = self._front
        size = self._size
        cap = self._fat.capacity
        return (ring_slice(self._times, cap, front, size),
                ring_slice(self._fat.tree, cap, front, size, cap))

    # ------------------------------------------------------------------ insert
    def _insert_lifted(self, time: int, value: Any) -> None:
        fat = self._fat
        size = self._size
        cap = fat.capacity
        if size == cap:                      # full: double (section 5.1.1; FIFO never compacts)
            self._resize(cap + cap, [])
            cap = fat.capacity
        slot = self._front + size
        if slot >= cap:
            slot -= cap
        fat.set(slot, value)
        self._times[slot] = time
        self._size = size + 1
        self._cache = NO_CACHE

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        fat = self._fat
        size = self._size
        cap = fat.capacity
        total = size + len(batch)
        if total > cap:
            # The capacity a run of single inserts would reach, in one rebuild.
            self._resize(grown_capacity(cap, total), batch)
            return
        slot = self._front + size
        fat.write(slot, [value for _, value in batch])
        ring_assign(self._times, cap, slot, [time for time, _ in batch])
        self._size = total
        self._cache = NO_CACHE

    # ------------------------------------------------------------------ evict
    def _evict_oldest(self) -> None:
        fat = self._fat
        cap = fat.capacity
        if (4 * (self._size - 1) < cap and cap > self._min_capacity    # strict < cap/4
                and self._rebuild_evicting(1, cap >> 1)):                 # (pitfall 8)
            return
        fat.set(self._front, EMPTY)
        self._pop_front(1)

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed.

        Clears the evicted leaves with :meth:`FlatFAT.clear` (no per-leaf work in Python);
        the next query recomputes only the O(log n) nodes where evicted and live leaves meet.
        Shrinks as far as single evictions would, with one rebuild.
        """
        if type(time) is not int:
            time = as_time(time)
        count = self._count_through(time)
        if not count:
            return 0
        fat = self._fat
        size = self._size - count
        cap = fat.capacity
        new_cap = shrunk_capacity(cap, size, self._min_capacity)
        if (new_cap != cap or not size) and self._rebuild_evicting(count, new_cap):
            return count
        fat.clear(self._front, count)
        self._pop_front(count)
        return count

    def _rebuild_evicting(self, count: int, capacity: int) -> bool:
        """Evict the ``count`` oldest entries by rebuilding the survivors in ``capacity``
        leaves (a shrink); False, with nothing changed, if ``combine`` raised an
        ``Exception``: the caller then evicts without shrinking (the shrink only saves memory,
        the eviction must not fail on a value that cannot be combined, and the error
        resurfaces at the next query). An interrupt (``BaseException``) propagates, nothing
        changed."""
        times, values = self._live()
        try:
            self._rebuild(capacity, times[count:], values[count:])
        except Exception:
            return False
        return True

    # ------------------------------------------------------------------ resize
    def _resize(self, capacity: int, extra: list[tuple[int, Any]]) -> None:
        """Rebuild with ``capacity`` leaves holding the live entries then ``extra`` from slot 0
        (grow, shrink; ``size - 1`` ``combine`` calls)."""
        times, values = self._live()
        if extra:
            times.extend([t for t, _ in extra])
            values.extend([v for _, v in extra])
        self._rebuild(capacity, times, values)

    def _rebuild(self, capacity: int, times: list[int], values: list[Any]) -> None:
        """Make ``times``/``values`` the window, in ``capacity`` leaves from slot 0; nothing
        changes if ``combine`` raises (``times`` is padded in place)."""
        self._fat.rebuild(values, capacity)
        size = len(values)
        if size < capacity:
            times.extend([0] * (capacity - size))
        self._times = times
        self._front = 0
        self._size = size
        self._cache = NO_CACHE

    # ------------------------------------------------------------------ queries
    def _aggregate(self) -> Any:
        """Raw aggregate of the window (the identity when empty)."""
        agg = self._cache
        if agg is not NO_CACHE:
            return agg
        size = self._size
        if not size:
            return self._identity
        fat = self._fat
        front = self._front
        cap = fat.capacity
        if front + size <= cap:
            agg = fat.aggregate()   # other leaves are EMPTY: the root is the window
        else:
            agg = fat.ring_range(front, size)   # inverted buffer: never the root
        self._cache = agg
        return agg

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        return self._lower(self._aggregate())

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time``: a binary search and
        a range aggregate over the tree, O(log n) ``combine`` calls."""
        if type(time) is not int:
            time = as_time(time)
        size = self._size
        skip = ring_bisect(bisect_left, self._times, time, self._front, size)
        if skip == 0:
            return self._lower(self._aggregate())
        if skip == size:
            return self._lower(self._identity)
        agg = self._fat.ring_range(self._front + skip, size - skip)
        return self._lower(agg)

