"""FiBA with bulk evict / bulk insert (``swag_core.algorithms.fiba``).

* the worked examples of ``notes/fiba-bulk.md`` section 9 (tree shapes after bulk evict and
  bulk insert, with MIN_ARITY 2), the Figure 1 aggregates of the paper, and the section 8.1
  bulk-insert bug case of the reference implementation;
* hypothesis against a brute-force model on random out-of-order operation sequences with
  time collisions (also inside one bulk and against times held in inner nodes), with
  non-commutative aggregations and arities 2, 3, 4 and 8, checking every invariant after
  every step;
* errors leave the window unchanged;
* combine-call counts that pin the complexity bounds deterministically.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core import Aggregation, EmptyWindowError, make_window
from swag_core.aggregations import Sum
from swag_core.algorithms.fiba import Fiba, _Node
from swag_core.errors import InvalidTimeError

from .fiba_invariants import check_fiba
from .helpers import Model, concat, counting, matmul

# ---------------------------------------------------------------------------- tree shapes


def letters() -> Aggregation:
    """String concatenation without a lift, for trees whose values are given directly."""
    return Aggregation(combine=lambda a, b: a + b, identity="", name="letters")


def build(shape: str, agg: Aggregation | None = None, arity: int = 2,
          value: Any = None) -> Fiba:
    """A Fiba with exactly the tree ``shape`` (note notation: ``<k1,k2>(c0, c1, c2)`` for an
    internal node, ``[k1, k2]`` for a leaf); each time ``t`` holds ``value(t)`` (default: the
    aggregation's lift of ``t``). Flags, fingers and aggregates are set up from scratch."""
    agg = agg if agg is not None else concat()
    w = Fiba(agg, arity=arity)
    val = value if value is not None else agg.lift_fn
    tokens = re.findall(r"-?\d+|[<>()\[\],]", shape)
    pos = 0

    def ints(close: str) -> list[int]:
        nonlocal pos
        out: list[int] = []
        while tokens[pos] != close:
            if tokens[pos] != ",":
                out.append(int(tokens[pos]))
            pos += 1
        pos += 1
        return out

    def node() -> _Node:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "[":
            n = _Node(True)
            n.times = ints("]")
        else:
            assert tok == "<"
            n = _Node(False)
            n.times = ints(">")
            assert tokens[pos] == "("
            pos += 1
            while True:
                c = node()
                c.parent = n
                n.children.append(c)
                if tokens[pos] == ",":
                    pos += 1
                    continue
                assert tokens[pos] == ")"
                pos += 1
                break
        n.values = [val(t) for t in n.times]
        return n

    root = node()
    post: list[_Node] = []

    def walk(n: _Node) -> None:
        for c in n.children:
            walk(c)
        post.append(n)

    walk(root)
    w._root = root
    left = right = root
    while not left.leaf:
        left = left.children[0]
        left.ls = True
    while not right.leaf:
        right = right.children[-1]
        right.rs = True
    w._lf, w._rf = left, right
    for n in post:  # up aggregates and the root bottom-up, then the spines top-down
        if not (n.ls or n.rs):
            w._recalc(n)
    for first in (True, False):
        n = root
        while not n.leaf:
            n = n.children[0] if first else n.children[-1]
            w._recalc(n)
    check_fiba(w)
    return w


def shape(w: Fiba) -> str:
    """The tree of ``w`` in the note's notation (no spaces)."""

    def dump(n: _Node) -> str:
        keys = ",".join(map(str, n.times))
        if n.leaf:
            return f"[{keys}]"
        return f"<{keys}>(" + ",".join(dump(c) for c in n.children) + ")"

    return dump(w._root)


def norm(s: str) -> str:
    return s.replace(" ", "")


def expected_concat(times: list[int]) -> str:
    return "".join(f"{t};" for t in times)


def times_of(s: str) -> list[int]:
    return sorted(int(x) for x in re.findall(r"-?\d+", s))


# ---------------------------------------------------------------------------- note 9.1

B = "<10>(<4,7>([1,2,3], [5,6], [8,9]), <13,16>([11,12], [14,15], [17,18,19]))"
B_PRIME = "<10>(<4,7>([1,2,3], [5,6], [8,9]), <13,16>([11], [14,15], [17,18,19]))"
E3 = ("<20>(<10>(<4>([1,2],[5,6]), <14>([11,12],[15,16])), "
      "<30>(<24>([21,22],[25,26]), <34>([31,32],[35,36])))")

BULK_EVICT_CASES = [
    # id, base tree, t, expected tree (note 9.1, MIN_ARITY 2)
    ("E1 move_batch non-sibling then sibling", B, 9,
     "<13>(<11>([10], [12]), <16>([14,15], [17,18,19]))"),
    ("E2 merge_not_sibling then make_child_root", B_PRIME, 9,
     "<13,16>([10,11], [14,15], [17,18,19])"),
    ("E3 sibling merges then height decrease", E3, 5,
     "<20,30>(<10,14>([6],[11,12],[15,16]), <24>([21,22],[25,26]), <34>([31,32],[35,36]))"),
    ("E4 right finger path, make_node_root", B, 15, "<17>([16], [18,19])"),
    ("E5 exact match in an inner node, make_child_root", B, 16, "[17,18,19]"),
    ("E6 exact match on the left side", B, 7,
     "<13>(<10>([8,9], [11,12]), <16>([14,15], [17,18,19]))"),
    ("E7 nothing to evict", B, 0, B),
    ("E8 everything", B, 100, "[]"),
    ("E9 search starts at the root", B, 12, "<14,16>([13], [15], [17,18,19])"),
    ("repair beyond boundary: merge twice", "<4>(<2>([1],[3]), <7>([5,6],[8,9]))", 1,
     "<4,7>([2,3],[5,6],[8,9])"),
    ("repair beyond boundary: borrow", "<4>(<2>([1],[3]), <7,10>([5,6],[8,9],[11]))", 1,
     "<7>(<4>([2,3],[5,6]), <10>([8,9],[11]))"),
    ("repair beyond boundary: merge", "<4,9>(<2>([1],[3]), <6>([5],[7,8]), <11>([10],[12]))",
     1, "<9>(<4,6>([2,3],[5],[7,8]), <11>([10],[12]))"),
]


@pytest.mark.parametrize(("base", "t", "after"), [c[1:] for c in BULK_EVICT_CASES],
                         ids=[c[0] for c in BULK_EVICT_CASES])
def test_bulk_evict_worked_examples(base: str, t: int, after: str) -> None:
    w = build(base)
    before = times_of(base)
    removed = w.bulk_evict(t)
    check_fiba(w)
    assert shape(w) == norm(after)
    kept = [x for x in before if x > t]
    assert removed == len(before) - len(kept)
    assert len(w) == len(kept)
    assert w.query() == expected_concat(kept)
    if kept:
        assert w.oldest() == kept[0]
        assert w._lf.times[0] == kept[0]


FIG1 = ("<7,15>(<3>([1,2],[4,5,6]), <9,12>([8],[10,11],[13,14]), "
        "<20>([17,18,19],[21,22]))")


def letter(t: int) -> str:
    return chr(ord("a") + t - 1)


def test_figure1_partial_aggregates() -> None:
    """The aggregates the paper's Figure 1 gives for its running example (note 2.5)."""
    w = build(FIG1, letters(), value=letter)
    root = w._root
    left, middle, right = root.children
    assert root.agg == "ghijklmno"  # inner: excludes both spines
    assert left.agg == "cdef"  # left spine
    assert left.children[0].agg == "abcdef"  # left finger: the root's whole first subtree
    assert left.children[1].agg == "def"  # up
    assert middle.agg == "hijklmn"  # up
    assert right.agg == "qrst"  # right spine
    assert right.children[0].agg == "qrs"  # up: "second leaf from the right"
    assert right.children[1].agg == "qrstuv"  # right finger: the root's whole last subtree
    assert w.query() == "abcdefghijklmnoqrstuv"
    assert w.query_since(9) == "ijklmnoqrstuv"
    assert w.query_range(4, 18) == "defghijklmnoq"
    assert w.bulk_evict(9) == 9
    check_fiba(w)
    assert shape(w) == norm("<15>(<12>([10,11],[13,14]), <20>([17,18,19],[21,22]))")
    assert w.query() == "jklmnoqrstuv"


# ---------------------------------------------------------------------------- note 9.2


def inserted(times: list[int], agg: Aggregation | None = None, arity: int = 2,
             value: Any = None) -> Fiba:
    w = Fiba(agg if agg is not None else concat(), arity=arity)
    for t in times:
        w.insert(t, t if value is None else value)
        check_fiba(w)
    return w


BULK_INSERT_CASES = [
    # id, single inserts before, bulk keys, expected tree (note 9.2, MIN_ARITY 2)
    ("BI1 collision on an inner node (note 8.1 bug case)", [6, 9, 17, 23, 24, 27, 28],
     [3, 16, 22, 25, 27, 31, 32, 39],
     "<24>(<9,17>([3,6],[16],[22,23]), <27,32>([25],[28,31],[39]))"),
    ("BI2 in-order: leaf split into four, root split, height increase",
     list(range(1, 11)), list(range(11, 21)),
     "<9>(<3,6>([1,2],[4,5],[7,8]), <12,15,18>([10,11],[13,14],[16,17],[19,20]))"),
    ("BI3 out-of-order: three promotions, inner split",
     list(range(10, 200, 10)), list(range(141, 150)),
     "<90,144>(<30,60>([10,20],[40,50],[70,80]), <120,141>([100,110],[130,140],[142,143]), "
     "<147,150,180>([145,146],[148,149],[160,170],[190]))"),
    ("BI5 empty tree: root-leaf split, two height increases", [], list(range(1, 21)),
     "<9>(<3,6>([1,2],[4,5],[7,8]), <12,15,18>([10,11],[13,14],[16,17],[19,20]))"),
    ("BI6 at the far left: the left finger keeps the first chunk",
     list(range(100, 111)), list(range(1, 8)),
     "<102>(<3,6>([1,2],[4,5],[7,100,101]), <105,108>([103,104],[106,107],[109,110]))"),
]


@pytest.mark.parametrize(("before", "keys", "after"), [c[1:] for c in BULK_INSERT_CASES],
                         ids=[c[0] for c in BULK_INSERT_CASES])
def test_bulk_insert_worked_examples(before: list[int], keys: list[int], after: str) -> None:
    w = inserted(before)
    w.bulk_insert([(k, k) for k in keys])
    check_fiba(w)
    assert shape(w) == norm(after)
    model = Model(concat(), coalesce=True)
    model.bulk_insert([(t, t) for t in before])
    model.bulk_insert([(k, k) for k in keys])
    assert w.query() == model.query()
    assert list(w.items()) == list(zip(model.times, model.values))


def test_bulk_insert_bug_case_sum() -> None:
    """Note 8.1: with Sum and all values 1 the reference implementation corrupts the tree;
    the correct result sums to 15 (key 27 collides in an inner node)."""
    w = inserted([6, 9, 17, 23, 24, 27, 28], Sum(), value=1)
    w.bulk_insert([(k, 1) for k in (3, 16, 22, 25, 27, 31, 32, 39)])
    check_fiba(w)
    assert shape(w) == norm("<24>(<9,17>([3,6],[16],[22,23]), <27,32>([25],[28,31],[39]))")
    assert w.query() == 15  # 14 distinct times, one of which (27) holds 1 + 1
    assert len(w) == 14


def test_bulk_insert_collisions_in_root_and_leaves() -> None:
    """BI4: collisions on the root key 3 and on leaf keys 5 and 7 combine as
    ``existing (+) new``; 11 is appended to the right finger; no split."""
    w = Fiba(letters(), arity=2)
    for t in range(1, 11):
        w.insert(t, f"o{t},")
    assert shape(w) == "<3,6,9>([1,2],[4,5],[7,8],[10])"
    w.bulk_insert([(7, "n7,"), (3, "n3,"), (11, "n11,"), (5, "n5,")])
    check_fiba(w)
    assert shape(w) == "<3,6,9>([1,2],[4,5],[7,8],[10,11])"
    assert w.query() == "o1,o2,o3,n3,o4,o5,n5,o6,o7,n7,o8,o9,o10,n11,"


def test_equal_times_in_one_bulk_and_in_inner_nodes() -> None:
    """``existing (+) new_1 (+) new_2`` for every time held anywhere (also inner nodes), in
    batch order, with an unsorted batch."""
    w = Fiba(letters(), arity=2)
    w.bulk_insert([(t, f"{t}.") for t in range(0, 60, 2)])
    root_time = w._root.times[0]
    deeper = w._root.children[-1]
    assert not deeper.leaf  # a time held by an inner node below the root
    batch: list[tuple[int, str]] = []
    for t in (root_time, deeper.times[-1], 30, 4, 59):
        batch += [(t, f"a{t}."), (t, f"b{t}.")]
    batch.reverse()  # unsorted; equal times keep their batch order (b before a)
    model = Model(letters(), coalesce=True)
    model.bulk_insert([(t, f"{t}.") for t in range(0, 60, 2)])
    model.bulk_insert(batch)
    w.bulk_insert(batch)
    check_fiba(w)
    assert w.query() == model.query()
    assert list(w.items()) == list(zip(model.times, model.values))
    assert dict(w.items())[30] == "30.b30.a30."


# ---------------------------------------------------------------------------- hypothesis

ARITIES = [2, 3, 4, 8]

op_strategy = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 40), st.integers(0, 9)),
    st.tuples(st.just("bulk_insert"),
              st.lists(st.tuples(st.integers(0, 40), st.integers(0, 9)), max_size=25)),
    st.tuples(st.just("evict")),
    st.tuples(st.just("bulk_evict"), st.integers(-2, 42)),
    st.tuples(st.just("shift"), st.integers(1, 15)),
)


