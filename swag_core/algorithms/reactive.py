"""Reactive Aggregator on FlatFAT, kept in time order (Tangwongsan, Hirzel, Schneider, Wu,
"General Incremental Sliding-Window Aggregation", PVLDB 8(7) 2015, sections 4-5; note
``reactive-flatfat.md``).

FlatFAT (paper section 4.3): a complete binary tree over ``cap`` leaves (``cap`` a power of two,
pitfall 7) stored in one flat list ``t`` with 1-based heap numbering: root ``t[1]``, children of
``v`` at ``2v`` and ``2v + 1``, leaf slot ``j`` (0-based) at ``t[cap + j]``. Every internal node
is ``left (+) right`` of its children (invariant 4.1), hence the fold of its leaves in order.

Reactive Aggregator (section 5.1.1): the leaves are a circular buffer. The window occupies the
*span* of ``s`` slots from the front slot ``F`` (wrapping modulo ``cap``); logical position
``i`` of the span is slot ``(F + i) % cap``. Free slots and *holes* left by non-FIFO removals
hold the paper's framework marker ``⊥`` (``_BOT``), short-circuited by every combine here
(``x (+) ⊥ = x``), so the user's ``combine`` never sees it (pitfall 3). Both ends of the span
are always entries: ``F`` and the back ``B`` skip holes (pitfall 11).

Differences from the paper, which keeps *arrival* order:

* Window order is **time order** (ties in insertion order). ``_times[slot]`` holds each slot's
  time and stays non-decreasing over the span, so positions are found with ``bisect``. An
  out-of-order insert opens a slot at its place by moving the entries between that place and
  the nearest free slot one step (the nearest hole on either side, or the free slot before
  ``F`` or after ``B``), so holes *are* refilled here (contrast footnote 2) without ever
  reordering entries. A hole keeps a *ghost* time (its left neighbour's) so ``_times`` stays
  sorted.
* ``remove(time)`` removes one entry anywhere (non-FIFO), leaving a hole.
* Updates are batched as the paper's trigger does (section 2.3): leaves are written at once,
  their slots are collected in a dirty set, and the next query runs Algorithm 2 once on the
  whole batch (dirty parents deduplicated level by level, pitfalls 5 and 6), so m updates
  between two queries cost at most ``m(1 + ceil(log2(cap/m)))`` combine calls (Theorem
  4.2(ii)).
* The paper's compact / resize policy (section 5.1.1, pitfalls 8-13) is kept: when the span is
  full, compact if ``n <= 3/4 cap`` (in place, walking circularly from ``F``: pitfall 9),
  else double; after an eviction, halve while ``n < 1/4 cap`` (down to ``min_capacity``).
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import pairwise, repeat
from typing import Any, ClassVar, Final

from swag_core.aggregation import Aggregation
from swag_core.errors import EmptyWindowError, EntryNotFoundError
from swag_core.window import Window, as_time


class _Bottom:
    """The paper's ⊥ (section 5.1.1): marks free slots and holes; never given to ``combine``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "⊥"


_BOT: Final[Any] = _Bottom()
_NO_CACHE: Final[Any] = object()
_is = operator.is_


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


