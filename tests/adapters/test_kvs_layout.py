"""The driver's KVS layout (``adapters/driver/kvs_lanes.py``): per-event structures kept in
the key's pair map give the in-memory layout's rows, keep the log to pending events and the
runtime small, survive restarts and cache misses by reopening, and refuse state written for
another aggregation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from adapters import StateError, WindowDriver
from adapters.driver.kvs_lanes import CACHE_PAIRS
from adapters.state.backend import MemoryKeyState, MemoryStateBackend
from adapters.state.pairs import LANE_SHIFT, LOCAL, MemoryPairMap, decode_page, is_page
from swag_core import Aggregation
from swag_core.algorithms.mta_kvs import KvsAmta, KvsLogMta

OVER = {"kind": "over", "range": 1500}
AGGS = {"m": {"fn": "max", "field": "v"}, "ids": {"fn": "collect", "field": "v"}}


def stored_pairs(pair_map: MemoryPairMap) -> int:
    """The pairs a key's map holds (in pages of pair format 4, or one per map key)."""
    n = 0
    for k, v in pair_map.data.items():
        if k & ((1 << LANE_SHIFT) - 1) == LOCAL:
            continue
        n += len(decode_page(v)) if is_page(k) else 1
    return n


def _query(layout: str, algorithm: str | None = None, aggs: Any = None) -> dict[str, Any]:
    return {"windows": [OVER], "aggregations": aggs or {"m": {"fn": "max", "field": "v"}},
            "layout": layout, "algorithm": algorithm}


def _calls(n: int, keys: tuple[str, ...] = ("k",)) -> list[tuple[str, list[Any], int]]:
    """Calls of 25 events per key, round robin, the watermark trailing by 30 ms."""
    calls = []
    for start in range(0, n, 25):
        for key in keys:
            events = [(t, {"v": (t * 7919) % 10007}) for t in range(start, min(start + 25, n))]
            calls.append((key, events, start - 30))
    return calls


def _run(query: dict[str, Any], calls: list[Any], backend: MemoryStateBackend,
         driver: WindowDriver | None = None, **options: Any) -> list[Any]:
    driver = driver or WindowDriver(query, backend=backend, **options)
    rows = []
    for key, events, wm in calls:
        rows += driver.process(key, events, backend.key_state(key), watermark=wm).rows
    return rows


@pytest.mark.parametrize("algorithm,cls", [(None, KvsAmta), ("log_mta", KvsLogMta)])
def test_same_rows_small_log_small_runtime(algorithm: str | None, cls: type) -> None:
    """4,000 events, windows of about 1,500: the rows of the memory layout; the log keeps
    the entries with pending events only, the runtime a few released times, the structure
    O(log n) pairs locally (tails, a cache per level, the buffer) and the map the window's
    pairs."""
    calls = _calls(4000)
    memory = _run(_query("memory", algorithm), calls, MemoryStateBackend())
    backend = MemoryStateBackend()
    driver = WindowDriver(_query("kvs", algorithm), backend=backend)
    rows = _run(_query("kvs", algorithm), calls, backend, driver)
    assert rows == memory and len(rows) > 3900
    state = backend.key_state("k")
    assert len(state) <= 3
    rt = driver.key_store.cached("k")
    assert rt is not None
    assert len(rt.times) - rt.head <= 50
    w = rt.lanes[0].w
    assert type(w) is cls
    assert len(w) >= 1500
    h = math.log2(len(w)) + 2
    assert w.resident_pairs() <= 2 * h + CACHE_PAIRS * h + CACHE_PAIRS + 3
    assert stored_pairs(state.pair_map()) >= len(w) // 2


def test_restarts_and_cache_misses_reopen() -> None:
    """Two keys, a cache of one key (a reopen on every call) and a crash-restart from a
    snapshot half-way: the rows of the memory layout; the reopen reads no log entry."""
    calls = _calls(2000, ("a", "b"))
    memory = _run(_query("memory"), calls, MemoryStateBackend())
    backend = MemoryStateBackend()
    half = len(calls) // 2
    rows = _run(_query("kvs"), calls[:half], backend, max_cached_keys=1)
    restored = MemoryStateBackend.restore(backend.snapshot())
    rows += _run(_query("kvs"), calls[half:], restored, max_cached_keys=1)
    assert rows == memory
    for key in ("a", "b"):  # reopened from the map every call: the logs stayed short
        assert len(restored.key_state(key)) <= 3 and restored.key_state(key).pair_map().data


def test_auto_moves_large_structures() -> None:
    """``layout="auto"`` with a bounded cache: a key's structure moves to the map once it
    holds 1,024 entries; a small key's stays in memory; rows unchanged."""
    calls = _calls(2500, ("big",)) + _calls(100, ("small",))
    query = _query("auto")
    memory = _run({**query, "layout": "memory"}, calls, MemoryStateBackend())
    backend = MemoryStateBackend()
    driver = WindowDriver(query, backend=backend, max_cached_keys=5)
    assert _run(query, calls, backend, driver) == memory
    big, small = driver.key_store.cached("big"), driver.key_store.cached("small")
    assert big is not None and small is not None
    assert type(big.lanes[0].w) is KvsAmta and type(small.lanes[0].w) is not KvsAmta
    assert backend.key_state("big").pair_map().data
    assert not backend.key_state("small").pair_map().data


