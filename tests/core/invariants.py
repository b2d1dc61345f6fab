"""The structural invariants of the tree structures (MTA, Reactive Aggregator, FlatFAT),
checked from outside: each checker recomputes every stored aggregate and raises
``AssertionError`` naming the first violation. They read the structures' private state on
purpose: the production classes carry no test-only methods."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from swag_core.algorithms._fat import _BROKEN, FlatFAT, is_power_of_two
from swag_core.algorithms._queues import EMPTY, NO_CACHE
from swag_core.algorithms.mta import Amta, LogMta, _MtaBase
from swag_core.algorithms.reactive import Reactive


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b)


def check_mta(w: _MtaBase, eq: Callable[[Any, Any], bool] | None = None) -> None:
    """The invariants of a :class:`LogMta` or an :class:`Amta` (``eq`` compares aggregates,
    default ``==``)."""
    if isinstance(w, Amta):
        check_amta(w, eq)
    else:
        assert isinstance(w, LogMta)
        check_log_mta(w, eq)


def levels(w: _MtaBase) -> list[list[tuple[Any, Any]]]:
    """The level queues as lists of pairs ``(e0, e1)``, leaves first, ``None`` for an
    empty slot (the paper's ∅), the form in which the paper states its examples; in
    :class:`Amta` the leftmost branch may hold stale values."""
    out: list[list[tuple[Any, Any]]] = []
    if not w._t:
        return out
    for level, row in enumerate(w._v):
        lo, hi = w._live_range(level)
        b = w._base[level]
        pairs = []
        for q in range(lo >> 1, ((hi - 1) >> 1) + 1):
            e0, e1 = q + q, q + q + 1
            pairs.append((row[e0 - b] if lo <= e0 < hi else None,
                          row[e1 - b] if lo <= e1 < hi else None))
        out.append(pairs)
    return out


def _check_leaves(w: _MtaBase, fail: Callable[[str], None]) -> None:
    t = w._t
    if len(t) != len(w._v[0]):
        fail("times and leaves differ in length")
    if len(w._v) != len(w._base):
        fail("levels and bases differ in length")
    if any(t[i] > t[i + 1] for i in range(w._lo0 - w._base[0], len(t) - 1)):
        fail("times are not sorted")
    if not t and (len(w._v) != 1 or w._v[0] or w._lo0 != w._base[0]):
        fail("an empty window must be in the cleared state")
    if t and not w._base[0] <= w._lo0 < w._base[0] + len(t):
        fail("oldest leaf out of range")


def _fold(w: _MtaBase, a: int, b: int) -> Any:
    """Raw aggregate of the leaves with absolute index in ``[a, b)`` (brute force)."""
    row = w._v[0]
    base = w._base[0]
    acc = EMPTY
    for i in range(a, b):
        v = row[i - base]
        acc = v if acc is EMPTY else w._combine(acc, v)
    return acc


def check_log_mta(w: LogMta, eq: Callable[[Any, Any], bool] | None = None) -> None:
    """Recompute every stored aggregate and check the structure; raise AssertionError
    on the first violation. ``eq`` compares aggregates (default ``==``).

    Checked: times sorted and aligned with the leaves; every level's live range is the
    parent range of the level below (Theorem 1 with the per-level shift); the root level
    is a single pair with two live elements (minimal height) unless it is the leaf level;
    every live element of level >= 1 equals the combine of its live children; the kept
    total equals the fold of the leaves.
    """
    same = eq or _equal

    def fail(msg: str) -> None:
        raise AssertionError(f"log_mta invariant: {msg}")

    _check_leaves(w, fail)
    if not w._t:
        if w._total is not EMPTY:
            fail("empty window with a total")
        return
    v = w._v
    h = len(v) - 1
    if not len(w._lo) == len(w._sh) == h + 1:
        fail("per-level lists differ in length")
    for level in range(1, h + 1):
        blo, bhi = w._live_range(level - 1)
        lo, hi = w._live_range(level)
        sh = w._sh[level]
        if lo != (blo >> 1) + sh or hi - 1 != ((bhi - 1) >> 1) + sh:
            fail(f"level {level} range [{lo}, {hi}) is not the parent range of "
                 f"[{blo}, {bhi}) with shift {sh}")
        if lo < w._base[level]:
            fail(f"level {level} starts before its base")
        below = v[level - 1]
        bb = w._base[level - 1]
        for x in range(lo, hi):
            c0 = 2 * (x - sh)
            kids = [below[c - bb] for c in (c0, c0 + 1) if blo <= c < bhi]
            want = kids[0] if len(kids) == 1 else w._combine(kids[0], kids[1])
            if not same(v[level][x - w._base[level]], want):
                fail(f"element {x} of level {level} is not the combine of its children")
    lo, hi = w._live_range(h)
    if (lo >> 1) != ((hi - 1) >> 1):
        fail("the root level is not a single pair")
    if h and hi - lo != 2:
        fail("the root pair has one element (height not minimal)")
    whole = _fold(w, w._lo0, w._base[0] + len(w._t))
    if not same(w._total, whole):
        fail("total differs from the fold of the leaves")


def check_amta(w: Amta, eq: Callable[[Any, Any], bool] | None = None) -> None:
    """Recompute every stored aggregate and check the structure; raise AssertionError
    on the first violation. ``eq`` compares aggregates (default ``==``).

    Checked: times sorted and aligned with the leaves; the top level is one pair and
    every level below it has at least two (so the height is at most log2(n) + 1);
    Invariant 3 (level l + 1 holds exactly the parents of the non-tail pairs of level l);
    every element off the leftmost branch equals the combine of its children (the
    leftmost branch may be stale by design); R0 is the fold of the oldest
    tree, R1 of the younger ones; S is what Algorithm 4 would build and its top is the
    oldest tree without its head leaf; the cached total is R0 (+) R1.
    """
    same = eq or _equal

    def fail(msg: str) -> None:
        raise AssertionError(f"amta invariant: {msg}")

    _check_leaves(w, fail)
    if not w._t:
        if (w._r0, w._r1, w._cache) != (EMPTY, EMPTY, EMPTY) or w._stack:
            fail("empty window with a result pair or stack")
        return
    v = w._v
    base = w._base
    lo0 = w._lo0
    h = len(v) - 1
    n = len(w)
    combine = w._combine
    for level in range(h + 1):
        lo, hi = w._live_range(level)
        if not base[level] <= lo < hi:
            fail(f"level {level} is empty or starts before its base")
        pairs = ((hi - 1) >> 1) - (lo >> 1) + 1
        if level == h and pairs != 1:
            fail("the top level is not a single pair")
        if level < h and pairs < 2:
            fail(f"level {level} below the top has fewer than two pairs")
        if level < h and base[level + 1] + len(v[level + 1]) != (hi - 1) >> 1:
            fail(f"level {level + 1} is not exactly the parents of the non-tail pairs "
                 f"of level {level} (Invariant 3)")
        if level:
            below = v[level - 1]
            bb = base[level - 1]
            for x in range(lo + 1, hi):       # the head (leftmost branch) may be stale
                want = combine(below[2 * x - bb], below[2 * x + 1 - bb])
                if not same(v[level][x - base[level]], want):
                    fail(f"element {x} of level {level} is not the combine of its children")
    if h and n < 1 << (h - 1):
        fail(f"height {h} too large for {n} entries")
    end = base[0] + len(w._t)
    first_young = w._first_leaf(h - 1) if h else end
    if not same(w._r0, _fold(w, lo0, first_young)):
        fail("R0 is not the aggregate of the oldest tree")
    if first_young == end:
        if w._r1 is not EMPTY:
            fail("R1 must be empty with a single tree")
    elif not same(w._r1, _fold(w, first_young, end)):
        fail("R1 is not the aggregate of the younger trees")
    # S as Algorithm 4 builds it
    want_stack: list[Any] = []
    top = EMPTY
    for level in range(h, -1, -1):
        x = lo0 >> level
        if not x & 1 and x + 1 < base[level] + len(v[level]):
            b = v[level][x + 1 - base[level]]
            top = b if top is EMPTY else combine(b, top)
            want_stack.append(top)
    if len(want_stack) != len(w._stack) or not all(
            same(a, b) for a, b in zip(w._stack, want_stack)):
        fail("stack differs from its recomputation")
    if w._stack and not same(w._stack[-1], _fold(w, lo0 + 1, first_young)):
        fail("stack top is not the oldest tree without its head leaf")
    if not w._stack and first_young != lo0 + 1:
        fail("empty stack but the oldest tree has more than one leaf")
    if w._cache is not EMPTY:
        r1 = w._r1
        want = w._r0 if r1 is EMPTY else combine(w._r0, r1)
        if not same(w._cache, want):
            fail("cached total differs from R0 (+) R1")


def check_reactive(w: Reactive) -> None:
    """Raise ``AssertionError`` unless the structure is consistent: capacity a power of
    two within bounds, span and ends, ordering of times (ghost times included), ⊥
    outside the span, the shrink threshold, every tree node with no pending (dirty) leaf
    below it equal to the fold of its leaves (all nodes after a query,
    :func:`check_fat`), and a cached aggregate equal to the fold of the window.
    Values are compared with ``==``. Changes nothing (no flush); costs up to ``cap + n``
    combine calls."""

    def fail(msg: str) -> None:
        raise AssertionError(f"reactive invariant: {msg}")

    empty = EMPTY
    fat = w._fat
    cap = fat.capacity
    if not is_power_of_two(cap) or cap < w._min_capacity:
        fail(f"capacity {cap}")
    t = fat.tree
    if len(t) != 2 * cap or len(w._times) != cap:
        fail("array sizes")
    n, s, front = w._n, w._span, w._front
    if not (0 <= n <= s <= cap and 0 <= front < cap):
        fail(f"n={n} span={s} front={front} cap={cap}")
    if (n == 0) != (s == 0):
        fail("empty window with a span")
    mask = cap - 1
    slots = [(front + i) & mask for i in range(s)]
    leaves = [t[cap + j] for j in slots]
    if s and (leaves[0] is empty or leaves[-1] is empty):
        fail("an end of the span is a hole")
    if sum(v is not empty for v in leaves) != n:
        fail("entry count")
    keys = [w._times[j] for j in slots]
    if any(a > b for a, b in pairwise(keys)):
        fail(f"times out of order: {keys}")
    inside = set(slots)
    if any(t[cap + j] is not empty for j in range(cap) if j not in inside):
        fail("a slot outside the span is not ⊥")
    if 4 * n < cap and cap > max(w._min_capacity, w._initial_capacity):
        fail(f"{n} entries in {cap} slots (below 1/4)")
    try:
        check_fat(fat)
    except AssertionError as error:
        fail(str(error))
    cache = w._cache
    if cache is not NO_CACHE:
        values = [v for v in leaves if v is not empty]
        acc = values[0] if values else empty
        combine = w._combine
        for v in values[1:]:
            acc = combine(acc, v)
        if acc is empty or not cache == acc:  # noqa: SIM201 (only == is required)
            fail(f"cached aggregate {cache!r}, the window folds to {acc!r}")


def check_fat(w: FlatFAT, equal: Callable[[Any, Any], bool] | None = None) -> None:
    """Assert invariant (4.1) wherever it must hold: every internal node with no pending
    write below it equals ``left (+) right`` (with :data:`EMPTY` short-circuited); after
    :meth:`FlatFAT.flush` that is every node; costs ``capacity - 1`` calls.

    Raises ``AssertionError`` naming the first wrong node.
    """
    eq = equal if equal is not None else _equal
    tree = w.tree
    cap = w.capacity
    if w._dirty and w._dirty[0] == _BROKEN:
        return      # every internal node is pending recomputation
    stale = set()
    for h in w._dirty:
        h >>= 1
        while h and h not in stale:
            stale.add(h)
            h >>= 1
    empty = EMPTY
    for h in range(cap - 1, 0, -1):
        if h in stale:
            continue
        want = w._join(tree[2 * h], tree[2 * h + 1])
        node = tree[h]
        if (node is empty) != (want is empty) or (
                node is not empty and not eq(node, want)):
            raise AssertionError(f"FlatFAT node {h} holds {node!r}, but its children "
                                 f"combine to {want!r}")
