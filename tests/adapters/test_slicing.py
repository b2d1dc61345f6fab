"""Stream slicing in the time lanes, column kernels, the fast intake path and the state log's
segments: one combine per event, one structure entry per slice, the same rows as the
brute force, and restarts (also from codec version 1 state) that change nothing."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import (
    MemoryKeyState,
    OverWindow,
    SlidingWindow,
    StateError,
    TumblingWindow,
    WindowDriver,
    run_steps,
)
from adapters.driver.time_lane import TimeLane, slice_grid
from adapters.state.backend import append_sorted
from swag_core import Aggregation
from swag_core.aggregations import Count, Mean

from .brute import brute_force
from .util import assert_same_rows


# ----------------------------------------------------------------------------- the grid
@pytest.mark.parametrize(("specs", "grid"), [
    ([SlidingWindow(3_600_000, 60_000)], (60_000, 0)),
    ([TumblingWindow(1000, offset=250)], (1000, 250)),
    ([SlidingWindow(10, 4, offset=1)], (2, 1)),
    ([SlidingWindow(10, 5), SlidingWindow(6, 3, offset=1)], (1, 0)),
    ([SlidingWindow(3_600_000, 600_000), SlidingWindow(600_000, 60_000, offset=-120_000)],
     (60_000, 0)),
    ([SlidingWindow(100, 10), OverWindow(50)], (1, 0)),
])
def test_slice_grid(specs: list[Any], grid: tuple[int, int]) -> None:
    assert slice_grid(specs) == grid


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 50), st.integers(-60, 60)),
                min_size=1, max_size=3), st.integers(-5, 5))
def test_every_window_start_and_end_is_a_slice_boundary(
        params: list[tuple[int, int, int]], j: int) -> None:
    specs = [SlidingWindow(max(r, s), min(r, s), o) for r, s, o in params]
    g, base = slice_grid(specs)
    assert 0 <= base < g
    for spec in specs:
        start = spec.offset + j * spec.slide
        assert (start - base) % g == 0 and (start + spec.range - base) % g == 0


# ----------------------------------------------------------------------------- cost
def counted_sum() -> tuple[Aggregation, list[int]]:
    calls = [0]

    def combine(a: int, b: int) -> int:
        calls[0] += 1
        return a + b
    return Aggregation(combine=combine, identity=0, name="csum"), calls


@pytest.mark.parametrize("slide", [1000, 100, 10])
def test_one_combine_per_event_whatever_the_slide(slide: int) -> None:
    """10,000 events in 1 s windows: per-window assignment would combine each event into
    1000 / slide windows; slicing folds it once, plus a few combines per slice."""
    agg, calls = counted_sum()
    driver = WindowDriver({"windows": [{"kind": "sliding", "range": 1000, "slide": slide}],
                           "aggregations": {"s": ("v", agg)}, "allowed_lateness": 0})
    rows = []
    for start in range(0, 10_000, 500):  # batches of 500 events, 1 per ms
        out = driver.process("k", [(t, {"v": 1}) for t in range(start, start + 500)],
                             watermark=start)
        rows.extend(out.rows)
    rows.extend(driver.advance_watermark("k", "end").rows)
    assert all(r["s"] == r["end"] - max(r["start"], 0) - max(r["end"] - 10_000, 0)
               for r in rows)
    slices = 10_000 // slide
    assert calls[0] <= 10_000 + 4 * slices


def test_structure_holds_slices_not_events() -> None:
    driver = WindowDriver({"windows": [{"kind": "sliding", "range": 3_600_000,
                                        "slide": 600_000}],
                           "aggregations": {"m": {"fn": "mean", "field": "v"}}})
    for start in range(0, 7_200_000, 60_000):
        driver.process("k", [(t, {"v": 1.0}) for t in range(start, start + 60_000, 1000)],
                       watermark=start)
        # at most 6 complete slices of 10 minutes, never the ~3,600 events of an hour
        assert len(driver.key_store.cached("k").lanes[0].w) <= 6


# ----------------------------------------------------------------------------- kernels
def kernel_mode(driver: WindowDriver) -> bool:
    lane = driver._lanes[0]
    return isinstance(lane, TimeLane) and lane.kernels is not None


def test_kernels_are_used_only_where_they_are_exact() -> None:
    sliding = [{"kind": "sliding", "range": 100, "slide": 10}]
    q = {"windows": sliding, "aggregations": {"m": {"fn": "max", "field": "v"},
                                               "a": {"fn": "mean", "field": "w"}}}
    assert kernel_mode(WindowDriver(q))
    counted = {"n": {"fn": "count"}, "m": {"fn": "max", "field": "v"}}  # count of events
    assert kernel_mode(WindowDriver(dict(q, aggregations=counted)))
    # count of a field skipping missing values: the buffer's None is exactly "missing"
    of_field = {"m": {"fn": "max", "field": "v"}, "c": {"fn": "count", "field": "v"}}
    assert kernel_mode(WindowDriver(dict(q, aggregations=of_field)))
    for aggs, nulls in (({"c": {"fn": "collect", "field": "v"}}, "skip"),
                        (of_field, "error"),  # counts NaN, which the buffer holds as None
                        ({"m": ("v", Mean())}, "skip")):  # not made from the fn table
        assert not kernel_mode(WindowDriver(dict(q, aggregations=aggs, nulls=nulls)))
    for windows in ([*sliding, {"kind": "count", "size": 3}], [{"kind": "over", "range": 5}],
                    [{"kind": "sliding", "range": 10, "slide": 3}]):  # slices of 1 ms
        assert not kernel_mode(WindowDriver(dict(q, windows=windows)))


numbers = st.one_of(st.integers(-10, 10),
                    st.sampled_from([0.0, -0.0, 1.0, 1, 2.5, -2.5, math.inf, -math.inf]),
                    st.floats(-1e6, 1e6, allow_nan=False), st.floats(allow_nan=False))


@settings(max_examples=150)
@given(st.lists(st.tuples(st.integers(0, 200), numbers), min_size=1, max_size=60),
       st.lists(st.integers(0, 220), max_size=6), st.sampled_from([("max", 40, 20),
                                                                   ("mean", 40, 10),
                                                                   ("sum", 30, 30),
                                                                   ("min", 50, 25),
                                                                   ("count", 40, 20),
                                                                   ("all", 60, 20)]))
def test_kernels_give_bit_identical_rows(events: list[tuple[int, Any]], marks: list[int],
                                         case: tuple[str, int, int]) -> None:
    """The kernel fold does the same Python operations in the same order as lift +
    combine: rows are identical (==, and the same types), not just close."""
    from adapters.query.builtins import BUILTINS
    fn, range_, slide = case
    window = [{"kind": "sliding", "range": range_, "slide": slide}]
    if fn == "count":
        fast_aggs: dict[str, Any] = {"x": {"fn": "count"}}
        slow_aggs: dict[str, Any] = {"x": Count()}
    elif fn == "all":  # several outputs, count of events among them
        fast_aggs = {"n": {"fn": "count"}, "a": {"fn": "mean", "field": "v"},
                     "m": {"fn": "max", "field": "v"}}
        slow_aggs = {"n": Count(), "a": ("v", Mean()), "m": ("v", BUILTINS["max"].monoid())}
    else:
        fast_aggs = {"x": {"fn": fn, "field": "v"}}
        slow_aggs = {"x": ("v", BUILTINS[fn].monoid())}
    fast = WindowDriver({"windows": window, "aggregations": fast_aggs})
    slow = WindowDriver({"windows": window, "aggregations": slow_aggs})
    assert kernel_mode(fast) and not kernel_mode(slow)
    got: dict[str, list[Any]] = {"fast": [], "slow": []}
    for name, driver in (("fast", fast), ("slow", slow)):
        chunks = [events[i::3] for i in range(3)]
        for chunk, mark in zip(chunks, [*sorted(marks), None, None]):
            out = driver.process("k", [(t, {"v": v}) for t, v in chunk], watermark=mark)
            got[name].extend(out.rows)
        got[name].extend(driver.advance_watermark("k", "end").rows)
    assert [repr(r) for r in got["fast"]] == [repr(r) for r in got["slow"]]


def test_non_finite_values_take_the_exact_path() -> None:
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": {"m": {"fn": "max", "field": "v"},
                                            "s": {"fn": "sum", "field": "v"}}})
    driver.process("k", [(1, {"v": math.inf}), (2, {"v": 1.0}), (11, {"v": -math.inf})])
    rows = driver.advance_watermark("k", "end").rows
    assert [(r["m"], r["s"]) for r in rows] == [(math.inf, math.inf), (-math.inf, -math.inf)]


@pytest.mark.parametrize("nulls", ["skip", "error"])
def test_both_infinities_in_one_slice_give_nan(nulls: str) -> None:
    """+inf and -inf in one slice: sum and mean are NaN, as lift + combine give (the
    kernels' fsum passes refuse that mix; they must fall back, not fail the key)."""
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}], "nulls": nulls,
                           "aggregations": {"s": {"fn": "sum", "field": "v"},
                                            "a": {"fn": "mean", "field": "v"}}},
                          columnar=False)
    driver.process("k", [(1, {"v": math.inf}), (2, {"v": -math.inf}), (3, {"v": 1.0})])
    (row,) = driver.advance_watermark("k", "end").rows
    assert math.isnan(row["s"]) and math.isnan(row["a"])


