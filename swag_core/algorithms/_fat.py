"""FlatFAT: the flat, pointer-less fixed-size aggregation tree of the Reactive Aggregator.

Tangwongsan, Hirzel, Schneider, Wu, "General Incremental Sliding-Window Aggregation",
PVLDB 8(7), 2015, section 4 (note ``reactive-flatfat.md`` sections 1.4-1.7). Shared by the
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
its ancestors then already hold the right values. More pending writes than leaves, or a
``combine`` that raised during a flush, make the next flush recompute every node instead.

API (for ``flatfat`` and ``reactive``): :meth:`FlatFAT.set` / :meth:`FlatFAT.update` to write
leaves (:data:`EMPTY` to clear one), :meth:`FlatFAT.rebuild` to resize or compact,
:meth:`FlatFAT.aggregate`, :meth:`FlatFAT.prefix`, :meth:`FlatFAT.suffix` and
:meth:`FlatFAT.range` to read, :meth:`FlatFAT.check` in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final


class _Empty:
    """Type of :data:`EMPTY`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY"

    def __reduce__(self) -> str:
        return "EMPTY"


#: Pending-list marker: recompute the whole tree on the next flush (a flush failed, or more
#: leaves were written than the tree has).
_BROKEN: Final = -1

#: The paper's bottom marker for unused leaves and empty subtrees. Never given to ``combine``.
EMPTY: Final[Any] = _Empty()


def _same(a: Any, b: Any) -> bool:
    return bool(a is b or a == b)


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

    __slots__ = ("_combine", "_dirty", "capacity", "tree")

    def __init__(self, combine: Callable[[Any, Any], Any], capacity: int,
                 leaves: Iterable[Any] = ()) -> None:
        self._combine = combine
        self.capacity = 0
        #: The heap-ordered node list; read it freely, write leaves only through :meth:`set`.
        self.tree: list[Any] = []
        self._dirty: list[int] = []
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
        # Descending heap index = level by level, bottom-up (note section 1.9). Only nodes
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
            # Nobody queries: bound the pending list; recomputing all capacity - 1 nodes at
            # the next flush costs no more than propagating these writes one by one.
            self._dirty = [_BROKEN]

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
        if self.capacity == 1:
            return
        try:
            if dirty[0] == _BROKEN:
                self._recompute_all()
            else:
                self._propagate(dirty)
        except BaseException:
            # combine raised half-way: some ancestors are stale and the early stop could
            # skip them, so the next flush recomputes every node (and raises again while the
            # offending value is in the tree).
            self._dirty = [_BROKEN, *self._dirty]
            raise

    def _recompute_all(self) -> None:
        """Recompute every internal node bottom-up (after a failed flush)."""
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        for h in range(self.capacity - 1, 0, -1):
            left = tree[2 * h]
            right = tree[2 * h + 1]
            if left is empty:
                tree[h] = right
            elif right is empty:
                tree[h] = left
            else:
                tree[h] = combine(left, right)

    def _propagate(self, dirty: list[int]) -> None:
        """Algorithm 2 from the dirty leaf heap indices ``dirty``."""
        tree = self.tree
        combine = self._combine
        empty = EMPTY
        if len(dirty) == 1:
            h = dirty[0] >> 1
            while h:
                left = tree[2 * h]
                right = tree[2 * h + 1]
                if left is empty:
                    value = right
                elif right is empty:
                    value = left
                else:
                    value = combine(left, right)
                if value is tree[h]:
                    return      # unchanged: the ancestors are already right
                tree[h] = value
                h >>= 1
            return
        if len(dirty) == 2:
            # The common slide (one eviction, one insertion): climb both paths level by
            # level until they meet, then one path (the general loop below, unrolled).
            a = dirty[0] >> 1
            b = dirty[1] >> 1
            while a != b:
                left = tree[2 * a]
                right = tree[2 * a + 1]
                if left is empty:
                    tree[a] = right
                elif right is empty:
                    tree[a] = left
                else:
                    tree[a] = combine(left, right)
                left = tree[2 * b]
                right = tree[2 * b + 1]
                if left is empty:
                    tree[b] = right
                elif right is empty:
                    tree[b] = left
                else:
                    tree[b] = combine(left, right)
                a >>= 1
                b >>= 1
            while a:
                left = tree[2 * a]
                right = tree[2 * a + 1]
                if left is empty:
                    value = right
                elif right is empty:
                    value = left
                else:
                    value = combine(left, right)
                if value is tree[a]:
                    return
                tree[a] = value
                a >>= 1
            return
        level = sorted(set(dirty))
        while level:
            parents: list[int] = []
            last = 0
            for child in level:
                h = child >> 1
                if h == last or h == 0:
                    continue
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
                    parents.append(h)
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
        if left_acc is empty:
            return right_acc
        if right_acc is empty:
            return left_acc
        return combine(left_acc, right_acc)

    # ------------------------------------------------------------------ checking
    def check(self, equal: Callable[[Any, Any], bool] | None = None) -> None:
        """Assert invariant (4.1) wherever it must hold: every internal node with no pending
        write below it equals ``left (+) right`` (with :data:`EMPTY` short-circuited); after
        :meth:`flush` that is every node. For tests; costs ``capacity - 1`` calls.

        Raises ``AssertionError`` naming the first wrong node.
        """
        eq = equal if equal is not None else _same
        tree = self.tree
        cap = self.capacity
        if self._dirty and self._dirty[0] == _BROKEN:
            return      # every internal node is pending recomputation
        stale = set()
        for h in self._dirty:
            h >>= 1
            while h and h not in stale:
                stale.add(h)
                h >>= 1
        empty = EMPTY
        for h in range(cap - 1, 0, -1):
            if h in stale:
                continue
            left = tree[2 * h]
            right = tree[2 * h + 1]
            if left is empty:
                want = right
            elif right is empty:
                want = left
            else:
                want = self._combine(left, right)
            node = tree[h]
            if (node is empty) != (want is empty) or (
                    node is not empty and not eq(node, want)):
                raise AssertionError(f"FlatFAT node {h} holds {node!r}, but its children "
                                     f"combine to {want!r}")
