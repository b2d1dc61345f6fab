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
Sum                yes         yes         no         the number
Mean               yes         yes         no         (sum, count)
Min, Max           yes         no          yes        the value (None = empty)
ArgMin, ArgMax     no (ties)   no          yes        (key, value) (None = empty)
MinCount/MaxCount  yes         no          no         (value, count) (None = empty)
Variance, StdDev   yes         no          no         (count, mean, M2), Chan et al. merge
GeometricMean      yes         yes         no         (sum of logs, count)
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


def _checked_number(name: str) -> Callable[[Any], Any]:
    """A lift that refuses None, NaN and non-numbers with an error naming the aggregation."""

    def lift(x: Any) -> Any:
        if isinstance(x, float):
            if x != x:
                raise InvalidValueError(f"{name} cannot aggregate NaN")
            return x
        if isinstance(x, int):
            return x
        if x is None:
            raise InvalidValueError(f"{name} cannot aggregate None (a null value)")
        try:
            value = float(x)  # Decimal, numpy scalars, ...
        except (TypeError, ValueError):
            raise InvalidValueError(
                f"{name} needs numbers, got {x!r} ({type(x).__name__})") from None
        if value != value:
            raise InvalidValueError(f"{name} cannot aggregate NaN")
        return x
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


def _pair_add(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    return (a[0] + b[0], a[1] + b[1])


def _pair_sub(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    return (a[0] - b[0], a[1] - b[1])


# --------------------------------------------------------------------------- counting, sums
class Count(Aggregation):
    """Number of values (any value, ``None`` included)."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=0, lift=lambda _x: 1,
                         subtract=operator.sub, commutative=True, name="count")


class Sum(Aggregation):
    """Sum of numbers; ``0`` for an empty window."""

    def __init__(self) -> None:
        super().__init__(combine=operator.add, identity=0, lift=_checked_number("sum"),
                         subtract=operator.sub, commutative=True, name="sum")


def _mean_lower(a: tuple[Any, int]) -> float | None:
    return a[0] / a[1] if a[1] else None


class Mean(Aggregation):
    """Arithmetic mean; ``None`` for an empty window."""

    def __init__(self) -> None:
        check = _checked_number("mean")
        super().__init__(combine=_pair_add, identity=(0, 0), lift=lambda x: (check(x), 1),
                         lower=_mean_lower, subtract=_pair_sub, commutative=True, name="mean")


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


def _max_count(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0]:
        return (a[0], a[1] + b[1])
    return b if b[0] > a[0] else a


def _min_count(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0]:
        return (a[0], a[1] + b[1])
    return b if b[0] < a[0] else a


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
def _moments_combine(a: tuple[int, float, float],
                     b: tuple[int, float, float]) -> tuple[int, float, float]:
    # Pairwise merge of (count, mean, M2): Chan, Golub & LeVeque (1979). Stable, unlike a
    # running sum of squares, because it never subtracts two large nearly-equal numbers.
    na = a[0]
    if na == 0:
        return b
    nb = b[0]
    if nb == 0:
        return a
    n = na + nb
    delta = b[1] - a[1]
    return (n, a[1] + delta * nb / n, a[2] + b[2] + delta * delta * na * nb / n)


class Variance(Aggregation):
    """Variance with ``ddof`` (1: sample, default; 0: population); ``None`` if count <= ddof.

    Not declared invertible: removing a part from (count, mean, M2) is exact in real
    arithmetic but loses precision in floating point, so ``soe`` is not offered.
    """

    def __init__(self, ddof: int = 1) -> None:
        if ddof not in (0, 1):
            raise ValueError(f"Variance ddof must be 0 (population) or 1 (sample), got {ddof!r}")
        check = _checked_number("variance")
        self.ddof = ddof

        def lower(a: tuple[int, float, float]) -> float | None:
            return a[2] / (a[0] - ddof) if a[0] > ddof else None

        super().__init__(combine=_moments_combine, identity=(0, 0.0, 0.0),
                         lift=lambda x: (1, float(check(x)), 0.0), lower=lower,
                         commutative=True, name="variance")


class StdDev(Aggregation):
    """Standard deviation with ``ddof`` (1: sample, default; 0: population)."""

    def __init__(self, ddof: int = 1) -> None:
        variance = Variance(ddof)
        lower_variance = variance.lower_fn

        def lower(a: tuple[int, float, float]) -> float | None:
            v = lower_variance(a)
            return None if v is None else math.sqrt(v)

        super().__init__(combine=_moments_combine, identity=variance.identity,
                         lift=variance.lift, lower=lower, commutative=True, name="stddev")


class GeometricMean(Aggregation):
    """Geometric mean of positive numbers (via the mean of logs); ``None`` when empty."""

    def __init__(self) -> None:
        check = _checked_number("geomean")

        def lift(x: Any) -> tuple[float, int]:
            x = check(x)
            if x <= 0:
                raise InvalidValueError(f"geomean needs positive numbers, got {x!r}")
            return (math.log(x), 1)

        super().__init__(combine=_pair_add, identity=(0.0, 0), lift=lift,
                         lower=lambda a: math.exp(a[0] / a[1]) if a[1] else None,
                         subtract=_pair_sub, commutative=True, name="geomean")


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
