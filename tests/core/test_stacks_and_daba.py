"""Tests specific to the in-order FIFO windows: recalc, soe, two_stacks, two_stacks_lite, daba,
daba_lite.

White-box structural invariants after every operation (DABA paper, section 6.3; note
``daba.md`` section 7 T6), the paper's concrete traces (note section 7: T1-T4, T7, T8, T10),
deterministic ``combine``-call counts proving the bounds (Theorem 9 for DABA; amortized 3 per
round for Two-Stacks), query-cache invalidation, "never combine with the identity", bulk
eviction costs, compaction of the FIFO lists, and error cases. The generic differential test
over every algorithm lives in ``test_differential.py``.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core import (
    Aggregation,
    AlgorithmMismatchError,
    EmptyWindowError,
    InvalidTimeError,
    OutOfOrderError,
    UnsupportedQueryError,
    make_window,
)
from swag_core.aggregations import Max, Mean, Sum
from swag_core.algorithms._queues import COMPACT_MIN, suffix_sums

from .helpers import Counter, Model, concat, counting, matgroup, matmul

IN_ORDER = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]
STACKS = ["two_stacks", "two_stacks_lite"]
DABAS = ["daba", "daba_lite"]
ANY_MONOID = ["recalc", *STACKS, *DABAS]   # all but soe


# --------------------------------------------------------------------------- aggregations
def _strip_prefix(total: str, oldest: str) -> str:
    assert total.startswith(oldest), (total, oldest)
    return total[len(oldest):]


def strict_concat() -> tuple[Aggregation, Counter, Counter]:
    """Concatenation whose ``combine`` fails when given the identity ``""`` (every lifted
    value is non-empty, so a correct structure that avoids identity combines never sees it),
    with counters of ``combine`` and ``subtract`` calls. ``subtract`` strips the prefix, so
    subtract-on-evict can use it too."""
    combines, subtracts = Counter(), Counter()

    def combine(a: str, b: str) -> str:
        assert a != "" and b != "", f"combine with the identity: {a!r}, {b!r}"
        combines.calls += 1
        return a + b

    def subtract(total: str, oldest: str) -> str:
        subtracts.calls += 1
        return _strip_prefix(total, oldest)

    agg = Aggregation(combine=combine, identity="", lift=lambda x: f"{x};",
                      subtract=subtract, name="strict_concat")
    return agg, combines, subtracts


def plain_concat() -> Aggregation:
    """Same results as :func:`strict_concat`, for the brute-force model."""
    return Aggregation(combine=operator.add, identity="", lift=lambda x: f"{x};",
                       subtract=_strip_prefix, name="concat")


def max_agg() -> Aggregation:
    return Aggregation(combine=max, identity=float("-inf"), name="max")


def chars() -> Aggregation:
    """Concatenation of raw strings (no lift), for the paper's T4 "abcde" case."""
    return Aggregation(combine=operator.add, identity="", subtract=_strip_prefix, name="chars")


# --------------------------------------------------------------------------- invariants
def check_fifo(w: Any) -> None:
    """Shared bookkeeping: sorted times, compaction keeps the dead prefix bounded."""
    times = w._times
    head = w._head
    assert 0 <= head <= len(times)
    assert len(w) == len(times) - head
    assert times[head:] == sorted(times[head:])
    # Dead prefix: compacted once it reaches COMPACT_MIN and the live part's length.
    assert head < COMPACT_MIN or 2 * head < len(times)


def suffix_folds(agg: Aggregation, vals: Sequence[Any], lo: int, hi: int) -> list[Any]:
    """``[fold(vals[i:hi]) for i in range(lo, hi)]`` with hi - lo - 1 combines."""
    out: list[Any] = []
    for i in range(hi - 1, lo - 1, -1):
        out.append(vals[i] if not out else agg.combine(vals[i], out[-1]))
    return out[::-1]


def prefix_folds(agg: Aggregation, vals: Sequence[Any], lo: int, hi: int) -> list[Any]:
    """``[fold(vals[lo:i + 1]) for i in range(lo, hi)]`` with hi - lo - 1 combines."""
    out: list[Any] = []
    for i in range(lo, hi):
        out.append(vals[i] if not out else agg.combine(out[-1], vals[i]))
    return out


