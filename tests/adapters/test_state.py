"""State layout: bounded writes per event, eviction of the log, rebuild after restarts, stale
caches, codec versions and query fingerprints."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters import (
    CODEC_VERSION,
    MemoryKeyState,
    MemoryStateBackend,
    StateError,
    WindowDriver,
    run_steps,
)
from adapters.state.codec import decode_meta

MAX_V = {"mx": {"fn": "max", "field": "v"}}


def _steady_bytes_per_event(window_events: int, measured: int = 1000) -> tuple[float, float]:
    """Per-event state bytes written and log entries removed, once an OVER window holds
    ``window_events`` events (one event per ms, watermark right behind the events, one event
    per call as on Flink).

    Both runs first stream the same 110,010 events, so that the counters in the metadata have
    the same number of digits: only the window size differs. The oldest go in one call (one
    log entry, a segment); the last ``window_events + 10`` one per call, so that the segment
    is gone before the measurement. The log layout is pinned (``layout="memory"``): with
    ``"auto"`` a window of 10^5 events moves to the KVS layout, whose log keeps pending
    events only.
    """
    driver = WindowDriver({"windows": [{"kind": "over", "range": window_events - 1}],
                           "aggregations": MAX_V, "layout": "memory"})
    state = MemoryKeyState()
    fill = 110_010
    bulk = fill - window_events - 10
    driver.process("k", [(t, {"v": t % 97}) for t in range(bulk)], state)
    for t in range(bulk, fill):
        driver.process("k", [(t, {"v": t % 97})], state, watermark=t)
    assert len(state) == window_events  # the window really holds that many events
    written, removed = state.bytes_written, state.entries_removed
    for t in range(fill, fill + measured):
        out = driver.process("k", [(t, {"v": t % 97})], state, watermark=t)
        assert len(out.rows) == 1  # the previous event's row
    assert len(state) == window_events
    return ((state.bytes_written - written) / measured,
            (state.entries_removed - removed) / measured)


def test_state_bytes_per_event_do_not_grow_with_the_window() -> None:
    small, removed_small = _steady_bytes_per_event(1_000)
    large, removed_large = _steady_bytes_per_event(100_000)
    # one log entry (16 + ~10 bytes) and one small metadata value per event, whatever the
    # window holds (a snapshot of the window would be ~10^6 bytes per event at 10^5)
    assert abs(large - small) <= 1, (small, large)
    assert large < 200, large
    assert removed_small == removed_large == 1.0


def test_a_call_writes_one_log_entry() -> None:
    """Several events of one call share one log entry (a segment), written once and removed
    once, when its newest event is no longer needed."""
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 100}],
                           "aggregations": MAX_V})
    state = MemoryKeyState()
    driver.process("k", [(t, {"v": float(t)}) for t in (5, 150, 20)], state)
    assert len(state) == 1
    (entry,) = state.entries()
    assert entry[:2] == (150, 0)  # newest time, first arrival number
    assert len(entry[2]) < 3 * 24  # packed: about 16 bytes per event
    out = driver.advance_watermark("k", 100, state)
    assert [r["mx"] for r in out.rows] == [20.0]
    assert len(state) == 1  # the event at 150 still needs the entry
    driver.advance_watermark("k", 200, state)
    assert len(state) == 0


def test_log_holds_only_what_windows_need() -> None:
    driver = WindowDriver({"windows": [{"kind": "sliding", "range": 100, "slide": 10}],
                           "aggregations": MAX_V})
    state = MemoryKeyState()
    for t in range(0, 1000):
        driver.process("k", [(t, {"v": t})], state, watermark=t)
    # released events older than the next window's start (990 + 10 - 100 = 900) are gone
    times = [e[0] for e in state.entries()]
    assert times[0] == 900 and times[-1] == 999 and len(times) == 100
    out = driver.advance_watermark("k", "end", state)
    assert [r["end"] for r in out.rows] == list(range(1000, 1100, 10))
    assert len(state) == 0
    assert out.next_timer is None


def test_count_window_keeps_size_minus_one_events() -> None:
    driver = WindowDriver({"windows": [{"kind": "count", "size": 5, "every": 2}],
                           "aggregations": {"n": {"fn": "count"}}})
    state = MemoryKeyState()
    for t in range(50):
        driver.process("k", [(t, {})], state, watermark=t)
    assert [e[0] for e in state.entries()] == [45, 46, 47, 48, 49]  # 4 released + 1 pending


def test_restored_older_checkpoint_is_detected() -> None:
    """The same driver instance (warm cache) must not use its cache after the engine restores
    the key's state from an older checkpoint: the metadata nonce differs."""
    q = {"windows": [{"kind": "tumbling", "size": 10}],
         "aggregations": {"ids": {"fn": "collect", "field": "id"}}}
    driver = WindowDriver(q)
    state = MemoryKeyState()
    driver.process("k", [(1, {"id": 1})], state)
    checkpoint = state.copy()
    driver.process("k", [(2, {"id": 2})], state)
    # restart from the checkpoint: event 2 is replayed as event 3
    out = driver.process("k", [(3, {"id": 3})], checkpoint)
    out = driver.advance_watermark("k", 10, checkpoint)
    assert out.rows == [{"window": 0, "key": "k", "start": 0, "end": 10, "ids": [1, 3]}]