@pytest.mark.parametrize("other", [
    AGGS,                                                       # another aggregation
    {"m": {"fn": "max", "field": "w"}},                         # the same fn of another field
    {"m": {"fn": "max", "field": "v"}, "n": {"fn": "max", "field": "v"}},
    "error-nulls",                                              # other null handling
], ids=["aggregation", "field", "outputs", "nulls"])
def test_state_of_another_aggregation_is_refused(other: Any) -> None:
    """The map keeps aggregates, not events: a query whose aggregations compute something
    else (even the same fn of another field) is refused with an error naming the key."""
    backend = MemoryStateBackend()
    calls = [(key, [(t, {**v, "w": v["v"]}) for t, v in events], wm)
             for key, events, wm in _calls(200)]
    _run(_query("kvs"), calls, backend)
    query = _query("kvs") | {"nulls": "error"} if other == "error-nulls" else \
        _query("kvs", aggs=other)
    driver = WindowDriver(query, backend=backend)
    with pytest.raises(StateError, match=r"key 'k'.*stored for"):
        driver.process("k", [(500, {"v": 1, "w": 2})], backend.key_state("k"), watermark=480)


def test_renamed_output_keeps_the_state() -> None:
    """Output names are not part of what the map's aggregates depend on."""
    backend = MemoryStateBackend()
    _run(_query("kvs"), _calls(200), backend)
    renamed = WindowDriver(_query("kvs", aggs={"top": {"fn": "max", "field": "v"}}),
                           backend=backend)
    out = renamed.process("k", [(500, {"v": 1})], backend.key_state("k"), watermark=480)
    assert all("top" in row for row in out.rows) and out.rows


def test_failed_call_leaves_the_map_as_it_was() -> None:
    """A combine that fails half-way through a call: the key's map holds what the last
    completed call wrote (the call's pairs are written at its end only)."""
    def combine(a: int, b: int) -> int:
        if b < 0:
            raise ValueError("negative")
        return max(a, b)

    agg = Aggregation(combine=combine, identity=-1, name="strict_max")
    query = {"windows": [OVER], "aggregations": {"m": agg}, "layout": "kvs"}
    state = MemoryKeyState()
    driver = WindowDriver(query)
    driver.process("k", [(t, t % 50) for t in range(300)], state)
    assert driver.advance_watermark("k", 250, state).rows
    driver.process("k", [(300 + t, 5 - t) for t in range(200)], state)
    before = dict(state.pair_map().data)
    assert before
    with pytest.raises(ValueError, match="negative"):
        driver.advance_watermark("k", 499, state)
    assert state.pair_map().data == before


class FailingMeta(MemoryKeyState):
    """A state without transactions whose metadata write fails while ``fail`` is set."""

    fail = False

    def put_meta(self, data: bytes) -> None:
        if self.fail:
            raise OSError("disk full")
        super().put_meta(data)


def test_failed_meta_write_after_the_map_is_detected_at_reload() -> None:
    """A state without transactions whose metadata write fails after the map was written:
    the next reload refuses the key naming it, instead of replaying released events."""
    state = FailingMeta()
    driver = WindowDriver(_query("kvs"))
    driver.process("k", [(t, {"v": t % 50}) for t in range(300)], state)
    driver.advance_watermark("k", 100, state)
    state.fail = True
    with pytest.raises(OSError, match="disk full"):
        driver.advance_watermark("k", 250, state)
    state.fail = False
    with pytest.raises(StateError, match=r"key 'k'.*different calls"):
        WindowDriver(_query("kvs")).advance_watermark("k", 260, state)


def test_failed_meta_write_before_a_first_write_is_detected() -> None:
    """The same with a reload whose first map access is a write (inserts only): the mark is
    read before the write, so the failed call's pairs are not overwritten unnoticed."""
    state = FailingMeta()
    driver = WindowDriver(_query("kvs"))
    driver.process("k", [(t, {"v": t % 50}) for t in range(300)], state)
    driver.advance_watermark("k", 100, state)
    state.fail = True
    with pytest.raises(OSError, match="disk full"):
        driver.process("k", [(300 + t, {"v": t % 7}) for t in range(100)], state,
                       watermark=300)
    state.fail = False
    calls = state.pair_map().calls
    with pytest.raises(StateError, match=r"key 'k'.*different calls"):
        WindowDriver(_query("kvs")).process("k", [(400 + t, {"v": 1}) for t in range(100)],
                                            state, watermark=400)
    assert state.pair_map().calls == calls + 1  # the mark read, nothing written


