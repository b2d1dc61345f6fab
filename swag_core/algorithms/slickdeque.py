"""SlickDeque (Shein, Chrysanthis, Labrinidis, EDBT 2018).

One window class, two algorithms chosen by the aggregation's declared properties:

* **Inv** (paper section 3.2, Algorithm 1), for invertible aggregations (``subtract``). The
  paper keeps one running answer per query range; to answer *any* range without registering
  it, this keeps prefix aggregates instead: ``prefix[i] = v_origin (+) ... (+) v_i``, so the
  entries from position k on aggregate to ``subtract(prefix[last], prefix[k - 1])``
  (``subtract`` removes a prefix from the front, so this is right for non-commutative groups
  too). ``insert`` costs one ``combine``, ``query`` and ``query_since`` one
  ``subtract``. The origin is re-based (prefixes re-folded from the oldest live entry) once
  the entries folded in before it outnumber the live ones four times: at most 1/4 ``combine``
  per eviction amortized, and the floating-point drift of subtract-on-evict stays bounded by
  the window instead of growing with the stream.
* **Non-Inv** (section 3.2, Algorithm 2), for selective aggregations (``combine(a, b)``
  returns one of its argument objects). A deque of the entries not dominated by a younger
  one: the entry ``e`` stays while ``combine(e, younger) is e`` for every younger entry, so
  each node holds the aggregate of every entry from itself to the youngest, and the aggregate
  of the entries from position k on is the first node at or after k. ``insert`` pops the
  dominated tail (ties stay when ``combine`` returns the older operand, e.g. ``ArgMax`` ties to
  the oldest) for fewer than 2 ``combine`` calls amortized; evictions pop the
  head when it expires (section 9.3); ``query`` and ``query_since`` (binary search on the
  deque, the paper's multi-query sharing of sections 2.3 and 3.2) call ``combine`` never.

When an aggregation is both invertible and selective, Inv is used, as the paper classifies
by invertibility: it is O(1) worst case where Non-Inv's insert is O(n) worst case. The
``variant`` option forces one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, cast

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import COMPACT_MIN, NO_CACHE, FifoWindow
from swag_core.errors import AlgorithmMismatchError, InvalidValueError
from swag_core.window import as_time

#: Inv re-bases its prefixes once the entries folded into the origin exceed this many times
#: the live entries.
_REBASE_RATIO = 4

_VARIANTS = ("auto", "inv", "non_inv")


class SlickDeque(FifoWindow):
    """SlickDeque: O(1) ``query`` and O(log n) ``query_since`` for invertible or selective
    aggregations.

    Args:
        aggregation: an invertible (``subtract=...``) or selective aggregation.
        variant: ``"auto"`` (Inv when invertible, else Non-Inv), ``"inv"`` or ``"non_inv"``.

    ``combine``/``subtract`` calls: Inv: ``insert`` 1 combine (0 into an empty window),
    ``query`` 1 subtract (0 when cached or when the window starts at the prefix origin),
    ``query_since`` at most 1 subtract, re-basing at most 1/4 combine per eviction
    (amortized). Non-Inv: ``insert`` 1 + (number of dominated entries it removes), fewer than 2
    amortized, ``evict``/``bulk_evict``/``query``/``query_since`` none.
    """

    name: ClassVar[str] = "slickdeque"
    range_queries: ClassVar[bool] = True
    complexity: ClassVar[str] = ("Inv: O(1) worst-case per operation; Non-Inv: O(1) amortized "
                                 "(<2 combines per insert), O(n) worst case; "
                                 "query_since O(log n)")
    _fifo_lists: ClassVar[tuple[str, ...]] = ("_vals",)

    @classmethod
    def mismatch(cls, aggregation: Aggregation) -> str | None:
        """Why ``aggregation`` cannot be used: it must be invertible or selective."""
        if aggregation.invertible or aggregation.selective:
            return None
        return (f"{cls.name!r} needs an invertible aggregation (subtract=..., for SlickDeque "
                f"Inv) or a selective one (combine returns one of its arguments, for "
                f"SlickDeque Non-Inv), but {aggregation.name!r} is neither "
                f"({aggregation.properties()})")

    def __init__(self, aggregation: Aggregation, variant: str = "auto") -> None:
        super().__init__(aggregation)
        if variant not in _VARIANTS:
            raise ValueError(f"slickdeque variant must be one of {', '.join(_VARIANTS)}, "
                             f"got {variant!r}")
        if variant == "auto":
            variant = "inv" if aggregation.invertible else "non_inv"
        elif variant == "inv" and not aggregation.invertible:
            raise AlgorithmMismatchError(
                f"slickdeque variant 'inv' needs subtract=..., but {aggregation.name!r} has "
                f"{aggregation.properties()}")
        elif variant == "non_inv" and not aggregation.selective:
            raise AlgorithmMismatchError(
                f"slickdeque variant 'non_inv' needs a selective aggregation, but "
                f"{aggregation.name!r} has {aggregation.properties()}")
        #: ``"inv"`` or ``"non_inv"``: the algorithm in use.
        self.variant = variant
        self._impl: _Inv | _NonInv = (
            _Inv(self) if variant == "inv" else _NonInv(self))
        self._impl_insert = self._impl.insert
        self._vals: list[Any] = []     # lifted values, parallel to _times

    # ------------------------------------------------------------------ contract
    def _insert_lifted(self, time: int, value: Any) -> None:
        self._impl_insert(time, value)
        self._times.append(time)
        self._vals.append(value)

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        self._impl.insert_many(batch)
        self._times.extend([t for t, _ in batch])
        self._vals.extend([v for _, v in batch])

    def _evict_prefix(self, count: int) -> None:
        """``bulk_evict`` is a binary search, no ``combine``."""
        if count == len(self._times) - self._head:
            self._clear()
            return
        self._impl.evict(count)
        try:
            self._advance(count)
        except BaseException as error:
            # Only an interrupt of Inv's re-basing fold gets here (it skips the re-base on an
            # Exception): the entries are already evicted from the deque's view.
            self._fail("evict", error)
            raise

    def _clear(self) -> None:
        """Evict everything (the lists are emptied at once; Inv restarts its origin)."""
        self._times.clear()
        self._vals.clear()
        self._head = 0
        self._impl.clear()

    def _compact(self) -> None:
        self._impl.compact(self._head)   # before the lists lose their dead prefix
        super()._compact()

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        return self._lower(self._impl.aggregate())

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time``: a binary search, then
        one ``subtract`` (Inv) or nothing (Non-Inv)."""
        if type(time) is not int:
            time = as_time(time)
        return self._lower(self._impl.since(time))

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        return self._items_with(self._vals)