def run_against_model(agg: Aggregation, arity: int, initial: int,
                      ops: list[tuple[Any, ...]]) -> None:
    w = Fiba(agg, arity=arity)
    model = Model(agg, coalesce=True)
    w.bulk_insert([(t, t % 7) for t in range(0, 2 * initial, 2)])
    model.bulk_insert([(t, t % 7) for t in range(0, 2 * initial, 2)])
    offset = 0
    for op in ops:
        kind = op[0]
        if kind == "insert":
            w.insert(op[1] + offset, op[2])
            model.insert(op[1] + offset, op[2])
        elif kind == "bulk_insert":
            batch = [(t + offset, v) for t, v in op[1]]
            w.bulk_insert(batch)
            model.bulk_insert(batch)
        elif kind == "evict":
            if len(model):
                w.evict()
                model.evict()
            else:
                with pytest.raises(EmptyWindowError):
                    w.evict()
        elif kind == "bulk_evict":
            assert w.bulk_evict(op[1] + offset) == model.bulk_evict(op[1] + offset)
        else:
            offset += op[1]  # later times drift upwards, as a stream's do
        check_fiba(w)
        assert w.query() == model.query()
        assert len(w) == len(model)
        assert list(w.items()) == list(zip(model.times, model.values))
        if len(model):
            assert (w.oldest(), w.youngest()) == (model.oldest(), model.youngest())
        times = [offset - 1, offset + 7, offset + 20, *model.times[:1], *model.times[-2:]]
        for t in times:
            assert w.query_since(t) == model.query_since(t)
        for lo, hi in zip(times, reversed(times)):
            lo_i = sum(1 for x in model.times if x < lo)
            hi_i = sum(1 for x in model.times if x < hi)
            assert w.query_range(lo, hi) == model._fold(model.values[lo_i:max(lo_i, hi_i)])


