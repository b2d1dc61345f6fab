"""Every algorithm against the brute-force :class:`Model`, on random interleavings of every
operation, with non-commutative aggregations and with every built-in.

In-order algorithms get non-decreasing times (plus refused out-of-order attempts that must
change nothing); out-of-order algorithms get arbitrary times with many collisions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swag_core import ALGORITHMS, EmptyWindowError, OutOfOrderError, make_window
from swag_core.aggregation import Aggregation, product
from swag_core.aggregations import (
    ArgMax,
    ArgMin,
    BloomFilter,
    Collect,
    Count,
    First,
    GeometricMean,
    Last,
    Max,
    MaxCount,
    Mean,
    Min,
    MinCount,
    StdDev,
    Sum,
    Variance,
)

from .helpers import Model, concat, identical, matgroup, matmul

small_ints = st.integers(-20, 20)
#: doubles whose float additions depend on the order: huge, tiny, subnormal, signed zeros,
#: infinities, cancelling pairs; and ints
wild = st.one_of(
    st.floats(allow_nan=False),
    st.sampled_from([1e16, -1e16, 1.0, 0.1, -0.3, 5e-324, -0.0, 0.0, 1e308, -1e308,
                     2.0**-1022, 3.0]),
    st.integers(-(2**70), 2**70))
finite_wild = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                        st.sampled_from([1e16, -1e16, 1.0, 0.1, 5e-324, -0.0, 1e154]))
pairs = st.tuples(st.integers(0, 4), st.integers(0, 99))  # (key with ties, payload)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], Aggregation]
    values: st.SearchStrategy[Any]
    examples: int = 40

    def __str__(self) -> str:
        return self.name


CASES = [
    Case("concat", concat, small_ints, 150),
    Case("matmul", matmul, small_ints, 150),
    Case("matgroup", matgroup, small_ints, 100),
    Case("count", Count, small_ints),
    Case("sum", Sum, small_ints),
    Case("mean", Mean, st.integers(-1000, 1000)),
    Case("min", Min, small_ints),
    Case("max", Max, small_ints),
    Case("argmin", lambda: ArgMin(key=lambda p: p[0]), pairs),
    Case("argmax", lambda: ArgMax(key=lambda p: p[0]), pairs),
    Case("mincount", MinCount, st.integers(-3, 3)),
    Case("maxcount", MaxCount, st.integers(-3, 3)),
    Case("variance", Variance, st.integers(-1000, 1000)),
    Case("stddev0", lambda: StdDev(ddof=0), st.integers(-1000, 1000)),
    Case("geomean", GeometricMean, st.integers(1, 100)),
    Case("sum_wild", Sum, wild),
    Case("mean_wild", Mean, wild),
    Case("variance_wild", Variance, finite_wild),
    Case("stddev_wild", lambda: StdDev(ddof=0), wild),
    Case("geomean_wild", GeometricMean, st.floats(min_value=5e-324, allow_nan=False)),
    Case("first", First, small_ints),
    Case("last", Last, small_ints),
    Case("collect", Collect, small_ints),
    Case("bloom", lambda: BloomFilter(bits=64, hashes=3), small_ints),
    Case("product", lambda: product({"n": Count(), "max": Max(), "all": Collect()}), small_ints),
]

def _check(w: Any, model: Model, case: Case) -> None:
    assert len(w) == len(model)
    if len(model):
        assert w.oldest() == model.oldest()
        assert w.youngest() == model.youngest()
    # bit for bit: sums, means and variances keep exact partials in every structure
    got, want = w.query(), model.query()
    assert identical(got, want), (got, want)


def _unchanged_after(error: type[Exception], action: Callable[[], Any], w: Any,
                     model: Model, case: Case) -> None:
    with pytest.raises(error):
        action()
    _check(w, model, case)


def run_operations(data: st.DataObject, algorithm: str, case: Case) -> None:
    cls = ALGORITHMS[algorithm]
    agg = case.make()
    w = make_window(algorithm, agg)
    model = Model(agg, coalesce=cls.coalesces_equal_times)
    draw = data.draw
    clock = draw(st.integers(-5, 5))

    def next_time() -> int:
        if cls.in_order:
            base = model.youngest() if len(model) else clock
            return base + draw(st.integers(0, 3))
        return draw(st.integers(0, 30))

    ops = ["insert"] * 4 + ["evict", "bulk_evict", "bulk_insert", "burst", "query_since",
                            "bad_order"]
    for _ in range(draw(st.integers(1, 40))):
        op = draw(st.sampled_from(ops))
        if op == "insert":
            t, v = next_time(), draw(case.values)
            w.insert(t, v)
            model.insert(t, v)
            clock = max(clock, t)
        elif op == "evict":
            if len(model):
                w.evict()
                model.evict()
            else:
                _unchanged_after(EmptyWindowError, w.evict, w, model, case)
        elif op == "bulk_evict":
            lo = model.oldest() - 1 if len(model) else clock - 2
            hi = model.youngest() + 1 if len(model) else clock + 2
            t = draw(st.integers(lo, hi))
            assert w.bulk_evict(t) == model.bulk_evict(t)
        elif op in ("bulk_insert", "burst"):
            n = draw(st.integers(0, 8)) if op == "bulk_insert" else draw(st.integers(20, 60))
            batch = []
            t = next_time()
            for _ in range(n):
                batch.append((t, draw(case.values)))
                if op == "bulk_insert":
                    t = t + draw(st.integers(0, 2)) if cls.in_order else next_time()
            w.bulk_insert(batch)
            model.bulk_insert(batch)
            if batch:
                clock = max(clock, max(p[0] for p in batch))
        elif op == "query_since":
            if cls.range_queries:
                lo = model.oldest() - 1 if len(model) else clock - 2
                hi = model.youngest() + 2 if len(model) else clock + 2
                t = draw(st.integers(lo, hi))
                assert identical(w.query_since(t), model.query_since(t))
        elif op == "bad_order" and cls.in_order and len(model):
            t = model.youngest() - draw(st.integers(1, 3))
            v = draw(case.values)
            _unchanged_after(OutOfOrderError, lambda t=t, v=v: w.insert(t, v), w, model, case)
            y = model.youngest()
            bad = [(y, v), (y + 2, v), (y + 1, v)]
            _unchanged_after(OutOfOrderError, lambda bad=bad: w.bulk_insert(bad), w, model, case)
        _check(w, model, case)
    items = list(w.items())
    assert [t for t, _ in items] == model.times
    assert all(identical(a, b) for (_, a), b in zip(items, model.values))


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_matches_brute_force(algorithm: str, case: Case) -> None:
    if ALGORITHMS[algorithm].mismatch(case.make()) is not None:
        pytest.skip(f"{algorithm} does not take {case.name}")

    # case.examples is for the default budget of 100; lighter profiles scale it down
    @settings(max_examples=max(2, case.examples * settings.default.max_examples // 100))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        run_operations(data, algorithm, case)

    check()


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_deepcopy_keeps_the_markers(algorithm: str) -> None:
    """A deep copy taken with pending work (dirty leaves, no cached aggregate) answers like
    the original: the internal markers are compared with ``is`` and survive the copy."""
    agg = next(a for a in (concat(), matgroup(), Max())
               if ALGORITHMS[algorithm].mismatch(a) is None)
    w = make_window(algorithm, agg)
    model = Model(agg)
    for t in range(40):
        w.insert(t, t)
        model.insert(t, t)
    for _ in range(7):
        w.evict()
        model.evict()
    w.insert(40, 40)
    model.insert(40, 40)
    twin = copy.deepcopy(w)
    assert twin.query() == w.query() == model.query()
    twin.insert(41, 41)
    w.insert(41, 41)
    assert twin.query() == w.query() and list(twin.items()) == list(w.items())
