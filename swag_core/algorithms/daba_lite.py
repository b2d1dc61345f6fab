"""DABA Lite (Tangwongsan, Hirzel, Schneider, "In-Order Sliding-Window Aggregation in
Worst-Case Constant Time", VLDB J. 2021; IBM reference ``DABALite.hpp``).

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

from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import NO_CACHE, DabaWindow


class DabaLite(DabaWindow):
    """DABA Lite: worst-case O(1) ``combine`` calls with two running sums, any aggregation.

    At most 1 ``combine`` call per ``query`` (0 when cached), 3 per ``insert`` and 2 per
    ``evict``. ``bulk_evict`` of m of n entries costs at most 2 * min(m, n - m) calls.
    """

    name: ClassVar[str] = "daba_lite"
    complexity: ClassVar[str] = "O(1) worst-case per operation (<= 3 combines)"
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals", "_q")

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)      # _vals, pointers, _cache
        self._q: list[Any] = []
        self._mid: Any = self._identity    # Sigma [r, b); the identity when r == b
        self._back: Any = self._identity   # Sigma [b, E); the identity when b == E

    # ------------------------------------------------------------------ updates
    # One step per insert and evict, in ``_step`` only: inlining it into ``insert`` and
    # ``evict`` saves a call per update but would keep three copies of the step in sync.
    def _insert_lifted(self, time: int, value: Any) -> None:
        vals = self._vals
        # backSum <- backSum (+) v, no combine when l_B is empty.
        self._back = value if self._b == len(vals) else self._combine(self._back, value)
        vals.append(value)
        self._q.append(value)
        self._times.append(time)
        self._cache = NO_CACHE
        try:
            self._step()
        except BaseException as error:
            self._fail("insert", error)    # the step was cut half-way
            raise

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

    def _rebuilt(self, start: int, end: int, sums: list[Any]) -> None:
        q = self._q
        q[start:end] = sums
        self._mid = q[start + 1] if end - start > 1 else self._identity
        self._back = self._identity

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