@settings(max_examples=150, deadline=None)
@given(arity=st.sampled_from(ARITIES), initial=st.sampled_from([0, 5, 40]),
       ops=st.lists(op_strategy, max_size=30))
def test_random_operations_concat(arity: int, initial: int, ops: list[tuple[Any, ...]]) -> None:
    run_against_model(concat(), arity, initial, ops)


@settings(max_examples=100, deadline=None)
@given(arity=st.sampled_from(ARITIES), initial=st.sampled_from([0, 12, 60]),
       ops=st.lists(op_strategy, max_size=30))
def test_random_operations_matmul(arity: int, initial: int, ops: list[tuple[Any, ...]]) -> None:
    run_against_model(matmul(), arity, initial, ops)


@settings(max_examples=60, deadline=None)
@given(arity=st.sampled_from([2, 3]), seed=st.integers(0, 2**32 - 1))
def test_random_large_bulks(arity: int, seed: int) -> None:
    """Deeper trees and big bulks: several levels split / merge in one operation."""
    import random

    rnd = random.Random(seed)
    agg = concat()
    w = Fiba(agg, arity=arity)
    model = Model(agg, coalesce=True)
    hi = 50
    for _ in range(12):
        r = rnd.random()
        if r < 0.45:
            batch = [(rnd.randrange(hi - 50, hi + 100), rnd.randrange(10))
                     for _ in range(rnd.randrange(1, 150))]
            w.bulk_insert(batch)
            model.bulk_insert(batch)
            hi += 60
        elif r < 0.75:
            t = rnd.randrange(hi - 200, hi)
            assert w.bulk_evict(t) == model.bulk_evict(t)
        else:
            for _ in range(rnd.randrange(1, 40)):
                t = rnd.randrange(hi - 100, hi + 10)
                w.insert(t, 1)
                model.insert(t, 1)
        check_fiba(w)
        assert w.query() == model.query()
        assert list(w.items()) == list(zip(model.times, model.values))


