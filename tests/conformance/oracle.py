"""The brute-force oracle: expected rows of a scenario, computed from the definitions.

Independent of the code under test: plain Python only, no swag_core window structure, no
``adapters`` code, no swag_core aggregation *fold*. Every aggregate is computed from its
definition over the list of events in the window (``max()`` for max; ``sum / len`` for mean
and the two-pass formula for variance in exact rational arithmetic, rounded once to the
nearest double; a list for collect, a strict-improvement scan for argmax so ties go to the
oldest, ...).

The one stated exception is ``bloom``: its result is a bit mask whose positions come from
swag_core's hash functions, which no independent definition can reproduce. The oracle builds
one filter per item with ``swag_core.aggregations.BloomFilter(bits, hashes).lift`` (a single
item's hash positions, no combining), ORs them itself and returns a :class:`BloomExpected`;
the runner then checks structurally that every inserted item is contained in the engine's
filter and that its bit count equals that of the OR (together: the masks are equal).

Semantics (shared conventions, ``docs/conformance.md``): the oracle replays the steps in
arrival order against the watermark to classify late events exactly (``time < W - L``, with
``W`` the largest watermark so far), then folds the non-late events of each window in window
order (time, ties in arrival order). A window is emitted iff the final ``W - L`` reached its
emission point (``>= end``; over / count / policy windows: ``> t``) and it holds at least one
event.
"""

from __future__ import annotations

import bisect
import decimal
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .corpus import END, expand

#: Aggregations whose input must be a number (not None, NaN, bool or a string).
NUMERIC = frozenset({"sum", "mean", "variance", "stddev", "geomean"})
#: Aggregations whose input is compared with < / > (None and NaN refused).
ORDERED = frozenset({"min", "max", "argmin", "argmax", "mincount", "maxcount"})


class OracleInputError(Exception):
    """Bad input found by the oracle: what an engine must raise for this scenario.

    Attributes mirror a scenario's ``expect_error``: ``cls`` (always ``"BadEventError"``, the
    class of ``adapters.errors``), ``field`` (the offending value field, or None for a bad
    time) and ``key`` (the event's key); ``kind`` is ``"time"`` or ``"value"``.
    """

    cls = "BadEventError"

    def __init__(self, kind: str, field: str | None, key: Any, message: str) -> None:
        super().__init__(f"bad event {kind}: {message} (key {key!r}, field {field!r})")
        self.kind = kind
        self.field = field
        self.key = key


@dataclass(frozen=True)
class BloomExpected:
    """Expected bloom result: the items inserted and the OR of their single-item masks."""

    bits: int
    hashes: int
    items: tuple[Any, ...]
    item_masks: tuple[int, ...]
    mask: int


@dataclass
class _Event:
    time: int
    arrival: int
    value: dict[str, Any]


@dataclass
class _Replay:
    accepted: dict[Any, list[_Event]] = field(default_factory=lambda: defaultdict(list))
    late: dict[Any, int] = field(default_factory=lambda: defaultdict(int))
    watermark: float = -math.inf