def check_daba(w: Any) -> None:
    """The five aggregate invariants, pointer order and size invariant (note section 3.6.2)."""
    agg = w.aggregation
    vals, aggs = w._vals, w._aggs
    f, left, r, a, b, e = w._head, w._l, w._r, w._a, w._b, len(vals)
    assert len(aggs) == e == len(w._times)
    assert f <= left <= r <= a <= b <= e, (f, left, r, a, b, e)
    to_b = suffix_folds(agg, vals, f, b)
    assert aggs[f:left] == to_b[:left - f]                     # front portion: suffix to B
    assert aggs[left:r] == suffix_folds(agg, vals, left, r)    # l_L: suffix to R
    assert aggs[r:a] == prefix_folds(agg, vals, r, a)          # l_R: prefix from R
    assert aggs[a:b] == to_b[a - f:]                           # l_A: suffix to B
    assert aggs[b:e] == prefix_folds(agg, vals, b, e)          # l_B: prefix from B
    size_f, size_b = b - f, e - b
    if size_f or size_b:
        assert (r - left) + (a - r) + (b - a) + 1 == size_f - size_b
        assert r - left == a - r
        assert left > f   # the "+1": aggs[F] is the whole l_F sum
    if r > left:
        assert w._ra == to_b[r - f]   # cachedRplusA = Sigma [R, B) while shrinking


def check_daba_lite(w: Any) -> None:
    """DABA Lite layout: aggregates in [F, l), [l, r) and [a, b); raw values in l_R and l_B;
    ``mid = Sigma [r, b)``, ``back = Sigma [b, E)``; the size invariants of ``DABALite.hpp``."""
    agg = w.aggregation
    vals, q = w._vals, w._q
    f, left, r, a, b, e = w._head, w._l, w._r, w._a, w._b, len(vals)
    assert len(q) == e == len(w._times)
    assert f <= left <= r <= a <= b <= e, (f, left, r, a, b, e)
    to_b = suffix_folds(agg, vals, f, b)
    assert q[f:left] == to_b[:left - f]
    assert q[left:r] == suffix_folds(agg, vals, left, r)
    assert q[r:a] == vals[r:a]
    assert q[a:b] == to_b[a - f:]
    assert q[b:e] == vals[b:e]
    back = prefix_folds(agg, vals, b, e)
    assert w._back == (back[-1] if back else agg.identity)
    if e > f:
        assert w._mid == (to_b[r - f] if r < b else agg.identity)
        assert (b - left) + 1 == (b - f) - (e - b)
        assert r - left == a - r


def check_two_stacks(w: Any) -> None:
    agg = w.aggregation
    fv, fa, bv, ba = w._fv, w._fa, w._bv, w._ba
    assert len(fv) + len(bv) == len(w)
    # s_F[i].agg = s_F[i].val (+) ... (+) s_F[0].val: suffix sums of the FIFO order fv[::-1]
    assert fa == suffix_folds(agg, fv[::-1], 0, len(fv))[::-1]
    assert ba == prefix_folds(agg, bv, 0, len(bv))   # s_B[i].agg = s_B[0].val (+) .. s_B[i].val


def check_two_stacks_lite(w: Any) -> None:
    agg = w.aggregation
    vals, front = w._vals, w._front
    f, split, e = w._head, w._split, len(vals)
    assert f <= split <= e and len(front) == split - f
    assert front == suffix_folds(agg, vals, f, split)[::-1]   # top (last) = oldest
    back = prefix_folds(agg, vals, split, e)
    assert w._back_sum == (back[-1] if back else agg.identity)


CHECKERS: dict[str, Callable[[Any], None]] = {
    "recalc": lambda w: None,
    "soe": lambda w: None,
    "two_stacks": check_two_stacks,
    "two_stacks_lite": check_two_stacks_lite,
    "daba": check_daba,
    "daba_lite": check_daba_lite,
}


def check(w: Any) -> None:
    check_fifo(w)
    CHECKERS[w.name](w)


# --------------------------------------------------------------------------- cost bounds
def _bulk_evict_bound(name: str, n: int, m: int) -> int:
    """Maximum ``combine`` calls of ``bulk_evict`` removing m of n entries."""
    if name == "recalc":
        return 0
    if name in DABAS:
        return 2 * min(m, n - m)
    return max(0, n - m - 1)   # soe re-fold, two-stacks flip of the survivors


def _op_bound(name: str, op: str, n_before: int) -> int:
    """Worst-case ``combine`` calls of one operation on a window of n_before entries."""
    if op == "insert":
        return {"recalc": 0, "soe": 1, "two_stacks": 1, "two_stacks_lite": 1,
                "daba": 3, "daba_lite": 3}[name]
    if op == "evict":
        if name in STACKS:
            return max(0, n_before - 1)   # a flip of the whole back stack
        return {"recalc": 0, "soe": 0, "daba": 2, "daba_lite": 2}[name]
    if op == "query":
        return max(0, n_before - 1) if name == "recalc" else (0 if name == "soe" else 1)
    raise AssertionError(op)


