"""Reactive Aggregator on FlatFAT, kept in time order (Tangwongsan, Hirzel, Schneider, Wu,
"General Incremental Sliding-Window Aggregation", PVLDB 8(7) 2015, sections 4-5; note
``reactive-flatfat.md``).

FlatFAT (paper section 4.3) is :class:`~swag_core.algorithms._fat.FlatFAT`, shared with the
in-order ``flatfat`` window: a complete binary tree over ``cap`` leaves (``cap`` a power of
two, pitfall 7) in one flat heap-ordered list, every internal node ``left (+) right`` of its
children (invariant 4.1), hence the fold of its leaves in order.

Reactive Aggregator (section 5.1.1): the leaves are a circular buffer. The window occupies the
*span* of ``s`` slots from the front slot ``F`` (wrapping modulo ``cap``); logical position
``i`` of the span is slot ``(F + i) % cap``. Free slots and *holes* left by non-FIFO removals
hold the paper's ⊥, :data:`~swag_core.algorithms._queues.EMPTY`, short-circuited by every
combine (``x (+) ⊥ = x``), so the user's ``combine`` never sees it (pitfall 3). Both ends of
the span are always entries: ``F`` and the back ``B`` skip holes (pitfall 11).

Differences from the paper, which keeps *arrival* order:

* Window order is **time order** (ties in insertion order). ``_times[slot]`` holds each slot's
  time and stays non-decreasing over the span, so positions are found with ``bisect``. An
  out-of-order insert opens a slot at its place by moving the entries between that place and
  the nearest free slot one step (the nearest hole on either side, or the free slot before
  ``F`` or after ``B``), so holes *are* refilled here (contrast footnote 2) without ever
  reordering entries. A hole keeps a *ghost* time (its left neighbour's) so ``_times`` stays
  sorted.
* ``remove(time)`` removes one entry anywhere (non-FIFO), leaving a hole.
* Updates are batched as the paper's trigger does (section 2.3): leaves are written at once
  and the next query runs Algorithm 2 once on the whole batch (FlatFAT's lazy flush: dirty
  parents deduplicated level by level, pitfalls 5 and 6), so m updates between two queries
  cost at most ``m(1 + ceil(log2(cap/m)))`` combine calls (Theorem 4.2(ii)).
* The paper's compact / resize policy (section 5.1.1, pitfalls 8-13) is kept: when the span is
  full, compact if ``n <= 3/4 cap`` (in place, walking circularly from ``F``: pitfall 9),
  else double; after an eviction, halve while ``n < 1/4 cap`` (down to ``min_capacity``).
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import repeat
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.algorithms._fat import FlatFAT, is_power_of_two
from swag_core.algorithms._queues import (
    EMPTY,
    NO_CACHE,
    grown_capacity,
    ring_assign,
    ring_bisect,
    ring_slice,
    shrunk_capacity,
)
from swag_core.errors import EmptyWindowError, EntryNotFoundError
from swag_core.window import Window, as_time

_is = operator.is_
_time_of = operator.itemgetter(0)


def _power_of_two(x: Any) -> bool:
    return type(x) is int and is_power_of_two(x)


class Reactive(Window):
    """Reactive Aggregator on a FlatFAT kept in time order; any insertion order.

    Args:
        aggregation: the aggregation to maintain (only associativity is used).
        capacity: initial number of leaves, a power of two (default 8).
        min_capacity: capacity never shrinks below this power of two (default 1); set it to
            ``capacity`` to pre-allocate a buffer that never shrinks.

    Costs (``n`` entries, ``cap`` leaves, ``cap <= 4n`` unless at the initial or minimum
    capacity; ``combine`` calls of updates are paid at the next query, once per batch):

    * ``insert`` at or after the youngest time, at or before the oldest, ``evict``, and
      ``remove``: O(1) work plus one dirty leaf; m such updates between two queries cost at
      most ``m(1 + ceil(log2(cap/m)))`` calls. Compact / resize are O(cap) but amortized O(1)
      (paper section 5.1.1).
    * out-of-order ``insert``: O(log n) search plus O(d) moves, d = distance in slots to the
      nearest free slot (a hole, or past the nearer end of the window, so d is at most the
      number of slots on the smaller side); the d + 1 rewritten leaves are dirty.
    * ``query``: 0 calls (the root), or at most ``2 log2(cap) + 1`` when the buffer wraps
      (``suffix(F) (+) prefix(B)``, section 5.1.2); cached until the next change.
    * ``query_since``: at most ``2 log2(cap) + 1`` calls.
    * ``bulk_evict`` of m entries: O(log n) search and C-level slice clearing of O(m) nodes;
      only the two boundary paths are recomputed: at most ``2 log2(cap)`` calls.
    * ``bulk_insert`` of m entries: merged into the cheaper side, O(m + min(#older than its
      youngest, #younger than its oldest)) moves, one batched update.
    """

    name: ClassVar[str] = "reactive"
    in_order: ClassVar[bool] = False
    range_queries: ClassVar[bool] = True
    coalesces_equal_times: ClassVar[bool] = False
    complexity: ClassVar[str] = (
        "amortized O(log n) combines per insert/evict/remove, batched until the next query "
        "(m updates: O(m + m log(n/m))); an out-of-order insert also moves O(d) entries, "
        "d = distance to the nearer end or hole; query O(1), O(log n) when wrapped; "
        "query_since and bulk_evict O(log n) combines")

    def __init__(self, aggregation: Aggregation, capacity: int = 8,
                 min_capacity: int = 1) -> None:
        super().__init__(aggregation)
        if not _power_of_two(capacity):
            raise ValueError(f"'reactive' capacity must be a power of two >= 1, got {capacity!r}")
        if not _power_of_two(min_capacity) or min_capacity > capacity:
            raise ValueError(f"'reactive' min_capacity must be a power of two <= capacity "
                             f"({capacity}), got {min_capacity!r}")
        self._initial_capacity = capacity
        self._min_capacity = min_capacity
        self._reset(capacity)

    def _reset(self, cap: int) -> None:
        """An empty window on ``cap`` leaves."""
        self._fat = FlatFAT(self._combine, cap)
        self._times: list[int] = [0] * cap
        self._front = 0
        self._span = 0
        self._n = 0
        self._cache: Any = NO_CACHE

    # ------------------------------------------------------------------ size and times
    @property
    def capacity(self) -> int:
        """Number of FlatFAT leaves (a power of two)."""
        return self._fat.capacity

    def __len__(self) -> int:
        return self._n

    def oldest(self) -> int:
        """Time of the oldest entry; :class:`EmptyWindowError` if empty."""
        if not self._n:
            raise EmptyWindowError("oldest() of an empty 'reactive' window")
        return self._times[self._front]

    def youngest(self) -> int:
        """Time of the youngest entry; :class:`EmptyWindowError` if empty."""
        if not self._n:
            raise EmptyWindowError("youngest() of an empty 'reactive' window")
        times = self._times
        return times[(self._front + self._span - 1) & (len(times) - 1)]

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first."""
        keys, vals = self._collect(0, self._span)
        return iter(list(zip(keys, vals, strict=True)))

    # ------------------------------------------------------------------ positions
    def _bisect_right(self, time: int) -> int:
        """Logical position of the first slot of the span whose time is > ``time``."""
        return ring_bisect(bisect_right, self._times, time, self._front, self._span)

    def _bisect_left(self, time: int) -> int:
        """Logical position of the first slot of the span whose time is >= ``time``."""
        return ring_bisect(bisect_left, self._times, time, self._front, self._span)

    def _collect(self, lo: int, hi: int) -> tuple[list[int], list[Any]]:
        """Times and values of the entries at logical positions ``[lo, hi)``, holes dropped."""
        if lo >= hi:
            return [], []
        times = self._times
        cap = len(times)
        first = self._front + lo
        vals = ring_slice(self._fat.tree, cap, first, hi - lo, cap)
        keys = ring_slice(times, cap, first, hi - lo)
        if self._span != self._n:
            empty = EMPTY
            kept = [i for i, v in enumerate(vals) if v is not empty]
            if len(kept) != len(vals):
                vals = [vals[i] for i in kept]
                keys = [keys[i] for i in kept]
        return keys, vals

    def _holes_in(self, lo: int, hi: int) -> int:
        """Number of holes at logical positions ``[lo, hi)`` (C-level scan, identity tests)."""
        if self._span == self._n:
            return 0
        cap = len(self._times)
        leaves = ring_slice(self._fat.tree, cap, self._front + lo, hi - lo, cap)
        return sum(map(_is, leaves, repeat(EMPTY)))

    # ------------------------------------------------------------------ slot runs
    # FlatFAT.clear(slot, k) sets k slots from slot (circular) to ⊥ with no combine now and
    # at most 2 log2(cap) per run at the next flush; the times stay (outside the span they are
    # never read).
    def _write(self, slot: int, keys: list[int], vals: list[Any]) -> None:
        """Write entries into consecutive slots from ``slot`` (circular); they become dirty."""
        self._fat.write(slot, vals)
        ring_assign(self._times, len(self._times), slot, keys)

    def _shift(self, slot: int, k: int, step: int) -> None:
        """Move the ``k`` slots from ``slot`` (circular), times and leaves, one slot right
        (``step`` 1) or left (-1), to open a slot for an out-of-order insert (the runs are
        copied before they are written, so they may overlap)."""
        fat = self._fat
        times = self._times
        cap = len(times)
        dst = (slot + step) & (cap - 1)
        fat.write(dst, ring_slice(fat.tree, cap, slot, k, cap))
        ring_assign(times, cap, dst, ring_slice(times, cap, slot, k))

    # ------------------------------------------------------------------ resize and compact
    def _build(self, keys: list[int], vals: list[Any], cap: int) -> None:
        """Resize: a new FlatFAT of ``cap`` leaves holding the entries in slots ``[0, n)``
        (Algorithm 1, restricted to the ancestors of the occupied leaves: n - 1 calls).
        ``keys`` (a fresh list) becomes the times; nothing changes if ``combine`` raises."""
        self._fat.rebuild(vals, cap)
        n = len(vals)
        keys.extend([0] * (cap - n))
        self._times = keys
        self._front = 0
        self._span = self._n = n
        self._cache = NO_CACHE

    def _resize(self, cap: int) -> None:
        keys, vals = self._collect(0, self._span)
        self._build(keys, vals, cap)

    def _compact(self) -> None:
        """Paper's compact (section 5.1.1) done along the circular order from ``F`` (pitfall 9):
        entries after the first hole move toward ``F``; changed leaves are batched."""
        t = self._fat.tree
        cap = len(self._times)
        mask = cap - 1
        front = self._front
        s = self._span
        first = 1
        while t[cap + ((front + first) & mask)] is not EMPTY:
            first += 1
        keys, vals = self._collect(first, s)
        end = first + len(vals)
        self._write((front + first) & mask, keys, vals)
        self._fat.clear((front + end) & mask, s - end)
        self._span = end

    def _make_room(self) -> None:
        """The span fills every slot: compact if ``n <= 3/4 cap``, else double (pitfall 8)."""
        cap = self._fat.capacity
        if 4 * self._n <= 3 * cap:
            self._compact()
        else:
            self._resize(2 * cap)

    def _shrunk_without(self, p: int) -> bool:
        """If removing the entry at logical position ``p`` leaves ``n < 1/4 cap`` (strict,
        pitfall 8; the callers test that first), remove it by rebuilding the others in the
        halved capacity (not below ``min_capacity``) and return True. The rebuild comes
        first, so a failing ``combine`` changes nothing; False (nothing done) when no shrink
        is due."""
        cap = self._fat.capacity
        n = self._n - 1
        new = shrunk_capacity(cap, n, self._min_capacity)
        if new == cap:
            return False
        keys, vals = self._collect(0, p)
        after_keys, after_vals = self._collect(p + 1, self._span)
        self._build(keys + after_keys, vals + after_vals, new)
        return True

    # ------------------------------------------------------------------ updates
    def _insert_lifted(self, time: int, value: Any) -> None:
        self._cache = NO_CACHE
        fat = self._fat
        if self._span == fat.capacity:
            self._make_room()
        s = self._span
        times = self._times
        cap = len(times)
        mask = cap - 1
        front = self._front
        if not s or time >= times[(front + s - 1) & mask]:
            j = (front + s) & mask  # the paper's insert at the back
            times[j] = time
            fat.set(j, value)
            self._span = s + 1
            self._n += 1
            return
        if time < times[front]:
            front = (front - 1) & mask  # a new oldest entry takes the free slot before F
            times[front] = time
            fat.set(front, value)
            self._front = front
            self._span = s + 1
            self._n += 1
            return
        self._insert_inside(time, value)

    def _insert_inside(self, time: int, value: Any) -> None:
        """Insert an entry strictly between the oldest and the youngest: it takes the free
        slot nearest to its position (:meth:`_nearest_free`), the entries in between move one
        step towards that slot."""
        times = self._times
        fat = self._fat
        mask = len(times) - 1
        front = self._front
        s = self._span
        p = self._bisect_right(time)  # 0 < p < s: the new entry goes right before position p
        right, q = self._nearest_free(p)
        if right:
            if q == s:
                self._span = s + 1
            # Move logical [p, q) one step right and write the new entry at p.
            j = (front + p) & mask
            if q > p:
                self._shift(j, q - p, 1)
        else:
            if q == -1:
                front = (front - 1) & mask
                self._front = front
                self._span = s + 1
                q = 0
                p += 1
            # Move logical [q + 1, p) one step left and write the new entry at p - 1.
            if p - 1 > q:
                self._shift((front + q + 1) & mask, p - 1 - q, -1)
            j = (front + p - 1) & mask
        times[j] = time
        fat.set(j, value)
        self._n += 1

    def _nearest_free(self, p: int) -> tuple[bool, int]:
        """The free slot nearest to logical position ``p`` (0 < p < span): ``(True, q)`` for a
        hole at q >= p (or q == span, after B), ``(False, q)`` for one at q < p (or q == -1,
        before F). The span is not full here, so both ends have a free slot."""
        s = self._span
        if s == self._n:    # no hole: the nearer end
            return (False, -1) if p <= s - p else (True, s)
        leaves = self._fat.tree
        cap = len(self._times)
        mask = cap - 1
        front = self._front
        empty = EMPTY
        d = 0
        while True:
            q = p + d
            if q == s or (q < s and leaves[cap + ((front + q) & mask)] is empty):
                return True, q
            q = p - 1 - d
            if q == -1 or (q >= 0 and leaves[cap + ((front + q) & mask)] is empty):
                return False, q
            d += 1

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Merge a time-sorted batch into the side of the window that moves fewer entries (the
        entries younger than its oldest, or older than its youngest), dropping the holes
        there; one batched update. A rebuild (resize / compact) when neither side fits."""
        m = len(batch)
        if m == 1:
            self._insert_lifted(*batch[0])
            return
        self._cache = NO_CACHE
        n = self._n
        cap = self._fat.capacity
        total = n + m
        if total <= cap and n:
            s = self._span
            p0 = self._bisect_right(batch[0][0])
            p1 = self._bisect_right(batch[-1][0])
            sides = (True, False) if s - p0 <= p1 else (False, True)
            for right in sides:
                if right:
                    keys, vals = self._collect(p0, s)
                    if p0 + len(vals) + m > cap:
                        continue
                    mkeys, mvals = _merge(keys, vals, batch)
                    end = p0 + len(mvals)
                    self._write((self._front + p0) & (cap - 1), mkeys, mvals)
                    if end < s:
                        self._fat.clear((self._front + end) & (cap - 1), s - end)
                    self._span = end
                else:
                    keys, vals = self._collect(0, p1)
                    if len(vals) + m + s - p1 > cap:
                        continue
                    mkeys, mvals = _merge(keys, vals, batch)
                    start = p1 - len(mvals)  # new front, as a logical position (may be < 0)
                    front = (self._front + start) & (cap - 1)
                    if start > 0:
                        self._fat.clear(self._front, start)
                    self._write(front, mkeys, mvals)
                    self._front = front
                    self._span = s - start
                self._n = total
                return
        keys, vals = self._collect(0, self._span)
        mkeys, mvals = _merge(keys, vals, batch)
        self._build(mkeys, mvals, grown_capacity(cap, total))

    def evict(self) -> None:
        """Remove the oldest entry; :class:`EmptyWindowError` if empty."""
        n = self._n
        if not n:
            raise self._empty_evict()
        fat = self._fat
        if 4 * (n - 1) < fat.capacity and self._shrunk_without(0):
            return
        self._cache = NO_CACHE
        t = fat.tree
        cap = fat.capacity
        mask = cap - 1
        front = self._front
        fat.set(front, EMPTY)
        n -= 1
        s = self._span - 1
        front = (front + 1) & mask
        empty = EMPTY
        while s and t[cap + front] is empty:  # skip holes: F stays on an entry (pitfall 11)
            front = (front + 1) & mask
            s -= 1
        self._front = front
        self._span = s
        self._n = n

    def remove(self, time: int) -> None:
        """Remove one entry at exactly ``time`` (the first inserted among equal times),
        anywhere in the window (non-FIFO), leaving a hole.

        Raises :class:`EntryNotFoundError` (a ``KeyError``) when no entry has that time;
        nothing changes then. Cost: O(log n) search plus one dirty leaf.
        """
        if type(time) is not int:
            time = as_time(time)
        s = self._span
        fat = self._fat
        t = fat.tree
        cap = fat.capacity
        mask = cap - 1
        front = self._front
        times = self._times
        empty = EMPTY
        p = self._bisect_left(time)
        while p < s and t[cap + ((front + p) & mask)] is empty:
            p += 1
        if p == s or times[(front + p) & mask] != time:
            raise EntryNotFoundError(f"'reactive' window has no entry at time {time}")
        if p == 0:
            self.evict()
            return
        if 4 * (self._n - 1) < cap and self._shrunk_without(p):
            return
        self._cache = NO_CACHE
        j = (front + p) & mask
        fat.set(j, empty)
        self._n -= 1
        if p == s - 1:
            s -= 1
            while t[cap + ((front + s - 1) & mask)] is empty:  # B stays on an entry
                s -= 1
            self._span = s
        else:
            # Ghost time of the hole: its left neighbour's. Keeps _times sorted over the span
            # and lets the next bisect_left(time) land past the hole.
            times[j] = times[(j - 1) & mask]

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed.

        One search, one C-level clear of the evicted range, and at most ``2 log2(cap)``
        combine calls at the next query (or one resize, if the window became sparse).
        """
        if type(time) is not int:
            time = as_time(time)
        n = self._n
        if not n or self._times[self._front] > time:
            return 0
        self._cache = NO_CACHE
        s = self._span
        p = self._bisect_right(time)
        cap = self._fat.capacity
        if p >= s:
            self._reset(shrunk_capacity(cap, 0, self._min_capacity))
            return n
        removed = p - self._holes_in(0, p)
        n -= removed
        mask = cap - 1
        front = self._front
        t = self._fat.tree
        while t[cap + ((front + p) & mask)] is EMPTY:  # the new front skips holes
            p += 1
        new = shrunk_capacity(cap, n, self._min_capacity) if 4 * n < cap else cap
        if new != cap:
            keys, vals = self._collect(p, s)
            self._build(keys, vals, new)   # first: a failing combine changes nothing
            return removed
        self._n = n
        self._fat.clear(front, p)
        self._front = (front + p) & mask
        self._span = s - p
        return removed

    # ------------------------------------------------------------------ queries
    def _aggregate(self) -> Any:
        """The raw window aggregate (``EMPTY`` when empty), after flushing the batch."""
        cache = self._cache
        if cache is not NO_CACHE:
            return cache
        if not self._n:
            return EMPTY
        fat = self._fat
        front = self._front
        end = front + self._span
        cap = fat.capacity
        if end <= cap:
            agg = fat.aggregate()   # the leaves outside the span are ⊥: the root is the window
        else:
            agg = fat.ring_range(front, self._span)  # inverted buffer: never the root
        self._cache = agg
        return agg

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        agg = self._aggregate()
        return self._lower(self._identity if agg is EMPTY else agg)

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time``: one range aggregate
        over the tree, at most ``2 log2(cap) + 1`` combine calls."""
        if type(time) is not int:
            time = as_time(time)
        p = self._bisect_left(time)
        if p == 0:
            return self.query()
        s = self._span
        if p >= s:
            return self._lower(self._identity)
        agg = self._fat.ring_range(self._front + p, s - p)
        return self._lower(self._identity if agg is EMPTY else agg)

    # ------------------------------------------------------------------ debugging
def _merge(keys: list[int], vals: list[Any],
           batch: list[tuple[int, Any]]) -> tuple[list[int], list[Any]]:
    """Stable merge of window entries with a time-sorted batch (window entries first on equal
    times: they were inserted earlier). Timsort merges the two runs in linear time."""
    if not keys:
        return [k for k, _ in batch], [v for _, v in batch]
    merged = list(zip(keys, vals, strict=True))
    merged += batch
    merged.sort(key=_time_of)
    return [k for k, _ in merged], [v for _, v in merged]