def test_query_change_is_refused_but_aggregation_change_is_fine() -> None:
    backend = MemoryStateBackend()
    q = {"windows": [{"kind": "tumbling", "size": 10}], "aggregations": MAX_V}
    WindowDriver(q, backend=backend).process("k", [(1, {"v": 1}), (12, {"v": 5})])
    other = dict(q, aggregations={"s": {"fn": "sum", "field": "v"}})
    out = WindowDriver(other, backend=backend).advance_watermark("k", "end")
    assert [r["s"] for r in out.rows] == [1, 5]
    changed = dict(q, windows=[{"kind": "tumbling", "size": 20}])
    with pytest.raises(StateError, match="different windows"):
        WindowDriver(changed, backend=backend).advance_watermark("k", "end")


def test_unknown_codec_version_is_refused() -> None:
    state = MemoryKeyState()
    driver = WindowDriver({"windows": [{"kind": "over", "range": 5}], "aggregations": MAX_V})
    driver.process("k", [(1, {"v": 1})], state)
    meta = json.loads(state.get_meta())  # type: ignore[arg-type]
    meta["codec"] = 99
    state.put_meta(json.dumps(meta).encode())
    with pytest.raises(StateError, match="codec version 99"):
        WindowDriver({"windows": [{"kind": "over", "range": 5}],
                      "aggregations": MAX_V}).process("k", [], state)


def test_metadata_is_small_and_versioned() -> None:
    state = MemoryKeyState()
    driver = WindowDriver({"windows": [{"kind": "over", "range": 5},
                                       {"kind": "policy", "measure": "count", "limit": 3}],
                           "aggregations": MAX_V}, )
    driver.process("k", [(1, {"v": 1}), (2, {"v": 2})], state, watermark=1)
    meta = decode_meta(state.get_meta())  # type: ignore[arg-type]
    assert meta["codec"] == CODEC_VERSION == 2
    assert meta["wm"] == 1 and meta["seq"] == 2 and meta["late"] == 0
    assert len(state.get_meta() or b"") < 150


def test_info_reports_metrics() -> None:
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": MAX_V, "allowed_lateness": 5})
    driver.process("k", [(3, {"v": 1}), (30, {"v": 2})], watermark=25)  # 3 < 25 - 5: late
    info = driver.info("k")
    assert (info.watermark, info.late, info.released, info.pending) == (25, 1, 0, 1)


def test_restart_at_every_step_of_a_policy_scenario() -> None:
    # MTA paper section 3.2: keep the newest events whose sum is <= 10
    q: dict[str, Any] = {
        "windows": [{"kind": "policy", "measure": "sum", "field": "v", "limit": 10}],
        "aggregations": {"mx": {"fn": "max", "field": "v"},
                         "vs": {"fn": "collect", "field": "v"}}}
    steps: list[dict[str, Any]] = [{"events": [["k", t, {"v": v}]]} for t, v in
                                   enumerate([2, 2, 3, 3, 4])]
    steps.append({"watermark": "end"})
    plain = run_steps(q, steps)
    restarted = run_steps(q, steps, restart_after=set(range(len(steps))))
    assert plain.rows == restarted.rows
    assert plain.rows[-1] == {"window": 0, "key": "k", "start": 2, "end": 5, "mx": 4,
                              "vs": [3, 3, 4]}


def test_metadata_is_the_documented_json() -> None:
    from adapters.state.codec import encode_meta

    state = MemoryKeyState()
    driver = WindowDriver({"windows": [{"kind": "count", "size": 2},
                                       {"kind": "policy", "measure": "count", "limit": 3},
                                       {"kind": "policy", "measure": "span", "limit": 3}],
                           "aggregations": MAX_V, "allowed_lateness": 2})
    driver.process("k", [(1, {"v": 1}), (2, {"v": 2}), (0, {"v": 0})], state, watermark=3)
    meta = decode_meta(state.get_meta())  # type: ignore[arg-type]
    assert list(meta) == ["codec", "q", "n", "wm", "seq", "rel", "late", "pol"]
    assert encode_meta(meta) == state.get_meta()
    assert (meta["wm"], meta["seq"], meta["rel"], meta["late"], meta["pol"]) == (
        3, 2, 0, 1, [0, 0])
    driver.advance_watermark("k", "end", state)
    meta = decode_meta(state.get_meta())  # type: ignore[arg-type]
    assert (meta["wm"], meta["rel"], meta["pol"]) == ("end", 2, [2, 2])


def test_transient_state_gives_the_same_rows_without_a_log() -> None:
    """A TransientKeyState (batch runs): same rows as durable state, no log written, and a
    key whose structures are gone cannot be rebuilt from it: a clear StateError."""
    from adapters import TransientKeyState

    query = {"windows": [{"kind": "sliding", "range": 100, "slide": 10},
                         {"kind": "over", "range": 30}],
             "aggregations": {"mx": {"fn": "max", "field": "v"},
                              "vs": {"fn": "collect", "field": "v"}}}
    events = [(t * 7 % 500, {"v": float(t % 13)}) for t in range(400)]
    rows = {}
    for name, state in (("durable", MemoryKeyState()), ("transient", TransientKeyState())):
        driver = WindowDriver(query)
        out = driver.process("k", events[:200], state, watermark=100)
        if name == "durable":
            assert len(state) > 0  # the events are in its log (trimmed later, at "end")
        out.extend(driver.process("k", events[200:], state, watermark=300))
        out.extend(driver.advance_watermark("k", "end", state))
        rows[name] = out.rows
    assert rows["transient"] == rows["durable"] and rows["durable"]

    driver = WindowDriver(query)
    state = TransientKeyState()
    driver.process("k", events[:10], state)
    with pytest.raises(StateError, match="keeps no event log"):
        state.add_events([(1, 0, b"x")])
    driver.drop_cache("k")
    with pytest.raises(StateError, match="cannot be rebuilt"):
        driver.advance_watermark("k", "end", state)
