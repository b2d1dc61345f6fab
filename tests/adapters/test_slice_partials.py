"""Slice partials (``adapters.engine.presliced``) without an engine: each key's events folded
per slice in plain Python, one event per (key, slice) at the slice start, the rewritten
query over them gives exactly the driver's rows over the raw events (batch: every event,
then END_OF_INPUT); and the queries that cannot run over slice partials say why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import END_OF_INPUT, Query, SlidingWindow, WindowDriver, parse_query
from adapters.driver.time_lane import slice_grid
from adapters.engine.presliced import partial_field, sliced_query
from tests.conformance.corpus import is_int, iter_events, load_all

Event = tuple[Any, int, dict[str, Any]]  # key, time, value


def batch_rows(query: Query, events: Sequence[Event]) -> list[dict[str, Any]]:
    """The driver's rows of a batch run: each key's events in arrival order, then
    END_OF_INPUT."""
    driver = WindowDriver(query)
    by_key: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    for key, t, v in events:
        by_key.setdefault(key, []).append((t, v))
    rows: list[dict[str, Any]] = []
    for key, evs in by_key.items():
        rows += driver.process(key, evs).rows
        rows += driver.advance_watermark(key, END_OF_INPUT).rows
    return rows


def slice_events(query: Query, events: Sequence[Event]) -> list[Event]:
    """One event per non-empty (key, slice) at the slice start, its value the partials of
    ``query``'s outputs, folded in plain Python (what an engine computes)."""
    sliding = [w for w in query.windows if isinstance(w, SlidingWindow)]
    width, base = slice_grid(sliding)
    slices: dict[tuple[Any, int], list[dict[str, Any]]] = {}
    for key, t, v in events:
        slices.setdefault((key, t - (t - base) % width), []).append(v)
    out: list[Event] = []
    for (key, start), values in slices.items():
        partials: dict[str, Any] = {partial_field("count", None): len(values)}
        for a in query.aggregations:
            if a.fn == "count":
                continue
            assert a.fn is not None and a.field is not None
            xs = [v[a.field] for v in values]
            total = sum(xs)
            folded = {"max": max(xs), "min": min(xs), "sum": total,
                      "mean": (total, len(xs))}[a.fn]
            partials[partial_field(a.fn, a.field)] = folded
        out.append((key, start, partials))
    return out


def assert_sliced_rows_equal(query: Query, events: Sequence[Event]) -> None:
    sliced = sliced_query(query)
    assert isinstance(sliced, Query), sliced
    assert [a.name for a in sliced.aggregations] == [a.name for a in query.aggregations]
    got = batch_rows(sliced, slice_events(query, events))
    want = batch_rows(query, events)
    # exact: ints stay ints, a mean is the same int / int quotient
    assert sorted(map(repr, got)) == sorted(map(repr, want))


def _eligible(scenario: dict[str, Any]) -> bool:
    """No expected error, all windows and aggregations sliceable, integer times and
    integer values in every aggregated field."""
    if scenario.get("expect_error") is not None:
        return False
    query = parse_query(scenario["query"])
    if isinstance(sliced_query(query), str):
        return False
    fields = {a.field for a in query.aggregations if a.field is not None}
    return all(is_int(t) and all(is_int(v.get(f)) for f in fields)
               for _, t, v in iter_events(scenario))


SCENARIOS = [s for s in load_all() if _eligible(s)]


def test_enough_conformance_scenarios_qualify() -> None:
    assert len(SCENARIOS) >= 10, [s["name"] for s in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_conformance_scenario_over_slice_partials(scenario: dict[str, Any]) -> None:
    events = [(k, t, v) for k, t, v in iter_events(scenario)]
    assert events
    assert_sliced_rows_equal(parse_query(scenario["query"]), events)


_FNS = ("count", "max", "min", "sum", "mean")


@settings(max_examples=150, deadline=None)
@given(grid=st.integers(2, 7),
       windows=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(-9, 9)),
                        min_size=1, max_size=2),
       fns=st.lists(st.sampled_from(_FNS), min_size=1, max_size=5, unique=True),
       events=st.lists(st.tuples(st.sampled_from("ab"), st.integers(-40, 120),
                                 st.integers(-2**70, 2**70)), max_size=60))
