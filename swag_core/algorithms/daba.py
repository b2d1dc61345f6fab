"""DABA, the De-Amortized Banker's Aggregator, with caching (DABA paper, section 6, Figs. 14
and 17; where the printed figures are garbled, the pointer invariants below decide).

One queue of values ``vals`` and one of partial aggregates ``aggs`` (Python lists indexed by
absolute position, see ``_queues``), cut by the pointers ``F <= L <= R <= A <= B <= E``:

* front portion ``[F, L)``: ``aggs[i] = vals[i] (+) ... (+) vals[B-1]``;
* l_L ``[L, R)``: ``aggs[i] = vals[i] (+) ... (+) vals[R-1]``  (old front, already reversed);
* l_R ``[R, A)``: ``aggs[i] = vals[R] (+) ... (+) vals[i]``    (old back, not yet reversed);
* l_A ``[A, B)``: ``aggs[i] = vals[i] (+) ... (+) vals[B-1]``;
* l_B ``[B, E)``: ``aggs[i] = vals[B] (+) ... (+) vals[i]``.

Size invariant (section 6.3): the window is empty, or ``|l_L| + |l_R| + |l_A| + 1 = |l_F| - |l_B|``
and ``|l_L| = |l_R|`` (l_F = [F, B)). Every insert or evict does one constant-time ``fixup``
step, which reverses the back list exactly on time: no loop, worst-case O(1) (Theorem 9).
"""

from __future__ import annotations

from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import NO_CACHE, DabaWindow


class Daba(DabaWindow):
    """DABA with caching: worst-case O(1) ``combine`` calls, any associative aggregation.

    At most 1 ``combine`` call per ``query`` (0 when cached), 3 per ``insert`` and 2 per
    ``evict`` (the paper's Theorem 9); on average over a flip cycle 1 per fixup step.
    ``bulk_evict`` of m of n entries costs at most 2 * min(m, n - m) calls.
    """

    name: ClassVar[str] = "daba"
    complexity: ClassVar[str] = "O(1) worst-case per operation (<= 3 combines)"
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals", "_aggs")

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)      # _vals, pointers, _cache = cachedFplusB
        self._aggs: list[Any] = []
        self._ra: Any = self._identity     # cachedRplusA = Sigma_R (+) Sigma_A (Fig. 17)

    # ------------------------------------------------------------------ updates
    # One fixup step per insert and evict, in ``_step`` only: inlining it into ``insert``
    # and ``evict`` saves a call per update but would keep three copies of the step in sync.
    def _insert_lifted(self, time: int, value: Any) -> None:
        vals = self._vals
        aggs = self._aggs
        # aggs.pushBack(Sigma_B (+) v), Sigma_B read at the OLD end;
        # no combine when l_B is empty. Computed before any write: a failure changes nothing.
        aggs.append(value if self._b == len(vals) else self._combine(aggs[-1], value))
        vals.append(value)
        self._times.append(time)
        self._cache = NO_CACHE
        try:
            self._step()
        except BaseException as error:
            self._fail("insert", error)    # the fixup step was cut half-way
            raise

    def _step(self) -> None:
        """One step of incremental reversal (Fig. 17 lines 15-27): at most 2 combines."""
        vals = self._vals
        end = len(vals)
        f = self._head
        b = self._b
        if f == b:
            # Empty window, or its single entry sits in l_B: it becomes the front portion.
            self._l = self._r = self._a = self._b = end
            return
        left = self._l
        r = self._r
        if left == b:
            # flip (Fig. 17 lines 28-30): old l_F, l_B become l_L, l_R. R already equals the
            # old B. l_R is non-empty here (|l_F| = |l_B| > 0), so Sigma_R = aggs[E-1].
            left = f
            a = b = end
            self._b = end
            self._ra = self._aggs[end - 1]
        else:
            a = self._a
        if left == r:
            # Free ride (Fig. 13): front portion and l_A both hold suffix sums to B.
            self._l = left + 1
            self._r = r + 1
            self._a = a + 1
            return
        # Shrink (Fig. 12): l_L's first element joins the front portion, l_R's last extends
        # l_A. Operand order: Sigma_L (+) (Sigma_R (+) Sigma_A) and vals[A-1] (+) Sigma_A.
        aggs = self._aggs
        combine = self._combine
        aggs[left] = combine(aggs[left], self._ra)
        self._l = left + 1
        a -= 1
        aggs[a] = vals[a] if a + 1 == b else combine(vals[a], aggs[a + 1])
        self._a = a

    def _rebuilt(self, start: int, end: int, sums: list[Any]) -> None:
        self._aggs[start:end] = sums

    # ------------------------------------------------------------------ queries
    def query(self) -> Any:
        """``lower(Sigma_F (+) Sigma_B)``; cached until the next change (Fig. 17)."""
        agg = self._cache
        if agg is NO_CACHE:
            aggs = self._aggs
            end = len(aggs)
            f = self._head
            if f == end:
                agg = self._identity
            elif self._b == end:
                agg = aggs[f]
            else:
                agg = self._combine(aggs[f], aggs[end - 1])
            self._cache = agg
        return self._lower(agg)
