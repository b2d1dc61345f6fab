"""Two-Stacks (DABA paper, section 4).

A front stack s_F and a back stack s_B of (value, aggregate) pairs. The top of s_F is the
oldest entry and its aggregate is the sum of all of s_F in FIFO order
(``s_F[i].agg = s_F[i].val (+) ... (+) s_F[0].val``); the top of s_B is the youngest entry and
``s_B[i].agg = s_B[0].val (+) ... (+) s_B[i].val``. Because the two stacks aggregate in opposite
directions, ``query = agg(s_F) (+) agg(s_B)`` is right for non-commutative ``combine``.
When s_F is empty, evict first *flips* s_B onto s_F (O(n), amortized O(1): Theorem 4).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import NO_CACHE, FifoWindow, suffix_sums


class TwoStacks(FifoWindow):
    """Two-Stacks: amortized O(1) ``combine`` calls per operation, any associative aggregation.

    ``combine`` calls: ``insert`` 1 (0 into an empty back stack), ``query`` 1 (0 when either
    stack is empty or the result is cached), ``evict`` 0, except when the front stack is empty:
    then it flips the k entries of the back stack for k - 1 calls. A steady evict + insert +
    query round therefore costs at most 3 calls amortized. ``bulk_evict`` of m entries costs at
    most one flip of the survivors of the back stack.
    """

    name: ClassVar[str] = "two_stacks"
    complexity: ClassVar[str] = "O(1) amortized per operation (worst case O(n) evict)"

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        # Parallel lists (no per-entry tuple): front stack values/aggregates, top = last = oldest;
        # back stack values/aggregates, top = last = youngest. Times live in the FIFO _times.
        self._fv: list[Any] = []
        self._fa: list[Any] = []
        self._bv: list[Any] = []
        self._ba: list[Any] = []
        self._cache: Any = NO_CACHE

    def _insert_lifted(self, time: int, value: Any) -> None:
        ba = self._ba
        # s_B.push(val <- v, agg <- Sigma_B (+) v): v on the right (it is younger).
        ba.append(self._combine(ba[-1], value) if ba else value)
        self._bv.append(value)
        self._times.append(time)
        self._cache = NO_CACHE

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Push the batch on the back stack; its aggregates are computed before anything
        changes, so a failing ``combine`` leaves the window as it was."""
        combine = self._combine
        ba = self._ba
        sums: list[Any] = []
        append = sums.append
        acc = ba[-1] if ba else NO_CACHE
        for _, value in batch:
            acc = value if acc is NO_CACHE else combine(acc, value)
            append(acc)
        ba.extend(sums)
        self._bv.extend([v for _, v in batch])
        self._times.extend([t for t, _ in batch])
        self._cache = NO_CACHE

    def _flip(self, start: int) -> None:
        """Replace the front stack by the back stack's entries from position ``start`` on,
        youngest pushed first; the back stack becomes empty.

        Each pushed value goes on the *left* of the aggregate below it (it is older):
        ``agg <- v (+) Sigma_F`` (paper, Fig. 5 line 17). k values cost k - 1 calls; nothing
        changes if ``combine`` raises.
        """
        bv = self._bv
        self._fa = suffix_sums(self._combine, bv, start, len(bv))
        fv = bv[start:]
        fv.reverse()
        self._fv = fv
        bv.clear()
        self._ba.clear()

    def evict(self) -> None:
        """Remove the oldest entry; :class:`~swag_core.errors.EmptyWindowError` if empty."""
        if self._head == len(self._times):
            raise self._empty_evict()
        fv = self._fv
        if not fv:
            self._flip(0)
            fv = self._fv
        fv.pop()
        self._fa.pop()
        self._cache = NO_CACHE
        self._advance(1)

    def _evict_prefix(self, count: int) -> None:
        """Pops from the front stack while it lasts; if more go, the survivors of the back
        stack are flipped once (their count minus one ``combine`` calls), never the evicted
        ones."""
        fv = self._fv
        front = len(fv)
        if count <= front:
            del fv[front - count:]
            del self._fa[front - count:]
        else:
            self._flip(count - front)
        self._cache = NO_CACHE
        self._advance(count)

    def query(self) -> Any:
        """``lower(Sigma_F (+) Sigma_B)``; cached until the next change."""
        agg = self._cache
        if agg is NO_CACHE:
            fa = self._fa
            ba = self._ba
            if fa:
                agg = self._combine(fa[-1], ba[-1]) if ba else fa[-1]
            else:
                agg = ba[-1] if ba else self._identity
            self._cache = agg
        return self._lower(agg)

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        values = list(chain(reversed(self._fv), self._bv))
        return zip(self._times[self._head:], values, strict=True)