# --------------------------------------------------------------------------- input checks
def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def missing(x: Any) -> bool:
    """SQL null or a float NaN: what ``nulls="skip"`` leaves out (``docs/conformance.md``)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def _check_value(key: Any, value: Any, aggs: dict[str, dict[str, Any]],
                 windows: list[dict[str, Any]], nulls: str = "skip") -> None:
    """Raise OracleInputError if an accepted event's value cannot be aggregated.

    Checks the aggregations in query order, then the policy windows' weights (the driver's
    order, which only matters for an event with several faults). With ``nulls="skip"`` a
    missing value (:func:`missing`; argmin/argmax: of the compared field) is no fault.
    """
    if not isinstance(value, dict):
        raise OracleInputError("value", None, key,
                               f"event value must be an object, got {value!r}")
    x: Any
    for spec in aggs.values():
        fn = spec["fn"]
        if fn == "count":
            continue  # count with a field counts non-null values: a missing field is null
        for param in ("field", "result"):
            name = spec.get(param)
            if name is not None and name not in value:
                raise OracleInputError("value", name, key,
                                       f"{fn}: field {name!r} missing from {value!r}")
        name = spec.get("field")
        x = value.get(name)
        if nulls == "skip" and missing(x):
            continue
        if fn in NUMERIC:
            if not _is_number(x) or x != x:
                raise OracleInputError("value", name, key,
                                       f"{fn} needs a number in {name!r}, got {x!r}")
            if fn == "geomean" and x <= 0:
                raise OracleInputError("value", name, key,
                                       f"geomean needs a positive number, got {x!r}")
        elif fn in ORDERED and (x is None or x != x):
            raise OracleInputError("value", name, key,
                                   f"{fn} cannot compare {x!r} in {name!r}")
    for spec in windows:
        if spec["kind"] == "policy" and spec["measure"] == "sum":
            name = spec["field"]
            x = value.get(name)
            if not _is_number(x) or not math.isfinite(x) or x < 0:
                raise OracleInputError("value", name, key, f"the policy's sum measure needs a "
                                       f"finite number >= 0 in {name!r}, got {x!r}")


def _check_time(key: Any, t: Any) -> int:
    """An event time as int ms. Besides ints, integral floats and decimal strings are
    accepted (``docs/adapters.md`` section 7); None, bools and anything else are bad input."""
    if isinstance(t, int) and not isinstance(t, bool):
        return t
    if isinstance(t, float) and t.is_integer():
        return int(t)
    if isinstance(t, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", t):
        return int(t)
    raise OracleInputError("time", None, key,
                           f"event time must be integer milliseconds, got {t!r}")


# --------------------------------------------------------------------------- replay
def _replay(scenario: dict[str, Any]) -> _Replay:
    """Classify every event as late or accepted, in arrival order."""
    query = scenario["query"]
    lateness = query.get("allowed_lateness", 0)
    aggs = query["aggregations"]
    state = _Replay()
    arrival = 0
    for step in scenario["steps"]:
        if "watermark" in step:
            w = step["watermark"]
            w = math.inf if w == END else w
            if w > state.watermark:  # a regressing watermark is ignored
                state.watermark = w
            continue
        for key, t, value in step["events"]:
            t = _check_time(key, t)
            if t < state.watermark - lateness:
                state.late[key] += 1
            else:
                _check_value(key, value, aggs, query["windows"], query.get("nulls", "skip"))
                state.accepted[key].append(_Event(t, arrival, value))
            arrival += 1
    return state


# --------------------------------------------------------------------------- aggregates
def _bloom(spec: dict[str, Any], items: list[Any]) -> BloomExpected:
    # The stated exception to independence (module docstring): single-item masks only.
    from swag_core.aggregations import BloomFilter

    bits, hashes = spec.get("bits", 16384), spec.get("hashes", 4)
    lift = BloomFilter(bits, hashes).lift_fn
    item_masks = tuple(lift(item) for item in items)
    mask = 0
    for m in item_masks:
        mask |= m
    return BloomExpected(bits, hashes, tuple(items), item_masks, mask)


def _rounded(x: Fraction) -> float:
    """``x`` rounded to the nearest double (``+-inf`` beyond the range)."""
    try:
        return float(x)  # numerator / denominator: correctly rounded
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _exact_variance(xs: list[Any], ddof: int) -> Fraction | None:
    """The two-pass variance over the rationals (no rounding at all)."""
    n = len(xs)
    if n <= ddof:
        return None
    mean = sum(map(Fraction, xs), Fraction(0)) / n
    return sum(((Fraction(x) - mean) ** 2 for x in xs), Fraction(0)) / (n - ddof)


def _rounded_sqrt(x: Fraction) -> float:
    """The double nearest to ``sqrt(x)``: the float of a 60-digit decimal root, then moved to
    the neighbour whose rounding interval holds the root (midpoints squared, compared
    exactly)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        r = float((decimal.Decimal(x.numerator) / decimal.Decimal(x.denominator)).sqrt())
    if math.isinf(r):
        below = math.nextafter(r, 0.0)  # the largest double; inf past its interval's top
        return r if (Fraction(below) + Fraction(2) ** 970) ** 2 <= x else below
    while True:
        up, down = math.nextafter(r, math.inf), math.nextafter(r, 0.0)
        if not math.isinf(up) and ((Fraction(r) + Fraction(up)) / 2) ** 2 < x:
            r = up
        elif r > 0 and ((Fraction(r) + Fraction(down)) / 2) ** 2 > x:
            r = down
        else:
            return r


