"""The vectorized OVER kernel (adapters.crosskey.over_runtime) against a brute-force oracle
and against the per-key path (WindowDriver.process + end of input): same values, bit for
bit (repr), same missing rows, same types."""

from __future__ import annotations

import math
from functools import reduce
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import END_OF_INPUT, Query, TransientKeyState, WindowDriver
from adapters.crosskey.over_runtime import (
    Column,
    _fixed_points,
    frame_bounds,
    over_outputs,
    over_values,
)
from swag_core.exact import fixed

FNS = ("max", "min", "sum", "mean")

ints = st.integers(-2**40, 2**40) | st.sampled_from([0, 2**62, -2**62, 2**63 - 1])
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 0.1, 5e-324, 1e308, -1e308, 2.0**-1030])


def query(fns: list[str], r: int, nulls: str = "skip") -> Query:
    aggs: dict[str, Any] = {f"a{i}": {"fn": fn, "field": "x"} for i, fn in enumerate(fns)}
    aggs["n"] = {"fn": "count"}
    return Query.build({"kind": "over", "range": r}, aggs, nulls=nulls)


def per_key(q: Query, events: list[tuple[Any, int, Any]]) -> list[dict[str, Any]]:
    """Rows of the per-key path, keys in first-appearance order, events released at the end."""
    d = WindowDriver(q, columnar=False)
    rows: list[dict[str, Any]] = []
    for key in dict.fromkeys(k for k, _, _ in events):
        state = TransientKeyState()
        mine = [(t, {"x": x}) for k, t, x in events if k == key]
        out = d.process(key, mine, state)
        out.extend(d.advance_watermark(key, END_OF_INPUT, state))
        rows.extend(out.rows)
    return rows


def kernel(q: Query, events: list[tuple[Any, int, Any]]) -> list[dict[str, Any]] | None:
    """The kernel's rows for the same events (None: not covered)."""
    plan = over_outputs(q)
    assert plan is not None
    keys = list(dict.fromkeys(k for k, _, _ in events))
    code = {k: i for i, k in enumerate(keys)}
    ids = np.array([code[k] for k, _, _ in events], np.int64)
    times = np.array([t for _, t, _ in events], np.int64)
    order = np.lexsort((times, ids))  # stable: ties in arrival order
    ids, times = ids[order], times[order]
    xs = [events[i][2] for i in order.tolist()]
    missing = np.array([x is None or x != x for x in xs], bool)
    present = [x for x in xs if not (x is None or x != x)]
    is_int = all(type(x) is int for x in present)
    fill = 0 if is_int else 0.0
    data = np.array([fill if m else x for x, m in zip(xs, missing.tolist())],
                    np.int64 if is_int else np.float64)
    lo, hi = frame_bounds(times, plan.range, ids)
    cols: dict[str, list[Any]] = {}
    for out in plan.outputs:
        vals = over_values(out, lo, hi, Column(data, missing))
        if vals is None:
            return None
        cols[out.name] = vals.tolist()
    rows = []
    for j in range(len(xs)):
        row = {"window": 0, "key": keys[ids[j]], "time": int(times[j]), "event": {"x": xs[j]}}
        row.update({name: c[j] for name, c in cols.items()})
        rows.append(row)
    return rows


def oracle(fn: str, frame: list[Any]) -> Any:
    """The aggregate by definition: missing values skipped, ties keep the older value."""
    xs = [x for x in frame if not (x is None or x != x)]
    if not xs:
        return None
    if fn == "max":
        return reduce(lambda a, b: b if b > a else a, xs)
    if fn == "min":
        return reduce(lambda a, b: b if b < a else a, xs)
    from fractions import Fraction
    total = sum(Fraction(x) for x in xs)
    if fn == "sum" and all(type(x) is int for x in xs):
        return int(total)
    exact = total if fn == "sum" else total / len(xs)
    try:
        return float(exact)
    except OverflowError:  # beyond the double range: the per-key path rounds to +-inf
        return math.inf if exact > 0 else -math.inf


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert repr(x) == repr(y), (x, y)


events_of = st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 40)), min_size=1,
                     max_size=60)