# --------------------------------------------------------------------------- hypothesis
def run_ops(data: st.DataObject, name: str) -> None:
    agg, combines, subtracts = strict_concat()
    w = make_window(name, agg)
    model = Model(plain_concat())
    draw = data.draw
    clock = 0
    ops = ["insert"] * 5 + ["evict"] * 3 + ["bulk_insert", "bulk_evict", "query", "query",
                                            "query_since"]
    for _ in range(draw(st.integers(1, 50))):
        op = draw(st.sampled_from(ops))
        n = len(model)
        combines.reset()
        subtracts.reset()
        if op == "insert":
            clock += draw(st.integers(0, 2))
            v = draw(st.integers(0, 99))
            w.insert(clock, v)
            model.insert(clock, v)
            assert combines.calls <= _op_bound(name, "insert", n)
        elif op == "evict":
            if n:
                w.evict()
                model.evict()
                assert combines.calls <= _op_bound(name, "evict", n)
                assert subtracts.calls == (1 if name == "soe" and n > 1 else 0)
            else:
                with pytest.raises(EmptyWindowError):
                    w.evict()
        elif op == "bulk_insert":
            batch = []
            for _ in range(draw(st.integers(0, 12))):
                clock += draw(st.integers(0, 2))
                batch.append((clock, draw(st.integers(0, 99))))
            w.bulk_insert(batch)
            model.bulk_insert(batch)
            assert combines.calls <= len(batch) * _op_bound(name, "insert", n)
        elif op == "bulk_evict":
            t = draw(st.integers(model.oldest() - 1, clock + 1)) if n else clock
            m = model.bulk_evict(t)
            assert w.bulk_evict(t) == m
            assert combines.calls <= _bulk_evict_bound(name, n, m)
            if name == "soe":   # m subtracts or a re-fold of the survivors, the cheaper
                assert combines.calls + subtracts.calls <= min(m, n - m)
            else:
                assert subtracts.calls == 0
        elif op == "query":
            assert w.query() == model.query()
            assert combines.calls <= _op_bound(name, "query", n)
            combines.reset()
            assert w.query() == model.query()   # a second query: cached (or free)
            if name != "recalc":
                assert combines.calls == 0
        else:   # query_since
            t = draw(st.integers(-1, clock + 1))
            if name == "recalc":
                assert w.query_since(t) == model.query_since(t)
            else:
                with pytest.raises(UnsupportedQueryError):
                    w.query_since(t)
        # The cache must never serve a stale result: compare after every operation.
        assert w.query() == model.query()
        assert len(w) == len(model)
        assert list(w.items()) == list(zip(model.times, model.values, strict=True))
        if len(model):
            assert (w.oldest(), w.youngest()) == (model.oldest(), model.youngest())
        check(w)


@pytest.mark.parametrize("name", IN_ORDER)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_random_operations_against_brute_force(name: str, data: st.DataObject) -> None:
    """Random interleavings vs the model, with per-operation combine bounds, structural
    invariants, cache checks, and a combine that refuses the identity."""
    run_ops(data, name)


@pytest.mark.parametrize("name", IN_ORDER)
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.booleans()), max_size=120))
def test_matmul_with_queries_between_updates(name: str,
                                             ops: list[tuple[bool, int, bool]]) -> None:
    """2x2 matrix product (non-commutative; ``matgroup`` adds subtract for soe): queries at
    random points between inserts/evicts, so any stale cached aggregate is caught."""
    agg = matgroup() if name == "soe" else matmul()
    w = make_window(name, agg)
    model = Model(agg)
    for t, (is_insert, v, do_query) in enumerate(ops):
        if is_insert or not len(model):
            w.insert(t, v)
            model.insert(t, v)
        else:
            w.evict()
            model.evict()
        if do_query:
            assert w.query() == model.query()
    assert w.query() == model.query()


