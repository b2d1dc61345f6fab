"""DABA Lite (Tangwongsan, Hirzel, Schneider, "In-Order Sliding-Window Aggregation in
Worst-Case Constant Time", VLDB J. 2021; IBM reference ``DABALite.hpp``; note ``daba.md``
section 8).

DABA with one queue ``q`` instead of DABA's per-entry aggregates for the back parts: the slots
of l_R and l_B keep the raw values and two running sums replace their prefix sums. With the
pointers ``F <= l <= r <= a <= b <= E``:

* front portion ``[F, l)``: ``q[i] = vals[i] (+) ... (+) vals[b-1]``;
* l_L ``[l, r)``: ``q[i] = vals[i] (+) ... (+) vals[r-1]``;
* l_R ``[r, a)``: ``q[i] = vals[i]`` (raw);
* l_A ``[a, b)``: ``q[i] = vals[i] (+) ... (+) vals[b-1]``;
* l_B ``[b, E)``: ``q[i] = vals[i]`` (raw), ``back_sum = vals[b] (+) ... (+) vals[E-1]``;
* ``mid_sum = vals[r] (+) ... (+) vals[b-1]`` (DABA's cachedRplusA, fixed while r and b are).

Each step first extends l_A leftwards by one l_R element, then moves l forward (shrink, 1
combine with ``mid_sum``) or, when l_L is empty, free-rides. The first insert into an empty
window is handled by the flip, with no special branch.

The values are kept separately as well (the Python contract's ``items()`` returns them); the
saving over DABA is in aggregate objects: l_R and l_B slots reference the values themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import COMPACT_MIN, NO_CACHE, FifoWindow
from swag_core.window import as_time


class DabaLite(FifoWindow):
    """DABA Lite: worst-case O(1) ``combine`` calls with two running sums, any aggregation.

    At most 1 ``combine`` call per ``query`` (0 when cached), 3 per ``insert`` and 2 per
    ``evict``. ``bulk_evict`` of m of n entries costs at most 2 * min(m, n - m) calls.
    """

    name: ClassVar[str] = "daba_lite"
    complexity: ClassVar[str] = "O(1) worst-case per operation (<= 3 combines)"

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._vals: list[Any] = []     # _head is the pointer F, len(_vals) is E
        self._q: list[Any] = []
        self._l = 0
        self._r = 0
        self._a = 0
        self._b = 0
        self._mid: Any = self._identity    # Sigma [r, b); the identity when r == b
        self._back: Any = self._identity   # Sigma [b, E); the identity when b == E
        self._cache: Any = NO_CACHE

    # ------------------------------------------------------------------ updates
    # ``insert`` and ``evict`` carry inlined copies of ``_step`` (faster in CPython); the three
    # copies must stay identical. ``_insert_lifted`` (bulk path) calls ``_step``.
    def insert(self, time: int, value: Any) -> None:
        """Insert raw ``value`` at ``time`` (see :meth:`Window.insert`; same checks)."""
        if type(time) is not int:
            time = as_time(time)
        times = self._times
        f = self._head
        end = len(times)
        if end > f and time < times[-1]:
            raise self._out_of_order(time)
        value = self._lift(value)
        b = self._b
        # backSum <- backSum (+) v, no combine when l_B is empty.
        self._back = value if b == end else self._combine(self._back, value)
        self._vals.append(value)
        q = self._q
        q.append(value)
        times.append(time)
        end += 1
        self._cache = NO_CACHE
        # step (inlined copy of _step)
        left = self._l
        if left == b:
            left = f
            r = b
            a = b = end
            self._r = r
            self._b = end
            self._mid = self._back
            self._back = self._identity
        else:
            r = self._r
            a = self._a
        if f == b:
            self._mid = self._back = self._identity
            self._l = left
            self._a = a
            return
        if a != r:
            a -= 1
            if a + 1 != b:
                q[a] = self._combine(q[a], q[a + 1])
        if left != r:
            q[left] = self._combine(q[left], self._mid)
            self._l = left + 1
            self._a = a
        else:
            a += 1
            self._l = left + 1
            self._r = r + 1
            self._a = a
            self._mid = q[a] if a != b else self._identity

    def _insert_lifted(self, time: int, value: Any) -> None:
        vals = self._vals
        self._back = value if self._b == len(vals) else self._combine(self._back, value)
        vals.append(value)
        self._q.append(value)
        self._times.append(time)
        self._cache = NO_CACHE
        self._step()

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        f = self._head
        times = self._times
        end = len(times)
        if f == end:
            raise self._empty_evict()
        f += 1
        self._head = f
        self._cache = NO_CACHE
        # step (inlined copy of _step)
        left = self._l
        b = self._b
        if left == b:
            left = f
            r = b
            a = b = end
            self._r = r
            self._b = end
            self._mid = self._back
            self._back = self._identity
        else:
            r = self._r
            a = self._a
        if f == b:
            self._mid = self._back = self._identity
            self._l = left
            self._a = a
        else:
            q = self._q
            if a != r:
                a -= 1
                if a + 1 != b:
                    q[a] = self._combine(q[a], q[a + 1])
            if left != r:
                q[left] = self._combine(q[left], self._mid)
                self._l = left + 1
                self._a = a
            else:
                a += 1
                self._l = left + 1
                self._r = r + 1
                self._a = a
                self._mid = q[a] if a != b else self._identity
        if f >= COMPACT_MIN and f + f >= end:
            self._compact()

    def _step(self) -> None:
        """One constant-time step (``DABALite.hpp`` ``_step``): at most 2 combines."""
        end = len(self._vals)
        left = self._l
        b = self._b
        if left == b:
            # Flip: old l_F, l_B become l_L, l_R; their sum so far becomes mid_sum.
            left = self._head
            r = b
            a = b = end
            self._r = r
            self._b = end
            self._mid = self._back
            self._back = self._identity
        else:
            r = self._r
            a = self._a
        if self._head == b:
            # Front empty (the window is empty): reset the sums.
            self._mid = self._back = self._identity
            self._l = left
            self._a = a
            return
        q = self._q
        if a != r:
            # The last l_R element (raw) joins l_A: vals[a-1] (+) Sigma_A.
            a -= 1
            if a + 1 != b:
                q[a] = self._combine(q[a], q[a + 1])
        if left != r:
            # Shrink: Sigma_L (+) mid_sum; mid_sum is non-empty here (r < b).
            q[left] = self._combine(q[left], self._mid)
            self._l = left + 1
            self._a = a
        else:
            # Free ride: l_L and l_R are empty; mid_sum becomes Sigma_A.
            a += 1
            self._l = left + 1
            self._r = r + 1
            self._a = a
            self._mid = q[a] if a != b else self._identity

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed.

        Evicting m of n entries costs at most 2 * min(m, n - m) ``combine`` calls: up to half
        the window is evicted one by one; beyond that the n - m survivors are rebuilt as one
        front element followed by l_A (suffix sums to E), for n - m - 1 calls.
        """
        if type(time) is not int:
            time = as_time(time)
        count = self._count_through(time)
        if not count:
            return 0
        vals = self._vals
        end = len(vals)
        start = self._head + count
        remaining = end - start
        if count < remaining:
            evict = self.evict
            for _ in range(count):
                evict()
            return count
        if remaining:
            q = self._q
            combine = self._combine
            acc = vals[end - 1]
            q[end - 1] = acc
            for i in range(end - 2, start - 1, -1):
                acc = combine(vals[i], acc)
                q[i] = acc
            self._l = self._r = self._a = start + 1
            self._mid = q[start + 1] if remaining > 1 else self._identity
        else:
            self._l = self._r = self._a = end
            self._mid = self._identity
        self._b = end
        self._back = self._identity
        self._cache = NO_CACHE
        self._advance(count)
        return count

    def _compact(self) -> None:
        head = self._head
        del self._vals[:head]
        del self._q[:head]
        self._l -= head
        self._r -= head
        self._a -= head
        self._b -= head
        super()._compact()

    # ------------------------------------------------------------------ queries
    def query(self) -> Any:
        """``lower(q[F] (+) back_sum)``; cached until the next change."""
        agg = self._cache
        if agg is NO_CACHE:
            q = self._q
            end = len(q)
            f = self._head
            b = self._b
            if f == b:
                agg = self._back if b != end else self._identity
            elif b == end:
                agg = q[f]
            else:
                agg = self._combine(q[f], self._back)
            self._cache = agg
        return self._lower(agg)

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)