@settings(max_examples=120, deadline=None)
@given(arity=st.sampled_from([2, 3, 4]),
       times=st.sets(st.integers(0, 600), min_size=1, max_size=250),
       steps=st.lists(st.tuples(st.integers(-1, 601), st.lists(st.integers(0, 700), max_size=12)),
                      min_size=1, max_size=5),
       shuffled=st.booleans())
def test_bulk_evict_anywhere(arity: int, times: set[int], steps: list[tuple[int, list[int]]],
                             shuffled: bool) -> None:
    """Bulk evictions at arbitrary times (also exact keys of inner nodes) of windows with up to
    four levels, built by one bulk or by single inserts in arbitrary order (other shapes):
    neighbor moves, sibling and non-sibling merges on every level, make-node-root and
    make-child-root, repairs beyond the boundary."""
    agg = concat()
    w = Fiba(agg, arity=arity)
    model = Model(agg, coalesce=True)
    if shuffled:
        for t in sorted(times, key=lambda x: (x * 7919) % 601):
            w.insert(t, t)
    else:
        w.bulk_insert([(t, t) for t in times])
    model.bulk_insert([(t, t) for t in times])
    check_fiba(w)
    for cut, inserts in steps:
        assert w.bulk_evict(cut) == model.bulk_evict(cut)
        check_fiba(w)
        assert w.query() == model.query()
        w.bulk_insert([(t, 1) for t in inserts])
        model.bulk_insert([(t, 1) for t in inserts])
        check_fiba(w)
        assert list(w.items()) == list(zip(model.times, model.values))
        assert w.query() == model.query()