class _Inv:
    """SlickDeque (Inv) state: prefix aggregates from an origin (see the module docstring).

    ``prefix[i]`` (parallel to the window's ``_times``/``_vals`` lists) aggregates the entries
    from the origin through list position i. ``dropped`` aggregates the entries from the
    origin up to list position 0 excluded (compacted away), or is ``NO_CACHE`` when the
    origin is list position 0; ``folded`` counts those entries plus the evicted ones still in
    the lists, i.e. the entries before the window that the prefixes include.
    """

    __slots__ = ("cache", "dropped", "folded", "prefix", "subtract", "w")

    def __init__(self, window: SlickDeque) -> None:
        self.w = window
        # Not None: SlickDeque.__init__ checked the aggregation is invertible.
        self.subtract = cast(Callable[[Any, Any], Any], window.aggregation.subtract)
        self.prefix: list[Any] = []
        self.dropped: Any = NO_CACHE
        self.folded = 0
        self.cache: Any = NO_CACHE

    def insert(self, time: int, value: Any) -> None:
        prefix = self.prefix
        if prefix:
            prefix.append(self.w._combine(prefix[-1], value))
        else:
            prefix.append(value)
        self.cache = NO_CACHE

    def insert_many(self, batch: list[tuple[int, Any]]) -> None:
        """Insert a sorted batch atomically (the prefixes are built before any change)."""
        combine = self.w._combine
        prefix = self.prefix
        new = []
        acc = prefix[-1] if prefix else NO_CACHE
        for _, value in batch:
            acc = value if acc is NO_CACHE else combine(acc, value)
            new.append(acc)
        prefix.extend(new)
        self.cache = NO_CACHE

    def evict(self, count: int) -> None:
        """``count`` oldest entries leave (not all of them: see :meth:`clear`)."""
        self.cache = NO_CACHE
        self.folded += count

    def clear(self) -> None:
        """Every entry left: restart the prefixes from the next insert."""
        self.prefix.clear()
        self.dropped = NO_CACHE
        self.folded = 0
        self.cache = NO_CACHE

    def compact(self, head: int) -> None:
        prefix = self.prefix
        live = len(prefix) - head
        if self.folded >= _REBASE_RATIO * live:
            # Re-base: fold the live entries afresh (live - 1 combines, amortized <= 1/4 per
            # eviction since `folded` evictions happened since the last re-base).
            vals = self.w._vals
            combine = self.w._combine
            acc = vals[head]
            rebased = [acc]
            try:
                for i in range(head + 1, len(vals)):
                    acc = combine(acc, vals[i])
                    rebased.append(acc)
            except Exception:
                rebased = []    # keep the old origin: an eviction must not fail on this
            if rebased:
                self.prefix = rebased
                self.dropped = NO_CACHE
                self.folded = 0
                return
        self.dropped = prefix[head - 1]
        del prefix[:head]

    def _before(self, pos: int) -> Any:
        """Aggregate from the origin through list position ``pos - 1`` (NO_CACHE if none)."""
        return self.prefix[pos - 1] if pos else self.dropped

    def aggregate(self) -> Any:
        agg = self.cache
        if agg is not NO_CACHE:
            return agg
        w = self.w
        head = w._head
        prefix = self.prefix
        if head == len(prefix):
            return w._identity
        before = self._before(head)
        agg = prefix[-1] if before is NO_CACHE else self.subtract(prefix[-1], before)
        self.cache = agg
        return agg

    def since(self, time: int) -> Any:
        w = self.w
        times = w._times
        head = w._head
        pos = bisect_left(times, time, head)
        if pos == head:
            return self.aggregate()
        if pos == len(times):
            return w._identity
        return self.subtract(self.prefix[-1], self.prefix[pos - 1])


