"""Built-in aggregations: each a :class:`~swag_core.Aggregation` with truthful properties.

Every built-in is a true monoid (tested for the identity and associativity laws) and returns
``None`` for an empty window where no value makes sense (``Max`` of nothing, ``Mean`` of
nothing). Values an aggregation cannot take (``None``; NaN for order- or sum-based ones; a
non-positive number for ``GeometricMean``) raise :class:`~swag_core.errors.InvalidValueError`
from ``lift``, i.e. before a structure changes.

=================  ==========  ==========  =========  ======================================
aggregation        commutative invertible  selective  aggregate (lifted value)
=================  ==========  ==========  =========  ======================================
Count              yes         yes         no         int
Sum                yes         yes         no         exact fixed-point int (swag_core.exact)
Mean               yes         yes         no         the same int as Sum (it holds the count)
Min, Max           yes         no          yes        the value (None = empty)
ArgMin, ArgMax     no (ties)   no          yes        (key, value) (None = empty)
MinCount/MaxCount  yes         no          no         (value, count) (None = empty)
Variance, StdDev   yes         yes         no         int: count, exact sum and sum of squares
GeometricMean      yes         yes         no         Mean's int over the logs
First, Last        no          no          yes        (value,) (None = empty)
Collect            no          no          no         tuple of values
BloomFilter        yes         no          no         int bit mask
=================  ==========  ==========  =========  ======================================
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections.abc import Callable
from typing import Any

from swag_core.aggregation import Aggregation
from swag_core.errors import InvalidValueError
from swag_core.exact import (
    MOMENT_INT_LIMIT,
    lift_float,
    lift_int,
    lift_moments,
    mean_value,
    ratio_to_float,
    sqrt_ratio,
    sum_value,
    variance_ratio,
)

__all__ = [
    "ArgMax",
    "ArgMin",
    "BloomFilter",
    "BloomFilterValue",
    "Collect",
    "Count",
    "First",
    "GeometricMean",
    "Last",
    "Max",
    "MaxCount",
    "Mean",
    "Min",
    "MinCount",
    "StdDev",
    "Sum",
    "Variance",
]


def _number(name: str, x: Any) -> int | float:
    """``x`` as an ``int`` or a ``float`` (not NaN), or an error naming the aggregation.

    ``bool`` and integer types (``numpy.int64``: ``__index__``) become ``int``, float
    subclasses and other numbers (``Decimal``, ``Fraction``, ...) the nearest ``float``."""
    if isinstance(x, float):
        x = float(x)
    elif isinstance(x, int):
        return int(x)
    elif x is None:
        raise InvalidValueError(f"{name} cannot aggregate None (a null value)")
    else:
        try:
            return operator.index(x)
        except TypeError:
            pass
        try:
            x = float(x)
        except (TypeError, ValueError):
            raise InvalidValueError(
                f"{name} needs numbers, got {x!r} ({type(x).__name__})") from None
    if x != x:
        raise InvalidValueError(f"{name} cannot aggregate NaN")
    return x


def _exact_lift(name: str) -> Callable[[Any], int]:
    """A lift to the exact partial of :mod:`swag_core.exact` that refuses None, NaN and
    non-numbers with an error naming the aggregation."""

    def lift(x: Any) -> int:
        if type(x) is float:
            if x != x:
                raise InvalidValueError(f"{name} cannot aggregate NaN")
            return lift_float(x)
        if type(x) is int:
            return lift_int(x)
        x = _number(name, x)
        return lift_int(x) if type(x) is int else lift_float(x)
    return lift


def _checked_comparable(name: str) -> Callable[[Any], Any]:
    """A lift for order-based aggregations: refuses None and NaN (they break ``<``)."""

    def lift(x: Any) -> Any:
        if x is None:
            raise InvalidValueError(f"{name} cannot aggregate None (a null value)")
        if x != x:  # NaN, the only value unequal to itself
            raise InvalidValueError(f"{name} cannot aggregate NaN")
        return x
    return lift


# --------------------------------------------------------------------------- counting, sums
class Count(Aggregation):
    """Number of values (any value, ``None`` included)."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=0, lift=lambda _x: 1,
                         subtract=operator.sub, commutative=True, name="count")