# ---------------------------------------------------------------------------- errors and API


def snapshot(w: Fiba) -> tuple[list[tuple[int, Any]], Any, int]:
    return list(w.items()), w.query(), len(w)


def test_errors_change_nothing() -> None:
    w = Fiba(matmul(), arity=2)
    w.bulk_insert([(t, t) for t in range(0, 100, 3)])
    before = snapshot(w)
    with pytest.raises(InvalidTimeError):
        w.bulk_insert([(200, 1), (5, 2), (None, 3)])
    with pytest.raises(InvalidTimeError):
        w.bulk_insert([(7, 1), (2.5, 2)])
    with pytest.raises(TypeError):  # lift fails on the last value: nothing inserted
        w.bulk_insert([(1, 1), (4, 2), (300, None)])
    with pytest.raises(InvalidTimeError):
        w.insert("12", 1)
    with pytest.raises(InvalidTimeError):
        w.bulk_evict(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTimeError):
        w.query_since(1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidTimeError):
        w.query_range(0, "9")  # type: ignore[arg-type]
    check_fiba(w)
    assert snapshot(w) == before


def test_empty_window() -> None:
    w = Fiba(concat())
    with pytest.raises(EmptyWindowError):
        w.evict()
    with pytest.raises(EmptyWindowError):
        w.oldest()
    with pytest.raises(EmptyWindowError):
        w.youngest()
    assert w.query() == ""
    assert w.query_since(0) == ""
    assert w.query_range(0, 10) == ""
    assert w.bulk_evict(10) == 0
    assert len(w) == 0
    assert list(w.items()) == []
    w.bulk_insert([])
    check_fiba(w)
    w.bulk_insert([(5, 1), (5, 2)])
    assert (len(w), w.query()) == (1, "1;2;")
    assert w.bulk_evict(5) == 1
    check_fiba(w)
    assert (len(w), w.query()) == (0, "")