@settings(max_examples=40, deadline=None)
@given(events_of, st.data(), st.integers(0, 45), st.lists(st.sampled_from(FNS), min_size=1,
                                                            max_size=4))
def test_kernel_equals_the_per_key_path_and_the_oracle(kt: list[tuple[str, int]], data: Any,
                                                       r: int, fns: list[str]) -> None:
    values = st.one_of(ints, st.none()) if data.draw(st.booleans()) else \
        st.one_of(floats, st.none(), st.just(math.nan))
    xs = data.draw(st.lists(values, min_size=len(kt), max_size=len(kt)))
    events = [(k, t, x) for (k, t), x in zip(kt, xs)]
    q = query(fns, r)
    got = kernel(q, events)
    assert got is not None
    same(got, per_key(q, events))
    for row in got:  # the oracle: frames by definition
        # older = earlier event time (arrival order among peers): sorted() is stable
        frame = [x for k, t, x in sorted(events, key=lambda e: e[1])
                 if k == row["key"] and row["time"] - r <= t <= row["time"]]
        assert row["n"] == len(frame)
        for i, fn in enumerate(fns):
            want = oracle(fn, frame)
            assert repr(row[f"a{i}"]) == repr(want), (fn, frame, row)


@pytest.mark.parametrize("x", [math.inf, -math.inf])
def test_infinities_take_the_per_key_path(x: float) -> None:
    events = [("a", 1, 1.0), ("a", 2, x)]
    assert kernel(query(["max"], 5), events) is None


def test_missing_values_under_nulls_error_take_the_per_key_path() -> None:
    assert kernel(query(["max"], 5, nulls="error"), [("a", 1, 1.0), ("a", 2, None)]) is None
    assert kernel(query(["max"], 5, nulls="error"), [("a", 1, 1.0), ("a", 2, 2.0)]) is not None


def test_peers_share_the_frame_and_zeros_keep_the_older() -> None:
    events = [("a", 5, -0.0), ("a", 5, 0.0), ("a", 3, -1.0), ("a", 9, 0.0)]
    got = kernel(query(["max", "min"], 4), events)
    assert got is not None
    assert [(r["time"], repr(r["a0"]), repr(r["a1"]), r["n"]) for r in got] == [
        (3, "-1.0", "-1.0", 1), (5, "-0.0", "-1.0", 3), (5, "-0.0", "-1.0", 3),
        (9, "-0.0", "-0.0", 3)]


def test_older_means_earlier_event_time_not_arrival() -> None:
    # 0.0 arrives first but -0.0 is older in event time: the max keeps -0.0, as the
    # per-key path does (the property test's oracle once folded in arrival order)
    events = [("a", 2, 0.0), ("a", 1, -0.0)]
    got = kernel(query(["max"], 5), events)
    assert got is not None
    assert [repr(r["a0"]) for r in got] == ["-0.0", "-0.0"]
    same(got, per_key(query(["max"], 5), events))


def test_huge_times_and_ranges() -> None:
    events = [("a", -2**62, 1), ("b", 2**62, 2), ("a", 2**62, 3), ("b", -2**62, 4)]
    for r in (0, 2**62, 2**63 - 1):
        q = query(["max", "sum", "mean"], r)
        got = kernel(q, events)
        assert got is not None
        same(got, per_key(q, events))


def test_fixed_points_equal_swag_core() -> None:
    xs = [0.1, -0.0, 5e-324, 2.0**-1030, 1e308, -3.5, 1.0]
    assert _fixed_points(np.array(xs, np.float64)) == [fixed(x) for x in xs]


def test_only_single_over_windows_of_kernel_outputs_are_covered() -> None:
    assert over_outputs(query(["max"], 5)) is not None
    assert over_outputs(Query.build({"kind": "sliding", "range": 10, "slide": 5},
                                    {"m": {"fn": "max", "field": "x"}})) is None
    assert over_outputs(Query.build({"kind": "over", "range": 5},
                                    {"v": {"fn": "variance", "field": "x"}})) is None
    assert over_outputs(Query.build([{"kind": "over", "range": 5}, {"kind": "over", "range": 9}],
                                    {"m": {"fn": "max", "field": "x"}})) is None
