"""Measures and eviction rules of policy windows (the MTA window slide policy as a window kind,
MTA paper sections 3.2 and 4.1.3; semantics in ``docs/adapters.md``, "Policy windows").

The structure of a policy lane aggregates pairs ``(outputs, measure)``: the query's output
aggregate and the policy's measure, combined component-wise. :func:`policy_measure` gives the
measure aggregation and its lift from ``(time, value)``; :func:`policy_rule` the
``enforce`` rule on the raw pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from adapters.query.specs import PolicyWindow, get_field
from swag_core import Aggregation
from swag_core.errors import InvalidValueError


def exact_number(x: Any) -> int | Fraction:
    """``x`` as an exact number (``int`` or ``Fraction``), refusing bools, NaN and infinities."""
    if type(x) is int:
        return x
    if type(x) is bool or x is None:
        raise InvalidValueError(f"needs a number, got {x!r}")
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InvalidValueError(f"needs a finite number, got {x!r}")
        return Fraction(x)
    try:
        return Fraction(x)
    except (TypeError, ValueError):
        raise InvalidValueError(f"needs a number, got {x!r} ({type(x).__name__})") from None



def _measure_combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    # (count, sum, last value, last time); count 0 is the identity
    if not b[0]:
        return a
    if not a[0]:
        return b
    return (a[0] + b[0], a[1] + b[1], b[2], b[3])


_MEASURE_IDENTITY = (0, 0, None, None)


def policy_rule(spec: PolicyWindow) -> Callable[[Any, Any], bool]:
    """``rule(total, prefix)`` on the raw ``(outputs, measure)`` pairs of the structure.

    "Evict prefix P" when the run of newest events starting at P's *last* event exceeds the
    limit (MTA paper section 3.2, running example); never the whole window.
    """
    if spec.rule is not None:
        user_rule = spec.rule

        def custom(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and bool(user_rule(tm[1], pm[1]))
        return custom
    limit: Any = spec.limit
    if spec.measure == "count":
        def by_count(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and tm[0] - pm[0] + 1 > limit
        return by_count
    if spec.measure == "span":
        def by_span(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and tm[3] - pm[3] > limit
        return by_span
    exact_limit = Fraction(limit) if isinstance(limit, float) else limit

    def by_sum(total: Any, prefix: Any) -> bool:
        tm, pm = total[1], prefix[1]
        return 0 < pm[0] < tm[0] and tm[1] - pm[1] + pm[2] > exact_limit
    return by_sum


def policy_measure(spec: PolicyWindow) -> tuple[Aggregation, Callable[[int, Any], Any]]:
    """The measure aggregation of a policy spec and its lift ``(time, value) -> measure``."""
    if spec.rule is not None:
        user = spec.measure
        assert isinstance(user, Aggregation)
        ucombine, ulift = user.combine, user.lift_fn

        def combine(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
            return (a[0] + b[0], ucombine(a[1], b[1]))

        def custom_lift(time: int, value: Any) -> tuple[int, Any]:
            return (1, ulift((time, value)))
        return (Aggregation(combine=combine, identity=(0, user.identity), name="measure"),
                custom_lift)
    agg = Aggregation(combine=_measure_combine, identity=_MEASURE_IDENTITY, name="measure")
    if spec.measure == "sum":
        fld = spec.field
        assert fld is not None

        def sum_lift(time: int, value: Any) -> tuple[Any, ...]:
            x = exact_number(get_field(value, fld))
            if x < 0:
                raise ValueError(f"the policy's sum measure needs non-negative numbers, "
                                 f"got {x}")
            return (1, x, x, time)
        return agg, sum_lift

    def plain_lift(time: int, value: Any) -> tuple[Any, ...]:
        return (1, 0, 0, time)
    return agg, plain_lift


def pair_aggregation(core: Aggregation, measure: Aggregation) -> Aggregation:
    """The aggregation of a policy structure: ``(outputs, measure)`` pairs, component-wise."""
    oc, mc = core.combine, measure.combine

    def combine(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
        return (oc(a[0], b[0]), mc(a[1], b[1]))
    return Aggregation(combine=combine, identity=(core.identity, measure.identity),
                       name=f"policy({core.name})")


__all__ = ["pair_aggregation", "policy_measure", "policy_rule"]