# --------------------------------------------------------------------------- paper cases
@pytest.mark.parametrize("name", ANY_MONOID)
def test_t1_fig1_max_example(name: str) -> None:
    """Note section 7 T1: the paper's Fig. 1 (max), continued with the note's values."""
    w = make_window(name, max_agg())
    for t, v in enumerate([2, 6, 3, 5, 3]):
        w.insert(t, v)
    assert w.query() == 6
    t = 5
    expected = [("evict", 6), (1, 6), ("evict", 5), (4, 5), ("evict", 5), (2, 5),
                ("evict", 4), (6, 6)]
    for op, want in expected:
        if op == "evict":
            w.evict()
        else:
            w.insert(t, op)
            t += 1
        assert w.query() == want
    assert [v for _, v in w.items()] == [3, 1, 4, 2, 6]


def _daba_layout(w: Any) -> tuple[list[Any], ...]:
    f, left, r, a, b = w._head, w._l, w._r, w._a, w._b
    vals = w._vals
    return (vals[f:left], vals[left:r], vals[r:a], vals[a:b], vals[b:], w._aggs[f:])


def test_t2_daba_fig15_trace() -> None:
    """Note section 7 T2: the branch sequence of the paper's Fig. 15 (shrink, free rides,
    flip + shrink, ...), as front / l_L / l_R / l_A / l_B / aggs after every step."""
    w = make_window("daba", max_agg())
    t = 0
    for op in [90, 91, 2, 6, "evict", 3, 5, 3, "evict"]:
        if op == "evict":
            w.evict()
        else:
            w.insert(t, op)
            t += 1
    assert _daba_layout(w) == ([2], [6], [3], [5, 3], [], [6, 6, 3, 5, 3])
    steps = [
        ("evict", ([6], [], [], [3, 5, 3], [], [6, 5, 5, 3]), 6),                # shrink
        (1, ([6, 3], [], [], [5, 3], [1], [6, 5, 5, 3, 1]), 6),                  # free ride
        ("evict", ([3, 5], [], [], [3], [1], [5, 5, 3, 1]), 5),                  # free ride
        (4, ([3, 5, 3], [], [], [], [1, 4], [5, 5, 3, 1, 4]), 5),                # free ride
        ("evict", ([5], [3], [1], [4], [], [5, 3, 1, 4]), 5),                    # flip + shrink
        (2, ([5, 3], [], [], [1, 4], [2], [5, 4, 4, 4, 2]), 5),                  # shrink
        ("evict", ([3, 1], [], [], [4], [2], [4, 4, 4, 2]), 4),                  # free ride
        (6, ([3, 1, 4], [], [], [], [2, 6], [4, 4, 4, 2, 6]), 6),                # free ride
    ]
    for op, layout, want in steps:
        if op == "evict":
            w.evict()
        else:
            w.insert(t, op)
            t += 1
        assert _daba_layout(w) == layout
        assert w.query() == want
        check(w)


def test_t3_two_stacks_trace() -> None:
    """Note section 7 T3: Two-Stacks states for the same example, including the flip."""
    w = make_window("two_stacks", max_agg())
    t = 0
    for op in [90, 2, 6, "evict", 3, 5, 3]:
        if op == "evict":
            w.evict()
        else:
            w.insert(t, op)
            t += 1
    # s_F bottom->top [(6,6), (2,6)], s_B [(3,3), (5,5), (3,5)]
    assert (w._fv, w._fa, w._bv, w._ba) == ([6, 2], [6, 6], [3, 5, 3], [3, 5, 5])
    w.evict()
    w.insert(t, 1)
    w.evict()
    assert w._fv == [] and w.query() == 5   # s_F empty: the query is Sigma_B
    w.insert(t + 1, 4)
    w.evict()                               # flips [3, 5, 3, 1, 4] then pops 3
    assert (w._fv, w._fa, w._bv) == ([4, 1, 3, 5], [4, 4, 4, 5], [])
    assert w.query() == 5


def test_t3_two_stacks_lite_trace() -> None:
    """The same history on Two-Stacks Lite: the flip leaves aggregates only in the front."""
    w = make_window("two_stacks_lite", max_agg())
    t = 0
    for op in [90, 2, 6, "evict", 3, 5, 3, "evict", 1, "evict"]:
        if op == "evict":
            w.evict()
        else:
            w.insert(t, op)
            t += 1
    assert w._front == [] and w._back_sum == 5 and w.query() == 5
    w.insert(t, 4)
    w.evict()
    assert w._front == [4, 4, 4, 5] and w._split == len(w._vals)
    assert [v for _, v in w.items()] == [5, 3, 1, 4]