class _NonInv:
    """SlickDeque (Non-Inv) state: the deque of non-dominated entries.

    Three parallel lists used as a deque from position ``head``: ``seq`` (the entry's number
    in insertion order), ``times`` and ``vals``, oldest first. Invariant: each node's value is
    (the very object) the aggregate of the entries from it to the youngest, the youngest entry
    is the tail, and every entry between two nodes aggregates with the younger ones to the
    later node. Hence the aggregate of the entries from any position on is the first node at
    or after it.
    """

    __slots__ = ("combine", "head", "next_seq", "seq", "times", "vals", "w")

    def __init__(self, window: SlickDeque) -> None:
        self.w = window
        self.combine = window._combine
        self.seq: list[int] = []
        self.times: list[int] = []
        self.vals: list[Any] = []
        self.head = 0
        self.next_seq = 0           # number of the next inserted entry

    def _survivors(self, vals: list[Any], lo: int, value: Any) -> int:
        """How many of ``vals[lo:]`` stay when ``value`` follows them: Algorithm 2 line 16
        pops the tail while the new value dominates it. ``is``, not ``==``: a tie that
        ``combine`` resolves to the older operand keeps the older node.
        Only reads, so a failing ``combine`` changes nothing."""
        combine = self.combine
        k = len(vals)
        while k > lo:
            tail = vals[k - 1]
            winner = combine(tail, value)
            if winner is tail:
                break
            if winner is not value:
                raise self._not_selective(tail, value, winner)
            k -= 1
        return k

    def _not_selective(self, tail: Any, value: Any, winner: Any) -> InvalidValueError:
        return InvalidValueError(
            f"aggregation {self.w.aggregation.name!r} is declared selective, but "
            f"combine({tail!r}, {value!r}) returned {winner!r}, which is neither argument "
            f"object")

    def insert(self, time: int, value: Any) -> None:
        vals = self.vals
        k = self._survivors(vals, self.head, value)
        if k < len(vals):
            del vals[k:], self.seq[k:], self.times[k:]
        vals.append(value)
        self.seq.append(self.next_seq)
        self.times.append(time)
        self.next_seq += 1

    def insert_many(self, batch: list[tuple[int, Any]]) -> None:
        """Insert a sorted batch atomically: build the batch's own deque, then pop the old
        nodes its aggregate (its first node) dominates; the old nodes are only compared with
        that one value, never with each batch entry."""
        vals: list[Any] = []
        times: list[int] = []
        seqs: list[int] = []
        seq = self.next_seq
        survivors = self._survivors
        for time, value in batch:
            if vals:
                k = survivors(vals, 0, value)
                if k < len(vals):
                    del vals[k:], times[k:], seqs[k:]
            vals.append(value)
            times.append(time)
            seqs.append(seq)
            seq += 1
        old = self.vals
        k = survivors(old, self.head, vals[0]) if len(old) > self.head else len(old)
        if k < len(old):
            del old[k:], self.seq[k:], self.times[k:]
        old.extend(vals)
        self.times.extend(times)
        self.seq.extend(seqs)
        self.next_seq = seq

    def evict(self, count: int) -> None:
        """``count`` oldest entries leave (not all of them: see :meth:`clear`)."""
        # The evicted entries are numbered first .. first + count - 1 (Algorithm 2 line 13:
        # expire the head when it is the evicted entry; several may go in a bulk).
        w = self.w
        first_live = self.next_seq - (len(w._times) - w._head) + count
        seq = self.seq
        head = self.head
        if len(seq) > head and seq[head] < first_live:
            head = bisect_left(seq, first_live, head)
            self.head = head
            if head >= COMPACT_MIN and head + head >= len(seq):
                del seq[:head], self.times[:head], self.vals[:head]
                self.head = 0

    def compact(self, head: int) -> None:
        """The window compacted its own lists; the deque keeps its own positions."""

    def clear(self) -> None:
        """Every entry left."""
        del self.seq[:], self.times[:], self.vals[:]
        self.head = 0

    def aggregate(self) -> Any:
        vals = self.vals
        if len(vals) == self.head:
            return self.w._identity
        return vals[self.head]

    def since(self, time: int) -> Any:
        pos = bisect_left(self.times, time, self.head)
        if pos == len(self.times):
            return self.w._identity
        return self.vals[pos]