# ----------------------------------------------------------------------------- open slices
SCENARIO_AGGS = {"ids": {"fn": "collect", "field": "id"}, "mx": {"fn": "max", "field": "v"},
                 "mean": {"fn": "mean", "field": "v"}}


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 120), st.integers(-5, 5)), min_size=1, max_size=40),
       st.lists(st.integers(0, 130), min_size=1, max_size=8),
       st.sampled_from([(60, 20, 0), (60, 15, 7), (40, 40, -3), (50, 10, 5)]),
       st.sets(st.integers(0, 20), max_size=5), st.booleans())
def test_slices_released_in_pieces_match_brute_force(
        events: list[tuple[int, int]], marks: list[int], spec: tuple[int, int, int],
        restarts: set[int], one_aggregation: bool) -> None:
    """Watermarks inside slices: a slice's events are released over several calls (the open
    slice), then completed; restarts in between refold the open slice from the log."""
    r, s, o = spec
    aggs = {"ids": SCENARIO_AGGS["ids"]} if one_aggregation else SCENARIO_AGGS
    steps: list[dict[str, Any]] = []
    i = 0
    for mark in sorted(marks):
        batch = events[i:i + 5]
        i += 5
        steps.append({"events": [["k", t, {"id": n, "v": v}]
                                 for n, (t, v) in enumerate(batch, start=i)]})
        steps.append({"watermark": mark})
    steps.append({"events": [["k", t, {"id": -n, "v": v}] for n, (t, v) in
                             enumerate(events[i:], start=1)]})
    steps.append({"watermark": "end"})
    query = {"windows": [{"kind": "sliding", "range": r, "slide": s, "offset": o}],
             "aggregations": aggs, "allowed_lateness": 3}
    want_steps, want_late = brute_force(query, steps)
    result = run_steps(query, steps, restart_after=restarts)
    for k, (got, want) in enumerate(zip(result.step_rows, want_steps)):
        assert_same_rows(got, want, f"step {k}")
    assert result.late == want_late


