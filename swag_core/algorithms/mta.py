"""Monoid Tree Aggregator: Log MTA and Amortized MTA (Villalba, Berral, Carrera, IEEE TPDS
2018, DOI 10.1109/TPDS.2018.2868960). Where the printed pseudocode is wrong, the comments
below say what this code does instead and why.

Both keep the window as the paper's *list of level queues* (section 4.1.1): level 0 holds the
leaves (the entries' lifted values, oldest first) and every element of level ``l + 1`` is the
aggregate of one *pair* of sibling elements of level ``l``. A level is a Python list indexed by
*absolute* position (``base`` is the absolute index of its first slot): element ``x`` of a
level is in pair ``x >> 1`` (e0 when ``x`` is even, e1 when odd) and the first live position
``lo`` makes the paper's "∅" slots implicit: a first pair ``<∅, *>`` is an odd ``lo``, a last
pair ``<*, ∅>`` an even last position. No sentinel value ever reaches ``combine``.
``remove_pairs(k)`` is a move of ``lo`` (O(1)); the dead prefix of each list is deleted once
it is as long as the live part (amortized O(1), no ``combine`` calls).

* :class:`LogMta` (section 4.1) keeps one tree, every aggregate up to date: the root level is
  a single pair and the result is the combine of that pair. A new root
  level is created with both old-top pairs as children (corrected Algorithm 1), so levels are
  *relatively* aligned: ``parent(x) = (x >> 1) + sh[l]`` with a per-level shift ``sh``. A root
  with one live element is trimmed, so the height stays minimal.
* :class:`Amta` (section 4.2) keeps a *forest*: the last pair of every level is the root of its
  own tree (Invariant 3) and only completed pairs get a parent, so insertion is amortized O(1).
  Levels are globally aligned (``parent(x) = x >> 1``, live range of level ``l`` starts at
  ``lo0 >> l``), which keeps the height at most ``log2(n) + 1`` because every level below the
  top holds a complete subtree. The result pair ``(R0, R1)`` and the stack ``S`` give the result
  in O(1) and single evictions in amortized O(1) (Algorithms 3 to 7, corrected).

Both implement the paper's user-programmable Window Slide Policy as :meth:`enforce`, a
root-to-leaf search (Algorithm 2, corrected as the search code says), and override
``bulk_evict`` with an O(log n) prefix removal (the count comes from a ``bisect`` on the
times, so it costs no ``combine`` call at all).
"""

from __future__ import annotations

from abc import abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final

from swag_core.aggregation import Aggregation
from swag_core.algorithms._queues import COMPACT_MIN, EMPTY
from swag_core.errors import EmptyWindowError, PolicyError
from swag_core.window import Window, as_time

#: A slide policy: ``policy(total, agg_of_prefix) -> bool`` on raw (un-lowered) aggregates.
Policy = Callable[[Any, Any], Any]

#: The parent shifts of a tree without compaction offsets (Amta's pairs below the top): one
#: per level, more levels than 2**64 entries can have.
_NO_SHIFTS: Final = (0,) * 65


