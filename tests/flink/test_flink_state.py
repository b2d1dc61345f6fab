"""``FlinkKeyState`` over stand-ins of Flink's ``ValueState`` / ``MapState`` (no job): the
driver's ``KeyState`` contract, and the guard against PyFlink's empty MapState iteration."""

from __future__ import annotations

from typing import Any

import pytest

from adapters import MemoryKeyState, StateError, WindowDriver
from adapters.state.pairs import decode_page, is_page
from flink_adapter.state import MISSING, FlinkKeyState, FlinkPairMap, KeyCache


class Value:
    def __init__(self) -> None:
        self.v: Any = None

    def value(self) -> Any:
        return self.v

    def update(self, v: Any) -> None:
        self.v = v


class Map(dict):  # type: ignore[type-arg]
    """``MapState``'s methods on a dict; ``broken`` iterates as empty (PyFlink in BATCH
    on_timer)."""

    broken = False

    def put(self, k: Any, v: Any) -> None:
        self[k] = v

    def remove(self, k: Any) -> None:
        del self[k]

    def is_empty(self) -> bool:
        return not dict.__len__(self)

    def items(self) -> Any:
        return [] if self.broken else list(dict.items(self))


QUERY = {"windows": [{"kind": "sliding", "range": 30, "slide": 10}],
         "aggregations": {"s": {"fn": "sum", "field": "v"}, "ids": {"fn": "collect",
                                                                   "field": "v"}}}


def _run(state: Any, fresh_driver_each_call: bool) -> list[dict[str, Any]]:
    rows = []
    driver = WindowDriver(QUERY)
    for i, t in enumerate([5, 3, 12, 40, 41, 77, 20, 95]):
        if fresh_driver_each_call:
            driver = WindowDriver(QUERY)  # every call a cache miss: rebuilt from the log
        rows += driver.process("k", [(t, {"v": i})], state, watermark=t - 10).rows
    return rows + driver.advance_watermark("k", "end", state).rows


def test_rebuilds_from_map_state_like_the_reference_state() -> None:
    flink = FlinkKeyState(Value(), Map())
    assert _run(flink, True) == _run(MemoryKeyState(), False)
    assert flink.log == {}  # every entry removed once no window needs it


def test_an_empty_iteration_of_a_non_empty_map_raises() -> None:
    log = Map()
    state = FlinkKeyState(Value(), log)
    WindowDriver(QUERY).process("k", [(5, {"v": 1})], state)
    log.broken = True
    with pytest.raises(StateError, match="BATCH"):
        WindowDriver(QUERY).advance_watermark("k", "end", state)


class CountingValue(Value):
    reads = 0

    def value(self) -> Any:
        self.reads += 1
        return super().value()


def test_the_metadata_copy_follows_the_state_per_key() -> None:
    meta = CountingValue()
    state = FlinkKeyState(meta, Map())
    state.key = "a"
    assert state.get_meta() is None and meta.reads == 1
    state.put_meta(b"1")
    assert state.get_meta() == b"1" and meta.reads == 1  # served by the copy
    state.key = "b"  # Flink scopes the state to the new key: a different value
    meta.v = b"b-state"
    assert state.get_meta() == b"b-state" and meta.reads == 2
    state.key = "a"
    meta.v = b"1"
    assert state.get_meta() == b"1" and meta.reads == 2


def test_the_copy_refills_from_the_state_past_its_bound() -> None:
    cache = KeyCache(limit=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("b", 3)  # a known key never evicts
    assert (cache.get("a"), cache.get("b")) == (1, 3)
    cache.put("c", 4)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (MISSING, MISSING, 4)


def test_rebuilds_from_map_state_with_the_metadata_copy() -> None:
    flink = FlinkKeyState(Value(), Map())
    flink.key = "k"
    assert _run(flink, True) == _run(MemoryKeyState(), False)


OVER_KVS = {"windows": [{"kind": "over", "range": 2_000}],
            "aggregations": {"mx": {"fn": "max", "field": "v"}}, "layout": "kvs"}


def test_the_kvs_layout_keeps_its_pages_in_the_pairs_map_state() -> None:
    """``layout="kvs"`` over the ``swag_pairs`` stand-in, every call a cache miss: the rows
    of the memory layout on the reference state; the window's pairs are in the map, in pages
    (pair format 4), and the log keeps only entries with pending events."""
    def run(state: Any, query: dict[str, Any]) -> list[Any]:
        rows = []
        for c in range(0, 6_000, 250):
            events = [(t, {"v": (t * 7919) % 10_007}) for t in range(c, c + 250)]
            rows += WindowDriver(query).process("k", events, state, watermark=c - 1).rows
        return rows

    pairs, log = Map(), Map()
    flink = FlinkKeyState(Value(), log, pairs)
    assert isinstance(flink.pair_map(), FlinkPairMap)
    assert FlinkKeyState(Value(), Map()).pair_map() is None
    memory = {**OVER_KVS, "layout": "memory"}
    reference = MemoryKeyState()
    assert run(flink, OVER_KVS) == run(reference, memory)
    pages = [k for k in pairs if is_page(k)]
    assert pages and all(decode_page(bytes(pairs[k])) for k in pages)
    assert len(log) <= 2
    end = [WindowDriver(q).advance_watermark("k", "end", s).rows
           for q, s in ((OVER_KVS, flink), (memory, reference))]
    assert end[0] == end[1] and end[0]
