"""FiBA, the finger B-tree aggregator, with bulk eviction and bulk insertion.

Tangwongsan, Hirzel, Schneider: "Out-of-Order Sliding-Window Aggregation with Efficient Bulk
Evictions and Insertions", PVLDB 16(11) 2023, extended version arXiv 2307.11210 ("the paper";
section numbers below are the paper's). The algorithms follow the paper's pseudocode as the
reference implementation realizes it, with one fix of the reference's bulk insert: a
collision on an inner node never yields a second treelet group for that node.

Structure (paper section 3.2). A B-tree with minimum arity ``mu = arity`` and maximum arity
``2 * mu``: every non-root node has ``mu .. 2*mu`` children (leaves: ``mu - 1 .. 2*mu - 1``
entries); an internal root has ``2 .. 2*mu`` children; a leaf root may be empty. All leaves
are at the same depth. Every node stores entries ``(time, lifted value)`` sorted by time, so
the window is the in-order sequence of all entries (times are distinct: equal times coalesce
as ``existing (+) new``). The *fingers* ``_lf`` / ``_rf`` are the leftmost / rightmost leaves;
the *left spine* is the path from the root's first child down to ``_lf`` (flag ``ls``), the
right spine the path down to ``_rf`` (flag ``rs``); the root carries neither flag.

Location-sensitive partial aggregates (paper section 3.2): with ``c_i`` the children
and ``v_i`` the values of a node ``y``,

* up (non-spine, non-root): ``agg(c_0) v_0 agg(c_1) ... v_last agg(c_last)``, the whole
  subtree;
* inner (root): ``v_0 agg(c_1) ... agg(c_{last-1}) v_last``, excluding both spines;
* left (left spine): ``inner(y) agg(c_last) left(parent)`` (no parent term under the root), so
  ``left(_lf)`` aggregates the root's whole first subtree;
* right (right spine): ``right(parent) agg(c_0) inner(y)``, so ``right(_rf)`` aggregates the
  root's whole last subtree;

hence ``query() = left(_lf) (+) inner(root) (+) right(_rf)``: two combines. An up aggregate
depends on the children only and a spine aggregate on its non-spine children and its parent,
so repairs climb through up nodes to the first spine node (or the root) and then walk down
that spine (paper section 3, "pass up" / "pass down"). Each node also keeps ``cnt``, the entry
count with the same location-sensitive meaning (an integer sum), so ``len()`` is O(1) and
``bulk_evict`` can report how many entries it removed without visiting them.

Costs (paper Theorems 1 and 3; d = distance of an insert from the youngest end, m = bulk size):
insert amortized O(log d) (O(1) in order), evict of the oldest amortized O(1), ``bulk_evict``
amortized O(log m) (worst case O(log n)), ``bulk_insert`` amortized
O(log d + m (1 + log(d / m))), ``query`` O(1), ``query_since`` / ``query_range`` O(log n).
Subtrees cut off by ``bulk_evict`` go to a deferred free list (paper section 6) that later
operations release a few nodes at a time, so a bulk eviction never pays for deallocating O(m)
nodes (the tree has parent pointers, so releasing also breaks the reference cycles).

Choices beyond the paper's pseudocode (same trees, fewer combines; the tests check every
stored aggregate against a recomputation, ``tests/core/fiba_invariants.py``):

* the left finger's aggregate is computed back to front, leaving all its suffixes in ``_suf``,
  so evicting the oldest entry without underflow costs no combine (the front stack of
  Two-Stacks); an in-order append to the right finger costs one combine, and a split of the
  full right finger extends its parent's aggregate instead of recomputing it;
* bulk insert passes down from the highest touched node of each spine and recomputes the root
  only when it was touched (walking both spines whenever the root is touched would be
  wasted: spine aggregates never include the root's);
* bulk evict recomputes a neighbor only when its first child lost entries, and never
  recomputes boundary nodes as up nodes: they all become the new left spine, which Step 3
  recomputes;
* equal times inside one bulk are combined first, in batch order;
* ``evict`` only removes the oldest entry, so single-entry rebalancing always starts on the
  left spine and borrows from / merges with the second child of the parent.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from functools import reduce
from itertools import islice
from operator import eq
from typing import Any, ClassVar

from swag_core.aggregation import Aggregation
from swag_core.errors import EmptyWindowError
from swag_core.window import Window, as_time

_INF = float("inf")

# recalc kinds
_INNER = 0
_LEFT = 1
_RIGHT = 2
_UP = 3


class _Node:
    """A B-tree node: ``len(times) == len(values)``; internal nodes have one more child."""

    __slots__ = ("agg", "children", "cnt", "leaf", "ls", "parent", "rs", "times", "values")

    def __init__(self, leaf: bool) -> None:
        self.leaf = leaf
        self.times: list[int] = []
        self.values: list[Any] = []
        self.children: list[_Node] = []
        self.parent: _Node | None = None
        self.agg: Any = None
        self.cnt = 0
        self.ls = False
        self.rs = False


def _has_up(n: _Node) -> bool:
    """True when ``n`` stores an up aggregate (not the root, not on a spine)."""
    return n.parent is not None and not n.ls and not n.rs


def _establish(groups: list[list[Any]], node: _Node, level: int) -> list[Any]:
    """The treelet group ``[node, level, times, values, right children]`` at the end of
    ``groups`` for ``node`` (consecutive treelets with one target
    share one group; the new entries are kept as three parallel lists)."""
    if groups:
        last = groups[-1]
        if last[0] is node:
            return last
    group: list[Any] = [node, level, [], [], []]
    groups.append(group)
    return group


def _interleaved(x: _Node, gt: list[int], gv: list[Any], gc: list[_Node]
                 ) -> tuple[list[int], list[Any], list[_Node]]:
    """The entries of node ``x`` and the new ones ``gt, gv`` (with their right children
    ``gc`` for an internal node) merged by time: ``(times, values, right children)``, the
    children list empty for a leaf. New lists; ``x`` is not changed."""
    leaf = x.leaf
    xt = x.times
    xv = x.values
    xc = x.children
    mc: list[_Node] = []
    if not xt or gt[0] > xt[-1]:
        if not leaf:
            mc = xc[1:] + gc
        return xt + gt, xv + gv, mc
    mt: list[int] = []
    mv: list[Any] = []
    i = 0
    nx = len(xt)
    for j in range(len(gt)):
        t = gt[j]
        while i < nx and xt[i] < t:
            mt.append(xt[i])
            mv.append(xv[i])
            if not leaf:
                mc.append(xc[i + 1])
            i += 1
        mt.append(t)
        mv.append(gv[j])
        if not leaf:
            mc.append(gc[j])
    mt.extend(xt[i:])
    mv.extend(xv[i:])
    if not leaf:
        mc.extend(xc[i + 1:])
    return mt, mv, mc


class Fiba(Window):
    """Finger B-tree aggregator: out-of-order inserts, bulk evict and bulk insert.

    Args:
        aggregation: the :class:`~swag_core.Aggregation` to maintain (only associativity is
            used).
        arity: the minimum arity ``mu`` (>= 2); nodes have ``mu .. 2*mu`` children. The paper
            uses 4 and 8 in its experiments and 2 in its examples.

    An insert at a time already in the window combines into that entry as
    ``existing (+) new``; ``len()`` counts distinct times. ``query_since(t)`` and
    ``query_range(lo, hi)`` answer sub-ranges of the window, so that windows of different
    ranges over one stream can share one structure.
    """

    name: ClassVar[str] = "fiba"
    in_order: ClassVar[bool] = False
    range_queries: ClassVar[bool] = True
    coalesces_equal_times: ClassVar[bool] = True
    complexity: ClassVar[str] = (
        "query O(1); insert amortized O(log d) for distance d from the youngest end (O(1) in "
        "order); evict amortized O(1); bulk_evict amortized O(log m); bulk_insert amortized "
        "O(log d + m(1 + log(d/m))); query_since O(log n)")

    def __init__(self, aggregation: Aggregation, arity: int = 4) -> None:
        super().__init__(aggregation)
        if isinstance(arity, bool) or not isinstance(arity, int) or arity < 2:
            raise ValueError(f"fiba arity must be an integer >= 2, got {arity!r}")
        #: The minimum arity ``mu``; nodes hold ``mu .. 2*mu`` children.
        self.arity = arity
        self._mu = arity
        self._max = 2 * arity
        self._trash: list[_Node] = []
        self._suf: list[Any] | None = None
        self._root = self._lf = self._rf = self._new_root_leaf()

    def _new_root_leaf(self) -> _Node:
        root = _Node(True)
        root.agg = self._identity
        return root

    # ------------------------------------------------------------------ aggregates
    def _recalc(self, n: _Node) -> None:  # noqa: PLR0915  (hot: once per node recompute)
        """Recompute ``n.agg`` / ``n.cnt`` from its children (and parent, on a spine);
        never combines with the identity."""
        if n is self._lf:
            self._recalc_left_finger(n)
            return
        comb = self._combine
        vals = n.values
        k = len(vals)
        p = n.parent
        if p is None:
            kind = _INNER
        elif n.ls:
            kind = _INNER if n.rs else _LEFT  # both flags: transient single child of the root
        elif n.rs:
            kind = _RIGHT
        else:
            kind = _UP
        have = False
        a: Any = None
        c = k
        if n.leaf:
            if k:
                a = reduce(comb, vals)
                have = True
        else:
            ch = n.children
            if kind >= _RIGHT or (kind == _LEFT and k == 0):
                x = ch[0]
                a = x.agg
                c += x.cnt
                have = True
            with_last = kind & 1  # left and up include the last child
            for i in range(k):
                v = vals[i]
                a = comb(a, v) if have else v
                have = True
                if i + 1 < k or with_last:
                    x = ch[i + 1]
                    a = comb(a, x.agg)
                    c += x.cnt
        if kind == _LEFT:
            assert p is not None
            if p.parent is not None:
                a = comb(a, p.agg) if have else p.agg
                c += p.cnt
                have = True
        elif kind == _RIGHT:
            assert p is not None
            if p.parent is not None:
                a = comb(p.agg, a) if have else p.agg
                c += p.cnt
                have = True
        n.agg = a if have else self._identity
        n.cnt = c

    def _recalc_left_finger(self, lf: _Node) -> None:
        """``_recalc`` of the left finger (a leaf: the root or on the left spine). It folds
        from the back, so that for the same number of combines it also leaves every suffix
        ``v_i (+) ... (+) v_last (+) left(parent)`` in ``_suf`` (item ``-1 - i``): evicting the
        oldest entry then costs no combine until the finger is restructured (compare the
        front stack of Two-Stacks). Paths that change the finger without ``_recalc`` update
        or drop ``_suf``."""
        comb = self._combine
        p = lf.parent
        vals = lf.values
        suf: list[Any] = []
        have = p is not None and p.parent is not None
        acc: Any = None
        cnt = len(vals)
        if have:
            assert p is not None
            acc = p.agg
            cnt += p.cnt
        for i in range(len(vals) - 1, -1, -1):
            v = vals[i]
            acc = comb(v, acc) if have else v
            have = True
            suf.append(acc)
        lf.agg = acc if have else self._identity
        lf.cnt = cnt
        self._suf = suf

    def _repair_aggs(self, top: _Node, hl: bool, hr: bool) -> None:
        """Note 3.5: climb from ``top`` (already repaired if it has an up aggregate) to the
        first spine node or the root, then pass down the spine(s) that changed."""
        recalc = self._recalc
        if _has_up(top):
            while True:
                parent = top.parent
                assert parent is not None
                top = parent
                recalc(top)
                if not _has_up(top):
                    break
        else:
            recalc(top)
        is_root = top.parent is None
        if top.ls or (hl and is_root):
            n = top
            while not n.leaf:
                n = n.children[0]
                recalc(n)
        if top.rs or (hr and is_root):
            n = top
            while not n.leaf:
                n = n.children[-1]
                recalc(n)

    def _full(self, n: _Node) -> Any:
        """Aggregate of the whole subtree of ``n`` (used by range queries)."""
        p = n.parent
        assert p is not None  # never asked for the root
        if not n.ls and not n.rs:
            return n.agg
        if p.parent is None and n.ls != n.rs:
            # left(_lf) covers the root's whole first subtree, right(_rf) its last one
            return self._lf.agg if n.ls else self._rf.agg
        comb = self._combine
        vals = n.values
        if n.leaf:
            return reduce(comb, vals)
        ch = n.children
        full = self._full
        a = full(ch[0])
        for i in range(len(vals)):
            a = comb(comb(a, vals[i]), full(ch[i + 1]))
        return a

    # ------------------------------------------------------------------ memory
    def _reclaim(self, budget: int) -> None:
        """Release up to ``budget`` nodes of the deferred free list (paper section 6): each
        released node hands its children to the list and drops its parent links."""
        trash = self._trash
        while budget > 0 and trash:
            n = trash.pop()
            ch = n.children
            if ch:
                for c in ch:
                    c.parent = None
                trash.extend(ch)
                n.children = []
            n.parent = None
            budget -= 1

    # ------------------------------------------------------------------ basic accessors
    def __len__(self) -> int:
        root = self._root
        if root.leaf:
            return root.cnt
        return self._lf.cnt + root.cnt + self._rf.cnt

    def oldest(self) -> int:
        """Time of the oldest entry; :class:`EmptyWindowError` if empty."""
        times = self._lf.times
        if not times:
            raise EmptyWindowError("oldest() of an empty window")
        return times[0]

    def youngest(self) -> int:
        """Time of the youngest entry; :class:`EmptyWindowError` if empty."""
        times = self._rf.times
        if not times:
            raise EmptyWindowError("youngest() of an empty window")
        return times[-1]

    def query(self) -> Any:
        """``lower`` of the aggregate of the whole window, in O(1) (two combines)."""
        root = self._root
        if root.leaf:
            return self._lower(root.agg)
        comb = self._combine
        return self._lower(comb(comb(self._lf.agg, root.agg), self._rf.agg))

    def items(self) -> Iterator[tuple[int, Any]]:
        """``(time, lifted value)`` per distinct time, oldest first."""
        stack: list[tuple[_Node, int]] = [(self._root, 0)]
        while stack:
            n, i = stack.pop()
            if n.leaf:
                yield from zip(n.times, n.values)
                continue
            if i:
                yield n.times[i - 1], n.values[i - 1]
            if i < len(n.times):
                stack.append((n, i + 1))
            stack.append((n.children[i], 0))

    # ------------------------------------------------------------------ search
    def _finger_start(self, t: int) -> _Node:
        """Note 3.3: the lowest spine node whose subtree straddles ``t`` (or the root)."""
        root = self._root
        if root.leaf:
            return root
        rt = root.times
        if t < rt[0]:
            n = self._lf
            while n.parent is not None and n.times[-1] < t:
                n = n.parent
            return n
        if rt[-1] < t:
            n = self._rf
            while n.parent is not None and t < n.times[0]:
                n = n.parent
            return n
        return root

    # ------------------------------------------------------------------ single insert
    def _insert_lifted(self, time: int, value: Any) -> None:
        if self._trash:
            self._reclaim(2)
        rf = self._rf
        rt = rf.times
        # The two finger fast paths combine before any write (a failure changes nothing);
        # the other paths write as they go and break the window if interrupted.
        if not rt or time > rt[-1]:
            if len(rt) < self._max - 1:
                # in-order append without overflow: right(_rf) is a prefix-type aggregate
                agg = self._combine(rf.agg, value) if rf.cnt else value
                if rf is self._lf:
                    self._suf = None
                rt.append(time)
                rf.values.append(value)
                rf.agg = agg
                rf.cnt += 1
                return
            p = rf.parent
            if p is not None and len(p.times) < self._max - 1:
                try:
                    self._append_split(rf, p, time, value)  # leaves the left finger alone
                except BaseException as error:
                    self._fail("insert", error)
                    raise
                return
        if rt and time <= rt[-1]:
            lf = self._lf
            lt = lf.times
            if time < lt[0] and len(lt) < self._max - 1:
                # prepend at the oldest end: left(_lf) is a suffix-type aggregate
                agg = self._combine(value, lf.agg)
                lt.insert(0, time)
                lf.values.insert(0, value)
                lf.agg = agg
                lf.cnt += 1
                if self._suf is not None:
                    self._suf.append(agg)
                return
        try:
            self._insert_inside(time, value)
        except BaseException as error:
            self._fail("insert", error)
            raise

    def _insert_inside(self, time: int, value: Any) -> None:
        """Insert away from the fingers' fast paths: coalesce with an equal time, or add
        the entry to its leaf and split overflowing nodes up the tree."""
        n = self._finger_start(time)
        while True:
            times = n.times
            i = bisect_left(times, time)
            if i < len(times) and times[i] == time:
                # coalesce: existing (+) new, wherever the time lives (also inner nodes)
                n.values[i] = self._combine(n.values[i], value)
                if _has_up(n):
                    self._recalc(n)
                self._repair_aggs(n, n.ls, n.rs)
                return
            if n.leaf:
                break
            n = n.children[i]
        times.insert(i, time)
        n.values.insert(i, value)
        hl = n.ls
        hr = n.rs
        if len(times) >= self._max:  # arity 2*mu + 1: split up the tree
            while len(n.times) >= self._max:
                if n.parent is None:
                    self._height_increase()
                    hl = hr = True
                self._split(n)
                parent = n.parent
                assert parent is not None
                n = parent
                hl = hl or n.ls
                hr = hr or n.rs
        if _has_up(n):
            self._recalc(n)
        self._repair_aggs(n, hl, hr)

    def _append_split(self, rf: _Node, p: _Node, time: int, value: Any) -> None:
        """In-order append to a full right finger whose parent has room: the general split
        (``_split``) specialised so that the parent's aggregate is extended instead of
        recomputed. The parent is the root (inner aggregate) or on the right spine (right
        aggregate); both end with ``inner(p)``, which just gains ``agg(old finger) (+) sep``."""
        mu = self._mu
        comb = self._combine
        rt = rf.times
        rv = rf.values
        right = _Node(True)
        right.times = [*rt[mu + 1:], time]
        right.values = [*rv[mu + 1:], value]
        sep_t = rt[mu]
        sep_v = rv[mu]
        del rt[mu:]
        del rv[mu:]
        rf.rs = False
        right.rs = True
        right.parent = p
        p.times.append(sep_t)
        p.values.append(sep_v)
        p.children.append(right)
        self._rf = right
        a = reduce(comb, rv)  # the old finger becomes a middle child: its up aggregate
        rf.agg = a
        rf.cnt = mu
        p.agg = comb(comb(p.agg, a), sep_v)
        p.cnt += mu + 1
        vals = right.values
        a = reduce(comb, vals)
        if p.parent is not None:
            right.agg = comb(p.agg, a)
            right.cnt = p.cnt + len(vals)
        else:
            right.agg = a
            right.cnt = len(vals)

    def _height_increase(self) -> None:
        """A new root above the old one, which becomes its only child (both spines)."""
        old = self._root
        root = _Node(False)
        root.children.append(old)
        root.agg = self._identity
        old.parent = root
        old.ls = old.rs = True
        self._root = root

    def _split(self, left: _Node) -> None:
        """Split an overflowing node (arity 2*mu + 1) into arities mu + 1 and mu; the middle
        entry moves up into the parent."""
        mu = self._mu
        p = left.parent
        assert p is not None
        right = _Node(left.leaf)
        lt = left.times
        lv = left.values
        sep_t = lt[mu]
        sep_v = lv[mu]
        right.times = lt[mu + 1:]
        right.values = lv[mu + 1:]
        del lt[mu:]
        del lv[mu:]
        if not left.leaf:
            moved = left.children[mu + 1:]
            del left.children[mu + 1:]
            for c in moved:
                c.parent = right
            right.children = moved
        right.rs = left.rs
        left.rs = False
        right.parent = p
        j = p.children.index(left)
        p.times.insert(j, sep_t)
        p.values.insert(j, sep_v)
        p.children.insert(j + 1, right)
        if self._rf is left:
            self._rf = right
        if _has_up(left):
            self._recalc(left)
        if _has_up(right):
            self._recalc(right)

    # ------------------------------------------------------------------ single evict
    def evict(self) -> None:
        """Remove the oldest entry (all values at the oldest time); amortized O(1)."""
        lf = self._lf
        if not lf.times:
            raise EmptyWindowError("evict() from an empty window")
        if self._trash:
            self._reclaim(2)
        try:
            del lf.times[0]
            del lf.values[0]
            if lf.parent is None or len(lf.times) >= self._mu - 1:
                # no underflow: left(_lf) = v_1 (+) ... (+) left(parent) is the next suffix
                suf = self._suf
                if suf is None:
                    self._recalc_left_finger(lf)
                    return
                suf.pop()
                lf.agg = suf[-1] if suf else self._identity
                lf.cnt -= 1
                return
            top, hl, hr = self._rebalance_after_evict(lf, eager=True)
            self._repair_aggs(top, hl, hr)
        except BaseException as error:
            self._fail("evict", error)
            raise

    def _rebalance_after_evict(self, n: _Node, eager: bool = False
                               ) -> tuple[_Node, bool, bool]:
        """Note 3.6 ``rebalance_after_evict``: fix underflows from ``n`` upwards by merging
        with or borrowing from a sibling. Here ``n`` is always on the left spine (the left
        finger after ``evict``, or the ancestor above a bulk-eviction boundary), so it is its
        parent's first child and the sibling is the second child. Returns the top node and
        whether the left / right spine was hit (the sibling may be on the right spine, never
        on the left: it is not the first child).

        With ``eager`` (single evictions), an underflowing left finger merges with its sibling
        whenever the merged leaf fits, instead of only when the sibling is minimal: after the
        usual borrow the finger would underflow again at the next eviction, while the merged
        leaf serves up to ``mu`` evictions that cost no combine (see ``_suf``)."""
        mu = self._mu
        fits = self._max - 1 if eager else -1
        hl = n.ls
        hr = n.rs
        while n.parent is not None and len(n.times) + 1 < mu:
            p = n.parent
            assert n.ls and p.children[0] is n
            s = p.children[1]
            hr = hr or s.rs
            if len(s.times) + 1 <= mu or (n.leaf and len(n.times) + 1 + len(s.times) <= fits):
                self._merge(p, 0)  # n absorbs the separator and s
                if p.parent is None and len(p.children) == 1:
                    self._height_decrease()  # n becomes the root
                    break
            else:
                self._borrow(p, n, s)
            n = p
            hl = hl or n.ls
            hr = hr or n.rs
        return n, hl, hr

    def _merge(self, p: _Node, b: int) -> _Node:
        """Child ``b`` of ``p`` absorbs separator ``b`` and child ``b + 1`` (no agg repair)."""
        left = p.children[b]
        right = p.children[b + 1]
        left.times.append(p.times[b])
        left.times.extend(right.times)
        left.values.append(p.values[b])
        left.values.extend(right.values)
        if not left.leaf:
            rc = right.children
            for c in rc:
                c.parent = left
            left.children.extend(rc)
            right.children = []
        del p.times[b]
        del p.values[b]
        del p.children[b + 1]
        left.rs = right.rs
        right.parent = None
        if self._rf is right:
            self._rf = left
        return left

    def _borrow(self, p: _Node, n: _Node, s: _Node) -> None:
        """Rotate the first entry (and child) of ``s``, the second child of ``p``, through
        ``p``'s first separator to the end of ``n``, its first child."""
        n.times.append(p.times[0])
        n.values.append(p.values[0])
        p.times[0] = s.times.pop(0)
        p.values[0] = s.values.pop(0)
        if not n.leaf:
            c = s.children.pop(0)
            c.parent = n
            n.children.append(c)
        if _has_up(s):
            self._recalc(s)

    def _height_decrease(self) -> None:
        """The root's only child becomes the root."""
        old = self._root
        root = old.children[0]
        old.children = []
        root.parent = None
        root.ls = root.rs = False
        self._root = root

    # ------------------------------------------------------------------ bulk evict
    def bulk_evict(self, time: int) -> int:
        """Remove every entry with ``entry.time <= time``; returns how many were removed.

        Amortized O(log m) for m removed entries, worst case O(log n) (paper section 4,
        Theorem 1): only the boundary path between evicted and kept entries is visited.
        """
        if type(time) is not int:
            time = as_time(time)
        lf = self._lf
        if not lf.times or time < lf.times[0]:
            return 0
        before = len(self)
        if time >= self._rf.times[-1]:
            self._suf = None
            self._trash.append(self._root)
            self._root = self._lf = self._rf = self._new_root_leaf()
            self._reclaim(4)
            return before
        try:
            levels = self._bulk_evict(time)
        except BaseException as error:
            self._fail("bulk_evict", error)
            raise
        self._reclaim(2 * levels + 2)
        return before - len(self)

    def _bulk_evict(self, t: int) -> int:
        """Evict every entry with time <= t, given oldest <= t < youngest (the boundary
        search, then Figs. 2 to 5 level by level); returns the boundary length."""
        boundary = self._eviction_boundary(t)
        self._repair_above(self._evict_boundary(boundary, t))
        return len(boundary)

    def _evict_boundary(self, boundary: list[tuple[_Node, _Node | None, _Node | None]],
                        t: int) -> _Node:
        """Step 2 of the bulk eviction, the pass up the ``boundary`` of
        :meth:`_eviction_boundary`, bottom level first: each boundary node loses its entries
        <= ``t``, then borrows from its neighbor (Fig. 2) or merges with it (Fig. 3); the
        surviving boundary nodes form the new left spine. Returns the highest node touched
        (for :meth:`_repair_above`)."""
        mu = self._mu
        skip_up_to: _Node | None = None
        top: _Node | None = None
        prev_nb: _Node | None = None
        nb_changed = False
        last_level = len(boundary) - 1
        for level in range(len(boundary)):
            node, nb, anc = boundary[last_level - level]
            # a neighbor whose first child (the lower neighbor) lost entries
            if nb_changed and nb is not None and prev_nb is not None and prev_nb.parent is nb:
                if _has_up(nb):
                    self._recalc(nb)
            else:
                nb_changed = False
            if skip_up_to is None or skip_up_to is node:
                skip_up_to = None
                self._evict_prefix(node, t)
                if nb is None:
                    top = self._root_from(node, level == 0)
                    break
                assert anc is not None
                if len(node.times) + 1 >= mu:
                    top = node
                else:
                    deficit = mu - len(node.times) - 1
                    surplus = len(nb.times) + 1 - mu
                    if deficit <= surplus:
                        self._move_batch(node, nb, anc, deficit)  # Fig. 2
                        nb_changed = True
                    elif node.parent is anc:
                        self._merge(anc, anc.children.index(node))  # node absorbs nb
                    else:
                        self._merge_not_sibling(node, nb, anc)  # Fig. 3: nb absorbs node
                        skip_up_to = anc
                    top = anc
            # all surviving boundary nodes form the new left spine
            spine = node if skip_up_to is None else nb
            assert spine is not None
            spine.ls = True
            if level == 0:
                self._reset_left_finger(spine)
            prev_nb = nb
        assert top is not None
        return top

    def _repair_above(self, top: _Node) -> None:
        """The repair loop beyond the boundary from ``top`` (what :meth:`_evict_boundary`
        returned), then Step 3 of the bulk eviction: the pass down that repairs the
        aggregates."""
        if top.parent is None:
            hl = hr = True
            if not top.leaf and len(top.children) == 1:
                top = top.children[0]
                self._height_decrease()
        elif len(top.times) + 1 >= self._mu:
            hl = top.ls
            hr = top.rs
        else:  # the ancestor above the boundary lost one entry
            top, hl, hr = self._rebalance_after_evict(top)
        self._repair_aggs(top, hl, hr)

    def _eviction_boundary(self, t: int
                           ) -> list[tuple[_Node, _Node | None, _Node | None]]:
        """Step 1 of bulk eviction: per level from the top, ``(node, neighbor, LCA)``, where
        ``node`` holds the boundary at ``t``, ``neighbor`` is the next node to its right on
        that level and the LCA their lowest common ancestor (``None`` for both when nothing
        lies to the right)."""
        node = self._finger_start(t)
        anc: _Node | None
        nb: _Node | None
        if node.parent is None:
            anc = nb = None
        else:
            anc = node.parent
            ch = anc.children
            i = ch.index(node)
            nb = ch[i + 1] if i + 1 < len(ch) else None
        boundary: list[tuple[_Node, _Node | None, _Node | None]] = [(node, nb, anc)]
        while not node.leaf:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                break  # exact match: everything right of it is > t
            if i == len(times):
                if nb is not None:
                    nb = nb.children[0]
            else:
                anc = node
                nb = node.children[i + 1]
            node = node.children[i]
            boundary.append((node, nb, anc))
        return boundary

    def _root_from(self, node: _Node, is_leaf_level: bool) -> _Node:
        """``node`` is the root or on the right spine and everything outside its subtree is
        evicted: it (or its only child) becomes the root (Figs. 4 and 5)."""
        new_root = node.children[0] if (not node.leaf and len(node.children) == 1) else node
        par = new_root.parent
        if par is not None:  # detach before discarding the old tree
            par.children.pop()
            del par.times[-1:]
            del par.values[-1:]
            new_root.parent = None
            self._trash.append(self._root)
        new_root.ls = new_root.rs = False
        self._root = new_root
        if is_leaf_level:
            self._reset_left_finger(new_root)
        return new_root

    def _reset_left_finger(self, n: _Node) -> None:
        """Flag the child-0 path below ``n`` as left spine and point ``_lf`` at its leaf."""
        while not n.leaf:
            n = n.children[0]
            n.ls = True
        self._lf = n

    def _evict_prefix(self, n: _Node, t: int) -> None:
        """Note 3.2 ``local_evict_up_to``: drop the entries <= t of ``n`` and the children
        left of them (those subtrees go to the deferred free list); no agg repair."""
        times = n.times
        i = bisect_left(times, t)
        k = i + 1 if i < len(times) and times[i] == t else i
        if k:
            del times[:k]
            del n.values[:k]
            if not n.leaf:
                ch = n.children
                self._trash.extend(ch[:k])
                del ch[:k]
                if n.parent is None or n.ls:
                    ch[0].ls = True

    def _move_batch(self, node: _Node, nb: _Node, anc: _Node, k: int) -> None:
        """Fig. 2: ``k`` entries and children move from the
        neighbor ``nb`` into ``node``, rotating through the separator held by ``anc``."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        nt = nb.times
        nv = nb.values
        node.times.append(anc.times[a])
        node.values.append(anc.values[a])
        node.times.extend(nt[:k - 1])
        node.values.extend(nv[:k - 1])
        anc.times[a] = nt[k - 1]
        anc.values[a] = nv[k - 1]
        del nt[:k]
        del nv[:k]
        if not node.leaf:
            moved = nb.children[:k]
            del nb.children[:k]
            for c in moved:
                c.parent = node
            node.children.extend(moved)
        if _has_up(nb):
            self._recalc(nb)

    def _merge_not_sibling(self, node: _Node, nb: _Node, anc: _Node) -> None:
        """Fig. 3: ``nb`` absorbs ``node`` and the separator
        from ``anc``; everything in ``anc`` left of that separator is discarded."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        nb.times[:0] = [*node.times, anc.times[a]]
        nb.values[:0] = [*node.values, anc.values[a]]
        if not node.leaf:
            for c in node.children:
                c.parent = nb
            nb.children[:0] = node.children
            node.children = []
        par = node.parent
        assert par is not None
        par.children.pop()  # detach first; node is its parent's last child
        del par.times[-1:]
        del par.values[-1:]
        node.parent = None
        ch = anc.children
        self._trash.extend(ch[:a + 1])
        del ch[:a + 1]
        del anc.times[:a + 1]
        del anc.values[:a + 1]

    # ------------------------------------------------------------------ bulk insert
    def _bulk_insert_lifted(self, batch: list[tuple[int, Any]]) -> None:
        """Paper section 5: one finger search from the right finger, breadcrumb
        searches for the other keys, then the tree is grown level by level (treelets), each
        overflowing node split once into as many nodes as needed (``_bulk_split``)."""
        keys = [t for t, _ in batch]
        vals = [v for _, v in batch]
        if any(map(eq, keys, islice(keys, 1, None))):
            # equal times in one batch (kept in batch order by the stable sort): new_1 (+) new_2
            comb = self._combine
            keys = []
            vals = []
            for t, v in batch:
                if keys and keys[-1] == t:
                    vals[-1] = comb(vals[-1], v)
                else:
                    keys.append(t)
                    vals.append(v)
        m = len(keys)
        if m == 1:
            self._insert_lifted(keys[0], vals[0])
            return
        if self._trash:
            self._reclaim(m)
        rf = self._rf
        try:
            if not rf.times or keys[0] > rf.times[-1]:
                # all younger than the window: one treelet group at the right finger
                self._grow([[rf, 0, keys, vals, []]])
            else:
                self._grow(self._multi_search(keys, vals))
        except BaseException as error:
            self._fail("bulk_insert", error)
            raise

    def _multi_search(self, keys: list[int], vals: list[Any]) -> list[list[Any]]:
        """Step 1: the insertion site of every key, found by a
        finger search from the right finger for the first key and then by climbing the
        breadcrumb stack only until the next key fits (paper Lemma 1). A key already present
        (at any level) is combined in place (``existing (+) new``) and leaves a recompute
        event; new keys are collected per leaf. Returns the treelet groups
        ``[node, level, times, values, right children]`` in time order."""
        comb = self._combine
        groups: list[list[Any]] = []
        t0 = keys[0]
        node = self._rf
        level = 0
        while node.parent is not None and t0 < node.times[0]:
            node = node.parent
            level += 1
        lb: float = -_INF if node.parent is None else node.times[0]
        ub: float = _INF
        stack: list[tuple[_Node, float, float, int]] = [(node, lb, ub, level)]
        for idx in range(len(keys)):
            t = keys[idx]
            if idx:
                while not (lb < t < ub) and len(stack) > 1:
                    stack.pop()
                    node, lb, ub, level = stack[-1]
            while True:
                times = node.times
                i = bisect_left(times, t)
                if i < len(times) and times[i] == t:
                    # collision anywhere in the tree: combine now, recompute later
                    node.values[i] = comb(node.values[i], vals[idx])
                    _establish(groups, node, level)
                    break
                if node.leaf:
                    group = _establish(groups, node, 0)
                    group[2].append(t)
                    group[3].append(vals[idx])
                    break
                if i:
                    lb = times[i - 1]
                if i < len(times):
                    ub = times[i]
                node = node.children[i]
                level -= 1
                stack.append((node, lb, ub, level))
        return groups

    def _grow(self, groups: list[list[Any]]) -> None:  # noqa: C901  (bulk insert's loop)
        """Steps 2 and 3 of bulk insert: level by level, put each
        group's new entries into its node, splitting it once if it overflows (promotions go
        to the parent's group at the next level); nodes with up aggregates are repaired and
        their parents scheduled; then pass down from the highest touched spine nodes."""
        mx = self._max
        recalc = self._recalc
        top_ls: _Node | None = None
        top_rs: _Node | None = None
        root_touched = False
        cur = groups
        level = 0
        while cur:
            nxt: list[list[Any]] = []
            for group in cur:
                x, glevel, gt, gv, gc = group
                if not gt and glevel > level:
                    # a collision's recompute event rides along until its level; never a
                    # second group for the same node (see the module docstring)
                    if not (nxt and nxt[-1][0] is x):
                        nxt.append(group)
                    continue
                if not gt:
                    if _has_up(x):
                        recalc(x)
                elif len(x.times) + 1 + len(gt) <= mx:
                    self._insert_members(x, gt, gv, gc)
                    if _has_up(x):
                        recalc(x)
                else:
                    last = self._bulk_split(x, gt, gv, gc, nxt, level + 1)
                    if last.rs:
                        top_rs = last
                if _has_up(x):
                    parent = x.parent
                    assert parent is not None
                    _establish(nxt, parent, level + 1)
                elif x.parent is None:
                    root_touched = True
                else:
                    if x.ls:
                        top_ls = x
                    if x.rs:
                        top_rs = x
            cur = nxt
            level += 1

        # ---- Step 3: pass down from the highest touched spine nodes
        if root_touched:
            recalc(self._root)
        for top, first in ((top_ls, True), (top_rs, False)):
            if top is not None:
                recalc(top)
                n = top
                while not n.leaf:
                    n = n.children[0] if first else n.children[-1]
                    recalc(n)

    def _insert_members(self, x: _Node, gt: list[int], gv: list[Any], gc: list[_Node]) -> None:
        """Small insertion: put the new entries (and, internally, their right children) into
        ``x`` in time order."""
        times = x.times
        values = x.values
        if x.leaf:
            if not times or gt[0] > times[-1]:
                times.extend(gt)
                values.extend(gv)
                return
            for t, v in zip(gt, gv):
                i = bisect_left(times, t)
                times.insert(i, t)
                values.insert(i, v)
            return
        ch = x.children
        for t, v, rc in zip(gt, gv, gc):
            i = bisect_left(times, t)
            times.insert(i, t)
            values.insert(i, v)
            ch.insert(i + 1, rc)
            rc.parent = x

    def _bulk_split(self, x: _Node, gt: list[int], gv: list[Any], gc: list[_Node],
                    nxt: list[list[Any]], next_level: int) -> _Node:
        """Interleave the new entries into ``x`` and split the result (arity p > 2*mu) into
        nodes of arity mu + 1 and a last one of arity mu .. 2*mu (paper Claim 1); ``x`` keeps
        the first chunk. Promoted separators go to the parent's group in ``nxt``. Returns the
        last node."""
        mt, mv, mc = _interleaved(x, gt, gv, gc)
        from_rs = x.rs or x.parent is None
        if x.parent is None:
            self._height_increase()
        p = x.parent
        assert p is not None
        x.rs = False
        # first chunk stays in x (keeps its identity, left-spine flag and the left finger)
        mu = self._mu
        x.times = mt[:mu]
        x.values = mv[:mu]
        if not x.leaf:
            first_children = [x.children[0], *mc[:mu]]
            for c in first_children:
                c.parent = x
            x.children = first_children
        if _has_up(x):
            self._recalc(x)
        y = self._split_off(x.leaf, p, _establish(nxt, p, next_level), mt, mv, mc)
        if from_rs:
            y.rs = True
            if self._rf is x:
                self._rf = y
        else:
            self._recalc(y)
        return y

    def _split_off(self, leaf: bool, p: _Node, group: list[Any], mt: list[int],
                   mv: list[Any], mc: list[_Node]) -> _Node:
        """The new right siblings of :meth:`_bulk_split`: the merged entries ``mt, mv`` (and
        right children ``mc``) after the first chunk become nodes of arity mu + 1 and a last
        one of arity mu .. 2*mu under ``p``, each promoting its separator to the parent's
        ``group``. A middle node is never on a spine: it gets its up aggregate here. Returns
        the last node (its aggregate is the caller's: it may be on the right spine)."""
        mu = self._mu
        pt = group[2]
        pv = group[3]
        pc = group[4]
        remaining = len(mt) - mu
        pos = mu
        two_mu = 2 * mu
        recalc = self._recalc
        comb = self._combine
        while True:
            size = mu if remaining > two_mu else remaining - 1
            y = _Node(leaf)
            y.parent = p
            end = pos + 1 + size
            y.times = mt[pos + 1:end]
            y.values = mv[pos + 1:end]
            if not leaf:
                kids = mc[pos:end]
                for c in kids:
                    c.parent = y
                y.children = kids
            pt.append(mt[pos])
            pv.append(mv[pos])
            pc.append(y)
            pos = end
            remaining -= size + 1
            if remaining == 0:
                return y
            if leaf:
                y.agg = reduce(comb, y.values)
                y.cnt = size
            else:
                recalc(y)

    # ------------------------------------------------------------------ range queries
    def query_since(self, time: int) -> Any:
        """``lower`` of the aggregate of the entries with ``entry.time >= time``.

        O(log n) combines (about 2 * arity per tree level): one path down to ``time`` plus
        the subtrees right of it. ``query_since(t)`` for ``t <= oldest()`` is ``query()``.
        """
        if type(time) is not int:
            time = as_time(time)
        lf = self._lf
        if not lf.times or time > self._rf.times[-1]:
            return self._lower(self._identity)
        if time <= lf.times[0]:
            return self.query()
        return self._lower(self._range(time, None))

    def query_range(self, lo: int, hi: int) -> Any:
        """``lower`` of the aggregate of the entries with ``lo <= entry.time < hi``.

        O(log n) combines: one path to each bound plus the subtrees between them, whose
        aggregates are stored (a shared structure answers windows ``[start, end)`` of any
        range). An empty range gives ``lower(identity)``.
        """
        if type(lo) is not int:
            lo = as_time(lo)
        if type(hi) is not int:
            hi = as_time(hi)
        lf = self._lf
        if not lf.times or hi <= lo or hi <= lf.times[0] or lo > self._rf.times[-1]:
            return self._lower(self._identity)
        if lo <= lf.times[0]:
            if hi > self._rf.times[-1]:
                return self.query()
            return self._lower(self._range(None, hi))
        if hi > self._rf.times[-1]:
            return self._lower(self._range(lo, None))
        return self._lower(self._range(lo, hi))

    def _range(self, lo: int | None, hi: int | None) -> Any:
        parts: list[Any] = []
        self._collect(self._root, lo, hi, parts)
        if not parts:
            return self._identity
        comb = self._combine
        a = parts[0]
        for i in range(1, len(parts)):
            a = comb(a, parts[i])
        return a

    def _collect(self, n: _Node, lo: int | None, hi: int | None, out: list[Any]) -> None:
        """Append, in time order, aggregates covering the entries of ``n``'s subtree in
        ``[lo, hi)`` (``None``: unbounded). At most two paths descend; the subtrees between
        them contribute their stored aggregates (``_full``)."""
        full = self._full
        while True:
            if lo is None and hi is None:
                out.append(full(n))
                return
            times = n.times
            i = 0 if lo is None else bisect_left(times, lo)
            j = len(times) if hi is None else bisect_left(times, hi)
            if n.leaf:
                out.extend(n.values[i:j])
                return
            ch = n.children
            if i == j:  # the whole range lies inside child i
                n = ch[i]
                continue
            # child i holds the times in (times[i-1], times[i]): all < lo when lo == times[i]
            if lo is None or times[i] != lo:
                self._collect(ch[i], lo, None, out)
            vals = n.values
            for k in range(i, j):
                out.append(vals[k])
                if k + 1 < j:
                    out.append(full(ch[k + 1]))
            if hi is not None and j < len(times) and times[j] == hi:
                hi = None  # child j lies entirely below hi
            n = ch[j]
            lo = None
