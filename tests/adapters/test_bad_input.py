"""Bad input raises an error naming the field and key, and leaves every key's state intact;
late events are never lost."""

from __future__ import annotations

import math
from typing import Any

import pytest

from adapters import BadEventError, MemoryStateBackend, WindowDriver

QUERY = {"windows": [{"kind": "tumbling", "size": 10}, {"kind": "over", "range": 5},
                     {"kind": "policy", "measure": "sum", "field": "w", "limit": 4}],
         "aggregations": {"mx": {"fn": "max", "field": "v"},
                          "g": {"fn": "geomean", "field": "p"},
                          "ids": {"fn": "collect", "field": "id"}},
         "nulls": "error"}


def good(i: int) -> dict[str, Any]:
    return {"id": i, "v": i, "p": 1 + i, "w": 1}


def snapshot(backend: MemoryStateBackend) -> dict[Any, tuple[Any, ...]]:
    return {k: (s.get_meta(), s.entries()) for k, s in backend.snapshot().items()}


@pytest.mark.parametrize(("time", "value", "field", "message"), [
    (None, good(1), "time", "null"),
    ("12:00", good(1), "time", "not an integer"),
    (1.5, good(1), "time", "not an integer"),
    (math.nan, good(1), "time", "not an integer"),
    (True, good(1), "time", "null|not an integer"),
    (5, {"id": 1, "v": None, "p": 2, "w": 1}, "v", "cannot be aggregated by output 'mx'"),
    (5, {"id": 1, "v": math.nan, "p": 2, "w": 1}, "v", "NaN"),
    (5, {"id": 1, "v": "x", "p": -2, "w": 1}, "p", "positive"),
    (5, {"id": 1, "p": 2, "w": 1}, "v", "no field 'v'"),
    (5, {"id": 1, "v": 1, "p": 2, "w": -1}, "w", "non-negative"),
    (5, {"id": 1, "v": 1, "p": 2}, "w", "missing"),
    (5, {"id": object(), "v": 1, "p": 2, "w": 1}, "id", "cannot store"),
])
def test_bad_event_names_field_and_key_and_changes_nothing(time: Any, value: Any, field: str,
                                                           message: str) -> None:
    backend = MemoryStateBackend()
    driver = WindowDriver(QUERY, backend=backend)
    driver.process_batch([("a", 1, good(1)), ("b", 2, good(2))], backend, watermark=0)
    before = snapshot(backend)
    with pytest.raises(BadEventError, match=message) as info:
        # key "a" is fine, key "b" carries the bad event after a good one
        driver.process_batch([("a", 3, good(3)), ("b", 4, good(4)), ("b", time, value)],
                             backend, watermark=2)
    assert info.value.key == "b"
    assert info.value.field == field
    assert "'b'" in str(info.value)
    assert snapshot(backend) == before
    # the driver goes on as if the failed call never happened
    driver.process_batch([("a", 3, good(3))], backend)
    out = driver.advance_keys(["a", "b"], "end", backend)
    assert sorted(r["ids"] for r in out.rows if r["window"] == 0) == [[1, 3], [2]]


def test_a_failing_user_aggregation_leaves_state_and_cache_consistent() -> None:
    from swag_core import Aggregation

    def combine(a: int, b: int) -> int:
        if a + b > 100:
            raise OverflowError("too big")
        return a + b

    agg = Aggregation(combine=combine, identity=0, name="small_sum")
    backend = MemoryStateBackend()
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
                           "aggregations": {"s": agg}}, backend=backend)
    driver.process("k", [(1, 60), (2, 50)])
    before = snapshot(backend)
    with pytest.raises(OverflowError):
        driver.advance_watermark("k", 10)
    assert snapshot(backend) == before
    assert driver.info("k").pending == 2


def test_bad_watermark() -> None:
    driver = WindowDriver(QUERY)
    with pytest.raises(BadEventError, match="watermark"):
        driver.advance_watermark("k", "soon")
    with pytest.raises(BadEventError, match="watermark"):
        driver.process("k", [], watermark=math.nan)


def test_time_forms_accepted() -> None:
    import numpy as np

    driver = WindowDriver({"windows": [{"kind": "over", "range": 0}],
                           "aggregations": {"n": {"fn": "count"}}})
    driver.process("k", [(np.int64(5), {}), ("6", {}), (7.0, {}), (" 8 ", {})])
    out = driver.advance_watermark("k", "end")
    assert [r["time"] for r in out.rows] == [5, 6, 7, 8]
    assert all(type(r["time"]) is int for r in out.rows)


def test_late_events_are_counted_returned_and_not_validated() -> None:
    driver = WindowDriver(dict(QUERY, allowed_lateness=5))
    out = driver.process("k", [(100, good(1))], watermark=100)
    assert out.late == []
    # 94 < 100 - 5: late, even with a value max cannot take; 95 is not late
    out = driver.process("k", [(94, {"v": None}), (95, good(2)), (10, good(3))])
    assert [(e.key, e.time) for e in out.late] == [("k", 94), ("k", 10)]
    assert out.late[0].value == {"v": None}
    assert driver.info("k").late == 2
    # the watermark regresses: ignored, 94 is still late
    out = driver.process("k", [(94, good(4))], watermark=50)
    assert len(out.late) == 1 and driver.info("k").late == 3
    rows = driver.advance_watermark("k", "end").rows
    assert sorted(r["ids"][0] for r in rows if r["window"] == 0) == [1, 2]


def test_events_must_be_pairs() -> None:
    driver = WindowDriver(QUERY)
    with pytest.raises(BadEventError, match="pairs"):
        driver.process("k", [(1, 2, 3)])  # type: ignore[list-item]
    with pytest.raises(BadEventError, match="triples"):
        driver.process_batch([("k", 1)])  # type: ignore[list-item]
