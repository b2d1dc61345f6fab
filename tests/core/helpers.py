"""Shared test tools: non-commutative aggregations, a combine counter, a brute-force window
model and tolerant result comparison."""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Iterable
from typing import Any

from swag_core import Aggregation, EmptyWindowError

PRIME = 10007


def int_sum() -> Aggregation:
    """A plain ``+`` monoid whose aggregates are the sums themselves (the built-in ``Sum``
    keeps an exact fixed-point partial): for tests that inspect a structure's aggregates."""
    return Aggregation(combine=operator.add, identity=0, subtract=operator.sub,
                       commutative=True, name="sum")


def concat() -> Aggregation:
    """String concatenation: associative, not commutative, not invertible."""
    return Aggregation(combine=lambda a, b: a + b, identity="",
                       lift=lambda x: f"{x};", name="concat")


def _matmul(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, ...]:
    return ((a[0] * b[0] + a[1] * b[2]) % PRIME, (a[0] * b[1] + a[1] * b[3]) % PRIME,
            (a[2] * b[0] + a[3] * b[2]) % PRIME, (a[2] * b[1] + a[3] * b[3]) % PRIME)


def _matrix_of(x: int) -> tuple[int, int, int, int]:
    # ((1, x), (0, 1)) @ ((1, 0), (x % 5, 1)): determinant 1, and such products do not commute.
    c = x % 5
    return ((1 + x * c) % PRIME, x % PRIME, c, 1)


def matmul() -> Aggregation:
    """2x2 integer matrix product mod a prime: associative, not commutative."""
    return Aggregation(combine=_matmul, identity=(1, 0, 0, 1), lift=_matrix_of, name="matmul")


def _inverse(m: tuple[int, ...]) -> tuple[int, int, int, int]:
    # Inverse of a determinant-1 matrix ((a, b), (c, d)) is ((d, -b), (-c, a)).
    return (m[3] % PRIME, -m[1] % PRIME, -m[2] % PRIME, m[0] % PRIME)


def matgroup() -> Aggregation:
    """Matrix product on determinant-1 matrices with ``subtract``: a non-commutative group,
    so subtract-on-evict must remove the oldest part from the *front*."""
    return Aggregation(combine=_matmul, identity=(1, 0, 0, 1), lift=_matrix_of,
                       subtract=lambda total, oldest: _matmul(_inverse(oldest), total),
                       name="matgroup")


class Counter:
    """Counts calls of a wrapped combine."""

    def __init__(self) -> None:
        self.calls = 0

    def reset(self) -> int:
        calls, self.calls = self.calls, 0
        return calls


def counting(agg: Aggregation) -> tuple[Aggregation, Counter]:
    """``agg`` with a combine that counts its calls (``subtract`` is not counted)."""
    counter = Counter()
    inner = agg.combine

    def combine(a: Any, b: Any) -> Any:
        counter.calls += 1
        return inner(a, b)

    wrapped = Aggregation(combine=combine, identity=agg.identity, lift=agg.lift,
                          lower=agg.lower, subtract=agg.subtract, commutative=agg.commutative,
                          selective=agg.selective, name=agg.name)
    return wrapped, counter


class Model:
    """Brute-force reference window: a time-sorted list folded on every query.

    Equal times keep insertion order; with ``coalesce=True`` (FiBA's rule) an insert at a time
    already present combines into that entry as ``existing (+) new``.
    """

    def __init__(self, agg: Aggregation, coalesce: bool = False) -> None:
        self.agg = agg
        self.coalesce = coalesce
        self.times: list[int] = []
        self.values: list[Any] = []

    def _insert_lifted(self, time: int, value: Any) -> None:
        i = bisect.bisect_right(self.times, time)
        if self.coalesce and i and self.times[i - 1] == time:
            self.values[i - 1] = self.agg.combine(self.values[i - 1], value)
        else:
            self.times.insert(i, time)
            self.values.insert(i, value)

    def insert(self, time: int, value: Any) -> None:
        self._insert_lifted(time, self.agg.lift_fn(value))

    def bulk_insert(self, pairs: Iterable[tuple[int, Any]]) -> None:
        lifted = [(t, self.agg.lift_fn(v)) for t, v in pairs]
        lifted.sort(key=lambda p: p[0])
        for t, v in lifted:
            self._insert_lifted(t, v)

    def evict(self) -> None:
        if not self.times:
            raise EmptyWindowError("empty")
        del self.times[0], self.values[0]

    def bulk_evict(self, time: int) -> int:
        k = bisect.bisect_right(self.times, time)
        del self.times[:k], self.values[:k]
        return k

    def _fold(self, values: Iterable[Any]) -> Any:
        acc = self.agg.identity
        for v in values:
            acc = self.agg.combine(acc, v)
        return self.agg.lower_fn(acc)

    def query(self) -> Any:
        return self._fold(self.values)

    def query_since(self, time: int) -> Any:
        return self._fold(self.values[bisect.bisect_left(self.times, time):])

    def __len__(self) -> int:
        return len(self.times)

    def oldest(self) -> int:
        return self.times[0]

    def youngest(self) -> int:
        return self.times[-1]


def identical(a: Any, b: Any) -> bool:
    """Equality with floats bit for bit (``-0.0`` is not ``0.0``, NaN is NaN), recursively
    through tuples, lists and dicts."""
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and repr(a) == repr(b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    return bool(a == b)


def same(a: Any, b: Any, rel: float = 1e-9, abs_tol: float = 1e-9) -> bool:
    """Equality that tolerates float rounding, recursively through tuples, lists and dicts."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y, rel, abs_tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel, abs_tol) for k in a)
    return bool(a == b)