def aggregate(spec: dict[str, Any], values: list[dict[str, Any]], nulls: str = "skip") -> Any:
    """One aggregate, by definition, over event values in window order (non-empty).

    ``nulls="skip"`` (SQL): the events whose field is :func:`missing` are left out, and a
    window with no other event gives null (``count`` of a field: 0); ``"error"``: every
    value is aggregated (the replay refused those an aggregation cannot take)."""
    fn = spec["fn"]
    if fn == "count":
        if "field" not in spec:
            return len(values)
        gone = missing if nulls == "skip" else (lambda x: x is None)
        return sum(1 for v in values if not gone(v.get(spec["field"])))
    f = spec["field"]
    if nulls == "skip":
        values = [v for v in values if not missing(v[f])]
        if not values:
            return None
    xs = [v[f] for v in values]
    if fn == "sum":
        exact = sum(map(Fraction, xs), Fraction(0))
        return int(exact) if all(isinstance(x, int) for x in xs) else _rounded(exact)
    if fn == "mean":
        return _rounded(sum(map(Fraction, xs), Fraction(0)) / len(xs))
    if fn == "min":
        return min(xs)
    if fn == "max":
        return max(xs)
    if fn in ("argmax", "argmin"):
        best = 0
        for i in range(1, len(xs)):  # strict improvement only: ties keep the oldest
            if (xs[i] > xs[best]) if fn == "argmax" else (xs[i] < xs[best]):
                best = i
        return values[best][spec["result"]] if "result" in spec else values[best]
    if fn in ("maxcount", "mincount"):
        m = max(xs) if fn == "maxcount" else min(xs)
        return [m, sum(1 for x in xs if x == m)]
    if fn == "variance":
        var = _exact_variance(xs, spec.get("ddof", 1))
        return None if var is None else _rounded(var)
    if fn == "stddev":
        var = _exact_variance(xs, spec.get("ddof", 1))
        return None if var is None else _rounded_sqrt(var)
    if fn == "geomean":  # exp of the mean of the logs, rounded once
        logs = sum((Fraction(math.log(x)) for x in xs), Fraction(0))
        return math.exp(_rounded(logs / len(xs)))
    if fn == "first":
        return xs[0]
    if fn == "last":
        return xs[-1]
    if fn == "collect":
        return xs
    if fn == "bloom":
        return _bloom(spec, xs)
    raise ValueError(f"unknown aggregation {fn!r}")


def _aggregates(aggs: dict[str, dict[str, Any]], events: list[_Event],
                nulls: str) -> dict[str, Any]:
    values = [e.value for e in events]
    return {out: aggregate(spec, values, nulls) for out, spec in aggs.items()}


# --------------------------------------------------------------------------- windows
#: The output columns of a window's events (the query's aggregations and null rule).
Outputs = Callable[[list[_Event]], dict[str, Any]]

def window_starts(t: int, range_: int, slide: int, offset: int) -> range:
    """Starts ``offset + j*slide`` of the windows ``[start, start + range_)`` holding ``t``."""
    # start <= t  <=>  j <= (t - offset) / slide;  t < start + range_  <=>  j > (t - range_ -
    # offset) / slide, i.e. j >= floor((t - range_ - offset) / slide) + 1.
    j_lo = (t - range_ - offset) // slide + 1
    j_hi = (t - offset) // slide
    return range(offset + j_lo * slide, offset + j_hi * slide + 1, slide)


def _sliding_rows(i: int, key: Any, spec: dict[str, Any], events: list[_Event],
                  times: list[int], final: float, aggs: Outputs
                  ) -> list[dict[str, Any]]:
    if spec["kind"] == "tumbling":
        range_ = slide = spec["size"]
    else:
        range_, slide = spec["range"], spec["slide"]
    offset = spec.get("offset", 0)
    starts = sorted({s for t in set(times) for s in window_starts(t, range_, slide, offset)})
    rows = []
    for start in starts:
        end = start + range_
        if final < end:
            continue  # the watermark never reached this window's end: not emitted
        members = events[bisect.bisect_left(times, start):bisect.bisect_left(times, end)]
        if members:
            rows.append({"window": i, "key": key, "start": start, "end": end,
                         **aggs(members)})
    return rows


