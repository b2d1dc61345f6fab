"""Sums, means, variances and standard deviations of doubles are exactly rounded and do not
depend on order or grouping: checked against exact rational arithmetic (``Fraction``), with
the rounding itself checked independently (the result is the nearest double, ties to
even)."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swag_core.aggregations import GeometricMean, Mean, StdDev, Sum, Variance
from swag_core.errors import InvalidValueError
from swag_core.exact import FRACTION_BITS, fields, from_parts, lift_float, sqrt_ratio, sum_floats

ADVERSARIAL = [1e16, -1e16, 1.0, 0.1, -0.3, 5e-324, -5e-324, -0.0, 0.0, 1e308, -1e308,
               2.0**-1022, 1.7976931348623157e308, 3.0, 2.0**-60]
finite = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from(ADVERSARIAL))
numbers = st.one_of(finite, finite, st.integers(-(2**80), 2**80))


def _odd(x: float) -> bool:
    """The last bit of ``x``'s significand (subnormals included) is 1."""
    return (Fraction(x) / Fraction(math.ulp(x))) % 2 == 1


def _is_nearest(exact: Fraction, got: float) -> bool:
    """``got`` is ``exact`` rounded to the nearest double, ties to even, overflow to inf
    (IEEE 754 round-to-nearest), decided with rationals only."""
    if math.isinf(got):
        top = Fraction(2) ** 1024 - Fraction(2) ** 970  # halfway past the largest double
        return (exact >= top) if got > 0 else (exact <= -top)
    if got == 0.0 and exact == 0:
        return True
    err = abs(exact - Fraction(got))
    for neighbour in (math.nextafter(got, math.inf), math.nextafter(got, -math.inf)):
        if math.isinf(neighbour):
            continue
        other = abs(exact - Fraction(neighbour))
        if other < err:
            return False
        if other == err and _odd(got):  # a tie goes to the even one
            return False
    return True


def _sum_oracle(xs: list[Any]) -> Fraction:
    return sum(map(Fraction, xs), Fraction(0))


@given(st.lists(numbers, max_size=30))
def test_sum_and_mean_are_exactly_rounded(xs: list[Any]) -> None:
    exact = _sum_oracle(xs)
    got = Sum().fold(xs)
    if all(type(x) is int for x in xs):
        assert type(got) is int and got == exact
    else:
        assert type(got) is float and _is_nearest(exact, got), (got, float(exact))
    mean = Mean().fold(xs)
    assert mean is None if not xs else _is_nearest(exact / len(xs), mean)


@given(st.lists(numbers, max_size=30), st.sampled_from([0, 1]))
def test_variance_and_stddev_are_exactly_rounded(xs: list[Any], ddof: int) -> None:
    v, s = Variance(ddof).fold(xs), StdDev(ddof).fold(xs)
    if len(xs) <= ddof:
        assert v is None and s is None
        return
    mean = _sum_oracle(xs) / len(xs)
    exact = sum((Fraction(x) - mean) ** 2 for x in xs) / (len(xs) - ddof)
    assert _is_nearest(exact, v), (v, float(exact))
    # the root: between the midpoints to the neighbours (squares compared exactly)
    assert s >= 0.0
    if math.isinf(s):
        assert exact > Fraction(1.7976931348623157e308) ** 2
    else:
        lo = (Fraction(s) + Fraction(math.nextafter(s, -math.inf) if s else 0.0)) / 2
        hi = (Fraction(s) + Fraction(math.nextafter(s, math.inf))) / 2
        assert lo * lo <= exact <= hi * hi, (s, math.sqrt(float(exact)))


