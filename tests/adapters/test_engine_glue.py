"""The engine-free glue the engine adapters share: timer bookkeeping (``rearm``), the fields a
query reads (``fields_read``) and the columns of driver rows (``row_columns``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters import END_OF_INPUT, WindowDriver, parse_query
from adapters.engine.fields import FieldsRead, fields_read
from adapters.engine.rows import row_columns
from adapters.engine.timers import TimerChange, rearm
from swag_core import Aggregation

times = st.integers(-5, 5)


def apply(change: TimerChange | None, armed: set[int]) -> set[int]:
    """What a Flink- or Spark-like timer service (which can list its timers and delete one by
    time) holds after ``change``."""
    if change is None:
        return armed
    assert not change.clear_unknown
    assert set(change.delete) <= armed
    after = armed - set(change.delete)
    if change.register is not None:
        assert change.register not in after
        after.add(change.register)
    return after


@given(st.none() | times, st.sets(times, max_size=3))
def test_rearm_leaves_exactly_the_target_armed(target: int | None, armed: set[int]) -> None:
    change = rearm(target, armed)
    assert apply(change, set(armed)) == (set() if target is None else {target})
    # nothing is written when the target is already the only armed timer
    assert (change is None) == (armed == (set() if target is None else {target}))


@given(st.none() | times)
def test_rearm_with_unknown_armed_timers_always_writes(target: int | None) -> None:
    # Beam: its timer can be set (replacing the armed one) or cleared, not read back
    assert rearm(target, None) == TimerChange(register=target, clear_unknown=target is None)


def test_rearm_examples() -> None:
    assert rearm(10, (9,)) == TimerChange(delete=(9,), register=10)
    assert rearm(None, (9,)) == TimerChange(delete=(9,))
    assert rearm(10, ()) == TimerChange(register=10)
    assert rearm(10, (10,)) is None and rearm(None, ()) is None
    assert rearm(10, [3, 10, 4]) == TimerChange(delete=(3, 4))


def _query(windows: list, aggregations: dict) -> object:
    return parse_query({"windows": windows, "aggregations": aggregations})


TUMBLING = {"kind": "tumbling", "size": 10}


def test_fields_read_names_the_fields_the_driver_reads() -> None:
    q = _query([TUMBLING], {"m": {"fn": "max", "field": "v"}, "n": {"fn": "count"},
                            "a": {"fn": "argmax", "field": "w", "result": "id"}})
    assert fields_read(q) == FieldsRead(frozenset({"v", "w", "id"}), whole=False)
    policy = {"kind": "policy", "measure": "sum", "limit": 10, "field": "size"}
    q = _query([policy, {"kind": "count", "size": 3}], {"s": {"fn": "sum", "field": "v"}})
    assert fields_read(q) == FieldsRead(frozenset({"v", "size"}), whole=False)


def test_fields_read_needs_whole_values() -> None:
    custom = Aggregation(combine=max, identity=None, name="mx")
    whole_row = {"fn": "argmin", "field": "v"}
    for windows, aggs in (([{"kind": "over", "range": 5}], {"m": {"fn": "max", "field": "v"}}),
                          ([TUMBLING], {"c": ("v", custom), "m": {"fn": "max", "field": "k"}}),
                          ([TUMBLING], {"a": whole_row})):
        read = fields_read(_query(windows, aggs))
        assert read.whole, (windows, aggs)
        assert "v" in read.names or "k" in read.names  # named fields are still listed


def test_row_columns_match_the_driver_rows() -> None:
    over = {"kind": "over", "range": 5}
    aggs = {"top": {"fn": "max", "field": "v"}, "n": {"fn": "count"}}
    for windows, expected in (([TUMBLING], ("window", "key", "start", "end")),
                              ([over], ("window", "key", "time", "event")),
                              ([TUMBLING, over], ("window", "key", "start", "end", "time",
                                                  "event"))):
        query = _query(windows, aggs)
        assert row_columns(query) == (*expected, "top", "n")
        driver = WindowDriver(query)
        out = driver.process("k", [(1, {"v": 3})])
        out.extend(driver.advance_watermark("k", END_OF_INPUT))
        assert out.rows
        for row in out.rows:
            assert set(row) <= set(row_columns(query)), row
            assert list(row) == [c for c in row_columns(query) if c in row]
