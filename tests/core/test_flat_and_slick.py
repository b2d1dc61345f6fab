"""FlatFAT (tree and window), FlatFIT and SlickDeque: the papers' concrete cases, structural
invariants after every step, combine-call counts for the complexity bounds, query_since
against brute force, errors and edge cases.

Test-case labels T1-T13 of the FlatFAT part refer to note ``reactive-flatfat.md`` section 5.2;
those of the SlickDeque part to note ``slickdeque.md`` section 10.
"""

from __future__ import annotations

import math
import operator
import random
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core import (
    ALGORITHMS,
    Aggregation,
    AlgorithmMismatchError,
    EmptyWindowError,
    InvalidValueError,
    OutOfOrderError,
    make_window,
)
from swag_core.aggregations import Collect, Max, Sum
from swag_core.algorithms._fat import EMPTY, FlatFAT
from swag_core.algorithms._queues import (
    grown_capacity,
    ring_assign,
    ring_bisect,
    ring_runs,
    ring_slice,
    shrunk_capacity,
)
from swag_core.algorithms.flatfat import FlatFat
from swag_core.algorithms.flatfit import FlatFit
from swag_core.algorithms.slickdeque import SlickDeque

from .helpers import Model, concat, counting, matgroup, matmul
from .invariants import check_fat


# --------------------------------------------------------------------------- local tools
def strcat(counter: list[int] | None = None) -> Callable[[Any, Any], Any]:
    """String concatenation that refuses the EMPTY marker and counts its calls."""

    def combine(a: Any, b: Any) -> Any:
        assert a is not EMPTY and b is not EMPTY, "EMPTY reached combine"
        if counter is not None:
            counter[0] += 1
        return a + b
    return combine


