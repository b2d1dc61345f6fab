"""Column kernels: the built-in aggregation functions folded over a run of raw field values with
C-level builtins instead of one ``lift`` and one ``combine`` call per event (``count`` of
events: the run's length).

The driver's time lanes fold the released events of each slice into one partial aggregate
(:mod:`adapters.driver.time_lane`). For ``max`` and ``min`` on a field, the lift returns the value
itself once it has accepted it, and the combine is ``max`` keeping the older of equal values,
``min`` likewise; so the partial of a run ``x_1 .. x_n`` (time order) is exactly ``max(xs)``
/ ``min(xs)`` (the builtins keep the first of equal items). ``sum`` and ``mean`` share one
exact partial (:mod:`swag_core.exact`: a fixed-point ``int`` plus counters), whose combine
is ``+`` on ints: exact, so any grouping of the run gives the same int. The kernel computes
it from a few :func:`math.fsum` passes (:func:`swag_core.exact.sum_floats`) instead of one
lift per value: the same int, bit for bit.

A kernel also has a batch check: a column of ``int`` / ``float`` values whose sum is finite
holds no NaN, so every lift accepts it. Columns that fail the check take the per-event lift,
which raises the exact error (the raw values are still what is stored).

Missing values (``nulls="skip"``, :func:`adapters.query.specs.skipping_missing`): the pending
buffer holds ``None`` for a missing value (a NaN is stored as ``None`` too), and the batch
check accepts ``None`` among the numbers. The fold is still the builtin's, because ``None``
meets a number only by raising ``TypeError`` (``max``, ``<``, ``+``), and a run of one
``None`` is seen at once; then, and only then, the run is folded by definition, as
``reduce(combine, map(lift, xs))`` with the output's own (skipping) lift and combine. So runs
without a missing value cost one list of the run more than before.

``count`` of a field with ``nulls="skip"`` has a kernel too: the run's length minus its
``None`` values (missing values, an absent field included); with ``nulls="error"`` a NaN
counts, which the buffer's ``None`` cannot tell apart, so that output has none.

A kernel is used only for an output created by :func:`adapters.query.specs.parse_aggregation` for
that function name, and (max, min, sum, mean) only if a probe at construction shows that the
``swag_core`` aggregation's lift and combine agree with it; ``count`` of events needs no
probe: it is the built-in :class:`~swag_core.aggregations.Count` class itself, whose lift
is 1 for every event and whose combine is ``+``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import reduce
from typing import Any, NamedTuple

from adapters.query.builtins import KERNEL, fns_taking
from adapters.query.specs import AggSpec, is_missing, plain_field
from swag_core import Aggregation
from swag_core.aggregations import Count, Max, Mean, Min, Sum
from swag_core.exact import ONE_VALUE, lift_int, sum_floats

_NUMBERS = frozenset({int, float})
_INTS = frozenset({int})


def _numbers_accepted(xs: list[Any], types: set[type] | frozenset[type]) -> bool:
    """True if every value is an int or a float and none is NaN (nor infinite)."""
    if types <= _INTS:
        return True
    if not types <= _NUMBERS:
        return False
    try:
        return math.isfinite(sum(xs))
    except OverflowError:
        return False


def _max(xs: Iterable[Any], n: int) -> Any:
    return max(xs)  # the first of equal items: the older one


def _min(xs: Iterable[Any], n: int) -> Any:
    return min(xs)


def _max_onto(acc: Any, xs: Iterable[Any], n: int) -> Any:
    return max(acc, max(xs))  # the older acc wins a tie


def _min_onto(acc: Any, xs: Iterable[Any], n: int) -> Any:
    return min(acc, min(xs))


def _exact(xs: Iterable[Any], n: int) -> int:
    """The exact partial of ``Sum`` / ``Mean`` of the accepted numbers ``xs``."""
    xs = xs if type(xs) is list else list(xs)
    if list(map(type, xs)).count(float) == n:
        return sum_floats(xs)
    ints = [x for x in xs if type(x) is int]
    floats = [x for x in xs if type(x) is not int]
    return sum_floats(floats) + lift_int(sum(ints)) + (len(ints) - 1) * ONE_VALUE


def _exact_onto(acc: int, xs: Iterable[Any], n: int) -> int:
    return acc + _exact(xs, n)


def _count(xs: Iterable[Any], n: int) -> int:
    return n  # lift is 1 for every event, combine is +


def _count_onto(acc: int, xs: Iterable[Any], n: int) -> int:
    return acc + n


def _accepts_anything(xs: list[Any], types: set[type] | frozenset[type]) -> list[Any] | None:
    return xs


def _numbers(xs: list[Any], types: set[type] | frozenset[type]) -> list[Any] | None:
    return xs if _numbers_accepted(xs, types) else None


_NONE = type(None)


def _numbers_or_missing(xs: list[Any], types: set[type] | frozenset[type]
                        ) -> list[Any] | None:
    """``nulls="skip"``: the column with every missing value (``None``, NaN) as ``None``, if
    the other values are ints and floats (infinities are values); else ``None``."""
    if _numbers_accepted(xs, types):
        return xs
    present = types - {_NONE}
    if not present <= _NUMBERS:
        return None
    return [None if x is None or x != x else x for x in xs]


Fold = Callable[[Iterable[Any], int], Any]
FoldOnto = Callable[[Any, Iterable[Any], int], Any]


class Kernel(NamedTuple):
    """How to fold raw values of one output (see the module docstring)."""

    #: ``fold(xs, n)``: the partial of the ``n >= 1`` raw values ``xs`` (an iterable, all
    #: accepted, time order)
    fold: Fold
    #: ``fold_onto(acc, xs, n)``: ``combine(acc, fold(xs, n))`` as the same left fold, i.e.
    #: ``fold(ys + xs)`` when ``acc == fold(ys)``, bit for bit
    fold_onto: FoldOnto
    #: batch check, given the column and its set of types: the column the pending buffer
    #: holds (missing values as ``None``), or ``None`` if the per-event path must decide
    accepts: Callable[[list[Any], set[type] | frozenset[type]], list[Any] | None]
    #: the event field read, or ``None`` (``count`` of events: reads nothing; the pending
    #: buffer then holds ``None`` for it)
    field: str | None
    #: an event without the field is a missing value (``count`` of a field), not bad input
    optional: bool = False


_KERNELS: dict[str, tuple[type, Fold, FoldOnto]] = {
    "max": (Max, _max, _max_onto),
    "min": (Min, _min, _min_onto),
    "sum": (Sum, _exact, _exact_onto),
    "mean": (Mean, _exact, _exact_onto),
}

#: Distinct objects for equal values, so that the tie rule (the older one wins) shows.
_PROBE = [float("3"), -1.5, float("3"), 7, 0.25, float("7"), 0.0, -0.0, 2**70, 1e-300, 0.1,
          1e16, -1e16, 5e-324]


def kernel_for(spec: AggSpec) -> Kernel | None:
    """The kernel of an output, or ``None`` if it has none (or the probe disagrees)."""
    if spec.fn not in fns_taking(KERNEL):
        return None
    if spec.fn == "count" and spec.extract is None and type(spec.aggregation) is Count:
        return Kernel(_count, _count_onto, _accepts_anything, None)
    if spec.fn == "count":
        return _count_field_kernel(spec)
    entry = _KERNELS.get(spec.fn or "")
    name = plain_field(spec.extract)
    builtin = spec.base if spec.skips_missing else spec.aggregation
    if entry is None or name is None or type(builtin) is not entry[0]:
        return None
    cls, fold, fold_onto = entry
    agg = spec.aggregation
    try:
        lift, combine = agg.lift_fn, agg.combine
        for cut in range(1, len(_PROBE) + 1):
            xs = _PROBE[:cut]
            want = reduce(combine, map(lift, xs))
            got = [fold(iter(xs), cut)] + [
                fold_onto(fold(iter(xs[:i]), i), iter(xs[i:]), cut - i) for i in range(1, cut)]
            for g in got:
                if (g is not want) if cls in (Max, Min) else (repr(g) != repr(want)):
                    return None
    except Exception:
        return None
    if spec.skips_missing:
        return _skipping_kernel(fold, fold_onto, agg, name)
    return Kernel(fold, fold_onto, _numbers, name)


def _count_present(xs: Iterable[Any], n: int) -> int:
    """``count`` of a field: the values that are not missing (``None`` in the buffer)."""
    xs = xs if type(xs) is list else list(xs)
    return n - xs.count(None)


def _count_present_onto(acc: int, xs: Iterable[Any], n: int) -> int:
    return acc + _count_present(xs, n)


_PRESENT_TYPES = frozenset({int, float, str})


def _present_or_none(xs: list[Any], types: set[type] | frozenset[type]) -> list[Any] | None:
    """``count`` of a field: the column with every missing value (``None``, NaN) as
    ``None``; any other value counts."""
    if types <= _PRESENT_TYPES and (float not in types or all(x == x for x in xs)):
        return xs  # (a NaN is the only missing value among ints, floats and strings)
    return [None if is_missing(x) else x for x in xs]


#: raw values of a field, as the pending buffer holds them (``None``: missing)
_COUNT_PROBE: list[Any] = [1.5, None, 3, "a", 0.0, -0.0, math.inf, None, (), {}]


def _count_field_kernel(spec: AggSpec) -> Kernel | None:
    """``count`` of a plain field with ``nulls="skip"``: counts the values that are not
    missing (``None``, NaN), whatever their type, and an event without the field counts as
    missing, as :func:`~adapters.query.specs.is_missing` and the optional field getter of
    the output decide. The buffer's ``None`` is exactly "missing" (it maps NaN to ``None``)
    only when missing means :func:`is_missing`, so ``nulls="error"`` (which counts a NaN)
    has no kernel. Checked on a probe against the output's own lift and combine."""
    name = spec.field
    if not spec.skips_missing or name is None or spec.extract is None:
        return None
    agg = spec.aggregation
    try:
        if spec.extract({}) is not None or spec.extract({name: 2.5}) != 2.5:
            return None  # not the optional getter of the field
        lift, combine = agg.lift_fn, agg.combine
        for cut in range(1, len(_COUNT_PROBE) + 1):
            xs = _COUNT_PROBE[:cut]
            want = reduce(combine, map(lift, xs))
            got = _count_present(xs, cut)
            if type(want) is not int or want != got or _count_present_onto(
                    _count_present(xs[:1], 1), xs[1:], cut - 1) != want:
                return None
    except Exception:
        return None
    return Kernel(_count_present, _count_present_onto, _present_or_none, name, True)


def _skipping_kernel(fold: Fold, fold_onto: FoldOnto, agg: Aggregation, name: str) -> Kernel:
    """The kernel of a skipping output (see the module docstring): the builtin fold, or the
    fold by definition for a run holding ``None``."""
    lift, combine = agg.lift_fn, agg.combine

    def fold_skipping(xs: Iterable[Any], n: int) -> Any:
        run = list(xs)
        if run[0] is not None:  # a longer run with a None raises TypeError
            try:
                return fold(run, n)
            except TypeError:
                pass
        return reduce(combine, map(lift, run))

    def fold_onto_skipping(acc: Any, xs: Iterable[Any], n: int) -> Any:
        run = list(xs)
        try:
            return fold_onto(acc, run, n)  # None in acc or run raises TypeError
        except TypeError:
            return reduce(combine, map(lift, run), acc)

    return Kernel(fold_skipping, fold_onto_skipping, _numbers_or_missing, name)


__all__ = ["Kernel", "kernel_for"]