def _over_rows(i: int, key: Any, spec: dict[str, Any], events: list[_Event],
               times: list[int], final: float, aggs: Outputs
               ) -> list[dict[str, Any]]:
    rows = []
    cache: dict[int, dict[str, Any]] = {}  # peers share one window: compute it once
    for ev in events:
        if not final > ev.time:
            continue
        if ev.time not in cache:
            lo = bisect.bisect_left(times, ev.time - spec["range"])
            hi = bisect.bisect_right(times, ev.time)
            cache[ev.time] = aggs(events[lo:hi])
        rows.append({"window": i, "key": key, "time": ev.time, "event": ev.value,
                     **cache[ev.time]})
    return rows


def _count_rows(i: int, key: Any, spec: dict[str, Any], events: list[_Event],
                final: float, aggs: Outputs) -> list[dict[str, Any]]:
    size, every = spec["size"], spec.get("every", 1)
    rows = []
    for k in range(every, len(events) + 1, every):  # k-th event, 1-based, k % every == 0
        if not final > events[k - 1].time:
            continue
        members = events[max(0, k - size):k]
        rows.append({"window": i, "key": key, "start": members[0].time,
                     "end": members[-1].time + 1, **aggs(members)})
    return rows


def _policy_measure(spec: dict[str, Any], run: list[_Event]) -> int | Fraction:
    measure = spec["measure"]
    if measure == "count":
        return len(run)
    if measure == "span":
        return run[-1].time - run[0].time
    return sum((Fraction(e.value[spec["field"]]) for e in run), Fraction(0))  # exact


def _policy_rows(i: int, key: Any, spec: dict[str, Any], events: list[_Event],
                 final: float, aggs: Outputs) -> list[dict[str, Any]]:
    # adapters.query.specs.PolicyWindow, declarative form: after the k-th event (window order) the
    # window is the longest run of the newest events whose measure is <= limit, or the k-th
    # event alone; a row every `every` events, emitted like a count window (W - L > t_k).
    limit = Fraction(spec["limit"])
    every = spec.get("every", 1)
    rows = []
    for k in range(every, len(events) + 1, every):
        if not final > events[k - 1].time:
            continue
        lo = k - 1
        while lo > 0 and _policy_measure(spec, events[lo - 1:k]) <= limit:
            lo -= 1
        members = events[lo:k]
        rows.append({"window": i, "key": key, "start": members[0].time,
                     "end": members[-1].time + 1, **aggs(members)})
    return rows


def row_sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """Canonical order: window, key (ints before strings), start or time, end.

    Only for rows whose key is an int or a string (the corpus's key types).
    """
    key = row["key"]
    return (row["window"], isinstance(key, str), key, row.get("start", row.get("time")),
            row.get("end", 0))


def expected(scenario: dict[str, Any]) -> dict[str, Any]:
    """``{"rows": [...], "late": {key: n}}`` for a scenario (expanded or raw).

    Raises :class:`OracleInputError` for bad input (the scenario's ``expect_error``).
    Rows come sorted by :func:`row_sort_key` (over rows: then by arrival); ``late`` lists
    only keys with at least one late event.
    """
    if any("generate" in step for step in scenario["steps"]):
        scenario = expand(scenario)
    query = scenario["query"]
    specs, nulls = query["aggregations"], query.get("nulls", "skip")

    def aggs(members: list[_Event]) -> dict[str, Any]:
        return _aggregates(specs, members, nulls)
    state = _replay(scenario)
    final = state.watermark - query.get("allowed_lateness", 0)
    rows: list[dict[str, Any]] = []
    for key, evs in state.accepted.items():
        events = sorted(evs, key=lambda e: (e.time, e.arrival))  # window order
        times = [e.time for e in events]
        for i, spec in enumerate(query["windows"]):
            kind = spec["kind"]
            if kind in ("sliding", "tumbling"):
                rows.extend(_sliding_rows(i, key, spec, events, times, final, aggs))
            elif kind == "over":
                rows.extend(_over_rows(i, key, spec, events, times, final, aggs))
            elif kind == "count":
                rows.extend(_count_rows(i, key, spec, events, final, aggs))
            elif kind == "policy":
                rows.extend(_policy_rows(i, key, spec, events, final, aggs))
            else:
                raise ValueError(f"window kind {kind!r} is not supported by the oracle")
    rows.sort(key=row_sort_key)  # stable: over peers stay in arrival order
    return {"rows": rows, "late": {k: n for k, n in state.late.items() if n}}