def _argmax_combine(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b[0] > a[0] else a          # ties: the older operand


def argmax_oldest() -> Aggregation:
    """ArgMax over (key, payload) pairs, ties to the oldest; selective, not commutative."""
    return Aggregation(combine=_argmax_combine, identity=None,
                       lower=lambda a: None if a is None else a[1],
                       selective=True, name="argmax_oldest")


def _max_combine(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b > a else a


def _min_combine(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b < a else a


def max_agg() -> Aggregation:
    return Aggregation(combine=_max_combine, identity=None, selective=True, name="max")


def min_agg() -> Aggregation:
    return Aggregation(combine=_min_combine, identity=None, selective=True, name="min")


def int_sum() -> Aggregation:
    return Aggregation(combine=operator.add, identity=0, subtract=operator.sub,
                       commutative=True, name="sum")


class Calls:
    def __init__(self) -> None:
        self.combine = 0
        self.subtract = 0


def counted(agg: Aggregation) -> tuple[Aggregation, Calls]:
    """``agg`` with ``combine`` and ``subtract`` counting their calls."""
    calls = Calls()
    inner_combine = agg.combine
    inner_subtract = agg.subtract

    def combine(a: Any, b: Any) -> Any:
        calls.combine += 1
        return inner_combine(a, b)

    subtract = None
    if inner_subtract is not None:
        def subtract(total: Any, oldest: Any) -> Any:
            calls.subtract += 1
            return inner_subtract(total, oldest)

    return Aggregation(combine=combine, identity=agg.identity, lift=agg.lift,
                       lower=agg.lower, subtract=subtract, commutative=agg.commutative,
                       selective=agg.selective, name=agg.name), calls


def fold(agg: Aggregation, values: list[Any]) -> Any:
    acc = agg.identity
    for v in values:
        acc = agg.combine(acc, v)
    return acc


# --------------------------------------------------------------------------- invariants
def check_flatfat(w: FlatFat) -> None:
    """Tree invariant (4.1) where it must hold now and after a flush; the leaves outside the
    window are EMPTY; the circular buffer holds the window in order."""
    fat = w._fat
    cap = fat.capacity
    assert cap & (cap - 1) == 0 and cap >= w._min_capacity
    assert 0 <= w._front < cap and 0 <= len(w) <= cap
    inside = {(w._front + k) % cap for k in range(len(w))}
    for slot in range(cap):
        assert (fat.leaf(slot) is EMPTY) == (slot not in inside)
    check_fat(fat)
    fat.flush()
    check_fat(fat)
    times = [t for t, _ in w.items()]
    assert times == sorted(times)


def check_flatfit(w: FlatFit) -> None:
    """Every live slot's partial aggregates the entries from it to (excluding) the slot its
    pointer designates, which lies after it in the window or just past the youngest."""
    cap = w.capacity
    size = len(w)
    values = [v for _, v in w.items()]
    agg = w.aggregation
    for k in range(size):
        slot = (w._front + k) % cap
        d = (w._pointers[slot] - w._front) % cap
        if d == 0:
            d = size if size == cap else -1
        if k == size - 1:
            assert d == size, "the youngest entry points past itself"
        assert k < d <= size, (k, d, size)
        assert w._partials[slot] == fold(agg, values[k:d])


def check_slick_noninv(w: SlickDeque) -> None:
    """Each deque node is (the very object) the aggregate of the entries from it to the
    youngest; each evicted-by-domination entry aggregates (with the younger ones) to the next
    node; the youngest entry is the tail."""
    impl = w._impl
    nodes = list(zip(impl.seq[impl.head:], impl.times[impl.head:], impl.vals[impl.head:],
                     strict=True))
    entries = list(w.items())
    if not entries:
        assert nodes == []
        return
    first_seq = impl.next_seq - len(entries)
    assert nodes[-1][0] == impl.next_seq - 1 and nodes[-1][2] is entries[-1][1]
    by_seq = {seq - first_seq: val for seq, _, val in nodes}
    seqs = [seq for seq, _, _ in nodes]
    assert seqs == sorted(set(seqs)) and seqs[0] >= first_seq
    combine = w.aggregation.combine
    suffix = entries[-1][1]
    nxt = suffix
    for k in range(len(entries) - 1, -1, -1):
        if k < len(entries) - 1:
            suffix = combine(entries[k][1], suffix)
        if k in by_seq:
            assert by_seq[k] is suffix, (k, by_seq[k], suffix)
            assert entries[k][0] == impl.times[impl.head + seqs.index(k + first_seq)]
            nxt = by_seq[k]
        else:
            assert suffix is nxt, "a dropped entry must be dominated by the next node"


# --------------------------------------------------------------------------- FlatFAT tree
class TestFatTree:
    def leaves8(self) -> tuple[FlatFAT, list[int]]:
        calls = [0]
        fat = FlatFAT(strcat(calls), 8, [str(i) for i in range(1, 9)])
        return fat, calls

    def test_t1_new_costs_n_minus_1(self) -> None:
        fat, calls = self.leaves8()
        assert calls[0] == 7
        assert fat.aggregate() == "12345678"
        # Figure 3: a=(1,2) .. d=(7,8) at heap 4..7, e, f at 2, 3, root g at 1.
        assert fat.tree[4:8] == ["12", "34", "56", "78"]
        assert fat.tree[2:4] == ["1234", "5678"]
        check_fat(fat)

    def test_t2_t3_update_costs_and_t4_prefix_suffix(self) -> None:
        fat, calls = self.leaves8()
        calls[0] = 0
        fat.update([(0, "A"), (1, "B"), (3, "D"), (6, "G")])   # paper a[1], a[2], a[4], a[7]
        assert calls[0] == 6                                   # W1={a,b,d}, W2={e,f}, W3={g}
        assert calls[0] <= 4 * (1 + math.ceil(math.log2(8 / 4)))
        assert fat.aggregate() == "AB3D56G8"
        calls[0] = 0
        fat.update([(2, "C")])
        assert calls[0] == 3                                   # b, e, g
        calls[0] = 0
        assert fat.prefix(6) == "ABCD56G" and calls[0] == 2    # T(e) (+) T(c) (+) a[7]
        calls[0] = 0
        assert fat.suffix(1) == "BCD56G8" and calls[0] == 2
        check_fat(fat)

    def test_t5_heap_layout(self) -> None:
        fat, _ = self.leaves8()
        # Paper leaf(i) = 7 + i for 1-based i: 0-based leaf 6 (a[7]) is heap node 14, its
        # parent 7 (d) is a right child of 3 (f), itself a right child of the root.
        assert fat.tree[14] == fat.leaf(6) == "7"
        assert fat.tree[14 >> 1] == "78" and 7 == 2 * 3 + 1 and 3 == 2 * 1 + 1
        assert fat.tree[3] == "5678"

    @pytest.mark.parametrize(("m", "expected"), [(1, 10), (2, 10), (64, 67), (256, 257),
                                                 (1024, 1023)])
    def test_t6_contiguous_block_update_costs(self, m: int, expected: int) -> None:
        calls = [0]
        n = 1024
        fat = FlatFAT(strcat(calls), n, [f"{i}," for i in range(n)])
        calls[0] = 0
        fat.update([(i, f"x{i},") for i in range(m)])
        assert calls[0] == expected == (m - 1) + int(math.log2(n / m))
        assert calls[0] <= m * (1 + math.ceil(math.log2(n / m)))
        check_fat(fat)

    def test_random_updates_within_theorem_4_2(self) -> None:
        rng = random.Random(7)
        for n in (16, 256, 4096):
            calls = [0]
            fat = FlatFAT(strcat(calls), n, [f"{i}," for i in range(n)])
            for _ in range(20):
                m = rng.randint(1, n)
                locs = rng.sample(range(n), m)
                calls[0] = 0
                fat.update([(i, f"r{i}.{rng.random()},") for i in locs])
                assert calls[0] <= m * (1 + math.ceil(math.log2(n / m)))
            check_fat(fat)

    def test_last_write_wins_and_pending(self) -> None:
        fat, _ = self.leaves8()
        fat.set(0, EMPTY)                 # pitfall 5: Figure 5 events 5-6 batched
        fat.set(0, "9")
        assert fat.pending == 2
        check_fat(fat)                       # stale nodes above pending leaves are skipped
        assert fat.aggregate() == "92345678" and fat.pending == 0
        check_fat(fat)

    def test_prefix_suffix_range_with_empty_leaves(self) -> None:
        rng = random.Random(3)
        for cap in (1, 2, 4, 16):
            for _ in range(30):
                leaves = [f"{i}," if rng.random() < 0.6 else EMPTY for i in range(cap)]
                fat = FlatFAT(strcat(), cap)
                fat.update(list(enumerate(leaves)))
                check_fat(fat)

                def brute(lo: int, hi: int, leaves: list[Any] = leaves) -> Any:
                    parts = [x for x in leaves[lo:hi + 1] if x is not EMPTY]
                    return "".join(parts) if parts else EMPTY

                assert fat.aggregate() == brute(0, cap - 1) or (
                    fat.aggregate() is EMPTY and brute(0, cap - 1) is EMPTY)
                for i in range(cap):
                    assert fat.prefix(i) == brute(0, i)
                    assert fat.suffix(i) == brute(i, cap - 1)
                    for j in range(i, cap):
                        assert fat.range(i, j) == brute(i, j)
                assert fat.range(3, 2) is EMPTY

    def test_range_cost_is_logarithmic(self) -> None:
        calls = [0]
        n = 1024
        fat = FlatFAT(strcat(calls), n, [f"{i}," for i in range(n)])
        rng = random.Random(11)
        for _ in range(200):
            lo = rng.randrange(n)
            hi = rng.randrange(lo, n)
            calls[0] = 0
            fat.range(lo, hi)
            assert calls[0] <= 2 * math.log2(n)
            calls[0] = 0
            fat.prefix(hi)
            fat.suffix(lo)
            assert calls[0] <= 2 * math.log2(n)

    def test_rebuild_costs_and_validation(self) -> None:
        calls = [0]
        fat = FlatFAT(strcat(calls), 16, ["a", "b", "c"])
        assert calls[0] == 2 and fat.aggregate() == "abc"
        calls[0] = 0
        fat.rebuild(["p", "q", "r", "s", "t"], 8)
        assert calls[0] == 4 and fat.capacity == 8 and fat.aggregate() == "pqrst"
        check_fat(fat)
        with pytest.raises(ValueError):
            fat.rebuild([], 12)
        with pytest.raises(ValueError):
            FlatFAT(strcat(), 2, ["a", "b", "c"])
        assert repr(EMPTY) == "EMPTY"

    def test_clear_recomputes_partly_cleared_ancestors(self) -> None:
        """clear() empties the covered nodes by slice; the boundary leaf's parent, itself
        covered, recomputes to the same EMPTY object, which would stop an ordinary flush and
        leave the partly cleared ancestors (here the old maximum 9) stale."""
        calls = [0]

        def mx(a: Any, b: Any) -> Any:
            assert a is not EMPTY and b is not EMPTY
            calls[0] += 1
            return b if b > a else a

        fat = FlatFAT(mx, 8, [5, 1, 2, 9, 3, 4, 6, 7])
        assert fat.aggregate() == 9
        calls[0] = 0
        fat.clear(2, 2)                      # leaves 2 and 3: node [2, 4) becomes EMPTY at once
        assert fat.dirty_leaves() == [2, 3]
        assert calls[0] == 0
        assert fat.aggregate() == 7
        assert calls[0] <= 2 * 3
        check_fat(fat)
        fat.clear(6, 4)                      # wraps: leaves 6, 7, 0, 1
        assert fat.aggregate() == 4 and fat.dirty_leaves() == []
        check_fat(fat)

    def test_ring_writes_clears_and_shifts_against_brute_force(self) -> None:
        """Random set / write / clear / move batches (wrapping runs), flushed with a
        selective combine (early stops) and with strings, against the leaves' fold; the
        flush stays within Theorem 4.2 (ii) for the distinct dirty leaves."""
        rng = random.Random(12)
        calls = [0]

        def mx(a: Any, b: Any) -> Any:
            assert a is not EMPTY and b is not EMPTY
            calls[0] += 1
            return b if b > a else a

        def fold(part: list[Any]) -> Any:
            live = [x for x in part if x is not EMPTY]
            if not live:
                return EMPTY
            return "".join(live) if isinstance(live[0], str) else max(live)

        for combine, make in ((mx, lambda: rng.randrange(50)),
                              (strcat(calls), lambda: f"{rng.randrange(50)},")):
            for cap in (1, 2, 4, 8, 32):
                for _ in range(40):
                    leaves = [make() if rng.random() < 0.8 else EMPTY for _ in range(cap)]
                    fat = FlatFAT(combine, cap, leaves)
                    for _ in range(rng.randint(1, 5)):
                        kind = rng.randrange(4)
                        first = rng.randrange(cap)
                        count = rng.randint(0, cap)
                        if kind == 0:
                            fat.clear(first, count)
                            for k in range(count):
                                leaves[(first + k) % cap] = EMPTY
                        elif kind == 1:
                            new = [make() for _ in range(count)]
                            fat.write(first, new)
                            for k in range(count):
                                leaves[(first + k) % cap] = new[k]
                        elif kind == 2:     # a run moved by one slot, as reactive does
                            step = rng.choice((1, -1))
                            count = min(count, cap - 1)
                            moved = [leaves[(first + k) % cap] for k in range(count)]
                            fat.write((first + step) % cap,
                                      [fat.leaf((first + k) % cap) for k in range(count)])
                            for k in range(count):
                                leaves[(first + step + k) % cap] = moved[k]
                        else:
                            i = rng.randrange(cap)
                            leaves[i] = make()
                            fat.set(i, leaves[i])
                    m = len(fat.dirty_leaves())
                    calls[0] = 0
                    fat.flush()
                    if m:
                        assert calls[0] <= m * (1 + math.ceil(math.log2(cap / m)))
                    check_fat(fat)
                    assert fat.aggregate() == fold(leaves)
                    first = rng.randrange(cap)
                    count = rng.randint(1, cap)
                    part = [leaves[(first + k) % cap] for k in range(count)]
                    assert fat.ring_range(first, count) == fold(part)

    def test_many_writes_to_few_leaves_keep_the_bound(self) -> None:
        """More pending writes than leaves: duplicates are dropped, so m rewrites of a few
        leaves still flush within the bound for the distinct leaves."""
        calls = [0]
        fat = FlatFAT(strcat(calls), 64, [f"{i}," for i in range(64)])
        for k in range(500):
            fat.set(k % 3, f"x{k},")
        assert fat.dirty_leaves() == [0, 1, 2] and fat.pending <= 64
        calls[0] = 0
        fat.flush()
        assert calls[0] <= 3 * (1 + math.ceil(math.log2(64 / 3)))
        check_fat(fat)
        for k in range(500):                 # more than half the leaves: one recomputation
            fat.set(k % 40, f"y{k},")
        assert fat.dirty_leaves() == list(range(64))
        calls[0] = 0
        fat.flush()
        assert calls[0] == 63
        check_fat(fat)

    def test_unchanged_node_stops_propagation(self) -> None:
        counter = [0]

        def mx(a: Any, b: Any) -> Any:
            counter[0] += 1
            return b if b > a else a

        fat = FlatFAT(mx, 1024, [1000] + [0] * 1023)
        counter[0] = 0
        fat.update([(5, 7)])       # max(0, 7) changes the parent, max(1000, ...) stops higher
        assert counter[0] < math.log2(1024)
        check_fat(fat)
        assert fat.aggregate() == 1000


# --------------------------------------------------------------------------- FlatFAT window
def slots(w: FlatFat) -> list[Any]:
    return [w._fat.leaf(i) for i in range(w.capacity)]


class TestFlatFatWindow:
    def test_t7_figure_5_inverted_buffer(self) -> None:
        w = FlatFat(concat(), capacity=4)
        for t, v in enumerate([4, 7, 3, 2]):
            w.insert(t, v)
        assert slots(w) == ["4;", "7;", "3;", "2;"] and w._front == 0
        w.evict()                                     # event 5: 4 leaves
        assert slots(w) == [EMPTY, "7;", "3;", "2;"] and w._front == 1
        w.insert(4, 9)                                # event 6: 9 goes to slot 1 (a[1])
        assert slots(w) == ["9;", "7;", "3;", "2;"] and w._front == 1 and w.capacity == 4
        assert w._back() == 0                         # B precedes F: inverted
        assert w.query() == "7;3;2;9;"
        assert w._fat.aggregate() == "9;7;3;2;"      # the naive root: wrong order
        check_flatfat(w)

    def test_t8_argmax_tie_on_inverted_buffer(self) -> None:
        w = FlatFat(argmax_oldest(), capacity=4)
        for t, v in enumerate([(1, "p"), (5, "x"), (2, "q"), (3, "r")]):
            w.insert(t, v)
        assert w.query() == "x"
        w.evict()
        w.insert(10, (5, "y"))
        assert w._front == 1 and w._back() == 0
        assert w.query() == "x"                       # first maximum in arrival order
        assert w._fat.aggregate()[1] == "y"           # naive root
        w.evict()
        assert w.query() == "y"
        check_flatfat(w)

    def test_t11_shrink(self) -> None:
        w = FlatFat(concat(), capacity=8)
        w.insert(1, "a")
        w.insert(2, "b")
        w.evict()                                     # 1 < 8/4: halve
        assert w.capacity == 4 and w.query() == "b;"
        check_flatfat(w)

    def test_t12_fifo_count_window_doubles_to_1024(self) -> None:
        w = FlatFat(Sum(), capacity=1)
        caps = [w.capacity]
        for t in range(3000):
            if len(w) == 1000:
                w.evict()                             # evict before insert
            w.insert(t, t)
            if w.capacity != caps[-1]:
                caps.append(w.capacity)
        assert caps == [2 ** k for k in range(11)]    # 10 doublings, never a shrink
        assert w.query() == sum(range(2000, 3000))

    def test_t13_oscillation(self) -> None:
        w = FlatFat(Sum(), capacity=1024)
        t = 0
        for _ in range(1025):
            w.insert(t, 1)
            t += 1
        assert w.capacity == 2048
        while len(w) > 512:
            w.evict()
        assert w.capacity == 2048                     # 512 is not < 2048 / 4
        w.evict()
        assert len(w) == 511 and w.capacity == 1024
        while len(w) < 1025:
            w.insert(t, 1)
            t += 1
        assert w.capacity == 2048 and w.query() == 1025
        check_flatfat(w)

    def test_insert_then_evict_order_doubles_once(self) -> None:
        w = FlatFat(Sum(), capacity=1)
        for t in range(5000):                          # pitfall 13
            w.insert(t, 1)
            if len(w) > 256:
                w.evict()
        assert w.capacity == 512 and w.query() == 256

    def test_min_capacity_and_validation(self) -> None:
        w = FlatFat(Sum(), capacity=64, min_capacity=64)
        for t in range(10):
            w.insert(t, t)
        w.bulk_evict(100)
        assert w.capacity == 64 and len(w) == 0 and w.query() == 0
        for bad in ({"capacity": 12}, {"capacity": 4, "min_capacity": 8},
                    {"min_capacity": 3}, {"capacity": 0}):
            with pytest.raises(ValueError):
                FlatFat(Sum(), **bad)

    def test_errors_leave_window_unchanged(self) -> None:
        w = FlatFat(concat(), capacity=2)
        with pytest.raises(EmptyWindowError):
            w.evict()
        with pytest.raises(EmptyWindowError):
            w.oldest()
        with pytest.raises(EmptyWindowError):
            w.youngest()
        assert w.query() == "" and w.query_since(0) == "" and w.bulk_evict(5) == 0
        for t in (5, 6, 7):
            w.insert(t, t)
        with pytest.raises(OutOfOrderError):
            w.insert(6, 0)
        with pytest.raises(OutOfOrderError):
            w.bulk_insert([(8, 0), (9, 0), (7, 0)])
        assert list(w.items()) == [(5, "5;"), (6, "6;"), (7, "7;")]
        assert w.query() == "5;6;7;" and w.capacity == 4
        check_flatfat(w)

    def test_slide_cost_is_logarithmic(self) -> None:
        for n in (8, 64, 1000, 1024):
            agg, counter = counting(matmul())
            w = FlatFat(agg)
            for t in range(n):
                w.insert(t, t)
            w.query()
            cap = w.capacity
            counter.reset()
            total = 0
            for t in range(n, n + 3000):
                w.evict()
                w.insert(t, t)
                w.query()
                calls = counter.reset()
                # Two leaf-to-root paths, then suffix (+) prefix when wrapped.
                assert calls <= 4 * math.log2(cap) + 1
                total += calls
            assert total / 3000 <= 2 * math.log2(cap) + 2

    def test_bulk_insert_and_bulk_evict_costs(self) -> None:
        agg, counter = counting(matmul())
        w = FlatFat(agg, capacity=1024)
        w.bulk_insert([(t, t) for t in range(1000)])
        w.query()
        assert counter.reset() == 999                 # one bottom-up build
        w.bulk_insert([(1000 + t, t) for t in range(16)])   # fits: update of 16 leaves
        w.query()
        assert 0 < counter.reset() <= 16 * (1 + math.ceil(math.log2(1024 / 16)))
        assert w.capacity == 1024
        assert w.bulk_evict(300) == 301
        w.query()
        assert counter.reset() <= 2 * math.log2(1024)   # only the boundary path combines
        w.bulk_insert([(2000 + t, t) for t in range(1000)])  # grows once: 1715 > 1024
        assert w.capacity == 2048
        check_flatfat(w)

    def test_query_is_cached_and_query_since_costs(self) -> None:
        agg, counter = counting(matmul())
        w = FlatFat(agg, capacity=256)
        for t in range(200):
            w.insert(t, t)
        for _ in range(150):
            w.evict()
        for t in range(200, 350):                       # wraps
            w.insert(t, t)
        w.query()
        counter.reset()
        w.query()
        assert counter.reset() == 0
        for since in range(140, 360, 7):
            w.query_since(since)
            assert counter.reset() <= 2 * math.log2(256) + 1

    def test_invariants_every_step_random_walk(self) -> None:
        rng = random.Random(5)
        agg = concat()
        w = FlatFat(agg, capacity=2)
        model = Model(agg)
        t = 0
        for step in range(1500):
            r = rng.random()
            if r < 0.45:
                t += rng.randint(0, 2)
                w.insert(t, step)
                model.insert(t, step)
            elif r < 0.8:
                if len(model):
                    w.evict()
                    model.evict()
            elif r < 0.88:
                batch = []
                for _ in range(rng.randint(0, 40)):
                    t += rng.randint(0, 1)
                    batch.append((t, step))
                w.bulk_insert(batch)
                model.bulk_insert(batch)
            elif r < 0.95:
                cut = t - rng.randint(0, 30)
                assert w.bulk_evict(cut) == model.bulk_evict(cut)
            else:
                since = t - rng.randint(-1, 40)
                assert w.query_since(since) == model.query_since(since)
            check_flatfat(w)
            assert w.query() == model.query() and len(w) == len(model)
            assert [x for x, _ in w.items()] == model.times

    def test_resize_rebuild_cost_is_amortized_constant(self) -> None:
        agg, counter = counting(matmul())
        w = FlatFat(agg, capacity=1)
        for t in range(4096):                          # grow only, no queries
            w.insert(t, t)
        assert counter.calls <= 4096                   # the rebuilds: 1 + 2 + ... + 2048
        w.query()
        for _ in range(4090):
            w.evict()
        assert counter.calls <= 2 * 4096 + 2 * 4096


# --------------------------------------------------------------------------- FlatFIT
class TestFlatFit:
    def test_steady_slide_costs(self) -> None:
        """One query per slide: at most n - 1 calls for a slide (the "window reset"), at
        most 3 per slide amortized (SlickDeque paper section 4, Table 1)."""
        for n in (1, 2, 3, 8, 64, 1000):
            agg, counter = counting(matmul())
            w = FlatFit(agg)
            for t in range(n):
                w.insert(t, t)
            w.query()
            assert counter.reset() == n - 1
            worst = 0
            slides = 5000
            for t in range(n, n + slides):
                w.evict()
                w.insert(t, t)
                w.query()
                worst = max(worst, counter.reset())
                if t % 997 == 0:
                    check_flatfit(w)        # folds with the counted combine
                    counter.reset()
            assert worst <= max(n - 1, 1)
            w.query()
            assert counter.reset() == 0             # cached

    def test_amortized_three_per_slide(self) -> None:
        for n in (2, 8, 64, 1000):
            agg, counter = counting(matmul())
            w = FlatFit(agg)
            for t in range(n):
                w.insert(t, t)
            w.query()
            counter.reset()
            slides = 5000
            for t in range(n, n + slides):
                w.evict()
                w.insert(t, t)
                w.query()
            assert counter.calls <= 3 * slides

    def test_at_most_four_combines_per_insert(self) -> None:
        """Cumulative calls never exceed 4 per inserted entry, whatever the interleaving
        (checked exhaustively on windows of up to 10 entries; here on long sequences)."""
        patterns: list[Callable[[random.Random], str]] = [
            lambda r: r.choice("ieq"),
            lambda r: r.choice("iiieq"),
            lambda r: r.choice("ieqqq"),
            lambda r: "i" if r.random() < 0.5 else r.choice("eq"),
        ]
        for seed, pattern in enumerate(patterns):
            rng = random.Random(seed)
            agg, counter = counting(matmul())
            w = FlatFit(agg, capacity=1)
            inserts = 0
            t = 0
            for _ in range(20000):
                op = pattern(rng)
                if op == "i":
                    t += 1
                    w.insert(t, t)
                    inserts += 1
                elif op == "e" and len(w):
                    w.evict()
                else:
                    w.query()
                assert counter.calls <= 4 * inserts
        # Adversarial blocks: fill, then bursts of k evictions + k insertions + a query.
        for k in (1, 2, 3, 5, 17):
            agg, counter = counting(matmul())
            w = FlatFit(agg)
            t = 0
            inserts = 0
            for _ in range(300):
                t += 1
                w.insert(t, t)
                inserts += 1
            for _ in range(3000 // k):
                w.query()
                for _ in range(k):
                    w.evict()
                for _ in range(k):
                    t += 1
                    w.insert(t, t)
                    inserts += 1
            assert counter.calls <= 4 * inserts

    def test_invariants_every_step_random_walk(self) -> None:
        rng = random.Random(9)
        agg = concat()
        w = FlatFit(agg, capacity=1)
        model = Model(agg)
        t = 0
        for step in range(1500):
            r = rng.random()
            if r < 0.4:
                t += rng.randint(0, 2)
                w.insert(t, step)
                model.insert(t, step)
            elif r < 0.7:
                if len(model):
                    w.evict()
                    model.evict()
            elif r < 0.78:
                batch = []
                for _ in range(rng.randint(0, 30)):
                    t += rng.randint(0, 1)
                    batch.append((t, step))
                w.bulk_insert(batch)
                model.bulk_insert(batch)
            elif r < 0.85:
                cut = t - rng.randint(0, 30)
                assert w.bulk_evict(cut) == model.bulk_evict(cut)
            else:
                assert w.query() == model.query()
            check_flatfit(w)
            assert len(w) == len(model)
            assert [x for x, _ in w.items()] == model.times
            cap = w.capacity
            assert len(w) <= cap and (4 * len(w) >= cap or cap == 1 or
                                      (cap == 2 and len(w) == 0))

    def test_capacity_policy_and_errors(self) -> None:
        w = FlatFit(int_sum(), capacity=2, min_capacity=2)
        for t in range(9):
            w.insert(t, 1)
        assert w.capacity == 16
        while len(w) > 4:
            w.evict()
        assert w.capacity == 16
        w.evict()
        assert w.capacity == 8 and w.query() == 3
        assert w.bulk_evict(100) == 3 and w.capacity == 2 and w.query() == 0
        with pytest.raises(EmptyWindowError):
            w.evict()
        w.insert(3, 1)
        with pytest.raises(OutOfOrderError):
            w.insert(2, 1)
        assert list(w.items()) == [(3, 1)]
        for bad in ({"capacity": 0}, {"capacity": 2, "min_capacity": 4},
                    {"min_capacity": 0}):
            with pytest.raises(ValueError):
                FlatFit(Sum(), **bad)
        assert not FlatFit.range_queries


# --------------------------------------------------------------------------- SlickDeque
STREAM = [6, 5, 0, 1, 3, 4, 2, 7]
STREAM15 = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9]


def run_ranges(w: SlickDeque, stream: list[int], wsize: int,
               ranges: tuple[int, ...]) -> Iterator[tuple[Any, ...]]:
    """The paper's slide-1 plan: step s inserts at time s (after expiring the entry from
    wsize steps ago); a range r answers over times (s - r, s]."""
    for step, value in enumerate(stream, start=1):
        if len(w) == wsize:
            w.evict()
        w.insert(step, value)
        yield tuple(w.query_since(step - r + 1) for r in ranges)
        assert w.query() == w.query_since(step - wsize + 1)


class TestSlickDeque:
    def test_mismatch_refuses_neither_invertible_nor_selective(self) -> None:
        assert not SlickDeque.needs_invertible and not SlickDeque.needs_selective
        reason = SlickDeque.mismatch(Collect())
        assert reason is not None and "neither" in reason and "selective" in reason
        with pytest.raises(AlgorithmMismatchError, match="neither"):
            make_window("slickdeque", Collect())
        with pytest.raises(AlgorithmMismatchError):
            SlickDeque(concat())
        assert SlickDeque.mismatch(Sum()) is None and SlickDeque.mismatch(Max()) is None
        assert ALGORITHMS["slickdeque"] is SlickDeque and SlickDeque.range_queries

    def test_variant_selection(self) -> None:
        assert SlickDeque(Sum()).variant == "inv"
        assert SlickDeque(Max()).variant == "non_inv"
        last_inv = Aggregation(combine=lambda a, b: b, identity=None,
                               subtract=lambda total, oldest: total, selective=True)
        assert SlickDeque(last_inv).variant == "inv"       # both: Inv, O(1) worst case
        assert SlickDeque(last_inv, variant="non_inv").variant == "non_inv"
        with pytest.raises(AlgorithmMismatchError):
            SlickDeque(Sum(), variant="non_inv")
        with pytest.raises(AlgorithmMismatchError):
            SlickDeque(Max(), variant="inv")
        with pytest.raises(ValueError):
            SlickDeque(Sum(), variant="fast")
        assert make_window("slickdeque", Max(), variant="non_inv").variant == "non_inv"

    def test_t2_example_3_non_inv_max(self) -> None:
        agg, counter = counting(max_agg())
        w = SlickDeque(agg)
        answers = []
        deques = []
        for answer in run_ranges(w, STREAM, 5, (5, 3)):     # descending ranges: Q2, Q1
            answers.append(answer[::-1])
            deques.append(w._impl.vals[w._impl.head:])
            before = counter.calls
            check_slick_noninv(w)           # folds with the counted combine
            counter.calls = before
        assert answers == [(6, 6), (6, 6), (6, 6), (5, 6), (3, 6), (4, 5), (4, 4), (7, 7)]
        assert deques == [[6], [6, 5], [6, 5, 0], [6, 5, 1], [6, 5, 3], [5, 4], [4, 2], [7]]
        assert counter.calls == 11                           # dominance comparisons

    def test_t5_worst_case(self) -> None:
        agg, counter = counting(max_agg())
        w = SlickDeque(agg)
        for step, value in enumerate(range(10, 0, -1), start=1):
            w.insert(step, value)
        assert w._impl.vals[w._impl.head:] == list(range(10, 0, -1))
        before = counter.reset()
        w.evict()                                             # 10 expires first
        w.insert(11, 100)
        assert counter.reset() == 9 and before == 9 and w.query() == 100
        assert w._impl.vals[w._impl.head:] == [100]

    def test_t6_ascending_keeps_one_node(self) -> None:
        agg, counter = counting(max_agg())
        w = SlickDeque(agg)
        for t in range(1000):
            if len(w) == 50:
                w.evict()
            w.insert(t, t)
            assert len(w._impl.vals) - w._impl.head == 1
        assert counter.calls == 999

    def test_t7_t9_multi_range_max_and_min(self) -> None:
        ranges = (7, 4, 2, 1)
        agg, counter = counting(max_agg())
        w = SlickDeque(agg)
        got = []
        for answer in run_ranges(w, STREAM15, 7, ranges):
            got.append(answer)
            before = counter.calls
            check_slick_noninv(w)
            counter.calls = before
        assert got == [(3, 3, 3, 3), (3, 3, 3, 1), (4, 4, 4, 4), (4, 4, 4, 1), (5, 5, 5, 5),
                       (9, 9, 9, 9), (9, 9, 9, 2), (9, 9, 6, 6), (9, 9, 6, 5), (9, 6, 5, 3),
                       (9, 6, 5, 5), (9, 8, 8, 8), (9, 9, 9, 9), (9, 9, 9, 7), (9, 9, 9, 9)]
        # As the note: at t = 14 the old 9 is popped by the new 9. Python's small ints are
        # shared objects, so `combine(9, 9) is new` holds; distinct equal objects would keep
        # the older node instead (see test_ties_keep_the_oldest); either answer is the same.
        assert counter.calls == 22
        agg, counter = counting(min_agg())
        w = SlickDeque(agg)
        got = list(run_ranges(w, STREAM15, 7, ranges))
        assert counter.calls == 21
        assert got == [(3, 3, 3, 3), (1, 1, 1, 1), (1, 1, 1, 4), (1, 1, 1, 1), (1, 1, 1, 5),
                       (1, 1, 5, 9), (1, 1, 2, 2), (1, 2, 2, 6), (1, 2, 5, 5), (1, 2, 3, 3),
                       (2, 3, 3, 5), (2, 3, 5, 8), (2, 3, 8, 9), (3, 5, 7, 7), (3, 7, 7, 9)]

    def test_t1_t8_t10_inv_sum(self) -> None:
        agg, calls = counted(int_sum())
        w = SlickDeque(agg)
        got = [a[::-1] for a in run_ranges(w, STREAM, 5, (5, 3))]
        assert got == [(6, 6), (11, 11), (11, 11), (6, 12), (4, 15), (8, 13), (9, 10),
                       (13, 17)]
        # One combine per insert into a non-empty window; each query_since at most one
        # subtract (the paper's 2 ops per slide and range, with any range answerable).
        assert calls.combine == len(STREAM) - 1
        assert calls.subtract <= 3 * len(STREAM)
        # T10: step 6 with the single range 5 is 15 + 4 - 6.
        w = SlickDeque(int_sum())
        assert [a[0] for a in run_ranges(w, STREAM, 5, (5,))][5] == 13
        w = SlickDeque(int_sum())
        got = list(run_ranges(w, STREAM15, 7, (7, 4, 2, 1)))
        assert got == [(3, 3, 3, 3), (4, 4, 4, 1), (8, 8, 5, 4), (9, 9, 5, 1),
                       (14, 11, 6, 5), (23, 19, 14, 9), (25, 17, 11, 2), (28, 22, 8, 6),
                       (32, 22, 11, 5), (31, 16, 8, 3), (35, 19, 8, 5), (38, 21, 13, 8),
                       (38, 25, 17, 9), (43, 29, 16, 7), (46, 33, 16, 9)]

    def test_ties_keep_the_oldest(self) -> None:
        w = SlickDeque(argmax_oldest())
        for t, pair in enumerate([(5, "a"), (3, "b"), (5, "c"), (5, "d"), (1, "e")]):
            w.insert(t, pair)
            check_slick_noninv(w)
        assert w.query() == "a"
        assert [v[1] for v in w._impl.vals[w._impl.head:]] == ["a", "c", "d", "e"]
        assert w.query_since(1) == "c" and w.query_since(3) == "d" and w.query_since(4) == "e"
        w.evict()
        assert w.query() == "c"
        w.insert(9, (6, "f"))
        assert w.query() == "f" and [v[1] for v in w._impl.vals[w._impl.head:]] == ["f"]
        # The opposite tie rule (newest wins) pops the equal older node instead.
        newest = Aggregation(combine=lambda a, b: b if b[0] >= a[0] else a, identity=None,
                             lower=lambda a: a[1], selective=True)
        w = SlickDeque(newest)
        for t, pair in enumerate([(5, "a"), (5, "b")]):
            w.insert(t, pair)
        assert w.query() == "b" and len(w._impl.vals) - w._impl.head == 1

    def test_non_selective_result_is_reported(self) -> None:
        liar = Aggregation(combine=lambda a, b: a + b, identity=0, selective=True,
                           name="liar")
        w = SlickDeque(liar)
        w.insert(1, 1000)
        with pytest.raises(InvalidValueError, match="selective"):
            w.insert(2, 2000)

    @pytest.mark.parametrize("kind", ["random", "decreasing", "increasing", "sawtooth"])
    def test_non_inv_amortized_below_two_combines_per_insert(self, kind: str) -> None:
        rng = random.Random(kind)
        agg, counter = counting(max_agg())
        w = SlickDeque(agg)
        inserts = 0
        for t in range(30000):
            if kind == "random":
                value = rng.randrange(1000)
            elif kind == "decreasing":
                value = -t
            elif kind == "increasing":
                value = t
            else:
                value = (t % 97) * (1 if t % 2 else -1)
            if len(w) >= 500 or (kind == "random" and len(w) and rng.random() < 0.1):
                w.evict()
            w.insert(t, value)
            inserts += 1
            if t % 7 == 0:
                w.query()
                w.query_since(t - 100)
            assert counter.calls < 2 * inserts
        if kind == "increasing":
            assert counter.calls == inserts - 1        # each insert pops the single node
        if kind == "decreasing":
            assert counter.calls == inserts - 1        # each insert survives one test

    def test_non_inv_queries_and_evictions_call_nothing(self) -> None:
        agg, counter = counting(argmax_oldest())
        w = SlickDeque(agg)
        rng = random.Random(2)
        for t in range(2000):
            w.insert(t, (rng.randrange(50), t))
        counter.reset()
        for since in range(-5, 2010, 3):
            w.query_since(since)
        w.query()
        for _ in range(100):
            w.evict()
        w.bulk_evict(1500)
        assert counter.reset() == 0 and len(w) == 499
        check_slick_noninv(w)
        assert w.query() == w.aggregation.fold(v for _, v in w.items())

    def test_inv_costs(self) -> None:
        agg, calls = counted(int_sum())
        w = SlickDeque(agg)
        n = 300
        for t in range(n):
            w.insert(t, t)
        assert calls.combine == n - 1 and calls.subtract == 0
        calls.combine = 0
        slides = 20000
        for t in range(n, n + slides):
            w.evict()
            w.insert(t, t)
            assert w.query() == sum(range(t - n + 1, t + 1))
            w.query()                                     # cached
        # 1 combine per insert, 1 subtract per query, re-basing <= 1/4 combine per evict.
        assert slides - slides // 100 <= calls.subtract <= slides   # none right after a re-base
        assert slides <= calls.combine <= slides * 1.25 + n
        calls.subtract = 0
        for since in range(n + slides - 400, n + slides + 2):
            w.query_since(since)
        assert calls.subtract <= 400

    def test_inv_non_commutative_group_query_since(self) -> None:
        agg = matgroup()
        w = SlickDeque(agg)
        model = Model(agg)
        rng = random.Random(4)
        t = 0
        for step in range(3000):
            r = rng.random()
            if r < 0.5:
                t += rng.randint(0, 2)
                w.insert(t, step)
                model.insert(t, step)
            elif r < 0.9:
                if len(model):
                    w.evict()
                    model.evict()
            elif r < 0.95:
                cut = t - rng.randint(0, 20)
                assert w.bulk_evict(cut) == model.bulk_evict(cut)
            else:
                batch = [(t + i // 3, i) for i in range(rng.randint(0, 90))]
                if batch:
                    t = batch[-1][0]
                w.bulk_insert(batch)
                model.bulk_insert(batch)
            assert w.query() == model.query()
            since = t - rng.randint(-1, 30)
            assert w.query_since(since) == model.query_since(since)

    def test_inv_float_drift_is_reanchored(self) -> None:
        w = SlickDeque(Sum())
        rng = random.Random(8)
        values: list[float] = []
        for t in range(200000):
            if len(values) == 100:
                w.evict()
                values.pop(0)
            v = rng.uniform(-1e6, 1e6) if t < 100000 else rng.random()
            w.insert(t, v)
            values.append(v)
        assert math.isclose(w.query(), math.fsum(values), rel_tol=1e-6)

    def test_errors_and_empty(self) -> None:
        for agg in (int_sum(), max_agg()):
            w = SlickDeque(agg)
            with pytest.raises(EmptyWindowError):
                w.evict()
            with pytest.raises(EmptyWindowError):
                w.oldest()
            assert w.query() == agg.identity and w.query_since(3) == agg.identity
            assert w.bulk_evict(10) == 0
            w.insert(5, 1)
            w.insert(6, 2)
            with pytest.raises(OutOfOrderError):
                w.insert(4, 9)
            with pytest.raises(OutOfOrderError):
                w.bulk_insert([(7, 1), (6, 1)])
            assert list(w.items()) == [(5, 1), (6, 2)] and w.query() == (
                3 if agg.subtract else 2)
            assert w.query_since(7) == agg.identity
            assert w.bulk_evict(6) == 2 and len(w) == 0 and w.query() == agg.identity
            w.insert(6, 4)
            assert w.query() == 4 and w.query_since(6) == 4


# --------------------------------------------------------------------------- hypothesis
def _ops(max_len: int = 60) -> st.SearchStrategy[list[tuple[str, int, int]]]:
    return st.lists(st.tuples(
        st.sampled_from(["insert", "insert", "insert", "evict", "bulk_evict", "bulk_insert",
                         "query_since"]),
        st.integers(0, 3), st.integers(-20, 20)), max_size=max_len)


def _drive(w: Any, model: Model, ops: list[tuple[str, int, int]],
           check: Callable[[Any], None], same: Callable[[Any, Any], bool]) -> None:
    t = 0
    for op, a, b in ops:
        if op == "insert":
            t += a
            w.insert(t, b)
            model.insert(t, b)
        elif op == "evict":
            if len(model):
                w.evict()
                model.evict()
        elif op == "bulk_evict":
            cut = t - a * 2 + (b % 3)
            assert w.bulk_evict(cut) == model.bulk_evict(cut)
        elif op == "bulk_insert":
            batch = [(t + i // 2, b + i) for i in range(a * 4 + (b % 5))]
            if batch:
                t = batch[-1][0]
            w.bulk_insert(batch)
            model.bulk_insert(batch)
        else:
            since = t - a * 3 + (b % 4)
            if w.range_queries:
                assert same(w.query_since(since), model.query_since(since))
        check(w)
        assert same(w.query(), model.query())
        assert len(w) == len(model)
    assert [x for x, _ in w.items()] == model.times


def _eq(a: Any, b: Any) -> bool:
    return bool(a == b)


@pytest.mark.parametrize("make_agg", [concat, matmul], ids=["concat", "matmul"])
@pytest.mark.parametrize("algo", ["flatfat", "flatfit"])
@settings(max_examples=120, deadline=None)
@given(ops=_ops(), capacity=st.sampled_from([1, 2, 4, 8]))
def test_flat_hypothesis(algo: str, make_agg: Callable[[], Aggregation],
                         ops: list[tuple[str, int, int]], capacity: int) -> None:
    agg = make_agg()
    cls: Any = FlatFat if algo == "flatfat" else FlatFit
    w = cls(agg, capacity=capacity)
    check = check_flatfat if algo == "flatfat" else check_flatfit
    _drive(w, Model(agg), ops, check, _eq)


def _argmax_values(b: int) -> tuple[int, int]:
    return (b % 4, b)


@settings(max_examples=150, deadline=None)
@given(ops=_ops(80))
def test_slick_non_inv_hypothesis(ops: list[tuple[str, int, int]]) -> None:
    agg = Aggregation(combine=_argmax_combine, identity=None, lift=_argmax_values,
                      lower=lambda a: a, selective=True, name="argmax_oldest")
    w = SlickDeque(agg)
    assert w.variant == "non_inv"

    def same(x: Any, y: Any) -> bool:
        return x == y and (x is None or x[1] == y[1])

    _drive(w, Model(agg), ops, check_slick_noninv, same)


@pytest.mark.parametrize("make_agg", [int_sum, matgroup], ids=["sum", "matgroup"])
@settings(max_examples=120, deadline=None)
@given(ops=_ops(80))
def test_slick_inv_hypothesis(make_agg: Callable[[], Aggregation],
                              ops: list[tuple[str, int, int]]) -> None:
    agg = make_agg()
    w = SlickDeque(agg)
    assert w.variant == "inv"
    _drive(w, Model(agg), ops, lambda _: None, _eq)


# --------------------------------------------------------------------------- failing combine
def _poisoned_concat(a: Any, b: Any) -> Any:
    if "X" in a or "X" in b:
        raise ValueError("poisoned")
    return a + b


def poisoned() -> Aggregation:
    return Aggregation(combine=_poisoned_concat, identity="", lift=lambda x: f"{x};",
                       name="poisoned")


def _poisoned_max(a: Any, b: Any) -> Any:
    if a == 13 or b == 13:
        raise ValueError("poisoned")
    return _max_combine(a, b)


class TestFailingCombine:
    def test_flatfat_lazy_failure_recovers_after_eviction(self) -> None:
        w = FlatFat(poisoned(), capacity=16)
        for t, v in enumerate(["a", "X", "d", "e"]):
            w.insert(t, v)                     # lazy: nothing is combined yet
        for _ in range(2):
            with pytest.raises(ValueError, match="poisoned"):
                w.query()
        w.evict()                              # 3 < 16 / 4: the shrink fails, evict does not
        assert len(w) == 3 and w.capacity == 16
        with pytest.raises(ValueError):
            w.query_since(2)
        w.evict()                              # X leaves; the shrink now succeeds
        assert w.capacity == 8 and w.query() == "d;e;" and w.query_since(3) == "e;"
        check_flatfat(w)
        w.insert(9, "f")
        assert w.query() == "d;e;f;"
        check_flatfat(w)

    def test_flatfat_failure_inside_a_tree_is_recomputed(self) -> None:
        w = FlatFat(poisoned(), capacity=64, min_capacity=64)
        for t in range(40):
            w.insert(t, "X" if t == 20 else t)
        with pytest.raises(ValueError):
            w.query()
        assert w.bulk_evict(20) == 21          # X leaves with a bulk eviction
        assert w.query() == "".join(f"{t};" for t in range(21, 40))
        check_flatfat(w)

    def test_flatfit_failure_keeps_the_structure_valid(self) -> None:
        w = FlatFit(poisoned())
        for t, v in enumerate(["a", "b", "X", "c", "d"]):
            w.insert(t, v)
        with pytest.raises(ValueError):
            w.query()
        check_flatfit_values_only(w)
        for _ in range(3):
            w.evict()
        assert w.query() == "c;d;"
        check_flatfit(w)

    def test_slickdeque_inserts_are_atomic(self) -> None:
        agg = Aggregation(combine=_poisoned_max, identity=None, selective=True, name="pmax")
        w = SlickDeque(agg)
        for t, v in enumerate([9, 4, 7]):
            w.insert(t, v)
        before = (list(w.items()), list(w._impl.vals), w._impl.next_seq)
        with pytest.raises(ValueError):
            w.insert(5, 13)
        with pytest.raises(ValueError):
            w.bulk_insert([(6, 8), (7, 13), (8, 1)])
        assert (list(w.items()), list(w._impl.vals), w._impl.next_seq) == before
        check_slick_noninv(w)
        w.bulk_insert([(6, 8), (7, 2)])
        assert w.query() == 9 and w.query_since(3) == 8
        check_slick_noninv(w)

        def bad_add(a: int, b: int) -> int:
            if b == 13:
                raise ValueError("poisoned")
            return a + b

        w2 = SlickDeque(Aggregation(combine=bad_add, identity=0, subtract=operator.sub))
        w2.bulk_insert([(1, 1), (2, 2)])
        with pytest.raises(ValueError):
            w2.bulk_insert([(3, 3), (4, 13)])
        assert list(w2.items()) == [(1, 1), (2, 2)] and w2.query() == 3
        w2.insert(3, 3)
        assert w2.query_since(2) == 5


def check_flatfit_values_only(w: FlatFit) -> None:
    """After a failed query: every pointer still goes forward, at most past the youngest."""
    cap = w.capacity
    for k in range(len(w)):
        slot = (w._front + k) % cap
        d = (w._pointers[slot] - w._front) % cap or len(w)
        assert k < d <= len(w)


# --------------------------------------------------------------------------- more structure
def test_flatfat_writes_without_queries_stay_bounded() -> None:
    agg, counter = counting(concat())
    w = FlatFat(agg, capacity=64, min_capacity=64)
    for t in range(1000):
        w.insert(t, t)
        if len(w) > 50:
            w.evict()
        assert w._fat.pending <= 65
    assert counter.calls == 0
    assert w.query() == "".join(f"{t};" for t in range(950, 1000))
    assert counter.calls <= 63 + 2 * 6                 # one full recomputation, then a query
    check_flatfat(w)


def test_slick_bulk_insert_matches_sequential_and_costs_less() -> None:
    rng = random.Random(12)
    for _ in range(50):
        values = [(rng.randrange(6), i) for i in range(rng.randint(1, 60))]
        old = [(rng.randrange(6), -i) for i in range(rng.randint(0, 30))]
        seq_agg, seq_calls = counting(argmax_oldest())
        bulk_agg, bulk_calls = counting(argmax_oldest())
        one, bulk = SlickDeque(seq_agg), SlickDeque(bulk_agg)
        for w in (one, bulk):
            w.bulk_insert(list(enumerate(old)))
        seq_calls.reset()
        bulk_calls.reset()
        for i, v in enumerate(values):
            one.insert(100 + i, v)
        bulk.bulk_insert([(100 + i, v) for i, v in enumerate(values)])
        assert bulk._impl.vals[bulk._impl.head:] == one._impl.vals[one._impl.head:]
        assert bulk._impl.seq[bulk._impl.head:] == one._impl.seq[one._impl.head:]
        assert bulk_calls.calls <= seq_calls.calls
        check_slick_noninv(bulk)


def test_flatfit_every_short_sequence_within_four_per_insert() -> None:
    """All 3^8 sequences of insert / evict / query: the cumulative calls never exceed 4 per
    inserted entry."""
    import itertools

    for seq in itertools.product("ieq", repeat=8):
        agg, counter = counting(matmul())
        w = FlatFit(agg, capacity=1)
        inserts = 0
        for t, op in enumerate(seq):
            if op == "i":
                w.insert(t, t)
                inserts += 1
            elif op == "e":
                if len(w):
                    w.evict()
            else:
                w.query()
            assert counter.calls <= 4 * inserts


def test_ring_helpers_against_brute_force() -> None:
    """The ring-buffer helpers shared by flatfat, flatfit and reactive."""
    rng = random.Random(21)
    for cap in (1, 2, 3, 8, 16):
        for _ in range(200):
            front = rng.randrange(cap)
            size = rng.randint(0, cap)
            window = sorted(rng.randrange(20) for _ in range(size))
            times = [-1] * cap
            for k, t in enumerate(window):
                times[(front + k) % cap] = t
            slot = front + rng.choice((0, cap))      # any slot < 2 * capacity
            runs = ring_runs(cap, slot, size)
            assert sum(b - a for a, b in runs) == size and len(runs) <= 2
            assert ring_slice(times, cap, slot, size) == window
            padded = ["x"] * 3 + times
            assert ring_slice(padded, cap, front, size, 3) == window
            for t in range(-1, 22):
                assert ring_bisect(bisect_right, times, t, front, size) == bisect_right(window, t)
                assert ring_bisect(bisect_left, times, t, front, size) == bisect_left(window, t)
            target = list(times)
            ring_assign(target, cap, front, [t + 100 for t in window])
            assert ring_slice(target, cap, front, size) == [t + 100 for t in window]
            assert [target[j] for j in range(cap) if target[j] == times[j]] == [
                times[j] for j in range(cap) if (j - front) % cap >= size]
    assert grown_capacity(8, 8) == 8 and grown_capacity(8, 9) == 16 and grown_capacity(3, 7) == 12
    assert shrunk_capacity(64, 16, 1) == 64 and shrunk_capacity(64, 15, 1) == 32
    assert shrunk_capacity(64, 0, 1) == 1 and shrunk_capacity(64, 0, 8) == 8
    assert shrunk_capacity(10, 1, 3) == 3    # flatfit: any capacity, never below the minimum
