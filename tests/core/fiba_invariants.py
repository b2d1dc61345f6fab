"""The structural invariants of :class:`swag_core.algorithms.fiba.Fiba`, checked from outside
(O(n) time and combine calls): equal leaf depth, arity bounds, time order (also across
levels), parent pointers, spine flags, both fingers, the entry counts, and every stored
partial aggregate against a recomputation from the values (compared with ``==``). The
aggregates follow the module docstring of ``fiba.py`` (paper section 3.2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from swag_core.algorithms.fiba import Fiba, _Node

#: (raw aggregate or None when empty, entry count) of a subtree or part of a node
Part = tuple[Any, int]


def fail(msg: str) -> NoReturn:
    raise AssertionError(f"fiba invariant violated: {msg}")


def check_fiba(w: Fiba) -> None:
    """Raise ``AssertionError`` naming the first violated invariant of ``w``."""
    root = w._root
    if root.parent is not None or root.ls or root.rs:
        fail("root has a parent or a spine flag")
    full, leaves = _subtrees(w)
    if w._lf is not leaves[0]:
        fail("left finger is not the leftmost leaf")
    if w._rf is not leaves[-1]:
        fail("right finger is not the rightmost leaf")
    _check_partials(w, full)
    total = full[id(root)]
    if len(w) != total[1]:
        fail(f"len() {len(w)} != {total[1]} entries")


def _folder(w: Fiba) -> Callable[[list[Part]], Part]:
    comb = w._combine

    def fold(parts: list[Part]) -> Part:
        acc: Any = None
        cnt = 0
        for a, c in parts:
            if c:
                acc = a if cnt == 0 else comb(acc, a)
                cnt += c
        return acc, cnt
    return fold


def _check_node_shape(w: Fiba, n: _Node, lo: float, hi: float) -> None:
    """Arity bounds and time order of one node, its times inside ``(lo, hi)``."""
    times = n.times
    if len(n.values) != len(times):
        fail(f"node {times}: {len(n.values)} values for {len(times)} times")
    arity = len(times) + 1
    if n is w._root:
        if not n.leaf and arity < 2:
            fail("internal root with fewer than 2 children")
        if arity > w._max:
            fail(f"root arity {arity} > {w._max}")
    elif not w._mu <= arity <= w._max:
        fail(f"node {times} arity {arity} outside [{w._mu}, {w._max}]")
    prev = lo
    for t in times:
        if type(t) is not int:
            fail(f"node {times}: time {t!r} is not an int")
        if not prev < t:
            fail(f"node {times}: times out of order / outside ({lo}, {hi})")
        prev = t
    if times and not times[-1] < hi:
        fail(f"node {times}: times outside ({lo}, {hi})")
    if n.leaf and n.children:
        fail(f"leaf {times} has children")
    if not n.leaf and len(n.children) != arity:
        fail(f"node {times}: {len(n.children)} children for arity {arity}")


def _check_child_links(w: Fiba, n: _Node) -> None:
    """Parent pointers and spine flags of ``n``'s children."""
    arity = len(n.children)
    for k, c in enumerate(n.children):
        if c.parent is not n:
            fail(f"child {k} of {n.times} has a wrong parent pointer")
        if c.ls != ((n is w._root or n.ls) and k == 0):
            fail(f"child {k} of {n.times}: left-spine flag {c.ls}")
        if c.rs != ((n is w._root or n.rs) and k == arity - 1):
            fail(f"child {k} of {n.times}: right-spine flag {c.rs}")


def _subtrees(w: Fiba) -> tuple[dict[int, Part], list[_Node]]:
    """Check every node's shape and links; return each subtree's fold (by node id) and the
    leaves in order."""
    fold = _folder(w)
    leaves: list[_Node] = []
    depths: set[int] = set()
    full: dict[int, Part] = {}

    def visit(n: _Node, d: int, lo: float, hi: float) -> Part:
        _check_node_shape(w, n, lo, hi)
        times = n.times
        if n.leaf:
            leaves.append(n)
            depths.add(d)
            res = fold([(v, 1) for v in n.values])
        else:
            _check_child_links(w, n)
            parts: list[Part] = []
            for k, c in enumerate(n.children):
                parts.append(visit(c, d + 1, times[k - 1] if k else lo,
                                   times[k] if k < len(times) else hi))
                if k < len(times):
                    parts.append((n.values[k], 1))
            res = fold(parts)
        full[id(n)] = res
        return res

    visit(w._root, 0, -float("inf"), float("inf"))
    if len(depths) > 1:
        fail(f"leaves at different depths {sorted(depths)}")
    return full, leaves


def _check_partials(w: Fiba, full: dict[int, Part]) -> None:
    """Every node's stored aggregate and count (up, inner, left or right, by its place) and
    the cached left-finger suffixes."""
    fold = _folder(w)

    def inner(n: _Node) -> Part:
        if n.leaf:
            return full[id(n)]
        parts: list[Part] = []
        for k in range(len(n.times)):
            if k:
                parts.append(full[id(n.children[k])])
            parts.append((n.values[k], 1))
        return fold(parts)

    def expected(n: _Node) -> Part:
        p = n.parent
        if p is None:
            return inner(n)
        last = () if n.leaf else (full[id(n.children[-1])],)
        first = () if n.leaf else (full[id(n.children[0])],)
        up = [expected(p)] if p.parent is not None else []
        if n.ls:
            return fold([inner(n), *last, *up])
        if n.rs:
            return fold([*up, *first, inner(n)])
        return full[id(n)]

    stack = [w._root]
    while stack:
        n = stack.pop()
        a, c = expected(n)
        if c == 0:
            a = w._identity
        if n.cnt != c:
            fail(f"node {n.times}: stored count {n.cnt}, expected {c}")
        if n.agg != a:
            fail(f"node {n.times}: stored aggregate {n.agg!r}, expected {a!r}")
        stack.extend(n.children)
    suf = w._suf
    if suf is not None:
        lf = w._lf
        p = lf.parent
        tail = [expected(p)] if p is not None and p.parent is not None else []
        if len(suf) != len(lf.values):
            fail(f"cached left-finger suffixes: {len(suf)} for {len(lf.values)} values")
        for i in range(len(suf)):
            a, _ = fold([*((v, 1) for v in lf.values[i:]), *tail])
            if suf[-1 - i] != a:
                fail(f"cached left-finger suffix {i}: {suf[-1 - i]!r}, expected {a!r}")
