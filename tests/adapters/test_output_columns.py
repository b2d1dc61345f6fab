"""The one output schema (``adapters.engine.rows.output_columns``) every engine gives."""

from __future__ import annotations

import pytest

from adapters import parse_query
from adapters.engine.rows import output_columns

MAX = {"m": {"fn": "max", "field": "delay"}}
SLIDING = {"kind": "sliding", "range": 10_000, "slide": 5_000}
OVER = {"kind": "over", "range": 3_600_000}


def columns(windows, fields, key_names=("k",), time_name="t", aggs=MAX):
    query = parse_query({"windows": windows, "aggregations": aggs})
    return output_columns(query, key_names=list(key_names), time_name=time_name,
                          event_fields=fields)


def test_one_range_window_gives_key_bounds_aggregates():
    out = columns([SLIDING], ["k", "t", "delay", "note"])
    assert out.names == ("k", "window_start", "window_end", "m")
    row = {"window": 0, "key": "a", "start": 0, "end": 10, "m": 7}
    assert out.values(row, dict.get) == ["a", 0, 10, 7]


def test_one_over_window_gives_the_event_as_it_came_then_aggregates():
    out = columns([OVER], ["note", "k", "delay", "t"])
    assert out.names == ("note", "k", "delay", "t", "m")
    row = {"window": 0, "key": "a", "time": 5, "event": {"note": "x", "delay": 3}, "m": 3}
    assert out.values(row, dict.get) == ["x", "a", 3, 5, 3]


def test_an_event_without_key_or_time_fields_gets_them_first():
    assert columns([OVER], ["delay"], key_names=["key"], time_name="time").names == (
        "key", "time", "delay", "m")
    assert columns([OVER], None, key_names=["key"], time_name="time").names == (
        "key", "time", "event", "m")


def test_several_specs_carry_the_window_index_and_both_kinds_of_columns():
    out = columns([OVER, SLIDING], ["k", "t", "delay", "note"])
    assert out.names == ("window", "k", "window_start", "window_end", "t", "delay", "note",
                         "m")
    range_row = {"window": 1, "key": "a", "start": 0, "end": 10, "m": 7}
    assert out.values(range_row, dict.get) == [1, "a", 0, 10, None, None, None, 7]
    assert columns([SLIDING, SLIDING], ["k", "t", "delay"]).names == (
        "window", "k", "window_start", "window_end", "m")


def test_several_key_columns_read_the_key_tuple():
    out = columns([SLIDING], ["a", "b", "t", "delay"], key_names=["a", "b"])
    assert out.names == ("a", "b", "window_start", "window_end", "m")
    row = {"window": 0, "key": ("x", 2), "start": 0, "end": 10, "m": 1}
    assert out.values(row, dict.get) == ["x", 2, 0, 10, 1]


def test_an_output_name_clashing_with_an_input_column_is_refused():
    with pytest.raises(ValueError, match=r"\['delay'\] appear twice"):
        columns([OVER], ["k", "t", "delay"], aggs={"delay": {"fn": "max", "field": "delay"}})


def test_rows_carrying_late_events_take_the_several_specs_form_with_the_event():
    out = output_columns(parse_query({"windows": [SLIDING], "aggregations": MAX}),
                         key_names=["k"], time_name="t", event_fields=["k", "t", "delay"],
                         late_events=True)
    assert out.names == ("window", "k", "window_start", "window_end", "t", "delay", "m")
