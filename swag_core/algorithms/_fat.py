"""FlatFAT: the flat, pointer-less fixed-size aggregation tree of the Reactive Aggregator.

Tangwongsan, Hirzel, Schneider, Wu, "General Incremental Sliding-Window Aggregation",
PVLDB 8(7), 2015, section 4. Shared by the
in-order ``flatfat`` window and the out-of-order ``reactive`` window.

Layout (paper section 4.3, 0-based leaves here): a complete binary tree over ``capacity``
leaves (a power of two) stored in the list ``tree`` of length ``2 * capacity`` in heap order:
``tree[1]`` is the root, node ``h`` has children ``2h`` and ``2h + 1`` and parent ``h >> 1``,
leaf ``i`` (``0 <= i < capacity``) is ``tree[capacity + i]``; ``tree[0]`` is unused.
Invariant (4.1): every internal node is ``left (+) right``, so it aggregates its leaves in
order (4.2).

Unused leaves and empty subtrees hold :data:`EMPTY`, the paper's bottom marker (section 5.1.1):
it is never passed to ``combine`` but short-circuited (``x (+) EMPTY = x = EMPTY (+) x``), so
the user's identity is never combined and empty parts of the tree cost no ``combine`` calls.
Every query method returns :data:`EMPTY` for an empty range; the caller maps it to the
aggregation's identity.

Writes are lazy, as the paper's RA batches the events between two triggers (section 2.3):
:meth:`FlatFAT.set` writes a leaf and records it as dirty; :meth:`FlatFAT.flush` (run by every
query method) is Algorithm 2, which recomputes the dirty leaves' ancestors level by level,
each shared parent once, for at most ``m (1 + ceil(log2(n / m)))`` ``combine`` calls for m
distinct dirty leaves (Theorem 4.2 (ii)). Recomputing a node stops propagating when its value
is the very same object as before (a selective ``combine`` such as max often returns it), since
its ancestors then already hold the right values. More pending writes than leaves keep each
dirty leaf once, or, when more than half the leaves are dirty, make the next flush recompute
every node (no more calls than the bound then); so does a ``combine`` that raised during a
flush.

:meth:`FlatFAT.clear` empties a range of leaves without visiting them one by one: every node
whose leaves all lie in the range becomes :data:`EMPTY` by slice assignment (no ``combine``)
and only the two boundary leaves are marked dirty. Their partly cleared ancestors are then
stale although no dirty child of theirs may change value, so the next flush climbs every dirty
path to the root without the early stop: at most ``2 log2(n)`` calls for the clear.

API (for ``flatfat`` and ``reactive``): :meth:`FlatFAT.set`, :meth:`FlatFAT.write` (a run of
leaves), :meth:`FlatFAT.clear` and :meth:`FlatFAT.update` to write leaves (:data:`EMPTY` to
clear one; runs wrap around the last leaf, for the circular buffer of section 5.1.1),
:meth:`FlatFAT.rebuild` to resize or compact, :meth:`FlatFAT.aggregate`,
:meth:`FlatFAT.prefix`, :meth:`FlatFAT.suffix`, :meth:`FlatFAT.range` and
:meth:`FlatFAT.ring_range` to read, :meth:`FlatFAT.check` and :meth:`FlatFAT.dirty_leaves`
in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from swag_core.algorithms._queues import EMPTY, ring_assign, ring_runs

__all__ = ["EMPTY", "FlatFAT", "is_power_of_two"]

#: Pending-list marker: recompute the whole tree on the next flush (a flush failed, or more
#: than half the leaves were written).
_BROKEN: Final = -1


def is_power_of_two(n: int) -> bool:
    """True for 1, 2, 4, 8, ..."""
    return n > 0 and n & (n - 1) == 0


class FlatFAT:
    """A FlatFAT over ``capacity`` leaves (a power of two) with operator ``combine``.

    Args:
        combine: the associative ``(older, newer) -> aggregate``; never called with
            :data:`EMPTY`.
        capacity: number of leaves, a power of two (at least 1).
        leaves: optional initial values of leaves ``0 .. len(leaves) - 1`` (the rest are
            :data:`EMPTY`); built bottom-up with Algorithm 1 (at most ``len(leaves) - 1``
            ``combine`` calls).

    Leaf indices are 0-based (the paper's ``a[i]`` is leaf ``i - 1`` here). Values are
    aggregates (already lifted). ``combine`` calls made by each method, with every leaf in the
    range non-empty (fewer when some are :data:`EMPTY`): ``aggregate`` 0 (after the flush),
    ``prefix``/``suffix`` at most ``log2(capacity)``, ``range`` at most
    ``2 log2(capacity)``, ``flush`` as in Theorem 4.2 (ii).
    """

    __slots__ = ("_climb", "_combine", "_dirty", "capacity", "tree")

    def __init__(self, combine: Callable[[Any, Any], Any], capacity: int,
                 leaves: Iterable[Any] = ()) -> None:
        self._combine = combine
        self.capacity = 0
        #: The heap-ordered node list; read it freely, write leaves only through the methods.
        self.tree: list[Any] = []
        self._dirty: list[int] = []
        #: A :meth:`clear` since the last flush: climb every dirty path to the root.
        self._climb = False
        self.rebuild(leaves, capacity)

    # ------------------------------------------------------------------ building
    def rebuild(self, leaves: Iterable[Any], capacity: int | None = None) -> None:
        """Replace every leaf by ``leaves`` (then :data:`EMPTY`), optionally changing the
        capacity (a power of two), and rebuild the tree (Algorithm 1, ``new``).

        Costs ``k - 1`` ``combine`` calls for k non-empty leaves (every node over an empty
        part is :data:`EMPTY` without a call). Used to grow, shrink or compact.
        """
        if capacity is None:
            capacity = self.capacity
        if not is_power_of_two(capacity):
            raise ValueError(f"FlatFAT capacity must be a power of two, got {capacity!r}")
        values = list(leaves)
        if len(values) > capacity:
            raise ValueError(f"{len(values)} leaves do not fit in a FlatFAT of capacity "
                             f"{capacity}")
        empty = EMPTY
        tree = [empty] * capacity
        tree.extend(values)
        if len(values) < capacity:
            tree.extend([empty] * (capacity - len(values)))
        combine = self._combine
        # Not _propagate_levels' loop with every leaf dirty: that loop's per-node change
        # tracking makes a rebuild of 1024 leaves 1.7-1.8x slower with Sum, up to 1.4x with Max.
        # Descending heap index = level by level, bottom-up. Only nodes
        # whose leaves start inside the filled prefix can be non-empty.
        filled_end = capacity + len(values)   # first EMPTY leaf index
        lo, hi = capacity, filled_end
        while lo > 1:
            lo >>= 1
            hi = (hi + 1) >> 1          # nodes [lo, hi) cover at least one filled leaf
            for h in range(lo, hi):
                left = tree[2 * h]
                right = tree[2 * h + 1]
                if left is empty:
                    tree[h] = right
                elif right is empty:
                    tree[h] = left
                else:
                    tree[h] = combine(left, right)
        self.tree = tree
        self.capacity = capacity
        self._dirty = []
        self._climb = False

    # ------------------------------------------------------------------ updates
    def leaf(self, i: int) -> Any:
        """The value of leaf ``i`` (:data:`EMPTY` if unused)."""
        return self.tree[self.capacity + i]

    def set(self, i: int, value: Any) -> None:
        """Write ``value`` (or :data:`EMPTY`) to leaf ``i``; ancestors are fixed on the next
        :meth:`flush`. Writing a leaf twice before a flush keeps the last value (pitfall 5)."""
        h = self.capacity + i
        self.tree[h] = value
        dirty = self._dirty
        dirty.append(h)
        if len(dirty) > self.capacity:
            self._bound_pending()

    def write(self, first: int, values: list[Any]) -> None:
        """Write ``values`` to the leaves from ``first`` on, wrapping from the last leaf to
        leaf 0 (the circular buffer of section 5.1.1); ancestors are fixed on the next
        :meth:`flush`."""
        cap = self.capacity
        ring_assign(self.tree, cap, first, values, cap)
        dirty = self._dirty
        for lo, hi in ring_runs(cap, first, len(values)):
            dirty.extend(range(cap + lo, cap + hi))
        if len(dirty) > cap:
            self._bound_pending()

    def clear(self, first: int, count: int) -> None:
        """Write :data:`EMPTY` to ``count`` leaves from ``first`` on, wrapping like
        :meth:`write`. The nodes covered by each run become :data:`EMPTY` at once, level by
        level by slice assignment (no ``combine``, O(count) C-level work); only the boundary
        leaves are dirty, and the next flush climbs their paths without the early stop (module
        docstring): at most ``2 log2(capacity)`` calls per run."""
        cap = self.capacity
        tree = self.tree
        dirty = self._dirty
        empty = EMPTY
        for lo, hi in ring_runs(cap, first, count):
            if lo == hi:
                continue
            lo += cap
            hi += cap
            dirty.append(lo)
            dirty.append(hi - 1)
            self._climb = True
            while lo < hi:
                tree[lo:hi] = [empty] * (hi - lo)
                lo = (lo + 1) >> 1      # the parents whose two children are cleared
                hi >>= 1
        if len(dirty) > cap:
            self._bound_pending()

    def _bound_pending(self) -> None:
        """More pending writes than leaves (nobody queries): keep each dirty leaf once, or,
        with more than half the leaves dirty, recompute every node at the next flush, which
        then costs ``capacity - 1`` calls at most, no more than Theorem 4.2 (ii) allows."""
        dirty = self._dirty
        unique = set(dirty)
        if dirty[0] == _BROKEN or 2 * len(unique) > self.capacity:
            self._dirty = [_BROKEN]
        else:
            self._dirty = list(unique)

    def dirty_leaves(self) -> list[int]:
        """The leaves with a pending write, each once, in order (every leaf when the next
        flush recomputes the whole tree). For tests of the update bounds."""
        dirty = self._dirty
        cap = self.capacity
        if dirty and dirty[0] == _BROKEN:
            return list(range(cap))
        return sorted({h - cap for h in dirty})

    def update(self, changes: Iterable[tuple[int, Any]]) -> None:
        """Algorithm 2: write each ``(leaf, value)`` and propagate (last write wins)."""
        for i, value in changes:
            self.set(i, value)
        self.flush()

    @property
    def pending(self) -> int:
        """Number of leaf writes not yet propagated (0 after :meth:`flush`)."""
        return len(self._dirty)

    def flush(self) -> None:
        """Propagate the pending leaf writes to the root (Algorithm 2, change propagation).

        Level by level, each dirty parent recomputed once (the set ``W_l`` of the paper: a
        sorted, de-duplicated list here, since a level's parents of sorted children come out
        sorted).
        """
        dirty = self._dirty
        if not dirty:
            return
        self._dirty = []
        climb = self._climb
        self._climb = False
        if self.capacity == 1:
            return
        try:
            if dirty[0] == _BROKEN:
                self._recompute_all()
            elif len(dirty) <= 2:
                self._propagate_paths(dirty[0] >> 1, dirty[-1] >> 1, climb)
            else:
                self._propagate_levels(sorted(dirty), climb)
        except BaseException:
            # combine raised half-way: some ancestors are stale and the early stop could
            # skip them, so the next flush recomputes every node (and raises again while the
            # offending value is in the tree).
            self._dirty = [_BROKEN, *self._dirty]
            raise

    def _recompute_all(self) -> None:
        """Recompute every internal node from the leaves (Algorithm 1 again)."""
        self.rebuild(self.tree[self.capacity:])

    def _propagate_paths(self, h: int, b: int, climb: bool) -> None:
        """Algorithm 2 (with ``climb``, no early stop at unchanged nodes: after a
        :meth:`clear`) for one or two dirty leaves, the common slide (one eviction, one
        insertion), from their parents ``h`` and ``b``: climb both paths until they meet,
        then one path. :meth:`_propagate_levels` does the same nodes, but its per-level
        bookkeeping (a sort, a parents list per level) costs more than the combines
        themselves on this path. One loop body serves both paths: ``h`` is the node
        recomputed now, ``b`` the next one (the other path's node on the same level, or
        ``h``'s parent once the paths have met)."""
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        while h:
            left = tree[2 * h]
            right = tree[2 * h + 1]
            if left is empty:
                value = right
            elif right is empty:
                value = left
            else:
                value = combine(left, right)
            if h != b:
                # Two paths: no early stop, the other path may still change the
                # common ancestors.
                tree[h] = value
                h, b = b, h >> 1
                continue
            if value is tree[h] and not climb:
                return      # unchanged: the ancestors are already right
            tree[h] = value
            h >>= 1
            b = h

    def _propagate_levels(self, level: list[int], climb: bool) -> None:
        """Algorithm 2 level by level from the sorted dirty leaves ``level`` (a leaf written
        twice gives its parent twice in a row): each level's changed parents are the next
        level, until the root or a level where no node changed."""
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        while True:
            parents: list[int] = []
            append = parents.append
            last = 0
            for child in level:
                h = child >> 1
                if h != last:
                    last = h
                    left = tree[2 * h]
                    right = tree[2 * h + 1]
                    if left is empty:
                        value = right
                    elif right is empty:
                        value = left
                    else:
                        value = combine(left, right)
                    if value is not tree[h]:
                        tree[h] = value
                        append(h)
                    elif climb:
                        append(h)
            if last == 1 or not parents:
                return      # the root is done, or no node changed on this level
            level = parents

    # ------------------------------------------------------------------ queries
    def aggregate(self) -> Any:
        """``a[0] (+) ... (+) a[capacity - 1]`` (the root), skipping :data:`EMPTY` leaves."""
        if self._dirty:
            self.flush()
        return self.tree[1]

    def prefix(self, i: int) -> Any:
        """``a[0] (+) ... (+) a[i]`` (Algorithm 3: walk leaf-to-root, prepend left siblings)."""
        if self._dirty:
            self.flush()
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        h = self.capacity + i
        acc = tree[h]
        while h > 1:
            if h & 1:   # a right child: prepend the left sibling (operand order matters)
                left = tree[h - 1]
                if acc is empty:
                    acc = left
                elif left is not empty:
                    acc = combine(left, acc)
            h >>= 1
        return acc

    def suffix(self, j: int) -> Any:
        """``a[j] (+) ... (+) a[capacity - 1]`` (mirror of Algorithm 3: append right
        siblings)."""
        if self._dirty:
            self.flush()
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        h = self.capacity + j
        acc = tree[h]
        while h > 1:
            if not h & 1:   # a left child: append the right sibling
                right = tree[h + 1]
                if acc is empty:
                    acc = right
                elif right is not empty:
                    acc = combine(acc, right)
            h >>= 1
        return acc

    def range(self, lo: int, hi: int) -> Any:
        """``a[lo] (+) ... (+) a[hi]`` (inclusive; :data:`EMPTY` if ``lo > hi``) from the
        O(log n) canonical nodes covering the range, walked bottom-up from both ends."""
        if self._dirty:
            self.flush()
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        cap = self.capacity
        left_acc = empty
        right_acc = empty
        lo += cap
        hi += cap + 1          # half-open [lo, hi)
        while lo < hi:
            if lo & 1:
                node = tree[lo]
                if left_acc is empty:
                    left_acc = node
                elif node is not empty:
                    left_acc = combine(left_acc, node)
                lo += 1
            if hi & 1:
                hi -= 1
                node = tree[hi]
                if right_acc is empty:
                    right_acc = node
                elif node is not empty:
                    right_acc = combine(node, right_acc)
            lo >>= 1
            hi >>= 1
        return self._join(left_acc, right_acc)

    def ring_range(self, first: int, count: int) -> Any:
        """Aggregate of the ``count`` leaves from leaf ``first`` on, wrapping from the last
        leaf to leaf 0 (the circular buffer of section 5.1.1): :meth:`range`, or for a run
        that wraps ``suffix(first) (+) prefix(last)`` (the inverted buffer of section 5.1.2:
        slot order is not window order there). At most ``2 log2(capacity) + 1`` calls;
        :data:`EMPTY` if all those leaves are."""
        cap = self.capacity
        if first >= cap:
            first -= cap
        end = first + count
        if end <= cap:
            return self.range(first, end - 1)
        return self._join(self.suffix(first), self.prefix(end - cap - 1))

    def _join(self, left: Any, right: Any) -> Any:
        """``left (+) right`` with :data:`EMPTY` short-circuited (the hot loops inline it)."""
        if left is EMPTY:
            return right
        if right is EMPTY:
            return left
        return self._combine(left, right)

    # ------------------------------------------------------------------ checking
