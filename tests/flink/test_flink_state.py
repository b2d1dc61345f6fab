"""``FlinkKeyState`` over stand-ins of Flink's ``ValueState`` / ``MapState`` (no job): the
driver's ``KeyState`` contract, and the guard against PyFlink's empty MapState iteration."""

from __future__ import annotations

from typing import Any

import pytest

from adapters import MemoryKeyState, StateError, WindowDriver
from flink_adapter.state import FlinkKeyState


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