class _MtaBase(Window):
    """State and operations shared by :class:`LogMta` and :class:`Amta`.

    ``_t`` holds the entries' times, indexed like level 0 (``_v[0]``); ``_v[l]`` is level
    ``l`` and ``_base[l]`` the absolute index of ``_v[l][0]``; ``_lo0`` is the absolute index
    of the oldest live leaf. An empty window is always in the freshly cleared state, so
    ``_t`` is non-empty exactly when the window is.
    """

    in_order: ClassVar[bool] = True
    range_queries: ClassVar[bool] = True

    _t: list[int]
    _v: list[list[Any]]
    _base: list[int]
    _lo0: int

    def __init__(self, aggregation: Aggregation) -> None:
        super().__init__(aggregation)
        self._clear()

    # ------------------------------------------------------------------ subclass hooks
    def _clear(self) -> None:
        """Reset to the empty state (subclasses reset their own state too)."""
        self._t = []
        self._v = [[]]
        self._base = [0]
        self._lo0 = 0

    @abstractmethod
    def _drop(self, k: int) -> None:
        """Remove the ``k`` oldest entries, ``0 < k < len(self)``."""

    @abstractmethod
    def _suffix(self, s: int) -> Any:
        """Raw aggregate of the leaves ``[s, end)``, ``_lo0 < s < end``."""

    @abstractmethod
    def _live_range(self, level: int) -> tuple[int, int]:
        """Absolute ``[first, end)`` of the live elements of ``level``."""

    @abstractmethod
    def _build_above(self, changed: int) -> None:
        """After a batch was appended to the leaves from absolute index ``changed`` on, give
        the upper levels the state the single inserts would have reached."""

    #: Batches shorter than this are inserted one by one (cheaper than the level rebuild).
    _bulk_min: ClassVar[int]

    # ------------------------------------------------------------------ size and times
    def __len__(self) -> int:
        return self._base[0] + len(self._t) - self._lo0

    def oldest(self) -> int:
        """Time of the oldest entry; :class:`EmptyWindowError` if empty."""
        t = self._t
        if not t:
            raise EmptyWindowError(f"oldest() of an empty {self.name!r} window")
        return t[self._lo0 - self._base[0]]

    def youngest(self) -> int:
        """Time of the youngest entry; :class:`EmptyWindowError` if empty."""
        t = self._t
        if not t:
            raise EmptyWindowError(f"youngest() of an empty {self.name!r} window")
        return t[-1]

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` pairs, oldest first (a snapshot)."""
        i = self._lo0 - self._base[0]
        return zip(self._t[i:], self._v[0][i:], strict=True)

    # ------------------------------------------------------------------ public operations
    def insert(self, time: int, value: Any) -> None:
        """Insert raw ``value`` at ``time`` (see :meth:`Window.insert`; same checks)."""
        if type(time) is not int:
            time = as_time(time)
        t = self._t
        if t and time < t[-1]:
            raise self._out_of_order(time, t[-1])
        self._insert_lifted(time, self._lift(value))

    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Append the batch to the leaves, then rebuild only the changed part of each level
        above (see the class docstrings for the costs)."""
        if len(batch) < self._bulk_min:
            super()._bulk_insert_lifted(batch)
            return
        leaves = self._v[0]
        changed = self._base[0] + len(leaves)
        self._t.extend([time for time, _ in batch])
        leaves.extend([value for _, value in batch])
        try:
            self._build_above(changed)
        except BaseException as error:
            self._fail("bulk_insert", error)
            raise

    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed.

        The count is a ``bisect`` on the times; the removal costs O(log n) ``combine`` calls
        whatever the number removed (see the class docstrings for the constants).
        """
        if type(time) is not int:
            time = as_time(time)
        i = self._lo0 - self._base[0]
        k = bisect_right(self._t, time, i) - i
        if k:
            self._evict_count(k, "bulk_evict")
        return k

    def _evict_count(self, k: int, operation: str) -> None:
        """Evict the ``k`` oldest entries for ``operation`` (an interruption breaks the
        window: the removal writes as it goes)."""
        if k >= len(self):
            self._clear()
            return
        try:
            self._drop(k)
        except BaseException as error:
            self._fail(operation, error)
            raise

    def query_since(self, time: int) -> Any:
        """Lowered aggregate of the entries with ``entry.time >= time``, in O(log n) combines.

        One structure can thus answer several ranges over the same stream (range sharing).
        """
        if type(time) is not int:
            time = as_time(time)
        t = self._t
        if not t:
            return self._lower(self._identity)
        i0 = self._lo0 - self._base[0]
        i = bisect_left(t, time, i0)
        if i == len(t):
            return self._lower(self._identity)
        if i == i0:
            return self.query()
        return self._lower(self._suffix(self._base[0] + i))

    def _check_policy(self, policy: Policy) -> None:
        if not callable(policy):
            raise TypeError(f"enforce() needs a callable policy(total, prefix), got {policy!r}")

    def _not_monotone(self, failed: int, n: int) -> PolicyError:
        return PolicyError(
            f"slide policy is not prefix-monotone: it holds for the whole window ({n} entries) "
            f"but not for the prefix of {failed} entries; nothing was evicted")

    def _suffix_up(self, s: int, top: int, shifts: Sequence[int]) -> Any:
        """Raw aggregate of leaf ``s`` and the right siblings on its path up to ``top``
        (Algorithm 3 mirrored); the parent of ``x`` at level ``l - 1`` is
        ``(x >> 1) + shifts[l]``."""
        v = self._v
        base = self._base
        combine = self._combine
        acc = v[0][s - base[0]]
        x = s
        level = 0
        while True:
            row = v[level]
            j = x + 1 - base[level]
            if not x & 1 and j < len(row):
                acc = combine(acc, row[j])
            if level == top:
                return acc
            level += 1
            x = (x >> 1) + shifts[level]

    def _compact(self, level: int, lo: int) -> None:
        """Delete the dead prefix of ``level`` (first live absolute index ``lo``) if it is
        long enough (amortized O(1), no combine)."""
        row = self._v[level]
        i = lo - self._base[level]
        if i >= COMPACT_MIN and i + i >= len(row):
            del row[:i]
            self._base[level] += i
            if level == 0:
                del self._t[:i]

    # ------------------------------------------------------------------ introspection
class LogMta(_MtaBase):
    """Log MTA: one pairwise tree kept fully up to date (paper section 4.1).

    ``combine`` calls, with L = log2(n) + 2: ``query`` 0 (the root pair's aggregate is
    kept); ``insert`` at most L (refresh of the rightmost branch, corrected Algorithm 1);
    ``evict`` and ``bulk_evict`` of any number of entries at most L (leftmost-branch
    recompute, Algorithm 2 lines 21-27); :meth:`enforce` at most L for the search plus the
    removal; ``query_since`` at most L; ``bulk_insert`` of m entries about m + L (the changed
    part of each level is rebuilt once, not per entry).

    The height h is log2(n) + 1 while the window grows. When it shrinks, the root is trimmed
    as soon as its older child is gone, so h can stay at log2 of the recent
    maximum size for a while; the levels above log2(n) + 1 then hold single-element pairs
    only, which cost loop steps but no ``combine`` call (hence the bound L above).
    """

    name: ClassVar[str] = "log_mta"
    complexity: ClassVar[str] = ("O(log n) per insert and evict; O(1) query; bulk_evict, "
                                 "enforce and query_since O(log n) whatever the number evicted")

    _lo: list[int]
    _sh: list[int]
    _total: Any

    def _clear(self) -> None:
        super()._clear()
        self._lo = [0]      # first live absolute index of level l >= 1 (index 0 unused)
        self._sh = [0]      # parent(x at level l - 1) = (x >> 1) + _sh[l]
        self._total = EMPTY

    def _live_range(self, level: int) -> tuple[int, int]:
        lo = self._lo0 if level == 0 else self._lo[level]
        return lo, self._base[level] + len(self._v[level])

    # ------------------------------------------------------------------ updates
    def _insert_lifted(self, time: int, value: Any) -> None:
        try:
            self._t.append(time)
            v = self._v
            below = v[0]
            below.append(value)
            total = self._total
            if total is EMPTY:
                self._total = value
                return
            combine = self._combine
            base = self._base
            lo = self._lo
            sh = self._sh
            bb = base[0]
            low = self._lo0
            x = bb + len(below) - 1
            new = True
            # Corrected Algorithm 1: write the new leaf's ancestors bottom-up. While the element
            # written last is new and even (a pair <x, ∅>), its parent is new too and equals it;
            # from the first odd one on, ancestors exist and are recomputed from their pair.
            for level in range(1, len(v)):
                i = x - bb
                if x & 1:
                    val = combine(below[i - 1], below[i]) if x > low else below[i]
                    new = False
                else:
                    val = below[i]
                x = (x >> 1) + sh[level]
                below = v[level]
                bb = base[level]
                if new:
                    below.append(val)
                else:
                    below[x - bb] = val
                low = lo[level]
            hi = bb + len(below)
            if (low >> 1) != ((hi - 1) >> 1):
                # The root level now holds two pairs: a new root pair over both. The
                # old root pair is unchanged, so its aggregate is the old total.
                young = below[-1]
                v.append([total, young])
                base.append(0)
                lo.append(0)
                sh.append(-(low >> 1))
                self._total = combine(total, young)
            else:
                # A root level above the leaves always has two live elements (the height is
                # minimal) and an insert cannot leave a lone leaf: the root pair is full.
                i = low - bb
                self._total = combine(below[i], below[i + 1])
        except BaseException as error:
            self._fail("insert", error)
            raise

    _bulk_min: ClassVar[int] = 4

    def _build_above(self, changed: int) -> None:
        """Rebuild only the changed part of each level (about m + h ``combine`` calls for m
        entries instead of m * h); ``changed`` is the first changed position of the current
        level."""
        v = self._v
        base = self._base
        lo = self._lo
        sh = self._sh
        combine = self._combine
        h = len(v) - 1
        level = 0
        while True:
            row = v[level]
            rb = base[level]
            hi = rb + len(row)
            low = self._lo0 if level == 0 else lo[level]
            if level == h:
                if (low >> 1) == ((hi - 1) >> 1):
                    break                         # this level is a single pair: the root
                v.append([])                      # a new root level over all its pairs
                base.append(0)
                lo.append(0)
                sh.append(-(low >> 1))
                h += 1
                changed = low
            up = v[level + 1]
            ub = base[level + 1]
            shift = sh[level + 1]
            n_up = len(up)
            for q in range((changed >> 1), ((hi - 1) >> 1) + 1):
                e0 = q + q
                if e0 < low:
                    val = row[e0 + 1 - rb]
                elif e0 + 1 >= hi:
                    val = row[e0 - rb]
                else:
                    val = combine(row[e0 - rb], row[e0 + 1 - rb])
                j = q + shift - ub
                if j < n_up:
                    up[j] = val
                else:
                    up.append(val)
                    n_up += 1
            changed = (changed >> 1) + shift
            level += 1
        i = low - rb
        self._total = combine(row[i], row[i + 1]) if hi - low == 2 else row[i]

    def evict(self) -> None:
        """Remove the oldest entry (O(log n) combines); :class:`EmptyWindowError` if empty."""
        n = len(self)
        if n > 1:
            try:
                self._drop(1)
            except BaseException as error:
                self._fail("evict", error)
                raise
        elif n == 1:
            self._clear()
        else:
            raise self._empty_evict()

    def _drop(self, k: int) -> None:
        v = self._v
        base = self._base
        lo = self._lo
        sh = self._sh
        x = self._lo0 + k
        self._lo0 = x
        h = len(v) - 1
        # remove_pairs on every level (Algorithm 2 lines 4-8, with the paper's rm count
        # replaced by the position arithmetic it amounts to)
        for level in range(1, h + 1):
            x = (x >> 1) + sh[level]
            lo[level] = x
        # a root with one live element is redundant (also covers Alg. 2 line 13)
        while h and lo[h] == base[h] + len(v[h]) - 1:
            v.pop()
            base.pop()
            lo.pop()
            sh.pop()
            h -= 1
        # leftmost-branch recompute (Algorithm 2 lines 21-27)
        combine = self._combine
        low = self._lo0
        below = v[0]
        i = low - base[0]
        if i >= COMPACT_MIN and i + i >= len(below):
            self._compact(0, low)
        bb = base[0]
        for level in range(1, h + 1):
            i = low - bb
            if not low & 1 and i + 1 < len(below):
                val = combine(below[i], below[i + 1])
            else:
                val = below[i]
            low = lo[level]
            below = v[level]
            i = low - base[level]
            if i >= COMPACT_MIN and i + i >= len(below):
                self._compact(level, low)
            bb = base[level]
            below[low - bb] = val
        i = low - bb
        self._total = combine(below[i], below[i + 1]) if i + 1 < len(below) else below[i]

    def query(self) -> Any:
        """``lower`` of the root pair's aggregate; ``lower(identity)`` when empty. O(1)."""
        total = self._total
        return self._lower(self._identity if total is EMPTY else total)

    # ------------------------------------------------------------------ slide policy
    def enforce(self, policy: Policy) -> int:
        """Evict the longest prefix P with ``policy(total, agg(P))``; returns how many.

        ``total`` is the raw aggregate of the whole window and ``agg(P)`` the raw aggregate of
        the candidate prefix (the paper's WSP, section 4.1.3, argument order of its
        listings). The policy must be *prefix-monotone*: if it holds for a prefix it holds for
        every shorter one. The search descends from the root (Algorithm 2, corrected): at most
        h + 1 ``combine`` and h + 2 policy calls, whatever the number evicted, then the
        removal (h + 1 combines). The whole window may be evicted (the policy is also asked
        about the whole window, ``agg(P) = total``).

        Raises :class:`~swag_core.errors.PolicyError`, evicting nothing, when the descent
        proves the policy is not monotone (it held for the whole window but not for a shorter
        prefix it checked).

        Examples (``Count``, ``Max``, ``Sum``, ``Last`` from :mod:`swag_core.aggregations`;
        a :func:`swag_core.product` aggregate is a tuple in the order of its mapping, so one
        window carries both the result and what the policy needs)::

            # evict while the window's count exceeds N (paper Listing 3, fixed size):
            w = make_window("amta", product({"n": Count(), "max": Max()}))
            w.enforce(lambda total, p: total[0] - p[0] >= N)
            # time-based (Listing 1): entries carry their time, Max over it; evict the
            # prefixes whose newest entry is at least R older than the window's newest:
            w = make_window("amta", product({"t": Max().on(lambda r: r.time),
                                             "mean": Mean().on(lambda r: r.value)}))
            w.enforce(lambda total, p: total[0] - p[0] >= R)
            # keep the newest entries whose sum is <= 10 (running example, section 3.2):
            # with (sum, last), P goes while what stays after it (plus its last
            # entry) is still above 10; Last's raw aggregate is a 1-tuple, Sum's an exact
            # fixed-point int (docs/aggregations.md) that its lower turns into the number
            total_sum = Sum()
            w = make_window("amta", product({"sum": total_sum, "last": Last()}))
            w.enforce(lambda total, p: total_sum.lower_fn(total[0] - p[0]) + p[1][0] > 10)
            # drop everything older than the maximum (Experiment 3), with Max alone:
            w = make_window("amta", Max())
            w.enforce(lambda total, p: p < total)
        """
        self._check_policy(policy)
        n = len(self)
        if not n:
            return 0
        total = self._total
        k = self._search(policy, total)
        if policy(total, total):
            if k != n - 1:
                raise self._not_monotone(k + 1, n)
            k = n
        if k:
            self._evict_count(k, "enforce")
        return k

    def _search(self, policy: Policy, total: Any) -> int:
        """Root-to-leaf search for the longest prefix that satisfies ``policy``, assuming the
        whole window does not (read-only). At each level the region is one pair whose right
        end is known to fail; its e0 is checked with the removed-so-far aggregate on its left
        (Algorithm 2 lines 10-12): out -> go right, else go left."""
        v = self._v
        base = self._base
        lo = self._lo
        sh = self._sh
        combine = self._combine
        level = len(v) - 1
        row = v[level]
        rb = base[level]
        a = self._lo0 if level == 0 else lo[level]
        b = rb + len(row) - 1
        acc = EMPTY
        while True:
            if b > a:
                va = row[a - rb]
                cand = va if acc is EMPTY else combine(acc, va)
                if policy(total, cand):
                    acc = cand
                    x = b
                else:
                    x = a
            else:
                x = a
            if not level:
                return x - self._lo0
            q = x - sh[level]
            level -= 1
            row = v[level]
            rb = base[level]
            a = q + q
            b = a + 1
            low = self._lo0 if level == 0 else lo[level]
            if a < low:
                a = low
            if b >= rb + len(row):
                b = a

    # ------------------------------------------------------------------ range queries
    def _suffix(self, s: int) -> Any:
        return self._suffix_up(s, len(self._v) - 1, self._sh)

    # ------------------------------------------------------------------ invariants
class Amta(_MtaBase):
    """Amortized MTA: a forest of pairwise trees, result pair and stack (paper section 4.2).

    ``combine`` calls: ``query`` at most 1 (cached); ``insert`` 1 for R1 plus 1 per completed
    pair (about 1 amortized) plus an O(log n) rebuild of (R0, S, R1) when the top pair is
    completed (rare: amortized O(1)); ``evict`` pops S into R0 and pushes one entry per newly
    exposed full head pair (amortized O(1); O(log n) when the oldest tree is used up). A
    steady insert + evict + query round costs about 4-6 calls. ``bulk_evict`` of any number:
    at most about 3 log2(n) (recompute of S and R0, and of R1 if whole trees went).
    :meth:`enforce` checks the head one entry at a time for up to ``bit_length(n)`` entries
    and then switches to the O(log n) forest search (section 4.2.4).
    """

    name: ClassVar[str] = "amta"
    complexity: ClassVar[str] = ("O(1) amortized insert and evict (O(log n) worst case), O(1) "
                                 "query; bulk_evict, enforce and query_since O(log n) whatever "
                                 "the number evicted")

    _r0: Any
    _r1: Any
    _stack: list[Any]
    _cache: Any

    def _clear(self) -> None:
        super()._clear()
        self._r0 = EMPTY        # aggregate of the oldest (leftmost) tree
        self._r1 = EMPTY        # aggregate of all the younger trees
        self._stack = []         # S: leftmost tree minus its head leaf on top
        self._cache = EMPTY     # R0 (+) R1

    def _live_range(self, level: int) -> tuple[int, int]:
        return self._lo0 >> level, self._base[level] + len(self._v[level])

    def _raw_total(self) -> Any:
        total = self._cache
        if total is EMPTY:
            r0 = self._r0
            r1 = self._r1
            total = r0 if r1 is EMPTY else self._combine(r0, r1)
            self._cache = total
        return total

    def _first_leaf(self, level: int) -> int:
        """Absolute index of the first leaf of tree(``level``), the tree whose root is the
        tail pair of ``level`` (a level below the top)."""
        return ((self._base[level] + len(self._v[level]) - 1) >> 1) << (level + 1)

    def _tail_tree(self, level: int) -> Any:
        """Aggregate of tree(``level``): the tail pair of ``level`` (below the top), whose e0
        is live; a lone e0 when the last element is even."""
        row = self._v[level]
        if (self._base[level] + len(row)) & 1:
            return row[-1]
        return self._combine(row[-2], row[-1])

    # ------------------------------------------------------------------ result pair
    def _left(self) -> None:
        """compute_left_result (Algorithm 4): S and R0 from the head pairs, top level down.
        Reads only e1 of full head pairs and the head leaf, never stale."""
        v = self._v
        base = self._base
        lo0 = self._lo0
        combine = self._combine
        stack = self._stack
        stack.clear()
        top = EMPTY
        for level in range(len(v) - 1, -1, -1):
            x = lo0 >> level
            row = v[level]
            i = x - base[level] + 1
            if not x & 1 and i < len(row):
                b = row[i]
                top = b if top is EMPTY else combine(b, top)   # b is older
                stack.append(top)
        head = v[0][lo0 - base[0]]
        self._r0 = head if top is EMPTY else combine(head, top)

    def _right(self) -> None:
        """compute_right_result (Algorithm 5, corrected to cover every level below the top):
        R1 from scratch over the tail pairs of every level below the top, older (higher)
        trees on the left."""
        combine = self._combine
        tail_tree = self._tail_tree
        r1 = EMPTY
        for level in range(len(self._v) - 1):
            tree = tail_tree(level)
            r1 = tree if r1 is EMPTY else combine(tree, r1)
        self._r1 = r1

    def _refresh_left(self) -> None:
        """Recompute the leftmost branch bottom-up, the precondition of a bulk search
        (section 4.2.4; single evictions leave it stale on purpose: they never read it)."""
        v = self._v
        base = self._base
        lo0 = self._lo0
        combine = self._combine
        below = v[0]
        low = lo0
        for level in range(1, len(v)):
            i = low - base[level - 1]
            val = (combine(below[i], below[i + 1]) if not low & 1 and i + 1 < len(below)
                   else below[i])
            below = v[level]
            low = lo0 >> level
            below[low - base[level]] = val

    # ------------------------------------------------------------------ updates
    def _insert_lifted(self, time: int, value: Any) -> None:
        try:
            self._t.append(time)
            v = self._v
            row = v[0]
            row.append(value)
            self._cache = EMPTY
            if self._r0 is EMPTY:
                self._r0 = value
                return
            combine = self._combine
            r1 = self._r1
            self._r1 = value if r1 is EMPTY else combine(r1, value)   # Algorithm 3 line 3
            base = self._base
            h = len(v) - 1
            x = base[0] + len(row) - 1
            level = 0
            # Algorithm 3: a pair gets its parent only when it stops being the tail (Invariant 3)
            while True:
                if x & 1:
                    # the new element completed the tail pair; if that is the top pair, younger
                    # trees merged into the leftmost one: rebuild R0, S and R1 (lines 18-20)
                    if level == h:
                        self._left()
                        self._right()
                    return
                i = x - base[level]
                if x - 2 >= self._lo0 >> level:
                    val = combine(row[i - 2], row[i - 1])
                else:
                    val = row[i - 1]                  # old top pair <∅, x> (may be stale, P11)
                x = (x >> 1) - 1                      # parent of the previous tail pair
                if level == h:
                    v.append([val])                   # new top level (line 17): R0, S, R1 keep
                    base.append(x)
                    return
                level += 1
                row = v[level]
                row.append(val)                       # at position x (Invariant 3)
        except BaseException as error:
            self._fail("insert", error)
            raise

    _bulk_min: ClassVar[int] = 8

    def _build_above(self, changed: int) -> None:
        """Give every newly completed non-tail pair its parent level by level (the state m
        single inserts reach), then rebuild R1, and R0 and S if the top level changed: about
        m + 3 log2(n) ``combine`` calls for m entries."""
        v = self._v
        base = self._base
        combine = self._combine
        lo0 = self._lo0
        self._cache = EMPTY
        h = old_h = len(v) - 1
        top_changed = self._r0 is EMPTY
        level = 0
        while True:
            row = v[level]
            rb = base[level]
            tail = (rb + len(row) - 1) >> 1       # the tail pair has no parent (Invariant 3)
            low = lo0 >> level
            if level == h:
                if (low >> 1) == tail:
                    break                         # a single pair: the top
                v.append([])                      # a new top level
                base.append(low >> 1)
                h += 1
            up = v[level + 1]
            first = base[level + 1] + len(up)     # first pair without a parent
            if first >= tail:
                break                             # nothing new above this level
            for q in range(first, tail):
                e0 = q + q
                if e0 < low:
                    up.append(row[e0 + 1 - rb])   # head pair <∅, x> (x may be stale, P11)
                else:
                    up.append(combine(row[e0 - rb], row[e0 + 1 - rb]))
            if level + 1 >= old_h:
                top_changed = True
            level += 1
        if top_changed:
            self._left()
        self._right()

    def evict(self) -> None:
        """Remove the oldest entry (Algorithms 6 and 7, corrected): amortized O(1) combines;
        :class:`EmptyWindowError` if empty."""
        v = self._v
        base = self._base
        x = self._lo0
        row = v[0]
        n = base[0] + len(row) - x
        if n <= 1:
            if n == 1:
                self._clear()
                return
            raise self._empty_evict()
        try:
            self._lo0 = x + 1
            self._cache = EMPTY
            stack = self._stack
            self._r0 = stack.pop() if stack else EMPTY
            h = len(v) - 1
            rb = base[0]
            exposed: list[Any] | None = None
            level = 0
            while True:
                hi = rb + len(row)
                if not x & 1 and x + 1 < hi:
                    break                             # full head pair: e0 <- ∅ (Alg. 6 line 13)
                if level == h:
                    # the leftmost tree is used up: drop the top level and rebuild
                    v.pop()
                    base.pop()
                    self._left()
                    self._right()
                    for lv in range(h):
                        self._compact(lv, self._lo0 >> lv)
                    return
                if x + 2 < hi:                        # new full head pair (Alg. 6 lines 8-10)
                    if exposed is None:
                        exposed = [row[x + 2 - rb]]
                    else:
                        exposed.append(row[x + 2 - rb])
                x >>= 1
                level += 1
                row = v[level]
                rb = base[level]
            if exposed:
                # update_stack (Algorithm 7): highest level first
                combine = self._combine
                top = stack[-1] if stack else EMPTY
                for b in reversed(exposed):
                    top = b if top is EMPTY else combine(b, top)
                    stack.append(top)
            lo0 = self._lo0
            for lv in range(level + 1):
                i = (lo0 >> lv) - base[lv]
                if i >= COMPACT_MIN and i + i >= len(v[lv]):
                    self._compact(lv, lo0 >> lv)
        except BaseException as error:
            self._fail("evict", error)
            raise

    def _drop(self, k: int) -> None:
        if k <= len(self._v):
            evict = self.evict
            for _ in range(k):
                evict()
            return
        v = self._v
        base = self._base
        f = self._lo0 + k
        h = len(v) - 1
        # the tree holding leaf f: tree(m) starts at the first leaf of level m's tail pair
        m = h
        while m:
            if f < self._first_leaf(m - 1):
                break
            m -= 1
        if m < h:
            del v[m + 1:]
            del base[m + 1:]
        self._lo0 = f
        self._cache = EMPTY
        for level in range(m + 1):
            self._compact(level, f >> level)
        self._left()
        if m < h:
            self._right()

    def query(self) -> Any:
        """``lower(R0 (+) R1)``, cached until the next change; ``lower(identity)`` when
        empty. O(1)."""
        total = self._cache
        if total is EMPTY:
            if not self._t:
                return self._lower(self._identity)
            total = self._raw_total()
        return self._lower(total)

    # ------------------------------------------------------------------ slide policy
    def enforce(self, policy: Policy) -> int:
        """Evict the longest prefix P with ``policy(total, agg(P))``; returns how many.

        Same contract and examples as :meth:`LogMta.enforce` (raw aggregates, prefix-monotone
        policy, :class:`~swag_core.errors.PolicyError` when a violation is detected, nothing
        evicted then). Section 4.2.4: the head is checked one entry at a time (cumulative
        prefix, one ``combine`` per check); after ``bit_length(n)`` entries that all go, the
        search switches to the forest: whole trees oldest first, then Algorithm 2 inside the
        first tree that does not go. Constant-size windows thus cost amortized
        O(1) per call and a bulk eviction of any size O(log n).
        """
        self._check_policy(policy)
        n = len(self)
        if not n:
            return 0
        total = self._raw_total()
        leaves = self._v[0]
        i0 = self._lo0 - self._base[0]
        limit = min(n, n.bit_length())
        combine = self._combine
        acc = EMPTY
        k = 0
        while k < limit:
            val = leaves[i0 + k]
            cand = val if acc is EMPTY else combine(acc, val)
            if not policy(total, cand):
                break
            acc = cand
            k += 1
        whole_checked = k + 1 >= n          # prefix k + 1 failed (or every prefix held)
        if k == limit and k < n:
            k = self._search(policy, total, k)
            whole_checked = False
        if not whole_checked and policy(total, total):
            if k != n - 1:
                raise self._not_monotone(k + 1, n)
            k = n
        if k:
            self._evict_count(k, "enforce")
        return k

    def _search(self, policy: Policy, total: Any, known: int) -> int:
        """Forest search for the longest prefix satisfying ``policy``, given that the first
        ``known`` prefixes hold (not asked again) and assuming the whole window does not.
        Only mutation: the leftmost branch is refreshed (same contents)."""
        v = self._v
        base = self._base
        lo0 = self._lo0
        combine = self._combine
        limit = lo0 + known
        h = len(v) - 1
        acc = EMPTY
        j = h
        while j:                                  # whole trees, oldest first
            end = self._first_leaf(j - 1)
            tree = self._r0 if j == h else self._tail_tree(j)
            cand = tree if acc is EMPTY else combine(acc, tree)
            if end <= limit or policy(total, cand):
                acc = cand
                j -= 1
            else:
                break
        if j == h:
            self._refresh_left()
        level = j
        row = v[level]
        rb = base[level]
        hi = rb + len(row)
        a = lo0 >> level if level == h else ((hi - 1) >> 1) << 1
        b = min(a | 1, hi - 1)
        # Algorithm 2 inside tree(j): the loop of LogMta._search without its shifts and with
        # the known prefix. One shared loop for both made each search 8-11% slower (the
        # known check and the per-level offsets of the other class), so each keeps its own.
        while True:                               # Algorithm 2 inside tree(j)
            if b > a:
                va = row[a - rb]
                cand = va if acc is EMPTY else combine(acc, va)
                if ((a + 1) << level) <= limit or policy(total, cand):
                    acc = cand
                    x = b
                else:
                    x = a
            else:
                x = a
            if not level:
                return x - lo0
            level -= 1
            row = v[level]
            rb = base[level]
            a = x + x                             # children: a non-tail, hence full, pair
            b = a + 1
            low = lo0 >> level
            if a < low:
                a = low

    # ------------------------------------------------------------------ range queries
    def _suffix(self, s: int) -> Any:
        combine = self._combine
        h = len(self._v) - 1
        j = h
        while j:
            if s < self._first_leaf(j - 1):
                break
            j -= 1
        acc = self._suffix_up(s, j, _NO_SHIFTS)   # up to tree(j)'s root pair
        if j == h:
            r1 = self._r1
            return acc if r1 is EMPTY else combine(acc, r1)
        for level in range(j - 1, -1, -1):       # the younger trees, oldest first
            acc = combine(acc, self._tail_tree(level))
        return acc

    # ------------------------------------------------------------------ invariants
