"""Exact, order-independent sums of numbers as one Python ``int`` (the partial aggregate of
``Sum``, ``Mean``, ``GeometricMean`` and, with squares, ``Variance`` / ``StdDev``).

Every finite double is a multiple of ``2**-1074`` (the smallest subnormal), so a float
``x = n / 2**k`` is exactly the integer ``n << (1074 - k)`` in units of ``2**-1074``, and an
``int`` ``i`` is ``i << 1074``. Adding such integers is exact, hence associative and
commutative: a sum does not depend on the order, batching, slicing or engine that added
it, and subtracting a part is exact too. Only ``lower`` rounds, once, correctly (Python's
``int / int`` is correctly rounded, as :func:`math.fsum` is): the result is the exactly
rounded value of the real sum, bit for bit the same everywhere.

Counters ride in the low bits of the same integer, so that ``combine`` stays
``operator.add`` and ``subtract`` ``operator.sub`` (C speed) and still know how many values
were added, whether any was a float (an all-``int`` sum stays an ``int``) and how many were
``+inf`` / ``-inf``::

    partial = F << 256 | n_neg_inf << 192 | n_pos_inf << 128 | n_floats << 64 | n_values

``F`` is the signed fixed-point sum; each counter stays below ``2**64``. Field-wise addition
and subtraction are exact with Python's unbounded two's complement: the counters are
non-negative and smaller than ``2**256``, so ``partial >> 256 == F`` and
``partial & (2**256 - 1)`` holds the counters, whatever the sign of ``F``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: units of the fixed-point sum: 2**-1074, the smallest positive double
FRACTION_BITS = 1074
_COUNTER_BITS = 64
_MASK = (1 << _COUNTER_BITS) - 1
#: bits of the counters below the fixed-point sum
COUNTERS = 4 * _COUNTER_BITS
_LOW = (1 << COUNTERS) - 1
_UNIT = 1 << FRACTION_BITS  # 1.0 in fixed point
#: one value / one float / one +inf / one -inf, as counter increments
ONE_VALUE = 1
ONE_FLOAT = ONE_VALUE | 1 << _COUNTER_BITS
POS_INF = ONE_FLOAT | 1 << 2 * _COUNTER_BITS
NEG_INF = ONE_FLOAT | 1 << 3 * _COUNTER_BITS
# float n / d with d = 2**k, d.bit_length() == k + 1: (n << (_FLOAT_SHIFT - d.bit_length()))
_FLOAT_SHIFT = FRACTION_BITS + COUNTERS + 1
_INT_SHIFT = FRACTION_BITS + COUNTERS
_FREXP_SHIFT = FRACTION_BITS + COUNTERS - 53
_frexp = math.frexp


def lift_float(x: float) -> int:
    """The partial of one float (``x`` not NaN)."""
    if x - x == 0.0:  # finite (inf - inf is NaN)
        # x = m * 2**e with 0.5 <= |m| < 1 (53 bits): the int m * 2**53 shifted by
        # e - 53 + 1074 + COUNTERS >= 204 (e >= -1073). Cheaper than as_integer_ratio,
        # which doubles a float up to 53 times in a loop.
        m, e = _frexp(x)
        return (int(m * 9007199254740992.0) << (e + _FREXP_SHIFT)) + ONE_FLOAT
    return POS_INF if x > 0 else NEG_INF


def lift_int(i: int) -> int:
    """The partial of one int."""
    return (i << _INT_SHIFT) + ONE_VALUE


def fixed(x: float) -> int:
    """The finite float ``x`` as an integer in units of ``2**-1074`` (exact)."""
    n, d = x.as_integer_ratio()
    return n << (FRACTION_BITS + 1 - d.bit_length())


def sum_floats(xs: Sequence[float]) -> int:
    """The partial of the finite floats ``xs``: ``sum(map(lift_float, xs))``, faster.

    :func:`math.fsum` returns the correctly rounded sum; fsum of the values and of minus
    the terms found so far is the correctly rounded remainder, so a few passes give
    doubles whose exact sum is the exact sum of ``xs`` (typically 2-3 passes: each takes
    about 53 more bits of the result). Falls back to lifting each value where fsum reports
    an intermediate overflow (sums near the double range) or meets an infinity (``xs`` may
    hold them: the kernels pass any float column)."""
    n = len(xs)
    terms: list[float] = []
    rest = list(xs)
    try:
        while True:
            s = math.fsum(rest)
            if s == 0.0:
                break
            if s - s != 0.0:  # the remainder rounds to +-inf: lift value by value
                raise OverflowError
            terms.append(s)
            rest.append(-s)
    except (OverflowError, ValueError):  # ValueError: fsum of both infinities
        return sum(map(lift_float, xs))
    return (sum(map(fixed, terms)) << COUNTERS) + n * ONE_FLOAT


def fields(partial: int) -> tuple[int, int, int, int, int]:
    """``(F, n_values, n_floats, n_pos_inf, n_neg_inf)`` of a partial."""
    low = partial & _LOW
    return (partial >> COUNTERS, low & _MASK, low >> _COUNTER_BITS & _MASK,
            low >> 2 * _COUNTER_BITS & _MASK, low >> 3 * _COUNTER_BITS)


def value_count(partial: int) -> int:
    """How many values were added into ``partial`` (less those subtracted)."""
    return partial & _MASK


def ratio_to_float(num: int, den: int) -> float:
    """``num / den`` correctly rounded (``den > 0``); ``+-inf`` where it overflows."""
    try:
        return num / den  # CPython's int / int is correctly rounded
    except OverflowError:
        return math.inf if num > 0 else -math.inf


def sum_value(partial: int) -> Any:
    """The lowered sum: an ``int`` if only ints were added, else the exactly rounded float;
    ``+inf`` / ``-inf`` if such values were added (both: NaN)."""
    low = partial & _LOW
    if low >> 2 * _COUNTER_BITS:  # an infinity
        pos, neg = low >> 2 * _COUNTER_BITS & _MASK, low >> 3 * _COUNTER_BITS
        return math.nan if pos and neg else math.inf if pos else -math.inf
    total = partial >> COUNTERS
    if not low >> _COUNTER_BITS:  # no float: an exact int
        return total >> FRACTION_BITS
    return ratio_to_float(total, _UNIT)


def mean_value(partial: int) -> float | None:
    """The lowered mean (exactly rounded); ``None`` for no values."""
    low = partial & _LOW
    n = low & _MASK
    if not n:
        return None
    if low >> 2 * _COUNTER_BITS:
        pos, neg = low >> 2 * _COUNTER_BITS & _MASK, low >> 3 * _COUNTER_BITS
        return math.nan if pos and neg else math.inf if pos else -math.inf
    return ratio_to_float(partial >> COUNTERS, n << FRACTION_BITS)


def from_sum(total: Any, count: int) -> int:
    """The partial of ``count`` values whose exact sum is the int or finite float ``total``
    (an engine's per-slice sum; a float sum is only exact if the engine added exactly)."""
    if type(total) is int:
        return (total << _INT_SHIFT) + count * ONE_VALUE
    return (fixed(float(total)) << COUNTERS) + count * ONE_FLOAT


def from_parts(fixed_sum: int, floats: int, pos_inf: int = 0, neg_inf: int = 0) -> int:
    """The partial of ``floats`` float values, ``pos_inf`` of them ``+inf`` and ``neg_inf``
    ``-inf``, whose finite ones sum exactly to ``fixed_sum`` units of ``2**-1074`` (an
    engine's per-slice sum of a float column decomposed exactly into integers): the sum of
    their :func:`lift_float`."""
    finite = floats - pos_inf - neg_inf
    return (fixed_sum << COUNTERS) + finite * ONE_FLOAT + pos_inf * POS_INF + neg_inf * NEG_INF


# ----------------------------------------------------------------------- moments
# Variance partial: Q * 2**(_S_BITS + 128) + S * 2**128 + n_inf * 2**64 + n, with
# S = sum of x (units 2**-1074, signed) and Q = sum of x*x (units 2**-2148): linear in
# its fields, so adding partials adds each field. |S| < 2**64 * 2**1024 * 2**1074 <
# 2**2175, so S is the low 2176 bits of partial >> 128 read as a signed number.
_S_BITS = 2176
#: ints at or beyond this magnitude would overflow S's field (doubles never do)
MOMENT_INT_LIMIT = 1 << 1024
_S_MASK = (1 << _S_BITS) - 1
_S_SIGN = 1 << (_S_BITS - 1)
_MOMENT_COUNTERS = 2 * _COUNTER_BITS
_ONE_INF = ONE_VALUE | 1 << _COUNTER_BITS
_Q_AT = _S_BITS + _MOMENT_COUNTERS


def lift_moments(x: float | int) -> int:
    """The variance partial of one number (not NaN)."""
    if type(x) is int:
        s = x << FRACTION_BITS
        return ((x * x) << (2 * FRACTION_BITS + _Q_AT)) + (s << _MOMENT_COUNTERS) + ONE_VALUE
    if x - x != 0.0:
        return _ONE_INF
    n, d = x.as_integer_ratio()
    k = FRACTION_BITS + 1 - d.bit_length()
    return ((n * n) << (2 * k + _Q_AT)) + ((n << k) << _MOMENT_COUNTERS) + ONE_VALUE


def moments(partial: int) -> tuple[int, int, int, int]:
    """``(n, n_inf, S, Q)`` of a variance partial (see :func:`lift_moments`)."""
    rest = partial >> _MOMENT_COUNTERS
    s = rest & _S_MASK
    if s & _S_SIGN:
        s -= 1 << _S_BITS
    return (partial & _MASK, partial >> _COUNTER_BITS & _MASK, s, (rest - s) >> _S_BITS)


def variance_ratio(partial: int, ddof: int) -> tuple[int, int] | float | None:
    """The variance as an exact ratio ``(num, den)`` of ints, NaN if an infinity was added,
    ``None`` if ``n <= ddof``: ``(n*Q - S*S) / (n * (n - ddof))`` in real units."""
    n, n_inf, s, q = moments(partial)
    if n <= ddof:
        return None
    if n_inf:
        return math.nan
    return (n * q - s * s, (n * (n - ddof)) << 2 * FRACTION_BITS)


def sqrt_ratio(num: int, den: int) -> float:
    """``sqrt(num / den)`` correctly rounded (``num >= 0``, ``den > 0``).

    ``r = isqrt(num * 2**2150 // den)`` is ``floor(sqrt(num / den) * 2**1075)``; every
    rounding boundary of doubles (a midpoint of two neighbours) is a multiple of
    ``2**-1075``, so the true root and ``(2r + 1) / 2**1076`` (for an inexact root) lie
    strictly between the same two multiples and round alike."""
    scaled, remainder = divmod(num << 2150, den)
    r = math.isqrt(scaled)
    inexact = bool(remainder) or r * r != scaled
    return ratio_to_float(2 * r + inexact, 1 << 1076)


__all__ = [
    "COUNTERS", "FRACTION_BITS", "NEG_INF", "ONE_FLOAT", "ONE_VALUE", "POS_INF", "fields",
    "fixed", "from_parts", "from_sum", "lift_float", "lift_int", "lift_moments", "mean_value",
    "moments", "ratio_to_float", "sqrt_ratio", "sum_floats", "sum_value", "variance_ratio",
]