class Sum(Aggregation):
    """Sum of numbers: an ``int`` if every value is one (``0`` for an empty window), else
    the exactly rounded sum as a ``float``, the same whatever the order, batching or slicing
    (the partial is exact: :mod:`swag_core.exact`); ``+inf`` / ``-inf`` if such a value is
    in the window (both: NaN); ``+-inf`` where the exact sum is beyond the double range."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=0, lift=_exact_lift("sum"),
                         lower=sum_value, subtract=operator.sub, commutative=True, name="sum")


class Mean(Aggregation):
    """Arithmetic mean, exactly rounded (one rounding of the exact sum divided by the
    count); ``None`` for an empty window. Same partial as :class:`Sum`."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=0, lift=_exact_lift("mean"),
                         lower=mean_value, subtract=operator.sub, commutative=True,
                         name="mean")


# --------------------------------------------------------------------------- order-based
def _max(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b > a else a  # ties keep the older operand


def _min(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b < a else a


class Max(Aggregation):
    """Largest value; ``None`` for an empty window."""

    def __init__(self) -> None:
        super().__init__(combine=_max, identity=None, lift=_checked_comparable("max"),
                         commutative=True, selective=True, name="max")


class Min(Aggregation):
    """Smallest value; ``None`` for an empty window."""

    def __init__(self) -> None:
        super().__init__(combine=_min, identity=None, lift=_checked_comparable("min"),
                         commutative=True, selective=True, name="min")


def _arg_lift(name: str, key: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    check = _checked_comparable(f"{name} key")
    if key is None:
        return lambda x: (check(x), x)
    return lambda x: (check(key(x)), x)


def _arg_max(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b[0] > a[0] else a  # ties go to the oldest


def _arg_min(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return b if b[0] < a[0] else a


def _arg_lower(a: Any) -> Any:
    return None if a is None else a[1]


class ArgMax(Aggregation):
    """The value whose ``key(value)`` is largest (ties: the oldest); ``None`` when empty.

    ``ArgMax(key=lambda flight: flight["dep_delay"])`` returns the flight with the largest
    delay. Without ``key`` the value itself is compared.
    """

    def __init__(self, key: Callable[[Any], Any] | None = None) -> None:
        super().__init__(combine=_arg_max, identity=None, lift=_arg_lift("argmax", key),
                         lower=_arg_lower, selective=True, name="argmax")


class ArgMin(Aggregation):
    """The value whose ``key(value)`` is smallest (ties: the oldest); ``None`` when empty."""

    def __init__(self, key: Callable[[Any], Any] | None = None) -> None:
        super().__init__(combine=_arg_min, identity=None, lift=_arg_lift("argmin", key),
                         lower=_arg_lower, selective=True, name="argmin")


def _extreme_count(largest: bool) -> Callable[[Any, Any], Any]:
    """The combine of ``(value, count)`` pairs: the pair of the largest (else the smallest)
    value, with the counts of equal values added; ``None`` is the empty window. The
    comparison is written out rather than passed in as a function because combine runs on
    every structure update, where an extra call per comparison shows."""

    def combine(a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        x = a[0]
        y = b[0]
        if x == y:
            return (x, a[1] + b[1])
        if largest:
            return b if y > x else a
        return b if y < x else a
    return combine


_max_count = _extreme_count(largest=True)
_min_count = _extreme_count(largest=False)


class MaxCount(Aggregation):
    """``(largest value, how many times it occurs)``; ``None`` when empty."""

    def __init__(self) -> None:
        check = _checked_comparable("maxcount")
        super().__init__(combine=_max_count, identity=None, lift=lambda x: (check(x), 1),
                         commutative=True, name="maxcount")


class MinCount(Aggregation):
    """``(smallest value, how many times it occurs)``; ``None`` when empty."""

    def __init__(self) -> None:
        check = _checked_comparable("mincount")
        super().__init__(combine=_min_count, identity=None, lift=lambda x: (check(x), 1),
                         commutative=True, name="mincount")


# --------------------------------------------------------------------------- moments
def _moments_lift(name: str) -> Callable[[Any], int]:
    def lift(x: Any) -> int:
        if type(x) is not float or x != x:
            x = _number(name, x)
            if type(x) is int and not -MOMENT_INT_LIMIT < x < MOMENT_INT_LIMIT:
                raise InvalidValueError(f"{name} takes ints of magnitude below 2**1024 (the "
                                        f"double range), got one of {x.bit_length()} bits")
        return lift_moments(x)
    return lift


class Variance(Aggregation):
    """Variance with ``ddof`` (1: sample, default; 0: population); ``None`` if count <= ddof.

    The partial holds the count, the exact sum and the exact sum of squares
    (:func:`swag_core.exact.lift_moments`), so ``(n * sum(x*x) - sum(x)**2) / (n * (n -
    ddof))`` is computed exactly and rounded once: the exactly rounded variance, the same
    whatever the order, batching or slicing; NaN if an infinity is in the window. Exact
    subtraction makes it invertible.
    """

    def __init__(self, ddof: int = 1) -> None:
        self.ddof = ddof
        _init_moments(self, "variance", ddof, ratio_to_float)


class StdDev(Aggregation):
    """Standard deviation with ``ddof`` (1: sample, default; 0: population): the correctly
    rounded square root of the exact variance (one rounding, no rounded variance in
    between)."""

    def __init__(self, ddof: int = 1) -> None:
        self.ddof = ddof
        _init_moments(self, "stddev", ddof, sqrt_ratio)


def _init_moments(agg: Aggregation, name: str, ddof: int,
                  finish: Callable[[int, int], float]) -> None:
    """Set up ``Variance`` / ``StdDev`` (``finish`` turns the exact variance ``num / den``
    into the result: rounding it, or its correctly rounded square root)."""
    if ddof not in (0, 1):
        raise ValueError(f"{type(agg).__name__} ddof must be 0 (population) or 1 (sample), "
                         f"got {ddof!r}")

    def lower(a: int) -> float | None:
        ratio = variance_ratio(a, ddof)
        return finish(*ratio) if isinstance(ratio, tuple) else ratio

    Aggregation.__init__(agg, combine=operator.add, identity=0, lift=_moments_lift(name),
                         lower=lower, subtract=operator.sub, commutative=True, name=name)


def _geomean_lower(a: int) -> float | None:
    mean_log = mean_value(a)
    if mean_log is None:
        return None
    try:
        return math.exp(mean_log)
    except OverflowError:  # the mean of logs rounded up past log(max float)
        return math.inf


class GeometricMean(Aggregation):
    """Geometric mean of positive numbers: ``exp`` of the exactly rounded mean of the logs
    (the logs' sum is exact, so order and batching do not change it); ``None`` when
    empty."""

    def __init__(self) -> None:
        def lift(x: Any) -> int:
            x = _number("geomean", x)
            if x <= 0:
                raise InvalidValueError(f"geomean needs positive numbers, got {x!r}")
            return lift_float(math.log(x))

        super().__init__(combine=operator.add, identity=0, lift=lift, lower=_geomean_lower,
                         subtract=operator.sub, commutative=True, name="geomean")


# --------------------------------------------------------------------------- positional
def _first(a: Any, b: Any) -> Any:
    return b if a is None else a


def _last(a: Any, b: Any) -> Any:
    return a if b is None else b


def _unwrap(a: Any) -> Any:
    return None if a is None else a[0]


def _wrap(x: Any) -> tuple[Any]:
    return (x,)  # so that a None value is not mistaken for the empty aggregate


class First(Aggregation):
    """The oldest value in the window (``None`` when empty)."""

    def __init__(self) -> None:
        super().__init__(combine=_first, identity=None, lift=_wrap, lower=_unwrap,
                         selective=True, name="first")


class Last(Aggregation):
    """The youngest value in the window (``None`` when empty)."""

    def __init__(self) -> None:
        super().__init__(combine=_last, identity=None, lift=_wrap, lower=_unwrap,
                         selective=True, name="last")


class Collect(Aggregation):
    """Every value, oldest first, as a list. Inherently O(n) per combine."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=(), lift=_wrap, lower=list,
                         name="collect")


# --------------------------------------------------------------------------- sketches
def _canonical_bytes(x: Any) -> bytes:
    """A byte string for ``x`` that is equal for equal values on every process and machine.

    Python's ``hash`` is salted per process, so it cannot be used. Numbers that compare
    equal (``1``, ``1.0``, ``True``) encode alike.
    """
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if isinstance(x, int):
        return b"i" + str(x).encode()
    if isinstance(x, float):
        return b"f" + repr(x).encode()
    if isinstance(x, str):
        return b"s" + x.encode("utf-8")
    if isinstance(x, (bytes, bytearray)):
        return b"b" + bytes(x)
    if x is None:
        return b"n"
    if isinstance(x, (tuple, list)):
        parts = [_canonical_bytes(item) for item in x]
        return b"t" + b"".join(len(p).to_bytes(4, "big") + p for p in parts)
    raise InvalidValueError(
        f"bloom filter items must be int, float, str, bytes, None or tuples of them, "
        f"got {type(x).__name__}")


def _bloom_mask(x: Any, bits: int, hashes: int) -> int:
    # Kirsch & Mitzenmacher double hashing: position_i = h1 + i * h2 (mod bits).
    digest = hashlib.blake2b(_canonical_bytes(x), digest_size=16).digest()
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    mask = 0
    for i in range(hashes):
        mask |= 1 << ((h1 + i * h2) % bits)
    return mask


class BloomFilterValue:
    """The lowered result of :class:`BloomFilter`: a membership summary of a window."""

    __slots__ = ("bits", "hashes", "mask")

    def __init__(self, bits: int, hashes: int, mask: int) -> None:
        self.bits = bits
        self.hashes = hashes
        self.mask = mask

    def might_contain(self, item: Any) -> bool:
        """False: ``item`` is certainly not in the window. True: it probably is."""
        probe = _bloom_mask(item, self.bits, self.hashes)
        return self.mask & probe == probe

    __contains__ = might_contain

    def bit_count(self) -> int:
        """Number of bits set."""
        return self.mask.bit_count()

    def estimated_count(self) -> float:
        """Estimated number of distinct items (Swamidass & Baldi 2007)."""
        set_bits = self.bit_count()
        if set_bits >= self.bits:
            return math.inf
        return -self.bits / self.hashes * math.log(1 - set_bits / self.bits)

    def to_bytes(self) -> bytes:
        """The bit array, little-endian, ``ceil(bits / 8)`` bytes."""
        return self.mask.to_bytes((self.bits + 7) // 8, "little")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, BloomFilterValue) and self.bits == other.bits
                and self.hashes == other.hashes and self.mask == other.mask)

    def __hash__(self) -> int:
        return hash((self.bits, self.hashes, self.mask))

    def __repr__(self) -> str:
        return (f"BloomFilterValue(bits={self.bits}, hashes={self.hashes}, "
                f"set={self.bit_count()})")


class BloomFilter(Aggregation):
    """A Bloom filter of the window's values: ``value in result`` answers "maybe / surely not".

    Args:
        bits: filter size in bits (default 16384 = 2^14, as in the DABA experiments).
        hashes: number of hash positions per item (default 4).

    Hashing is blake2b over a canonical encoding, so filters agree across processes and
    machines and can be compared or merged anywhere.
    """

    def __init__(self, bits: int = 16384, hashes: int = 4) -> None:
        if not isinstance(bits, int) or bits < 1:
            raise ValueError(f"BloomFilter bits must be a positive integer, got {bits!r}")
        if not isinstance(hashes, int) or hashes < 1:
            raise ValueError(f"BloomFilter hashes must be a positive integer, got {hashes!r}")
        self.bits = bits
        self.hashes = hashes
        super().__init__(combine=operator.or_, identity=0,
                         lift=lambda x: _bloom_mask(x, bits, hashes),
                         lower=lambda mask: BloomFilterValue(bits, hashes, mask),
                         commutative=True, name="bloom")
