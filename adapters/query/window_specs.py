"""Window specs: the window kinds of a query (sliding, tumbling, per-event OVER, count and
policy windows) and :func:`parse_window` for their dict form (``docs/adapters.md``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.errors import QuerySpecError
from adapters.query.checks import check_int
from swag_core import Aggregation


@dataclass(frozen=True)
class SlidingWindow:
    """Event-time windows ``[start, start + range)`` with ``start = offset + j * slide``.

    As in Spark, Beam and Flink; ``range % slide`` need not be 0 but ``range >= slide > 0``.
    A window with no events emits nothing. Rows: ``{"window", "key", "start", "end", ...}``.
    """

    range: int
    slide: int
    offset: int = 0

    def __post_init__(self) -> None:
        check_int("range", self.range, 1)
        check_int("slide", self.slide, 1)
        check_int("offset", self.offset)
        if self.slide > self.range:
            raise QuerySpecError("slide", f"must not exceed range ({self.range}), got "
                                          f"{self.slide}: windows would leave gaps")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "sliding", "range": self.range, "slide": self.slide,
                "offset": self.offset}


def TumblingWindow(size: int, offset: int = 0) -> SlidingWindow:
    """Tumbling windows ``[offset + j * size, offset + (j + 1) * size)``: sliding with
    ``slide == range``."""
    check_int("size", size, 1)
    return SlidingWindow(size, size, offset)


@dataclass(frozen=True)
class OverWindow:
    """Per-event window (SQL ``RANGE BETWEEN range PRECEDING AND CURRENT ROW``).

    For each non-late event at time t: the aggregate over the key's non-late events with time
    in ``[t - range, t]``, peers at equal time included. Rows:
    ``{"window", "key", "time", "event", ...}``, one per event.
    """

    range: int

    def __post_init__(self) -> None:
        check_int("range", self.range, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "over", "range": self.range}


@dataclass(frozen=True)
class CountWindow:
    """The last ``size`` events, emitted every ``every`` events.

    The key's non-late events in order (time, ties in arrival order); after the k-th event,
    if ``k % every == 0``, the aggregate over the last ``min(size, k)`` events. Rows:
    ``{"window", "key", "start": oldest time, "end": newest time + 1, ...}``.
    """

    size: int
    every: int = 1

    def __post_init__(self) -> None:
        check_int("size", self.size, 1)
        check_int("every", self.every, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "count", "size": self.size, "every": self.every}


#: Measures of the declarative slide policy.
POLICY_MEASURES = ("count", "span", "sum")


@dataclass(frozen=True)
class PolicyWindow:
    """The Monoid Tree Aggregator's window slide policy (MTA paper, sections 3 and 4.1.3) as a
    window kind.

    After each non-late event of the key (in time order, ties in arrival order) the window
    drops its longest prefix that the policy marks for eviction; the newest event always
    stays. Every ``every`` events a row is emitted:
    ``{"window", "key", "start": oldest time, "end": newest time + 1, ...}``.

    Declarative form (``measure`` one of ``"count"``, ``"span"``, ``"sum"``): the window after
    the k-th event is the **longest run of the newest events whose measure is <= limit**, or
    the k-th event alone if even that exceeds ``limit``:

    * ``count``: number of events (the same windows as ``CountWindow(limit)``);
    * ``span``: ``newest time - oldest time`` (MTA paper Listing 1);
    * ``sum``: sum of the non-negative number ``field`` (the paper's running example, "keep
      the newest updates whose sum is <= 10"), compared exactly (floats as fractions).

    Programmable form: ``rule(total, prefix) -> bool`` with ``measure`` an
    :class:`~swag_core.Aggregation` lifted from ``(time, value)`` pairs. ``rule`` gets the raw
    (un-lowered) measure aggregate of the whole window and of a candidate prefix and says
    whether the prefix must go; it must be prefix-monotone (true for a prefix implies true for
    every shorter one). The driver never evicts the newest event whatever ``rule`` says.
    """

    measure: str | Aggregation
    limit: int | float | None = None
    field: str | None = None
    every: int = 1
    rule: Callable[[Any, Any], bool] | None = None

    def __post_init__(self) -> None:
        check_int("every", self.every, 1)
        if self.rule is not None:
            if not callable(self.rule):
                raise QuerySpecError("rule", f"must be callable, got {self.rule!r}")
            if not isinstance(self.measure, Aggregation):
                raise QuerySpecError("measure", "a programmable policy (rule=...) needs a "
                                                "swag_core.Aggregation as measure")
            return
        if self.measure not in POLICY_MEASURES:
            raise QuerySpecError("measure", f"must be one of {', '.join(POLICY_MEASURES)} "
                                            f"(or an Aggregation with rule=...), got "
                                            f"{self.measure!r}")
        limit = self.limit
        if type(limit) is bool or not isinstance(limit, (int, float)) or not (
                math.isfinite(limit) and limit >= 0):
            raise QuerySpecError("limit", f"must be a finite number >= 0, got {limit!r}")
        if self.measure == "sum":
            if not isinstance(self.field, str):
                raise QuerySpecError("field", "the 'sum' measure needs the name of a "
                                              "numeric field")
        elif self.field is not None:
            raise QuerySpecError("field", f"the {self.measure!r} measure takes no field")

    def to_dict(self) -> dict[str, Any]:
        if self.rule is not None:
            assert isinstance(self.measure, Aggregation)
            return {"kind": "policy", "measure": f"custom:{self.measure.name}",
                    "rule": getattr(self.rule, "__qualname__", repr(self.rule)),
                    "every": self.every}
        d: dict[str, Any] = {"kind": "policy", "measure": self.measure, "limit": self.limit,
                             "every": self.every}
        if self.field is not None:
            d["field"] = self.field
        return d


WindowSpec = SlidingWindow | OverWindow | CountWindow | PolicyWindow

_WINDOW_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required, optional)
    "sliding": ({"range", "slide"}, {"offset"}),
    "tumbling": ({"size"}, {"offset"}),
    "over": ({"range"}, set()),
    "count": ({"size"}, {"every"}),
    "policy": ({"measure", "limit"}, {"field", "every"}),
}


def parse_window(spec: Any, path: str = "window") -> WindowSpec:
    """A window spec from its dict form (or a spec object, returned as is)."""
    if isinstance(spec, (SlidingWindow, OverWindow, CountWindow, PolicyWindow)):
        return spec
    if not isinstance(spec, Mapping):
        raise QuerySpecError(path, f"must be a window spec object or dict, got {spec!r}")
    kind = spec.get("kind")
    if kind not in _WINDOW_FIELDS:
        raise QuerySpecError(f"{path}.kind", f"must be one of {', '.join(_WINDOW_FIELDS)}, "
                                             f"got {kind!r}")
    required, optional = _WINDOW_FIELDS[kind]
    given = set(spec) - {"kind"}
    missing = required - given
    if missing:
        raise QuerySpecError(f"{path}.{sorted(missing)[0]}", f"required for a {kind} window")
    unknown = given - required - optional
    if unknown:
        raise QuerySpecError(f"{path}.{sorted(unknown)[0]}",
                             f"unknown field for a {kind} window (fields: "
                             f"{', '.join(sorted(required | optional))})")
    try:
        if kind == "sliding":
            return SlidingWindow(spec["range"], spec["slide"], spec.get("offset", 0))
        if kind == "tumbling":
            return TumblingWindow(spec["size"], spec.get("offset", 0))
        if kind == "over":
            return OverWindow(spec["range"])
        if kind == "count":
            return CountWindow(spec["size"], spec.get("every", 1))
        return PolicyWindow(measure=spec["measure"], limit=spec["limit"],
                            field=spec.get("field"), every=spec.get("every", 1))
    except QuerySpecError as exc:
        raise QuerySpecError(f"{path}.{exc.path}", str(exc)[len(exc.path) + 2:]) from None
