"""Missing values (``None``, NaN) in built-in aggregations: the null modes of a query, what
counts as missing, and the aggregation that skips them (SQL's rule for aggregate functions).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from typing import Any

from adapters.errors import QuerySpecError
from swag_core import Aggregation
from swag_core.aggregations import Sum
from swag_core.errors import InvalidValueError
from swag_core.exact import sum_value, value_count

#: How built-in aggregations treat missing values (``None``, NaN): ``"skip"`` ignores them
#: (SQL and pandas); ``"error"`` refuses them with :class:`~adapters.errors.BadEventError`.
NULL_MODES = ("skip", "error")


def check_nulls(value: Any, path: str = "nulls") -> str:
    """``value`` if it is a null mode (:data:`NULL_MODES`), else :class:`QuerySpecError`."""
    if value not in NULL_MODES:
        raise QuerySpecError(path, f"must be one of {', '.join(map(repr, NULL_MODES))} "
                                   f"(how built-in aggregations treat null and NaN values), "
                                   f"got {value!r}")
    return str(value)


def is_missing(x: Any) -> bool:
    """True for a missing value: ``None``, or a NaN number (``float``, NumPy or ``Decimal``
    NaN). Any other value, containers included, is present."""
    if x is None:
        return True
    if type(x) is float:
        return x != x
    if isinstance(x, (int, str)):
        return False
    if isinstance(x, numbers.Number):
        try:
            return bool(x != x)
        except (TypeError, ValueError, ArithmeticError):  # Decimal('sNaN') != x signals
            is_nan = getattr(x, "is_nan", None)
            return bool(is_nan()) if callable(is_nan) else False
    return False


def count_present(skip: bool) -> Aggregation:
    """``count`` of a field: the values that are present (``skip``: not :func:`is_missing`;
    else not ``None``, SQL's ``COUNT(col)``)."""
    missing: Callable[[Any], bool] = is_missing if skip else (lambda x: x is None)
    return Aggregation(combine=operator.add, identity=0,
                       lift=lambda x: 0 if missing(x) else 1, subtract=operator.sub,
                       commutative=True, name="count")


def skipping_missing(agg: Aggregation, key: Callable[[Any], Any] | None = None
                     ) -> Aggregation:
    """``agg`` that ignores missing values (:func:`is_missing` of the raw value, or of
    ``key(raw value)``): SQL's rule for aggregate functions. A window whose values are all
    missing gives ``None``.

    A missing value lifts to a neutral element, so only the lift changes: when ``agg``
    lowers its identity to ``None`` (max, mean, variance, first, ...: "nothing seen") the
    neutral element is that identity, and ``combine``, ``subtract`` and ``lower`` are
    ``agg``'s own; a sum's partial counts its values, so it lowers to ``None`` at a count of
    0 and keeps the rest. Otherwise (collect, bloom) the lifted values gain ``None`` as a new
    identity, "no value seen", which ``combine`` passes over and ``lower`` keeps; ``agg``'s
    lifted values are never ``None`` there, so nothing is mistaken for it. That monoid has
    no inverse (evicting the last present value cannot tell an empty collection from
    "none"), so it drops ``subtract``."""
    empty_is_none = agg.lower_fn(agg.identity) is None
    # Sum's exact partial counts its values (swag_core.exact): "no value" is a count of 0,
    # so a missing value lifts to the identity and the sum keeps its combine and inverse.
    counts_values = isinstance(agg, Sum)
    neutral = agg.identity if empty_is_none or counts_values else None
    lift = _skipping_lift(agg.lift_fn, key, neutral)
    if empty_is_none:
        return Aggregation(combine=agg.combine, identity=agg.identity, lift=lift,
                           lower=agg.lower, subtract=agg.subtract,
                           commutative=agg.commutative, selective=agg.selective,
                           name=agg.name)
    if counts_values:
        return Aggregation(combine=agg.combine, identity=agg.identity, lift=lift,
                           lower=_sum_of_values, subtract=agg.subtract,
                           commutative=agg.commutative, name=agg.name)
    return _with_none_identity(agg, lift)


def _skipping_lift(inner_lift: Callable[[Any], Any], key: Callable[[Any], Any] | None,
                   neutral: Any) -> Callable[[Any], Any]:
    """``inner_lift``, with a missing value (or compared part ``key(value)``) lifted to
    ``neutral``."""
    of = key if key is not None else (lambda x: x)
    if _refuses_missing(inner_lift, key):
        # The common case costs one call more: the built-in's own checks find the rare
        # missing value, which this lift then takes back.
        def lift(x: Any) -> Any:
            try:
                return inner_lift(x)
            except InvalidValueError:
                if is_missing(of(x)):
                    return neutral
                raise
        return lift
    if key is not None:
        def keyed_lift(x: Any) -> Any:
            return neutral if is_missing(of(x)) else inner_lift(x)
        return keyed_lift

    def any_value_lift(x: Any) -> Any:  # first, last, collect, bloom: any value is one
        t = type(x)
        if t is float:
            if x != x:
                return neutral
        elif x is None or (t is not int and t is not str and is_missing(x)):
            return neutral
        return inner_lift(x)
    return any_value_lift


def _with_none_identity(agg: Aggregation, lift: Callable[[Any], Any]) -> Aggregation:
    """``agg``'s monoid with ``None`` ("no value seen") as a new identity (no inverse)."""
    combine, inner_lower = agg.combine, agg.lower_fn

    def option_combine(a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return combine(a, b)

    def option_lower(a: Any) -> Any:
        return None if a is None else inner_lower(a)

    return Aggregation(combine=option_combine, identity=None, lift=lift, lower=option_lower,
                       commutative=agg.commutative, selective=agg.selective, name=agg.name)


def _sum_of_values(partial: int) -> Any:
    """A skipping sum's lower: ``None`` when the window holds no value."""
    return sum_value(partial) if value_count(partial) else None


def _refuses_missing(lift: Callable[[Any], Any], key: Callable[[Any], Any] | None) -> bool:
    """Whether ``lift`` raises :class:`InvalidValueError` for ``None`` and NaN (as the value,
    or, with ``key``, as the compared part of an argmin/argmax pair)."""
    for x in (None, math.nan):
        try:
            lift(x if key is None else (x, x))
        except InvalidValueError:
            continue
        return False
    return True