@pytest.mark.parametrize("name", IN_ORDER)
def test_t4_non_commutative_order(name: str) -> None:
    """Note section 7 T4: abcde / bcde / bcdef / def / "" / g, for every in-order algorithm."""
    w = make_window(name, chars())
    for t, c in enumerate("abcde"):
        w.insert(t, c)
    assert w.query() == "abcde"
    w.evict()
    assert w.query() == "bcde"
    w.insert(5, "f")
    assert w.query() == "bcdef"
    w.evict()
    w.evict()
    assert w.query() == "def"
    for _ in range(3):
        w.evict()
    assert w.query() == "" and len(w) == 0
    w.insert(6, "g")
    assert w.query() == "g"


@pytest.mark.parametrize("make", [Sum, Mean], ids=["sum", "mean"])
def test_t10_soe_equals_daba_on_invertible(make: Callable[[], Aggregation]) -> None:
    """Note section 7 T10: SOE and DABA agree exactly on integer Sum and Mean."""
    soe, daba = make_window("soe", make()), make_window("daba", make())
    rnd = random.Random(10)
    t = 0
    for _ in range(3000):
        if rnd.random() < 0.55 or not len(soe):
            t += rnd.randint(0, 2)
            v = rnd.randint(-1000, 1000)
            soe.insert(t, v)
            daba.insert(t, v)
        else:
            soe.evict()
            daba.evict()
        assert soe.query() == daba.query()


# --------------------------------------------------------------------------- combine counts
def _variable_size_run(name: str, seed: int, steps: int) -> dict[str, int]:
    """Maximum combine calls per operation over a long random in-order run whose window
    grows, shrinks and empties (phases with insert probability 0.3 .. 0.7)."""
    agg, counter = counting(matmul())
    w = make_window(name, agg)
    rnd = random.Random(seed)
    worst = {"insert": 0, "evict": 0, "query": 0, "cached query": 0}
    t = 0
    p_insert = 0.5
    for step in range(steps):
        if step % 500 == 0:
            p_insert = rnd.choice([0.3, 0.5, 0.55, 0.7])
        if rnd.random() < p_insert or not len(w):
            t += rnd.randint(0, 1)
            counter.reset()
            w.insert(t, rnd.randint(0, 10**6))
            worst["insert"] = max(worst["insert"], counter.reset())
        else:
            counter.reset()
            w.evict()
            worst["evict"] = max(worst["evict"], counter.reset())
        if rnd.random() < 0.5:
            counter.reset()
            w.query()
            worst["query"] = max(worst["query"], counter.reset())
            w.query()
            worst["cached query"] = max(worst["cached query"], counter.reset())
    return worst