def _power_of_two(x: Any) -> bool:
    return type(x) is int and x >= 1 and x & (x - 1) == 0


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
        self._cap = cap
        self._tree: list[Any] = [_BOT] * (2 * cap)
        self._times: list[int] = [0] * cap
        self._front = 0
        self._span = 0
        self._n = 0
        self._dirty: set[int] = set()
        self._cache: Any = _NO_CACHE

    # ------------------------------------------------------------------ size and times
    @property
    def capacity(self) -> int:
        """Number of FlatFAT leaves (a power of two)."""
        return self._cap

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
        return self._times[(self._front + self._span - 1) & (self._cap - 1)]

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first."""
        keys, vals = self._collect(0, self._span)
        return iter(list(zip(keys, vals, strict=True)))

    # ------------------------------------------------------------------ positions
    def _bisect_right(self, time: int) -> int:
        """Logical position of the first slot of the span whose time is > ``time``."""
        s = self._span
        if not s:
            return 0
        front = self._front
        cap = self._cap
        times = self._times
        end = front + s
        if end <= cap:
            return bisect_right(times, time, front, end) - front
        # Wrapped: logical [0, cap - F) is slots [F, cap), the rest is slots [0, end - cap).
        if time < times[0]:
            return bisect_right(times, time, front, cap) - front
        return bisect_right(times, time, 0, end - cap) + cap - front

    def _bisect_left(self, time: int) -> int:
        """Logical position of the first slot of the span whose time is >= ``time``."""
        s = self._span
        if not s:
            return 0
        front = self._front
        cap = self._cap
        times = self._times
        end = front + s
        if end <= cap:
            return bisect_left(times, time, front, end) - front
        if time <= times[0]:
            return bisect_left(times, time, front, cap) - front
        return bisect_left(times, time, 0, end - cap) + cap - front

    def _collect(self, lo: int, hi: int) -> tuple[list[int], list[Any]]:
        """Times and values of the entries at logical positions ``[lo, hi)``, holes dropped."""
        cap = self._cap
        t = self._tree
        times = self._times
        a = self._front + lo
        b = self._front + hi
        if a >= cap:
            a -= cap
            b -= cap
        if b <= cap:
            vals = t[cap + a:cap + b]
            keys = times[a:b]
        else:
            vals = t[cap + a:] + t[cap:b]
            keys = times[a:] + times[:b - cap]
        if self._span != self._n:
            bot = _BOT
            kept = [i for i, v in enumerate(vals) if v is not bot]
            if len(kept) != len(vals):
                vals = [vals[i] for i in kept]
                keys = [keys[i] for i in kept]
        return keys, vals

    def _holes_in(self, lo: int, hi: int) -> int:
        """Number of holes at logical positions ``[lo, hi)`` (C-level scan, identity tests)."""
        if self._span == self._n:
            return 0
        cap = self._cap
        t = self._tree
        a = self._front + lo
        b = self._front + hi
        if a >= cap:
            a -= cap
            b -= cap
        if b <= cap:
            return sum(map(_is, t[cap + a:cap + b], repeat(_BOT)))
        return (sum(map(_is, t[cap + a:], repeat(_BOT)))
                + sum(map(_is, t[cap:b], repeat(_BOT))))

    # ------------------------------------------------------------------ tree maintenance
    def _mark(self, slot: int, k: int) -> None:
        """Mark ``k`` consecutive slots from ``slot`` (circular) dirty."""
        cap = self._cap
        lo = cap + slot
        hi = lo + k
        dirty = self._dirty
        if hi <= 2 * cap:
            dirty.update(range(lo, hi))
        else:
            dirty.update(range(lo, 2 * cap))
            dirty.update(range(cap, hi - cap))

    def _flush(self) -> None:
        """Algorithm 2 (update) on the batch of dirty leaves: recompute their ancestors once
        each, level by level (a parent set per level, deduplicated; pitfalls 5-6)."""
        dirty = self._dirty
        if not dirty:
            return
        t = self._tree
        combine = self._combine
        bot = _BOT
        if len(dirty) <= 2:
            # One or two leaves (the steady sliding case): walk both paths in lockstep until
            # they meet, then one path; the same nodes as the level sets below.
            a = min(dirty)
            b = max(dirty)
            dirty.clear()
            while a > 1:
                a >>= 1
                b >>= 1
                left = t[2 * a]
                right = t[2 * a + 1]
                if left is bot:
                    t[a] = right
                elif right is bot:
                    t[a] = left
                else:
                    t[a] = combine(left, right)
                if b != a:
                    left = t[2 * b]
                    right = t[2 * b + 1]
                    if left is bot:
                        t[b] = right
                    elif right is bot:
                        t[b] = left
                    else:
                        t[b] = combine(left, right)
            return
        level = sorted(dirty)
        dirty.clear()
        while True:
            parents: list[int] = []
            append = parents.append
            last = 0
            for v in level:
                p = v >> 1
                if p != last:
                    last = p
                    append(p)
                    left = t[2 * p]
                    right = t[2 * p + 1]
                    if left is bot:
                        t[p] = right
                    elif right is bot:
                        t[p] = left
                    else:
                        t[p] = combine(left, right)
            if last == 1:
                return
            level = parents

    def _range(self, lo: int, hi: int) -> Any:
        """Aggregate of leaf slots ``[lo, hi)`` (``_BOT`` if all empty), at most
        ``2 log2(cap)`` calls; ``prefix`` / ``suffix`` of Algorithm 3 are special cases.
        The left accumulator appends and the right one prepends (pitfall 2)."""
        t = self._tree
        combine = self._combine
        bot = _BOT
        lo += self._cap
        hi += self._cap
        left = right = bot
        while lo < hi:
            if lo & 1:
                x = t[lo]
                if x is not bot:
                    left = x if left is bot else combine(left, x)
                lo += 1
            if hi & 1:
                hi -= 1
                x = t[hi]
                if x is not bot:
                    right = x if right is bot else combine(x, right)
            lo >>= 1
            hi >>= 1
        if left is bot:
            return right
        if right is bot:
            return left
        return combine(left, right)

    def _prefix(self, slot: int) -> Any:
        """Algorithm 3, ``prefix``: slots ``[0, slot]``; the left sibling is *prepended*
        (pitfall 2). At most log2(cap) calls; ``_BOT`` if all empty."""
        t = self._tree
        combine = self._combine
        bot = _BOT
        v = self._cap + slot
        acc = t[v]
        while v > 1:
            if v & 1:
                x = t[v - 1]
                if x is not bot:
                    acc = x if acc is bot else combine(x, acc)
            v >>= 1
        return acc

    def _suffix(self, slot: int) -> Any:
        """``suffix`` (symmetric to Algorithm 3): slots ``[slot, cap)``; the right sibling is
        *appended*. At most log2(cap) calls; ``_BOT`` if all empty."""
        t = self._tree
        combine = self._combine
        bot = _BOT
        v = self._cap + slot
        acc = t[v]
        while v > 1:
            if not v & 1:
                x = t[v + 1]
                if x is not bot:
                    acc = x if acc is bot else combine(acc, x)
            v >>= 1
        return acc

    def _build(self, keys: list[int], vals: list[Any], cap: int) -> None:
        """Resize: a new FlatFAT of ``cap`` leaves holding the entries in slots ``[0, n)``
        (Algorithm 1, restricted to the ancestors of the occupied leaves: n - 1 calls)."""
        self._reset(cap)
        n = len(vals)
        if not n:
            return
        t = self._tree
        t[cap:cap + n] = vals
        self._times[:n] = keys
        self._span = self._n = n
        combine = self._combine
        bot = _BOT
        lo = cap
        hi = cap + n - 1
        while lo > 1:
            lo >>= 1
            hi >>= 1
            for v in range(lo, hi + 1):
                # Leaves are filled from the left, so a left child here is never ⊥.
                right = t[2 * v + 1]
                t[v] = t[2 * v] if right is bot else combine(t[2 * v], right)

    def _resize(self, cap: int) -> None:
        keys, vals = self._collect(0, self._span)
        self._build(keys, vals, cap)

    def _compact(self) -> None:
        """Paper's compact (section 5.1.1) done along the circular order from ``F`` (pitfall 9):
        entries after the first hole move toward ``F``; changed leaves are batched."""
        cap = self._cap
        mask = cap - 1
        front = self._front
        s = self._span
        t = self._tree
        times = self._times
        bot = _BOT
        first = 1
        while t[cap + ((front + first) & mask)] is not bot:
            first += 1
        w = first
        for i in range(first + 1, s):
            j = (front + i) & mask
            v = t[cap + j]
            if v is not bot:
                k = (front + w) & mask
                t[cap + k] = v
                times[k] = times[j]
                w += 1
        for i in range(w, s):
            t[cap + ((front + i) & mask)] = bot
        self._mark((front + first) & mask, s - first)
        self._span = w

    def _make_room(self) -> None:
        """The span fills every slot: compact if ``n <= 3/4 cap``, else double (pitfall 8)."""
        if 4 * self._n <= 3 * self._cap:
            self._compact()
        else:
            self._resize(2 * self._cap)

    def _shrink_if_sparse(self) -> bool:
        """After evictions: halve while ``n < 1/4 cap`` (strict; pitfall 8), not below
        ``min_capacity``. Returns True if the structure was rebuilt."""
        n = self._n
        cap = self._cap
        if 4 * n >= cap or cap <= self._min_capacity:
            return False
        new = cap
        while new > self._min_capacity and 4 * n < new:
            new >>= 1
        self._resize(new)
        return True

    def _clear(self, slot: int, k: int) -> None:
        """Set ``k`` consecutive slots from ``slot`` (circular) to ⊥. Every node whose leaves
        all lie in the range becomes ⊥ by slice assignment (no combine); only the ancestors
        of the two end leaves are left to the next flush (at most 2 log2(cap) calls)."""
        cap = self._cap
        lo = cap + slot
        hi = lo + k
        if hi <= 2 * cap:
            self._clear_leaves(lo, hi)
        else:
            self._clear_leaves(lo, 2 * cap)
            self._clear_leaves(cap, hi - cap)

    def _clear_leaves(self, lo: int, hi: int) -> None:
        t = self._tree
        self._dirty.add(lo)
        self._dirty.add(hi - 1)
        bot = _BOT
        while lo < hi:
            t[lo:hi] = [bot] * (hi - lo)
            lo = (lo + 1) >> 1  # parents whose both children are cleared
            hi >>= 1

    def _write(self, slot: int, keys: list[int], vals: list[Any]) -> None:
        """Write entries into consecutive slots from ``slot`` (circular); marks them dirty."""
        cap = self._cap
        t = self._tree
        times = self._times
        k = len(vals)
        end = slot + k
        if end <= cap:
            t[cap + slot:cap + end] = vals
            times[slot:end] = keys
        else:
            c = cap - slot
            t[cap + slot:] = vals[:c]
            t[cap:end] = vals[c:]
            times[slot:] = keys[:c]
            times[:end - cap] = keys[c:]
        self._mark(slot, k)

    # ------------------------------------------------------------------ updates
    def _insert_lifted(self, time: int, value: Any) -> None:
        self._cache = _NO_CACHE
        if self._span == self._cap:
            self._make_room()
        s = self._span
        cap = self._cap
        mask = cap - 1
        front = self._front
        times = self._times
        t = self._tree
        if not s or time >= times[(front + s - 1) & mask]:
            j = (front + s) & mask  # the paper's insert at the back
            times[j] = time
            t[cap + j] = value
            self._dirty.add(cap + j)
            self._span = s + 1
            self._n += 1
            return
        if time < times[front]:
            front = (front - 1) & mask  # a new oldest entry takes the free slot before F
            times[front] = time
            t[cap + front] = value
            self._dirty.add(cap + front)
            self._front = front
            self._span = s + 1
            self._n += 1
            return
        p = self._bisect_right(time)  # 0 < p < s: the new entry goes right before position p
        bot = _BOT
        # Nearest free slot: a hole at q >= p (or q == s, after B), or at h < p (or h == -1,
        # before F). The span is not full here, so both ends have a free slot.
        if s == self._n:
            if p <= s - p:
                right, q = False, -1
            else:
                right, q = True, s
        else:
            d = 0
            while True:
                q = p + d
                if q == s or (q < s and t[cap + ((front + q) & mask)] is bot):
                    right = True
                    break
                q = p - 1 - d
                if q == -1 or (q >= 0 and t[cap + ((front + q) & mask)] is bot):
                    right = False
                    break
                d += 1
        if right:
            if q == s:
                self._span = s + 1
            # Move logical [p, q) one step right and write the new entry at p.
            a = (front + p) & mask
            b = (front + q) & mask
            if q > p:
                if a <= b:
                    t[cap + a + 1:cap + b + 1] = t[cap + a:cap + b]
                    times[a + 1:b + 1] = times[a:b]
                else:
                    for i in range(q, p, -1):
                        dst = (front + i) & mask
                        src = (dst - 1) & mask
                        t[cap + dst] = t[cap + src]
                        times[dst] = times[src]
            times[a] = time
            t[cap + a] = value
            self._mark(a, q - p + 1)
        else:
            if q == -1:
                front = (front - 1) & mask
                self._front = front
                self._span = s + 1
                q = 0
                p += 1
            # Move logical [q + 1, p) one step left and write the new entry at p - 1.
            a = (front + q) & mask
            b = (front + p - 1) & mask
            if p - 1 > q:
                if a <= b:
                    t[cap + a:cap + b] = t[cap + a + 1:cap + b + 1]
                    times[a:b] = times[a + 1:b + 1]
                else:
                    for i in range(q, p - 1):
                        dst = (front + i) & mask
                        src = (dst + 1) & mask
                        t[cap + dst] = t[cap + src]
                        times[dst] = times[src]
            times[b] = time
            t[cap + b] = value
            self._mark(a, p - q)
        self._n += 1

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Merge a time-sorted batch into the side of the window that moves fewer entries (the
        entries younger than its oldest, or older than its youngest), dropping the holes
        there; one batched update. A rebuild (resize / compact) when neither side fits."""
        m = len(batch)
        if m == 1:
            self._insert_lifted(*batch[0])
            return
        self._cache = _NO_CACHE
        n = self._n
        cap = self._cap
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
                        self._clear((self._front + end) & (cap - 1), s - end)
                    self._span = end
                else:
                    keys, vals = self._collect(0, p1)
                    if len(vals) + m + s - p1 > cap:
                        continue
                    mkeys, mvals = _merge(keys, vals, batch)
                    start = p1 - len(mvals)  # new front, as a logical position (may be < 0)
                    front = (self._front + start) & (cap - 1)
                    if start > 0:
                        self._clear(self._front, start)
                    self._write(front, mkeys, mvals)
                    self._front = front
                    self._span = s - start
                self._n = total
                return
        keys, vals = self._collect(0, self._span)
        mkeys, mvals = _merge(keys, vals, batch)
        new = cap
        while new < total:
            new <<= 1
        self._build(mkeys, mvals, new)

    def evict(self) -> None:
        """Remove the oldest entry; :class:`EmptyWindowError` if empty."""
        n = self._n
        if not n:
            raise EmptyWindowError("evict() on an empty 'reactive' window")
        self._cache = _NO_CACHE
        cap = self._cap
        mask = cap - 1
        front = self._front
        t = self._tree
        t[cap + front] = _BOT
        self._dirty.add(cap + front)
        n -= 1
        s = self._span - 1
        front = (front + 1) & mask
        bot = _BOT
        while s and t[cap + front] is bot:  # skip holes: F stays on an entry (pitfall 11)
            front = (front + 1) & mask
            s -= 1
        self._front = front
        self._span = s
        self._n = n
        if 4 * n < cap:
            self._shrink_if_sparse()

    def remove(self, time: int) -> None:
        """Remove one entry at exactly ``time`` (the first inserted among equal times),
        anywhere in the window (non-FIFO), leaving a hole.

        Raises :class:`EntryNotFoundError` (a ``KeyError``) when no entry has that time;
        nothing changes then. Cost: O(log n) search plus one dirty leaf.
        """
        if type(time) is not int:
            time = as_time(time)
        s = self._span
        cap = self._cap
        mask = cap - 1
        front = self._front
        t = self._tree
        times = self._times
        bot = _BOT
        p = self._bisect_left(time)
        while p < s and t[cap + ((front + p) & mask)] is bot:
            p += 1
        if p == s or times[(front + p) & mask] != time:
            raise EntryNotFoundError(f"'reactive' window has no entry at time {time}")
        if p == 0:
            self.evict()
            return
        self._cache = _NO_CACHE
        j = (front + p) & mask
        t[cap + j] = bot
        self._dirty.add(cap + j)
        self._n -= 1
        if p == s - 1:
            s -= 1
            while t[cap + ((front + s - 1) & mask)] is bot:  # B stays on an entry
                s -= 1
            self._span = s
        else:
            # Ghost time of the hole: its left neighbour's. Keeps _times sorted over the span
            # and lets the next bisect_left(time) land past the hole.
            times[j] = times[(j - 1) & mask]
        if 4 * self._n < cap:
            self._shrink_if_sparse()

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
        self._cache = _NO_CACHE
        s = self._span
        p = self._bisect_right(time)
        if p >= s:
            new = self._cap
            while new > self._min_capacity:
                new >>= 1
            self._reset(new)
            return n
        removed = p - self._holes_in(0, p)
        n -= removed
        cap = self._cap
        mask = cap - 1
        front = self._front
        t = self._tree
        bot = _BOT
        while t[cap + ((front + p) & mask)] is bot:  # the new front skips holes
            p += 1
        self._n = n
        if 4 * n < cap and cap > self._min_capacity:
            keys, vals = self._collect(p, s)
            new = cap
            while new > self._min_capacity and 4 * n < new:
                new >>= 1
            self._build(keys, vals, new)
            return removed
        self._clear(front, p)
        self._front = (front + p) & mask
        self._span = s - p
        return removed

    # ------------------------------------------------------------------ queries
    def _aggregate(self) -> Any:
        """The raw window aggregate (``_BOT`` when empty), after flushing the batch."""
        cache = self._cache
        if cache is not _NO_CACHE:
            return cache
        if not self._n:
            return _BOT
        self._flush()
        front = self._front
        end = front + self._span
        cap = self._cap
        if end <= cap:
            agg = self._tree[1]
        else:
            # Inverted buffer (section 5.1.2): suffix(F) (+) prefix(B), never the root.
            agg = self._combine(self._suffix(front), self._prefix(end - cap - 1))
        self._cache = agg
        return agg

    def query(self) -> Any:
        """``lower(v_oldest (+) ... (+) v_youngest)``; ``lower(identity)`` when empty."""
        agg = self._aggregate()
        return self._lower(self._identity if agg is _BOT else agg)

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
        self._flush()
        cap = self._cap
        a = (self._front + p) & (cap - 1)
        b = a + s - p
        if b <= cap:
            agg = self._range(a, b)
        else:
            left = self._range(a, cap)
            right = self._range(0, b - cap)
            agg = right if left is _BOT else left if right is _BOT else self._combine(left, right)
        return self._lower(self._identity if agg is _BOT else agg)

    # ------------------------------------------------------------------ debugging
    def _layout(self) -> tuple[int, int, list[Any]]:
        """``(F, B, leaves)`` with ``None`` for ⊥ slots (tests of the paper's Figure 5)."""
        cap = self._cap
        leaves = [None if v is _BOT else v for v in self._tree[cap:]]
        back = (self._front + self._span - 1) & (cap - 1)
        return self._front, back, leaves

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` unless the structure is consistent: capacity a power of
        two within bounds, span and ends, ordering of times (ghost times included), ⊥
        outside the span, the shrink threshold, every tree node with no pending (dirty) leaf
        below it equal to the fold of its leaves (all nodes after a query), and a cached
        aggregate equal to the fold of the window. Values are compared with ``==``. Changes
        nothing (no flush); costs up to ``cap + n`` combine calls. For tests."""

        def fail(msg: str) -> None:
            raise AssertionError(f"reactive invariant: {msg}")

        bot = _BOT
        cap = self._cap
        if not _power_of_two(cap) or cap < self._min_capacity:
            fail(f"capacity {cap}")
        t = self._tree
        if len(t) != 2 * cap or len(self._times) != cap:
            fail("array sizes")
        n, s, front = self._n, self._span, self._front
        if not (0 <= n <= s <= cap and 0 <= front < cap):
            fail(f"n={n} span={s} front={front} cap={cap}")
        if (n == 0) != (s == 0):
            fail("empty window with a span")
        mask = cap - 1
        slots = [(front + i) & mask for i in range(s)]
        leaves = [t[cap + j] for j in slots]
        if s and (leaves[0] is bot or leaves[-1] is bot):
            fail("an end of the span is a hole")
        if sum(v is not bot for v in leaves) != n:
            fail("entry count")
        keys = [self._times[j] for j in slots]
        if any(a > b for a, b in pairwise(keys)):
            fail(f"times out of order: {keys}")
        inside = set(slots)
        if any(t[cap + j] is not bot for j in range(cap) if j not in inside):
            fail("a slot outside the span is not ⊥")
        if 4 * n < cap and cap > max(self._min_capacity, self._initial_capacity):
            fail(f"{n} entries in {cap} slots (below 1/4)")
        if any(not cap <= h < 2 * cap for h in self._dirty):
            fail("a dirty index is not a leaf")
        stale: set[int] = set()
        for h in self._dirty:
            h >>= 1
            while h and h not in stale:
                stale.add(h)
                h >>= 1
        combine = self._combine
        fresh = t[:]
        for v in range(cap - 1, 0, -1):
            left, right = fresh[2 * v], fresh[2 * v + 1]
            want = right if left is bot else left if right is bot else combine(left, right)
            fresh[v] = want
            got = t[v]
            if v not in stale and not (got is want or (got is not bot and want is not bot
                                                       and got == want)):
                fail(f"node {v} is {got!r}, its leaves fold to {want!r}")
        cache = self._cache
        if cache is not _NO_CACHE:
            values = [v for v in leaves if v is not bot]
            acc = values[0] if values else bot
            for v in values[1:]:
                acc = combine(acc, v)
            if acc is bot or not cache == acc:  # noqa: SIM201 (only == is required)
                fail(f"cached aggregate {cache!r}, the window folds to {acc!r}")


def _merge(keys: list[int], vals: list[Any],
           batch: list[tuple[int, Any]]) -> tuple[list[int], list[Any]]:
    """Stable merge of window entries with a time-sorted batch (window entries first on equal
    times: they were inserted earlier). Timsort merges the two runs in linear time."""
    if not keys:
        return [k for k, _ in batch], [v for _, v in batch]
    merged = list(zip(keys, vals, strict=True))
    merged += batch
    merged.sort(key=_first)
    return [k for k, _ in merged], [v for _, v in merged]
