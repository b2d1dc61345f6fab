"""The monoid contract: :class:`Aggregation` (lift / combine / lower) and its combinators.

An aggregation is a monoid ``(A, combine, identity)`` plus ``lift: In -> A`` applied once per
inserted value and ``lower: A -> Out`` applied to query results (DABA paper, section 2;
Reactive Aggregator paper, section 2.3). Only associativity is assumed; ``combine(a, b)`` is
always called with ``a`` the older and ``b`` the newer part of the window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _identity_function(x: Any) -> Any:
    return x


class Aggregation:
    """A monoid with lift and lower, the unit every window structure aggregates with.

    Args:
        combine: associative ``(older, newer) -> aggregate``. Must not mutate its arguments.
        identity: a true identity: ``combine(identity, a) == a == combine(a, identity)``.
            Never a sentinel: structures call ``combine`` with it.
        lift: turns a raw input value into an aggregate (default: the value itself).
        lower: turns an aggregate into the result (default: the aggregate itself).
        subtract: ``subtract(total, oldest)`` removes ``oldest``, a *prefix* of ``total``,
            from its front. Makes the aggregation invertible (``soe``, SlickDeque Inv).
        commutative: ``combine(a, b) == combine(b, a)`` for all a, b.
        selective: ``combine(a, b)`` always returns one of its two argument objects
            (max, min, argmax, first, last): enables SlickDeque Non-Inv.
        name: a label used in error messages and output column names.
    """

    __slots__ = (
        "combine",
        "commutative",
        "identity",
        "lift",
        "lift_fn",
        "lower",
        "lower_fn",
        "name",
        "selective",
        "subtract",
    )

    def __init__(
        self,
        combine: Callable[[Any, Any], Any],
        identity: Any,
        lift: Callable[[Any], Any] | None = None,
        lower: Callable[[Any], Any] | None = None,
        subtract: Callable[[Any, Any], Any] | None = None,
        commutative: bool = False,
        selective: bool = False,
        name: str | None = None,
    ) -> None:
        for field, fn in (("combine", combine), ("lift", lift), ("lower", lower),
                          ("subtract", subtract)):
            if fn is not None and not callable(fn):
                raise TypeError(f"Aggregation.{field} must be callable, got {fn!r}")
        if combine is None:
            raise TypeError("Aggregation.combine is required")
        self.combine = combine
        self.identity = identity
        self.lift = lift
        self.lower = lower
        self.subtract = subtract
        self.commutative = bool(commutative)
        self.selective = bool(selective)
        self.name = name if name is not None else getattr(combine, "__name__", "aggregation")
        #: ``lift`` or the identity function: structures call this, never ``None`` checks.
        self.lift_fn: Callable[[Any], Any] = lift if lift is not None else _identity_function
        #: ``lower`` or the identity function.
        self.lower_fn: Callable[[Any], Any] = lower if lower is not None else _identity_function

    @property
    def invertible(self) -> bool:
        """True when ``subtract`` is given."""
        return self.subtract is not None

    def properties(self) -> str:
        """A short description of the declared algebraic properties, for error messages."""
        props = [p for p, on in (("commutative", self.commutative),
                                 ("invertible", self.invertible),
                                 ("selective", self.selective)) if on]
        return ", ".join(props) if props else "no special properties"

    def on(self, extract: Callable[[Any], Any], name: str | None = None) -> Aggregation:
        """The same aggregation applied to ``extract(value)``: ``Max().on(lambda r: r.delay)``."""
        inner_lift = self.lift_fn
        return Aggregation(
            combine=self.combine, identity=self.identity,
            lift=lambda value: inner_lift(extract(value)), lower=self.lower,
            subtract=self.subtract, commutative=self.commutative, selective=self.selective,
            name=name if name is not None else self.name,
        )

    def fold(self, values: Any) -> Any:
        """Lowered aggregate of ``values`` in order (oldest first): the brute-force reference."""
        acc = self.identity
        lift, combine = self.lift_fn, self.combine
        for value in values:
            acc = combine(acc, lift(value))
        return self.lower_fn(acc)

    def __repr__(self) -> str:
        return f"Aggregation({self.name}; {self.properties()})"


def product(aggregations: Mapping[str, Aggregation]) -> Aggregation:
    """Several aggregations over one window, computed by one structure.

    The aggregate is a tuple with one component per aggregation; ``lower`` returns a dict
    ``{name: result}``. The product is commutative / invertible when every component is; it is
    never declared selective (a tuple of choices is not a choice among the two arguments).
    Use :meth:`Aggregation.on` to give each component its own input field.
    """
    if not aggregations:
        raise ValueError("product() needs at least one aggregation")
    names = tuple(aggregations)
    parts = tuple(aggregations[n] for n in names)
    for n, part in zip(names, parts):
        if not isinstance(part, Aggregation):
            raise TypeError(f"product(): {n!r} is not an Aggregation: {part!r}")
    lifts = tuple(p.lift_fn for p in parts)
    combines = tuple(p.combine for p in parts)
    lowers = tuple(p.lower_fn for p in parts)
    indices = range(len(parts))

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple([combines[i](a[i], b[i]) for i in indices])

    def lift(value: Any) -> tuple[Any, ...]:
        return tuple([f(value) for f in lifts])

    def lower(a: tuple[Any, ...]) -> dict[str, Any]:
        return {names[i]: lowers[i](a[i]) for i in indices}

    subtract = None
    if all(p.subtract is not None for p in parts):
        subtracts = tuple(p.subtract for p in parts)

        def subtract(total: tuple[Any, ...], oldest: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple([subtracts[i](total[i], oldest[i]) for i in indices])  # type: ignore[misc]

    return Aggregation(
        combine=combine, identity=tuple(p.identity for p in parts), lift=lift, lower=lower,
        subtract=subtract, commutative=all(p.commutative for p in parts), selective=False,
        name="product(" + ",".join(names) + ")",
    )