# ----------------------------------------------------------------------------- intake
def test_late_events_in_a_batch_are_set_aside_unvalidated() -> None:
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": {"m": {"fn": "mean", "field": "v"}}})
    driver.process("k", [(20, {"v": 1.0})], watermark=15)
    out = driver.process("k", [(16, {"v": 2.0}), (3, {"bad": None}), (25, {"v": 3.0}),
                               (14, "not even a dict")])
    assert [(e.time, e.value) for e in out.late] == [(3, {"bad": None}),
                                                     (14, "not even a dict")]
    rows = driver.advance_watermark("k", "end").rows
    assert [(r["start"], r["m"]) for r in rows] == [(10, 2.0), (20, 2.0)]


def test_unusual_batches_give_the_same_results() -> None:
    """Shapes the fast path does not take (mixed keys, mixed types, non-dict values, times
    beyond 64 bits) give what one call per event gives."""
    q = {"windows": [{"kind": "tumbling", "size": 10 ** 20}],
         "aggregations": {"n": {"fn": "count"}, "ids": {"fn": "collect", "field": "id"}}}
    batch = [(5, {"id": 1, "x": 1.5}), (2 ** 70, {"id": 2}), (7, {"id": (3, 4), "y": None}),
             (9, {"id": "é", "x": math.nan}), (8, {"id": 5, "x": 2})]
    together, alone = WindowDriver(q), WindowDriver(q)
    together.process("k", batch)
    for event in batch:
        alone.process("k", [event])
    want = alone.advance_watermark("k", "end").rows
    assert repr(together.advance_watermark("k", "end").rows) == repr(want)