@pytest.mark.parametrize("name", DABAS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_daba_worst_case_combines_per_operation(name: str, seed: int) -> None:
    """Theorem 9 (cached DABA): at most 1 combine per query, 3 per insert, 2 per evict, for
    EVERY single operation of a long variable-size run; the bounds are attained (tight).
    DABA Lite has the same constants (note section 8)."""
    worst = _variable_size_run(name, seed, 20000)
    assert worst == {"insert": 3, "evict": 2, "query": 1, "cached query": 0}


def _steady_rounds(name: str, n: int, rounds: int) -> tuple[list[int], list[int], list[int]]:
    """Per-operation combine calls of evict + insert + query rounds on a window of size n
    (the paper's benchmark driver, note section 7 T11)."""
    agg, counter = counting(matmul())
    w = make_window(name, agg)
    for t in range(n):
        w.insert(t, t)
    ev, ins, qu = [], [], []
    for t in range(n, n + rounds):
        counter.reset()
        w.evict()
        ev.append(counter.reset())
        w.insert(t, t)
        ins.append(counter.reset())
        w.query()
        qu.append(counter.reset())
    return ev, ins, qu


@pytest.mark.parametrize("name", DABAS)
def test_daba_steady_state_averages(name: str) -> None:
    """Theorem 9: on average two combines per insert and one per evict (n = 1000, 20 flip
    cycles); per fixup step 1 on average (shrink 2, free ride 0)."""
    ev, ins, qu = _steady_rounds(name, 1000, 10000)
    assert max(ins) == 3 and max(ev) == 2 and max(qu) == 1
    assert abs(sum(ins) / len(ins) - 2) < 0.01
    assert abs(sum(ev) / len(ev) - 1) < 0.01
    assert sum(ins) + sum(ev) <= 3 * len(ins)


@pytest.mark.parametrize("name", STACKS)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000])
def test_two_stacks_amortized_three_per_round(name: str, n: int) -> None:
    """Two-Stacks (Theorem 4) and Two-Stacks Lite: insert <= 1, query <= 1, evict 0 except a
    flip of the back stack (k - 1 combines for k entries): at most 3 amortized per evict +
    insert + query round, over a whole number of flip cycles and over any prefix."""
    rounds = 20 * n if n > 1 else 100
    ev, ins, qu = _steady_rounds(name, n, rounds)
    assert max(ins) <= 1 and max(qu) <= 1
    assert max(ev) == max(0, n - 1)       # the O(n) flip spike is real ...
    total = 0
    for i in range(rounds):               # ... but amortized: every prefix stays within 3 per
        total += ev[i] + ins[i] + qu[i]   # round plus the credit of the n ramp-up inserts
        assert total <= 3 * (i + 1) + n - 1
    assert total <= 3 * rounds            # whole flip cycles: at most 3 per round
    flips = [c for c in ev if c]
    assert len(flips) == (rounds // n if n > 1 else 0)


@pytest.mark.parametrize("n, period, trigger", [(16, 8, "insert"), (1000, 500, "insert"),
                                                (5, 2, "evict")])
def test_t8_daba_flip_timing(n: int, period: int, trigger: str) -> None:
    """Note section 7 T8: with a fixed window of n and evict/insert rounds, DABA flips every
    floor(n/2) rounds; for even n the flip happens in an insert, for odd n in an evict."""
    w = make_window("daba", Sum())
    for t in range(n):
        w.insert(t, t)
    flips: list[tuple[int, str]] = []
    for rnd in range(8 * period):
        for op in ("evict", "insert"):
            back_before = len(w._vals) - w._b
            if op == "evict":
                w.evict()
            else:
                w.insert(n + rnd, n + rnd)
            back_after = len(w._vals) - w._b
            # |l_B| only drops to 0 at a flip (an insert would otherwise grow it by one).
            if back_after == 0 and (back_before > 0 or op == "insert"):
                flips.append((rnd, op))
    rounds = [r for r, _ in flips]
    assert all(b - a == period for a, b in pairwise(rounds))
    assert len(rounds) >= 7
    assert {op for _, op in flips} == {trigger}


@pytest.mark.parametrize("name", ["two_stacks", "two_stacks_lite", "daba", "daba_lite"])
def test_repeated_queries_are_cached(name: str) -> None:
    """Note section 7 T7: many queries without updates cost 0 combines after the first; any
    update invalidates the cache."""
    agg, counter = counting(matmul())
    w = make_window(name, agg)
    for t in range(10):
        w.insert(t, t)
    w.evict()
    w.insert(10, 3)   # both parts non-empty for every algorithm here
    counter.reset()
    first = w.query()
    assert counter.reset() == 1
    for _ in range(100):
        assert w.query() == first
    assert counter.reset() == 0
    w.insert(11, 4)
    assert w.query() != first
    assert counter.reset() >= 1


# --------------------------------------------------------------------------- bulk eviction
@pytest.mark.parametrize("name", IN_ORDER)
@pytest.mark.parametrize("m", [0, 1, 10, 499, 500, 501, 990, 999, 1000])
def test_bulk_evict_cost_and_state(name: str, m: int) -> None:
    """bulk_evict of m of n = 1000 entries: DABA <= 2 * min(m, n - m) combines (loop for up to
    half the window, rebuild beyond); stacks and soe at most the survivors' count minus one;
    recalc none. The structure stays valid and keeps working afterwards."""
    agg, combines, subtracts = strict_concat()
    w = make_window(name, agg)
    model = Model(plain_concat())
    n = 1000
    for t in range(n // 2):   # two entries per time: bulk_evict(t) removes whole time groups
        for v in (t % 7, t % 11):
            w.insert(t, v)
            model.insert(t, v)
    w.evict()                 # leave the stacks / DABA mid-cycle
    w.insert(n // 2, 0)
    model.evict()
    model.insert(n // 2, 0)
    combines.reset()
    subtracts.reset()
    cut = model.times[m - 1] if m else -1
    m = model.bulk_evict(cut)
    assert w.bulk_evict(cut) == m
    assert combines.calls <= _bulk_evict_bound(name, n, m)
    if name == "soe":   # m subtracts or a re-fold of the survivors, the cheaper
        assert combines.calls + subtracts.calls <= min(m, n - m)
    else:
        assert subtracts.calls == 0
    check(w)
    assert w.query() == model.query()
    for t in range(n // 2 + 1, n // 2 + 300):
        if t % 3:
            w.insert(t, t)
            model.insert(t, t)
        elif len(model):
            w.evict()
            model.evict()
        assert w.query() == model.query()
    check(w)


@pytest.mark.parametrize("name", IN_ORDER)
def test_bulk_evict_everything_and_nothing(name: str) -> None:
    agg, combines, _ = strict_concat()
    w = make_window(name, agg)
    assert w.bulk_evict(100) == 0
    w.bulk_insert([(t, t) for t in range(50)])
    combines.reset()
    assert w.bulk_evict(-1) == 0
    assert w.bulk_evict(49) == 50
    assert combines.calls == 0
    assert len(w) == 0 and w.query() == ""
    check(w)
    w.insert(49, 1)           # times may continue at the evicted watermark
    assert w.query() == "1;"


# --------------------------------------------------------------------------- edge cases
@pytest.mark.parametrize("name", IN_ORDER)
def test_empty_window(name: str) -> None:
    w = make_window(name, Sum())
    assert w.query() == 0 and len(w) == 0 and list(w.items()) == []
    for call in (w.evict, w.oldest, w.youngest):
        with pytest.raises(EmptyWindowError):
            call()
        with pytest.raises(IndexError):
            call()
    w.insert(5, 3)
    w.evict()
    with pytest.raises(EmptyWindowError):
        w.evict()
    assert w.query() == 0


@pytest.mark.parametrize("name", ANY_MONOID)
def test_single_entry_steady_state_costs_nothing(name: str) -> None:
    """Note section 7 T7, n = 1: insert into an empty window and evict to empty need no
    combine at all (the F = B reset branch; no combine with the identity)."""
    agg, combines, _ = strict_concat()
    w = make_window(name, agg)
    for t in range(300):
        w.insert(t, t)
        assert w.query() == f"{t};"
        w.evict()
        assert w.query() == ""
        assert combines.calls == 0
        check(w)


@pytest.mark.parametrize("name", IN_ORDER)
def test_small_windows_and_bursts(name: str) -> None:
    """n = 2 alternation; a burst of 10^4 inserts, evict all, insert again (note T7)."""
    agg = Sum()
    w = make_window(name, agg)
    w.insert(0, 1)
    w.insert(0, 2)
    for t in range(1, 100):
        w.evict()
        w.insert(t, t + 2)
        assert w.query() == (t + 1) + (t + 2)
    w.bulk_evict(10**9)
    for t in range(10_000):
        w.insert(1000 + t, t)
    assert w.query() == sum(range(10_000))
    for k in range(10_000):
        w.evict()
        if k % 997 == 0:
            assert w.query() == sum(range(k + 1, 10_000))
    assert len(w) == 0 and w.query() == 0
    w.insert(20_000, 7)
    w.insert(20_000, 8)
    assert w.query() == 15
    assert len(w._times) <= 2 * COMPACT_MIN   # the dead prefix was compacted away


@pytest.mark.parametrize("name", DABAS + STACKS)
def test_evict_right_after_flip(name: str) -> None:
    agg, _, _ = strict_concat()
    w = make_window(name, agg)
    model = Model(plain_concat())
    for t in range(9):
        w.insert(t, t)
        model.insert(t, t)
    for _ in range(9):        # every length from 9 down to 0, each step right after the last
        w.evict()
        model.evict()
        check(w)
        assert w.query() == model.query()


@pytest.mark.parametrize("name", IN_ORDER)
def test_equal_times_keep_insertion_order(name: str) -> None:
    w = make_window(name, chars())
    w.bulk_insert([(1, "a"), (1, "b"), (2, "c")])
    w.insert(2, "d")
    w.insert(2, "e")
    assert w.query() == "abcde"
    assert list(w.items()) == [(1, "a"), (1, "b"), (2, "c"), (2, "d"), (2, "e")]
    assert w.bulk_evict(1) == 2
    assert w.query() == "cde" and w.oldest() == 2 == w.youngest()


@pytest.mark.parametrize("name", IN_ORDER)
def test_long_run_keeps_lists_compact(name: str) -> None:
    """The FIFO lists never hold more than max(COMPACT_MIN, live) dead slots."""
    w = make_window(name, Sum())
    rnd = random.Random(4)
    for t in range(20_000):
        w.insert(t, 1)
        while len(w) > 40 or (len(w) and rnd.random() < 0.4):
            w.evict()
        assert len(w._times) <= len(w) + max(COMPACT_MIN, len(w)) + 1
    assert w.query() == len(w)


def test_recalc_query_since() -> None:
    agg, combines, _ = strict_concat()
    w = make_window("recalc", agg)
    w.bulk_insert([(t, t) for t in (1, 2, 2, 3, 5, 8)])
    combines.reset()
    assert w.query_since(2) == "2;2;3;5;8;"
    assert combines.calls == 4
    assert w.query_since(4) == "5;8;"
    assert w.query_since(9) == "" and w.query_since(-5) == w.query()
    w.evict()
    w.evict()
    assert w.query_since(0) == "2;3;5;8;"
    with pytest.raises(InvalidTimeError):
        w.query_since(2.0)


def test_soe_float_total_reanchored_when_empty() -> None:
    """SOE resets its total to the identity when the window empties, dropping float drift."""
    w = make_window("soe", Sum())
    for t, v in enumerate([0.1, 0.2, 0.3, 1e16, -1e16]):
        w.insert(t, v)
    for _ in range(5):
        w.evict()
    assert w.query() == 0
    w.insert(10, 0.25)
    assert w.query() == 0.25


def test_soe_subtracts_a_prefix_from_the_front() -> None:
    """Errata note section 1.1: evict is ``subtract(total, oldest)`` on a non-commutative group."""
    agg = matgroup()
    w = make_window("soe", agg)
    model = Model(agg)
    for t in range(30):
        w.insert(t, t * 7 + 1)
        model.insert(t, t * 7 + 1)
    for _ in range(29):
        w.evict()
        model.evict()
        assert w.query() == model.query()


# --------------------------------------------------------------------------- errors
def test_soe_needs_subtract() -> None:
    with pytest.raises(AlgorithmMismatchError):
        make_window("soe", Max())
    with pytest.raises(AlgorithmMismatchError):
        make_window("soe", concat())


@pytest.mark.parametrize("name", IN_ORDER)
def test_class_attributes(name: str) -> None:
    w = make_window(name, Sum())
    cls = type(w)
    assert cls.name == name and cls.in_order
    assert cls.range_queries is (name == "recalc")
    assert cls.needs_invertible is (name == "soe")
    assert not cls.needs_selective and not cls.coalesces_equal_times
    assert cls.complexity


def _state(w: Any) -> Any:
    return (list(w.items()), len(w), w.query(), check(w))


@pytest.mark.parametrize("name", IN_ORDER)
def test_refused_inserts_change_nothing(name: str) -> None:
    def lift(x: Any) -> str:
        if x == "bad":
            raise ValueError("cannot lift")
        return f"{x};"

    agg = Aggregation(combine=operator.add, identity="", lift=lift, subtract=_strip_prefix)
    w = make_window(name, agg)
    for t in range(7):
        w.insert(10 + t, t)
    w.evict()
    before = _state(w)
    with pytest.raises(OutOfOrderError):
        w.insert(15, "x")
    with pytest.raises(OutOfOrderError):
        w.bulk_insert([(16, 1), (20, 2), (19, 3)])
    with pytest.raises(OutOfOrderError):
        w.bulk_insert([(3, 1)])
    for bad_time in (16.0, None, True, "17"):
        with pytest.raises(InvalidTimeError):
            w.insert(bad_time, 1)  # type: ignore[arg-type]
        with pytest.raises(InvalidTimeError):
            w.bulk_insert([(bad_time, 1)])  # type: ignore[list-item]
        with pytest.raises(InvalidTimeError):
            w.bulk_evict(bad_time)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        w.insert(30, "bad")
    with pytest.raises(ValueError):
        w.bulk_insert([(30, 1), (31, "bad")])
    assert _state(w) == before
    w.insert(np.int64(16), 9)         # numpy integers are valid times
    w.insert(16, 10)                  # equal to youngest is in order
    assert w.youngest() == 16 and type(w.youngest()) is int
    assert w.bulk_evict(np.int64(11)) == 1
    assert w.query() == "2;3;4;5;6;9;10;"
    if name != "recalc":
        with pytest.raises(UnsupportedQueryError):
            w.query_since(0)


def test_suffix_sums_is_the_flip() -> None:
    """The shared right-to-left fold of the Two-Stacks flip and the DABA rebuild: values go
    on the left (non-commutative), k values cost k - 1 calls, an empty run costs none."""
    agg, counter = counting(concat())
    vals = [f"{i};" for i in range(6)]
    assert suffix_sums(agg.combine, vals, 2, 6) == ["5;", "4;5;", "3;4;5;", "2;3;4;5;"]
    assert counter.reset() == 3
    assert suffix_sums(agg.combine, vals, 4, 4) == [] and counter.calls == 0