@pytest.mark.parametrize("arity", [0, 1, -3, 2.0, True, "4", None])
def test_bad_arity(arity: Any) -> None:
    with pytest.raises(ValueError):
        Fiba(concat(), arity=arity)


def test_registry_and_attributes() -> None:
    w = make_window("fiba", concat(), arity=3)
    assert isinstance(w, Fiba) and w.arity == 3
    assert Fiba.in_order is False
    assert Fiba.coalesces_equal_times is True
    assert Fiba.range_queries is True
    assert make_window("fiba", concat()).arity == 4


def test_query_range_edges() -> None:
    w = Fiba(concat(), arity=2)
    w.bulk_insert([(t, t) for t in range(10, 100, 10)])
    assert w.query_range(30, 30) == ""
    assert w.query_range(50, 20) == ""
    assert w.query_range(0, 10) == ""
    assert w.query_range(0, 11) == "10;"
    assert w.query_range(90, 1000) == "90;"
    assert w.query_range(91, 1000) == ""
    assert w.query_range(-5, 1000) == w.query()
    assert w.query_range(20, 50) == "20;30;40;"
    assert w.query_range(21, 50) == "30;40;"
    assert w.query_since(100) == ""
    assert w.query_since(90) == "90;"
    assert w.query_since(-1) == w.query()


def test_deferred_free_list_is_released() -> None:
    """Bulk evictions hand cut-off subtrees to the free list (paper section 6); later
    operations release them a few nodes at a time."""
    w = Fiba(Sum(), arity=2)
    w.bulk_insert((t, 1) for t in range(5000))
    w.bulk_evict(2500)
    assert w._trash
    for t in range(5000, 10000):
        w.insert(t, 1)
        w.evict()
    assert not w._trash
    check_fiba(w)
    assert len(w) == 2499


# ---------------------------------------------------------------------------- combine counts
# Deterministic complexity checks: combine calls are counted, never time.


def window_of(n: int, arity: int) -> tuple[Fiba, Any]:
    agg, counter = counting(Sum())
    w = Fiba(agg, arity=arity)
    w.bulk_insert((t, 1) for t in range(n))  # an in-order bulk: about 1 combine per entry
    assert counter.reset() <= 1.1 * n
    return w, counter