# ----------------------------------------------------------------------------- state
def test_state_of_another_codec_version_is_refused_and_left_alone() -> None:
    """Only codec version 2 is read: metadata of version 1 gets an error naming the format,
    the version found and the one supported, and the key's state is not touched."""
    q = {"windows": [{"kind": "sliding", "range": 10, "slide": 5}],
         "aggregations": {"ids": {"fn": "collect", "field": "id"},
                          "m": {"fn": "mean", "field": "v"}}}
    fingerprint = WindowDriver(q).query.fingerprint
    state = MemoryKeyState()
    state.put_meta(json.dumps({"codec": 1, "q": fingerprint, "n": 1, "wm": 6, "seq": 4,
                               "rel": 2, "late": 1, "pol": []},
                              separators=(",", ":")).encode())
    state.add_events([(t, seq, json.dumps({"id": seq, "v": v}).encode())
                      for t, seq, v in [(3, 0, 0.5), (5, 1, 1.5), (7, 2, 2.5), (12, 3, 3.5)]])
    meta, entries = state.get_meta(), list(state.entries())
    with pytest.raises(StateError, match=r"codec version 1 is unknown.* reads codec version 2"):
        WindowDriver(q).process("k", [(9, {"id": 4, "v": 4.5})], state)
    assert state.get_meta() == meta and list(state.entries()) == entries


def test_memory_key_state_keeps_the_log_sorted() -> None:
    state = MemoryKeyState()
    state.add_events([(5, 0, b"a"), (1, 1, b"b")])
    state.add_events([(3, 2, b"c"), (9, 3, b"d"), (5, 4, b"e")])
    state.add_events([(10, 5, b"f")])
    assert [(t, s) for t, s, _ in state.entries()] == [(1, 1), (3, 2), (5, 0), (5, 4),
                                                       (9, 3), (10, 5)]
    state.remove_events(5, [(1, 1), (3, 2)])
    assert len(state) == 4 and state.entries_removed == 2
    with pytest.raises(AssertionError, match="differ"):
        state.remove_events(6, [(5, 0)])  # (5, 4) is before 6 too
    with pytest.raises(TypeError, match="int time"):
        state.add_events([(1.5, 9, b"x")])  # type: ignore[list-item]
    loose = MemoryKeyState(strict=False)
    loose.add_events([(2, 0, b"xy")])
    assert loose.bytes_written == 18


@settings(max_examples=200)
@given(st.lists(st.lists(st.integers(0, 20), max_size=20), max_size=8))
def test_append_sorted(batches: list[list[int]]) -> None:
    """Batches of a few items (inserted one by one) and of many (merged): the log holds
    every item, by time, equal times in arrival order (``(time, arrival)`` order)."""
    log: list[tuple[int, int]] = []
    appended: list[tuple[int, int]] = []
    n = 0
    for times in batches:
        batch = sorted(((t, n + i) for i, t in enumerate(times)), key=lambda e: e[0])
        n += len(times)
        appended.extend(batch)
        if batch:
            append_sorted(log, list(batch))
    assert log == sorted(appended)


def test_segments_after_restarts_drop_what_was_evicted() -> None:
    """A segment whose newest event is still needed keeps older events that were already
    evicted; a rebuild must not put them back into the windows."""
    q = {"windows": [{"kind": "sliding", "range": 20, "slide": 10}],
         "aggregations": {"ids": {"fn": "collect", "field": "id"}}}
    steps = [{"events": [["k", 1, {"id": 1}], ["k", 55, {"id": 2}]]},
             {"watermark": 40}, {"events": [["k", 41, {"id": 3}]]}, {"watermark": "end"}]
    plain = run_steps(q, steps)
    restarted = run_steps(q, steps, restart_after={1, 2})
    assert plain.rows == restarted.rows
    assert [r["ids"] for r in plain.rows] == [[1], [1], [3], [3, 2], [2]]
