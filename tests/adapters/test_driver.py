"""Driver semantics on small worked examples: timers, peers, ordering, policies, bulk
operations, many keys, algorithm selection."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

import adapters
from adapters import (
    END_OF_INPUT,
    MemoryKeyState,
    MemoryStateBackend,
    OverWindow,
    PolicyWindow,
    Query,
    SlidingWindow,
    TumblingWindow,
    WindowDriver,
    choose_algorithm,
    run_steps,
)
from swag_core import Aggregation, AlgorithmMismatchError, product
from swag_core.aggregations import Count, Max, Sum

MAX_V = {"mx": {"fn": "max", "field": "v"}}
IDS = {"ids": {"fn": "collect", "field": "id"}}


def test_docstring_example() -> None:
    assert doctest.testmod(adapters, raise_on_error=True).attempted > 0


def test_timers_are_exact() -> None:
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": MAX_V, "allowed_lateness": 5})
    assert driver.process("k", [(3, {"v": 1})]).next_timer == 15
    out = driver.advance_watermark("k", 14)
    assert out.rows == [] and out.next_timer == 15
    out = driver.process("k", [(12, {"v": 4})])
    assert out.next_timer == 15
    out = driver.advance_watermark("k", 15)
    assert out.rows == [{"window": 0, "key": "k", "start": 0, "end": 10, "mx": 1}]
    assert out.next_timer == 25
    out = driver.advance_watermark("k", END_OF_INPUT)
    assert [r["start"] for r in out.rows] == [10] and out.next_timer is None


def test_sliding_timer_with_offset_and_gaps() -> None:
    driver = WindowDriver(Query.build([SlidingWindow(10, 4, offset=1)], MAX_V))
    # windows holding 3: [-3, 7) and [1, 11)
    assert driver.process("k", [(3, {"v": 1})]).next_timer == 7
    out = driver.advance_watermark("k", 7)
    assert [(r["start"], r["end"]) for r in out.rows] == [(-3, 7)]
    assert out.next_timer == 11
    # an event far ahead: after [1, 11) the next non-empty window ends at 1001 + 4 - ...
    driver.process("k", [(1000, {"v": 2})])
    out = driver.advance_watermark("k", 11)
    assert [(r["start"], r["end"]) for r in out.rows] == [(1, 11)]
    assert out.next_timer == 1003  # first window holding 1000 is [993, 1003)
    out = driver.advance_watermark("k", 5000)
    assert [(r["start"], r["end"]) for r in out.rows] == [(993, 1003), (997, 1007)]


def test_over_window_peers_and_range() -> None:
    driver = WindowDriver(Query.build([OverWindow(5)], IDS))
    out = driver.process("k", [(10, {"id": "b"}), (4, {"id": "x"}), (5, {"id": "a"}),
                               (10, {"id": "c"})])
    assert out.next_timer == 5
    out = driver.advance_watermark("k", END_OF_INPUT)
    assert [(r["time"], r["event"]["id"], r["ids"]) for r in out.rows] == [
        (4, "x", ["x"]), (5, "a", ["x", "a"]), (10, "b", ["a", "b", "c"]),
        (10, "c", ["a", "b", "c"])]


def test_count_window_orders_by_time_then_arrival() -> None:
    driver = WindowDriver({"windows": [{"kind": "count", "size": 2, "every": 2}],
                           "aggregations": IDS})
    driver.process("k", [(5, {"id": "c"}), (1, {"id": "a"}), (5, {"id": "d"}),
                         (3, {"id": "b"}), (9, {"id": "e"})])
    out = driver.advance_watermark("k", 6)
    assert out.rows == [{"window": 0, "key": "k", "start": 1, "end": 4, "ids": ["a", "b"]},
                        {"window": 0, "key": "k", "start": 5, "end": 6, "ids": ["c", "d"]}]
    assert out.next_timer == 10


def test_programmable_policy_mta_listing_1() -> None:
    """MTA paper Listing 1: evict what is an hour older than the newest update."""
    last_time = Aggregation(combine=lambda a, b: a if b is None else b, identity=None,
                            lift=lambda tv: tv[0], name="last_time")
    policy = PolicyWindow(measure=last_time,
                          rule=lambda total, old: total - old >= 3_600_000)
    driver = WindowDriver(Query.build([policy], {"n": {"fn": "count"}, **IDS}))
    driver.process("k", [(0, {"id": 0}), (1000, {"id": 1}), (3_600_000, {"id": 2})])
    rows = driver.advance_watermark("k", END_OF_INPUT).rows
    assert rows[-1] == {"window": 0, "key": "k", "start": 1000, "end": 3_600_001, "n": 2,
                        "ids": [1, 2]}


def test_policy_keeps_the_newest_event_even_over_the_limit() -> None:
    q = {"windows": [{"kind": "policy", "measure": "sum", "field": "v", "limit": 10.5}],
         "aggregations": {"vs": {"fn": "collect", "field": "v"}}}
    res = run_steps(q, [{"events": [["k", 1, {"v": 5}], ["k", 2, {"v": 5.5}],
                                    ["k", 3, {"v": 20}], ["k", 4, {"v": 0.1}]]},
                        {"watermark": "end"}])
    assert [r["vs"] for r in res.rows] == [[5], [5, 5.5], [20], [0.1]]


def test_released_events_enter_as_slices() -> None:
    """Stream slicing: the structure holds one entry per slice, not per event; a release
    inserts the completed slices (one structure insert here) and evicts them in bulk."""
    driver = WindowDriver(Query.build([TumblingWindow(1000)], MAX_V))
    state = MemoryStateBackend().key_state("k")
    driver.process("k", [(t, {"v": t}) for t in range(999, -1, -1)], state)
    window = driver.key_store.cached("k").lanes[0].w  # the key's structure
    calls: dict[str, list[Any]] = {"bulk_insert": [], "insert": [], "bulk_evict": []}
    for name in calls:
        original = getattr(window, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> Any:
            args = tuple(list(a) if isinstance(a, zip) else a for a in args)
            calls[_name].append(args)
            return _original(*args)
        setattr(window, name, spy)
    out = driver.advance_watermark("k", 1000, state)
    assert out.rows == [{"window": 0, "key": "k", "start": 0, "end": 1000, "mx": 999}]
    inserted = [args for args in calls["insert"]] + \
        [pair for args in calls["bulk_insert"] for pair in args[0]]
    assert inserted == [(0, 999)]  # one slice [0, 1000): its partial max
    assert calls["bulk_evict"][-1] == (999,) and len(window) == 0


def test_sliding_slices_hold_one_entry_per_slice() -> None:
    """range 60, slide 20: slices of 20 ms; 600 events in 60 ms windows never make the
    structure hold more than 60 / 20 = 3 entries."""
    q = {"windows": [{"kind": "sliding", "range": 60, "slide": 20}], "aggregations": IDS}
    driver = WindowDriver(q)
    lane = driver._lanes[0]
    assert (lane.width, lane.base) == (20, 0)  # type: ignore[union-attr]
    sizes = []
    rows = []
    for t in range(0, 600, 7):
        out = driver.process("k", [(t, {"id": t})], watermark=t)
        rows.extend(out.rows)
        sizes.append(len(driver.key_store.cached("k").lanes[0].w))
    rows.extend(driver.advance_watermark("k", "end").rows)
    assert max(sizes) <= 3
    for row in rows:  # every window is exactly its events, in time order
        assert row["ids"] == [t for t in range(0, 600, 7) if row["start"] <= t < row["end"]]


def test_many_keys_in_one_call() -> None:
    backend = MemoryStateBackend()
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": {"s": {"fn": "sum", "field": "v"}}})
    out = driver.process_batch([(k, t, {"v": t}) for t in range(15) for k in ("a", "b", 3)],
                               backend)
    assert out.timers == {"a": 10, "b": 10, 3: 10}
    with pytest.raises(ValueError, match="one-key"):
        _ = out.next_timer
    out = driver.advance_keys(["a", "b", 3], 10, backend)
    assert sorted((str(r["key"]), r["s"]) for r in out.rows) == [("3", 45), ("a", 45),
                                                                 ("b", 45)]
    assert out.timers == {"a": 20, "b": 20, 3: 20}


def test_watermark_regression_is_ignored() -> None:
    driver = WindowDriver(Query.build([TumblingWindow(10)], MAX_V))
    driver.process("k", [(1, {"v": 1})], watermark=5)
    out = driver.advance_watermark("k", 3)
    assert out.rows == [] and driver.info("k").watermark == 5
    out = driver.process("k", [(4, {"v": 1})])
    assert [e.time for e in out.late] == [4]


def test_several_windows_share_one_structure() -> None:
    q = Query.build([SlidingWindow(3_600_000, 60_000), SlidingWindow(600_000, 60_000),
                     OverWindow(60_000), TumblingWindow(60_000)], MAX_V)
    driver = WindowDriver(q)
    assert len(driver.structures) == 1
    kind, windows, algorithm = driver.structures[0]
    assert kind == "time" and windows == (0, 1, 2, 3)
    from swag_core import ALGORITHMS
    assert ALGORITHMS[algorithm].range_queries


def test_forced_fifo_algorithm_splits_structures() -> None:
    q = Query.build([SlidingWindow(100, 10), OverWindow(50)], MAX_V)
    driver = WindowDriver(q, algorithm="two_stacks_lite")
    assert driver.structures == [("time", (0,), "two_stacks_lite"),
                                 ("time", (1,), "two_stacks_lite")]
    with pytest.raises(AlgorithmMismatchError, match="soe"):
        WindowDriver(q, algorithm="soe")  # max cannot be subtracted


def test_choose_algorithm_table() -> None:
    both = product({"m": Max(), "s": Sum()})
    assert choose_algorithm(Max()) == "slickdeque"
    assert choose_algorithm(both) == "two_stacks_lite"
    assert choose_algorithm(Count()) == "two_stacks_lite"  # soe only when forced
    assert choose_algorithm(Max(), range_queries=True) == "slickdeque"
    assert choose_algorithm(both, range_queries=True) == "fiba"
    assert choose_algorithm(both, policy=True) == "amta"
    assert choose_algorithm(both, in_order=False) == "fiba"
    assert choose_algorithm(Count(), forced="soe") == "soe"
    with pytest.raises(AlgorithmMismatchError, match="query_since"):
        choose_algorithm(both, range_queries=True, forced="daba")
    with pytest.raises(AlgorithmMismatchError, match="enforce"):
        choose_algorithm(both, policy=True, forced="fiba")
    with pytest.raises(KeyError, match="unknown window algorithm"):
        choose_algorithm(both, forced="nope")


def test_run_scenario_reports_rows_per_step_and_late_counts() -> None:
    scenario = {
        "name": "tiny", "description": "", "tags": [],
        "query": {"windows": [{"kind": "tumbling", "size": 10}],
                  "aggregations": {"s": {"fn": "sum", "field": "v"}}, "allowed_lateness": 0},
        "steps": [{"events": [["a", 1, {"v": 1}], [2, 5, {"v": 2}]]}, {"watermark": 10},
                  {"events": [["a", 3, {"v": 9}], ["a", 12, {"v": 4}]]},
                  {"watermark": "end"}],
        "expect_error": None,
    }
    result = adapters.run_scenario(scenario)
    assert [len(rows) for rows in result.step_rows] == [0, 2, 0, 1]
    assert result.late == {"a": 1}
    assert sorted((str(r["key"]), r["start"], r["s"]) for r in result.rows) == [
        ("2", 0, 2), ("a", 0, 1), ("a", 10, 4)]
    bad = dict(scenario, steps=[{"events": [["a", None, {"v": 1}]]}])
    with pytest.raises(adapters.BadEventError, match="null"):
        adapters.run_scenario(bad)


def test_out_of_order_events_are_buffered_unsorted_and_sorted_once_at_release() -> None:
    """One event per call, newest first, while the watermark stands still (Beam/Flink with a
    lagging watermark): each call appends in O(1); the buffer is sorted once, when released,
    and the windows are exactly those of the sorted stream."""
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 100}],
                           "aggregations": {"vs": {"fn": "collect", "field": "v"}}})
    state = MemoryKeyState()
    times = list(range(999, -1, -1))
    for t in times:
        driver.process("k", [(t, {"v": t})], state)
    rt = driver.key_store.cached("k")
    assert [r[0] for r in rt.pending] == times  # arrival order: nothing was re-sorted
    assert not rt.pending_sorted and rt.pending_min == 0
    out = driver.advance_watermark("k", 500, state)
    assert [r["vs"] for r in out.rows] == [list(range(s, s + 100)) for s in range(0, 500, 100)]
    assert rt.pending_sorted and rt.pending_min == 500
    assert driver.info("k", state).pending == 500
    out = driver.advance_watermark("k", "end", state)
    assert [r["start"] for r in out.rows] == [500, 600, 700, 800, 900]