def test_int_streams_over_slice_partials(grid: int, windows: list[tuple[int, int, int]],
                                         fns: list[str],
                                         events: list[tuple[str, int, int]]) -> None:
    # every range, slide and offset a multiple of grid > 1: slices of at least grid ms
    specs = [SlidingWindow(grid * max(r, s), grid * min(r, s), grid * o) for r, s, o in windows]
    aggs = {fn: {"fn": fn} if fn == "count" else {"fn": fn, "field": "v"} for fn in fns}
    query = Query.build(specs, aggs)
    assert_sliced_rows_equal(query, [(k, t, {"v": v}) for k, t, v in events])


def test_two_fields_and_lateness_kept() -> None:
    query = Query.build([SlidingWindow(20, 10), SlidingWindow(30, 10, offset=5)],
                        {"n": {"fn": "count"}, "m": {"fn": "mean", "field": "a"},
                         "s": {"fn": "sum", "field": "b"}, "x": {"fn": "max", "field": "a"}},
                        allowed_lateness=7)
    sliced = sliced_query(query)
    assert isinstance(sliced, Query)
    assert sliced.windows == query.windows and sliced.allowed_lateness == 7
    events = [("k", t, {"a": t % 7 - 3, "b": 10**20 + t}) for t in range(-12, 60, 3)]
    assert_sliced_rows_equal(query, events)


# ----------------------------------------------------------------------------- eligibility
@pytest.mark.parametrize(("windows", "aggs", "reason"), [
    ([{"kind": "over", "range": 10}], {"s": {"fn": "sum", "field": "v"}},
     "not sliding or tumbling"),
    ([{"kind": "count", "size": 3}], {"s": {"fn": "sum", "field": "v"}},
     "not sliding or tumbling"),
    ([{"kind": "tumbling", "size": 10}, {"kind": "over", "range": 10}],
     {"s": {"fn": "sum", "field": "v"}}, "not sliding or tumbling"),
    ([{"kind": "sliding", "range": 10, "slide": 5},
      {"kind": "sliding", "range": 6, "slide": 3, "offset": 1}],
     {"s": {"fn": "sum", "field": "v"}}, "is 1 ms"),
    ([{"kind": "sliding", "range": 7, "slide": 1}], {"n": {"fn": "count"}}, "is 1 ms"),
    ([{"kind": "tumbling", "size": 10}], {"f": {"fn": "first", "field": "v"}},
     "aggregation 'f' is not count, max, min, sum or mean of a field"),
    ([{"kind": "tumbling", "size": 10}], {"n": {"fn": "count", "field": "v"}},
     "aggregation 'n' is not count"),
    ([{"kind": "tumbling", "size": 10}],
     {"s": {"fn": "sum", "field": "v"}, "c": {"fn": "collect", "field": "v"}},
     "aggregation 'c'"),
])
def test_unsliceable_queries_say_why(windows: list[dict[str, Any]], aggs: dict[str, Any],
                                     reason: str) -> None:
    why = sliced_query(parse_query({"windows": windows, "aggregations": aggs}))
    assert isinstance(why, str) and reason in why


def test_a_custom_aggregation_is_not_sliceable() -> None:
    from swag_core.aggregations import Max

    why = sliced_query(Query.build({"kind": "tumbling", "size": 10}, {"m": ("v", Max())}))
    assert isinstance(why, str) and "'m'" in why


def test_partial_field_names() -> None:
    names = [partial_field("count", None)] + [partial_field(fn, f) for fn in
                                                ("max", "min", "sum", "mean") for f in "vw"]
    assert len(set(names)) == len(names)  # one partial per (fn, field)
    for fn, field in (("count", "v"), ("first", "v"), ("sum", None)):
        with pytest.raises(ValueError, match=repr(fn)):
            partial_field(fn, field)