@given(st.lists(numbers, min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_order_and_grouping_give_the_same_partial(xs: list[Any], rnd: random.Random) -> None:
    """Any permutation and any cut into groups (slices, micro-batches) combined in any order
    give the same int, and removing a prefix leaves the partial of the rest."""
    for agg in (Sum(), Variance()):
        lift = agg.lift_fn
        whole = sum(map(lift, xs))
        ys = xs[:]
        rnd.shuffle(ys)
        cuts = sorted(rnd.sample(range(len(ys) + 1), min(3, len(ys) + 1)))
        groups = [ys[a:b] for a, b in zip([0, *cuts], [*cuts, len(ys)])]
        partials = [agg.identity] + [sum(map(lift, g)) for g in groups]
        rnd.shuffle(partials)
        acc = agg.identity
        for p in partials:
            acc = agg.combine(acc, p)
        assert acc == whole
        k = rnd.randint(0, len(xs))
        assert agg.subtract(whole, sum(map(lift, xs[:k]))) == sum(map(lift, xs[k:]))


def test_the_classic_cancellation() -> None:
    """1e16 + 1.0 - 1e16 is 0.0 left to right in floats and 1.0 exactly: every order and
    split gives 1.0 (and the mean 1/3 rounded once)."""
    xs = [1e16, 1.0, -1e16]
    assert (1e16 + 1.0) - 1e16 == 0.0
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        assert Sum().fold([xs[i] for i in order]) == 1.0
    assert Mean().fold(xs) == 1 / 3
    assert Variance(ddof=0).fold([1e16, 1.0, -1e16]) == float(
        sum((Fraction(x) - Fraction(1, 3)) ** 2 for x in xs) / 3)


@given(st.lists(finite, max_size=40))
def test_sum_floats_is_the_sum_of_lifts(xs: list[float]) -> None:
    assert sum_floats(xs) == sum(map(lift_float, xs))


@given(st.lists(st.one_of(finite, st.sampled_from([math.inf, -math.inf])), max_size=40))
def test_from_parts_is_the_sum_of_lifts(xs: list[float]) -> None:
    """An engine's exact integer sum of the finite values (units of 2**-1074) and its counts
    give the partial the lifts give."""
    finite_xs = [x for x in xs if math.isfinite(x)]
    fixed_sum = sum(Fraction(x) for x in finite_xs) * 2**FRACTION_BITS
    assert fixed_sum.denominator == 1
    assert from_parts(int(fixed_sum), len(xs), xs.count(math.inf), xs.count(-math.inf)) == \
        sum(map(lift_float, xs))


def test_sum_floats_falls_back_past_the_double_range() -> None:
    xs = [1e308, 1e308, -1e308, 5e-324]
    assert sum_floats(xs) == sum(map(lift_float, xs))
    assert Sum().fold(xs) == 1e308 and Sum().fold(xs[:2]) == math.inf
    assert Sum().fold([-1e308, -1e308]) == -math.inf


def test_types_infinities_and_refusals() -> None:
    assert Sum().fold([]) == 0 and type(Sum().fold([2, 3])) is int
    assert Sum().fold([2**80, 1]) == 2**80 + 1  # ints stay exact
    assert type(Sum().fold([2, 0.0])) is float and Sum().fold([-0.0]) == 0.0
    assert Sum().fold([math.inf, 1.0]) == math.inf
    assert Sum().fold([-math.inf, 1]) == -math.inf
    assert math.isnan(Sum().fold([math.inf, -math.inf]))
    assert math.isnan(Mean().fold([math.inf, -math.inf, 3]))
    assert math.isnan(Variance().fold([math.inf, 1.0]))
    assert Mean().fold([]) is None and Variance().fold([1.0]) is None
    # numpy-like integers (__index__) stay exact; Decimal becomes the nearest double
    from decimal import Decimal
    assert Sum().fold([True, 2]) == 3 and Sum().fold([Decimal("0.5"), 1]) == 1.5
    for agg in (Sum(), Mean(), Variance(), StdDev(), GeometricMean()):
        for bad in (math.nan, None, "x"):
            with pytest.raises(InvalidValueError, match=agg.name):
                agg.lift_fn(bad)
    with pytest.raises(InvalidValueError, match="positive"):
        GeometricMean().lift_fn(0.0)


def test_geometric_mean_is_exp_of_the_exact_mean_log() -> None:
    xs = [1e300, 1e-300, 7.0, 2.0**-1074]
    logs = [math.log(x) for x in xs]
    assert GeometricMean().fold(xs) == math.exp(float(_sum_oracle(logs) / len(xs)))
    assert GeometricMean().fold([math.inf, 2.0]) == math.inf


def test_counters_survive_subtraction_of_a_negative_sum() -> None:
    """The counters in the low bits stay right whatever the sign of the fixed-point sum."""
    a, b = lift_float(-3.5), lift_float(math.inf)
    _, n_values, n_floats, n_pos, n_neg = fields(a + b + lift_float(-1e300))
    assert (n_values, n_floats, n_pos, n_neg) == (3, 3, 1, 0)
    assert fields(a + b - b)[1:] == (1, 1, 0, 0) and fields(a)[0] < 0


@pytest.mark.parametrize("a", [1.0, 3.0, 2.0**-1074 * 7, 1e300, 2.0**-1022])
def test_sqrt_ratio_rounds_near_midpoints(a: float) -> None:
    """Roots just above, at and just below the midpoint of two neighbouring doubles (data
    rarely lands there, so hypothesis alone would not see a lost sticky bit)."""
    up = math.nextafter(a, math.inf)
    mid = (Fraction(a) + Fraction(up)) / 2
    even = up if _odd(a) else a
    tiny = Fraction(1, 2**2500)
    for square, want in ((mid * mid + tiny, up), (mid * mid, even), (mid * mid - tiny, a)):
        assert sqrt_ratio(square.numerator, square.denominator) == want, (a, want)


def test_sum_floats_falls_back_on_both_infinities() -> None:
    xs = [math.inf, 2.0, -math.inf]
    assert sum_floats(xs) == sum(map(lift_float, xs))
    assert math.isnan(Sum().lower_fn(sum_floats(xs)))


def test_variance_refuses_ints_beyond_the_double_range() -> None:
    """S's field holds sums of values below 2**1024: a larger int is refused, not
    silently overflowed into the sum of squares."""
    assert Variance().fold([2**1023, 2**1023 + 2]) == 2.0
    for agg in (Variance(), StdDev()):
        with pytest.raises(InvalidValueError, match=r"2\*\*1024"):
            agg.fold([2**1100, 2**1100 + 2])
        with pytest.raises(InvalidValueError, match=r"2\*\*1024"):
            agg.fold([-(2**1024)])
