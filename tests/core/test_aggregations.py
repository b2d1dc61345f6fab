"""The built-in aggregations: monoid laws, declared properties, and results against plain
Python definitions."""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swag_core import Aggregation, InvalidValueError, product
from swag_core.aggregations import (
    ArgMax,
    ArgMin,
    BloomFilter,
    BloomFilterValue,
    Collect,
    Count,
    First,
    GeometricMean,
    Last,
    Max,
    Mean,
    Min,
    StdDev,
    Sum,
    Variance,
)

from .helpers import identical
from .test_differential import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=str)
@given(data=st.data())
def test_monoid_laws_and_declared_properties(case: Case, data: st.DataObject) -> None:
    agg = case.make()
    a, b, c = (agg.lift_fn(data.draw(case.values)) for _ in range(3))
    f, e = agg.combine, agg.identity
    assert identical(f(e, a), a) and identical(f(a, e), a), "identity law"
    assert identical(f(f(a, b), c), f(a, f(b, c))), "associativity"
    if agg.commutative:
        assert identical(f(a, b), f(b, a))
    if agg.selective:
        ab = f(a, b)
        assert ab is a or ab is b
    if agg.subtract is not None:
        assert identical(agg.subtract(f(a, b), a), b)
        assert identical(agg.subtract(f(f(a, b), c), f(a, b)), c)


def test_non_commutative_built_ins_are_declared_so() -> None:
    for agg in (First(), Last(), Collect(), ArgMax(), ArgMin()):
        assert not agg.commutative, agg
    assert First().combine((1,), (2,)) != First().combine((2,), (1,))


numbers = st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=50)


@given(numbers)
def test_results_match_definitions(xs: list[int]) -> None:
    assert Count().fold(xs) == len(xs)
    assert Sum().fold(xs) == sum(xs)
    assert math.isclose(Mean().fold(xs), statistics.fmean(xs), rel_tol=1e-12)
    assert Max().fold(xs) == max(xs) and Min().fold(xs) == min(xs)
    assert First().fold(xs) == xs[0] and Last().fold(xs) == xs[-1]
    assert Collect().fold(xs) == xs
    assert math.isclose(StdDev(ddof=0).fold(xs), statistics.pstdev(xs), rel_tol=1e-9,
                        abs_tol=1e-6)
    if len(xs) > 1:
        assert math.isclose(Variance().fold(xs), statistics.variance(xs), rel_tol=1e-9,
                            abs_tol=1e-6)
    else:
        assert Variance().fold(xs) is None
    positives = [abs(x) + 1 for x in xs]
    assert math.isclose(GeometricMean().fold(positives), statistics.geometric_mean(positives),
                        rel_tol=1e-9)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers()), min_size=1, max_size=30))
def test_arg_ties_go_to_the_oldest(xs: list[tuple[int, int]]) -> None:
    keys = [k for k, _ in xs]
    assert ArgMax(key=lambda p: p[0]).fold(xs) == xs[keys.index(max(keys))]
    assert ArgMin(key=lambda p: p[0]).fold(xs) == xs[keys.index(min(keys))]


def test_max_and_min_count() -> None:
    from swag_core.aggregations import MaxCount, MinCount
    assert MaxCount().fold([3, 1, 3, 2]) == (3, 2)
    assert MinCount().fold([3, 1, 3, 2]) == (1, 1)


def test_empty_results() -> None:
    for agg in (Max(), Min(), Mean(), Variance(), GeometricMean(), First(), ArgMax()):
        assert agg.fold([]) is None, agg
    assert Count().fold([]) == 0 and Sum().fold([]) == 0 and Collect().fold([]) == []


def test_variance_is_stable_where_a_sum_of_squares_is_not() -> None:
    xs = [1e9 + v for v in (4, 7, 13, 16)]
    assert math.isclose(Variance().fold(xs), 30.0, rel_tol=1e-9)


def test_first_and_last_keep_none_values() -> None:
    assert First().fold([None, 1]) is None and Last().fold([1, None]) is None
    assert First().fold([]) is None


@pytest.mark.parametrize("agg,bad,word", [
    (Max(), float("nan"), "NaN"), (Sum(), None, "None"), (Mean(), "x", "numbers"),
    (GeometricMean(), 0, "positive"), (ArgMax(key=lambda r: r["d"]), {"d": None}, "None"),
    (BloomFilter(), object(), "bloom"),
])
def test_bad_values_are_refused_by_lift(agg: Aggregation, bad: object, word: str) -> None:
    with pytest.raises(InvalidValueError, match=word):
        agg.lift_fn(bad)


def test_bloom_filter_contains_what_was_added_and_merges_by_or() -> None:
    agg = BloomFilter(bits=256, hashes=3)
    items = ["JFK", "LGA", 42, 1.5, None, ("EWR", 3)]
    result = agg.fold(items)
    assert isinstance(result, BloomFilterValue)
    assert all(item in result for item in items)
    assert result.mask == _or_masks(agg, items)
    assert 1 in agg.fold([1.0]) and 1.0 in agg.fold([True])  # equal numbers hash alike
    assert len(result.to_bytes()) == 32
    assert 3 <= result.estimated_count() <= 12


def _or_masks(agg: BloomFilter, items: list[object]) -> int:
    mask = 0
    for item in items:
        mask |= agg.lift_fn(item)
    return mask


def test_bloom_filter_is_deterministic_across_processes() -> None:
    code = ("from swag_core.aggregations import BloomFilter as B; "
            "print(B().fold(['JFK', 7, ('a', 1.5)]).to_bytes().hex())")
    masks = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        masks.add(out.stdout.strip())
    assert masks == {BloomFilter().fold(["JFK", 7, ("a", 1.5)]).to_bytes().hex()}


def test_product_computes_each_component_and_declares_conservatively() -> None:
    agg = product({"n": Count(), "max": Max().on(lambda r: r["v"]), "first": First()})
    rows = [{"v": 3}, {"v": 9}, {"v": 1}]
    assert agg.fold(rows) == {"n": 3, "max": 9, "first": {"v": 3}}
    assert not agg.commutative and not agg.selective and not agg.invertible
    inv = product({"n": Count(), "s": Sum()})
    assert inv.invertible and inv.commutative
    both = inv.subtract(inv.combine(inv.lift_fn(2), inv.lift_fn(5)), inv.lift_fn(2))
    assert inv.lower_fn(both) == {"n": 1, "s": 5}


def test_aggregation_validates_its_arguments() -> None:
    with pytest.raises(TypeError, match="combine"):
        Aggregation(combine=None, identity=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lift"):
        Aggregation(combine=max, identity=0, lift=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ddof"):
        Variance(ddof=2)
    with pytest.raises(ValueError, match="bits"):
        BloomFilter(bits=0)