# measured worst ratio combines / log2(n) over evictions of 10%..99.9% of windows of 2^10 ..
# 2^16 entries: 4.8 (arity 2), 7.1 (arity 4), 11.1 (arity 8)
BULK_EVICT_C = {2: 6, 4: 8, 8: 13}


@pytest.mark.parametrize("arity", [2, 4, 8])
def test_bulk_evict_half_of_2_16_is_logarithmic(arity: int) -> None:
    n = 1 << 16
    w, counter = window_of(n, arity)
    assert w.bulk_evict(n // 2 - 1) == n // 2
    calls = counter.reset()
    # measured: 76 (arity 2), 104 (arity 4), 124 (arity 8) combines for m = 32768 evictions
    assert calls <= BULK_EVICT_C[arity] * math.log2(n)
    assert w.query() == n // 2
    assert len(w) == n // 2


@pytest.mark.parametrize("lg", [10, 13])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_bulk_evict_cost_does_not_grow_with_m(lg: int, fraction: float) -> None:
    n = 1 << lg
    w, counter = window_of(n, 4)
    m = int(n * fraction)
    assert w.bulk_evict(m - 1) == m
    assert counter.reset() <= BULK_EVICT_C[4] * lg
    check_fiba(w)


def test_bulk_evict_amortized_log_m() -> None:
    """Steady state (paper Theorem 1): bulk evictions of m entries cost amortized O(log m)
    combines, whatever the window size (measured about 5.8 (1 + log2 m) at arity 4)."""
    for m in (4, 64, 1024):
        w, counter = window_of(1 << 13, 4)
        total = 0
        rounds = 30
        for r in range(rounds):
            w.bulk_insert((t, 1) for t in range((1 << 13) + r * m, (1 << 13) + (r + 1) * m))
            counter.reset()
            assert w.bulk_evict(r * m + m - 1) == m
            total += counter.reset()
        assert total / rounds <= 7 * (1 + math.log2(m))


def bulk_insert_bound(m: int, d: int) -> float:
    """The paper's amortized bound (Theorem 3) without its constant."""
    return math.log2(d) + m * (1 + math.log2(d / m))


# measured worst ratio combines / bulk_insert_bound over the (m, d) below: 3.4 (arity 4)
BULK_INSERT_C = 4


@pytest.mark.parametrize(("m", "d"), [(4, 16), (16, 16), (4, 256), (64, 256), (256, 256),
                                      (16, 4096), (256, 4096), (4096, 4096), (64, 16384)])
def test_bulk_insert_cost_m_log_d_over_m(m: int, d: int) -> None:
    """m new times spread evenly over the youngest d entries of a window of 2^14 entries."""
    n = 1 << 14
    scale = 1 << 20
    agg, counter = counting(Sum())
    w = Fiba(agg, arity=4)
    w.bulk_insert((t * scale, 1) for t in range(n))
    counter.reset()
    w.bulk_insert(((n - d + (j * d) // m) * scale + 1 + j % 7, 1) for j in range(m))
    calls = counter.reset()
    assert calls <= BULK_INSERT_C * bulk_insert_bound(m, d)
    if m == d:  # a loop of single inserts would pay O(m log d)
        assert calls <= 2 * m + 8 * math.log2(d)  # measured 49, 523, 8218 for m = 16, 256, 4096
    assert w.query() == n + m


def test_bulk_insert_beats_single_inserts() -> None:
    n, d, m = 1 << 13, 1024, 1024
    counts = []
    for bulk in (True, False):
        agg, counter = counting(Sum())
        w = Fiba(agg, arity=4)
        w.bulk_insert((2 * t, 1) for t in range(n))
        counter.reset()
        batch = [(2 * (n - d + j) + 1, 1) for j in range(m)]
        if bulk:
            w.bulk_insert(batch)
        else:
            for t, v in batch:
                w.insert(t, v)
        counts.append(counter.reset())
    assert counts[0] * 3 < counts[1]


@pytest.mark.parametrize("arity", [2, 4, 8])
def test_in_order_insert_and_evict_amortized_constant(arity: int) -> None:
    agg, counter = counting(Sum())
    w = Fiba(agg, arity=arity)
    n = 1 << 14
    for t in range(n):
        w.insert(t, 1)
    assert counter.reset() <= 3.6 * n  # measured 3.33 / 3.44 / 3.31 per insert
    for t in range(n, 2 * n):  # sliding window: one insert and one evict per step
        w.insert(t, 1)
        w.evict()
    assert counter.reset() <= 9 * n  # measured 6.4 / 7.7 / 8.1 per step
    for _ in range(n):
        w.evict()
    assert counter.reset() <= 5 * n  # measured 3.1 / 4.2 / 4.6 per evict
    assert len(w) == 0


@pytest.mark.parametrize("d", [4, 64])
def test_out_of_order_insert_cost_depends_on_distance_not_size(d: int) -> None:
    """Each insert lands d entries from the youngest end: amortized O(log d) combines
    (measured at most 5.7 (1 + log2 d) for windows of 2^10 .. 2^16 entries, arity 4)."""
    scale = 1 << 20
    for lg in (10, 14):
        n = 1 << lg
        agg, counter = counting(Sum())
        w = Fiba(agg, arity=4)
        w.bulk_insert((t * scale, 1) for t in range(n))
        counter.reset()
        k = 1000
        for j in range(1, k + 1):
            w.insert((n - d) * scale + j, 1)
        assert counter.reset() <= 7 * (1 + math.log2(d)) * k


def test_query_costs() -> None:
    w, counter = window_of(1 << 14, 4)
    w.query()
    assert counter.reset() == 2
    for t in range(0, 1 << 14, 1 << 10):
        w.query_since(t + 1)
        assert counter.reset() <= 6 * 14  # measured at most 5.3 log2(n)
        w.query_range(t + 1, t + 5000)
        assert counter.reset() <= 12 * 14


# ---------------------------------------------------------------------------- check_invariants


def corruptions() -> list[tuple[str, Any]]:
    def agg(w: Fiba) -> None:
        w._root.children[1].agg = "x;"

    def count(w: Fiba) -> None:
        w._root.children[1].cnt += 1

    def flag(w: Fiba) -> None:
        w._root.children[1].ls = True

    def finger(w: Fiba) -> None:
        w._lf = w._root.children[1].children[0]

    def order(w: Fiba) -> None:
        leaf = w._root.children[1].children[0]
        leaf.times.reverse()

    def arity(w: Fiba) -> None:
        leaf = w._root.children[1].children[0]
        del leaf.times[:], leaf.values[:]

    def parent(w: Fiba) -> None:
        w._root.children[1].children[0].parent = w._root

    def separator(w: Fiba) -> None:
        w._root.times[0] = 100  # larger than the times in the right subtree

    def suffix_cache(w: Fiba) -> None:
        w.evict()  # builds the left finger's suffix cache
        assert w._suf is not None
        w._suf[0] = "x;"

    return [("agg", agg), ("count", count), ("flag", flag), ("finger", finger),
            ("order", order), ("arity", arity), ("parent", parent), ("separator", separator),
            ("suffix cache", suffix_cache)]


@pytest.mark.parametrize("corrupt", [c[1] for c in corruptions()],
                         ids=[c[0] for c in corruptions()])
def test_check_invariants_detects_corruption(corrupt: Any) -> None:
    w = build(B)
    check_fiba(w)
    corrupt(w)
    with pytest.raises(AssertionError, match="fiba invariant violated"):
        check_fiba(w)


def test_query_range_bad_lower_bound() -> None:
    w = Fiba(concat())
    w.insert(1, 1)
    with pytest.raises(InvalidTimeError):
        w.query_range(None, 5)  # type: ignore[arg-type]
    assert w.query_range(0, 5) == "1;"