def test_a_miss_reads_the_local_part_with_the_metadata() -> None:
    """A cache miss reopens the structure from the metadata value (its local part, with
    the write buffer and four head pairs per level): a call that inserts and evicts an
    entry touches the map only when a write buffer fills, pairs die or a head moves past
    what the local part holds, under one map call per miss on average; the rows equal those
    of the memory layout."""
    states = {layout: MemoryKeyState() for layout in ("kvs", "memory")}
    for layout, state in states.items():
        driver = WindowDriver(_query(layout))
        driver.process("k", [(t, {"v": (t * 7) % 101}) for t in range(2000)], state)
        driver.advance_watermark("k", 2000, state)
    calls = states["kvs"].pair_map().calls
    for t in range(2000, 2064):
        rows = [WindowDriver(_query(layout), max_cached_keys=1).process(
            "k", [(t, {"v": (t * 7) % 101})], state, watermark=t).rows
            for layout, state in states.items()]
        assert rows[0] == rows[1] and (rows[0] or t == 2000)
    assert states["kvs"].pair_map().calls - calls <= 64 * 3 // 4


def test_auto_keeps_partials_without_an_encoding_in_memory() -> None:
    """``auto`` moves a structure only if its partials have a codec encoding: a user
    aggregation whose partials are arbitrary objects stays in memory, rows unchanged."""
    class Box:
        __slots__ = ("x",)

        def __init__(self, x: float) -> None:
            self.x = x

    agg = Aggregation(combine=lambda a, b: a if a.x >= b.x else b, identity=Box(-math.inf),
                      lift=Box, lower=lambda b: b.x, name="boxed_max")
    query = {"windows": [OVER], "aggregations": {"m": agg}}
    backend = MemoryStateBackend()
    driver = WindowDriver(query, backend=backend, max_cached_keys=5)
    calls = [(k, [(t, e["v"]) for t, e in events], wm) for k, events, wm in _calls(2500)]
    rows = _run(query, calls, backend, driver)
    assert len(rows) > 2400 and not backend.key_state("k").pair_map().data



def test_process_batch_continues_a_kvs_key() -> None:
    """A key whose window is in its pair map (written under ``layout="kvs"``) and then driven
    through ``process_batch`` of an ``auto`` query (the per-key path: no cross-key runtime
    takes OVER windows) with cache drops gives the rows of the memory layout throughout."""
    def events(lo: int, hi: int) -> list[tuple[int, dict[str, float]]]:
        return [(t, {"v": float((t * 7919) % 1000)}) for t in range(lo, hi)]

    def run(first: str, then: str) -> list[Any]:
        over = {"windows": [{"kind": "over", "range": 5000}]}
        backend = MemoryStateBackend()
        writer = WindowDriver(_query(first) | over)
        rows = writer.process("a", events(0, 3000), backend.key_state("a"), watermark=0).rows
        rows += writer.advance_watermark("a", 3000, backend.key_state("a")).rows
        driver = WindowDriver(_query(then) | over, max_cached_keys=2)
        assert not driver.batch_runtime
        for lo in range(3000, 9000, 1000):
            if lo == 6000:
                driver.drop_cache()
            batch = [("a", t, v) for t, v in events(lo, lo + 1000)]
            rows += driver.process_batch(batch, backend, watermark=lo).rows
        return rows + driver.advance_watermark("a", 9001, backend.key_state("a")).rows

    expected = run("memory", "memory")
    assert len(expected) == 9000
    assert run("kvs", "auto") == expected


def test_layout_kvs_keeps_process_batch_on_the_per_key_path() -> None:
    """``layout="kvs"`` applies to keys driven by ``process_batch`` too: no cross-key OVER
    runtime (it keeps windows in arrays), the windows go to the pair maps."""
    driver = WindowDriver(_query("kvs"))
    assert not driver.batch_runtime
    backend = MemoryStateBackend()
    driver.process_batch([("k", t, {"v": t % 7}) for t in range(100)], backend, watermark=0)
    driver.advance_keys(["k"], 100, backend)
    assert backend.key_state("k").pair_map().data  # the window is in the map
    assert len(backend.key_state("k")) == 0        # and the log keeps no released event


def test_restart_with_layout_memory_keeps_a_moved_key_in_its_map() -> None:
    """A key whose structure is in its map (its log lacks the released events) keeps the KVS
    layout after a restart whose query says ``layout="memory"``: same rows as memory
    throughout."""
    # falling values: each window's max is its oldest event, which only the map holds
    calls = [(key, [(t, {"v": 10_000 - t}) for t, _ in events], wm)
             for key, events, wm in _calls(3000)]
    expected = _run(_query("memory"), calls, MemoryStateBackend())
    backend = MemoryStateBackend()
    rows = _run(_query("kvs"), calls[:60], backend)
    restored = MemoryStateBackend.restore(backend.snapshot())
    rows += _run(_query("memory"), calls[60:], restored)
    assert rows == expected
