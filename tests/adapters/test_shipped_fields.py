"""Which input fields an engine ships to the driver (``adapters.engine.fields.shipped_fields``),
and the checked key, time and order-by fields of a call (``call_fields``)."""

from __future__ import annotations

import pytest

from adapters import parse_query
from adapters.engine.fields import call_fields, shipped_fields

FIELDS = ["note", "k", "delay", "t", "seat"]


def query(window, aggs):
    return parse_query({"windows": [window], "aggregations": aggs})


SLIDING = {"kind": "sliding", "range": 10, "slide": 5}


def test_only_the_read_fields_travel_with_the_key_and_time_fields_read():
    q = query(SLIDING, {"m": {"fn": "max", "field": "delay"}, "last": {"fn": "max", "field": "t"}})
    assert shipped_fields(q, FIELDS, ["k"], "t", every_field=False) == (["delay"],
                                                                        ["delay", "t"])


def test_every_field_travels_when_asked_or_when_the_driver_needs_whole_values():
    everything = (["note", "delay", "seat"], ["note", "delay", "seat"])
    q = query(SLIDING, {"m": {"fn": "max", "field": "delay"}})
    assert shipped_fields(q, FIELDS, ["k"], "t", every_field=True) == everything
    over = query({"kind": "over", "range": 10}, {"m": {"fn": "max", "field": "delay"}})
    assert shipped_fields(over, FIELDS, ["k"], "t", every_field=False) == everything


def test_a_read_field_the_input_lacks_is_named():
    q = query(SLIDING, {"m": {"fn": "max", "field": "gate"}})
    with pytest.raises(ValueError, match="'gate' is not in the input"):
        shipped_fields(q, FIELDS, ["k"], "t", every_field=False)


def test_call_fields_name_the_key_fields_and_refuse_what_the_input_lacks():
    assert call_fields(FIELDS, "k", "t") == ("k",)
    assert call_fields(FIELDS, ["k", "seat"], "t", order_by="note") == ("k", "seat")
    with pytest.raises(ValueError, match="at least one key"):
        call_fields(FIELDS, [], "t")
    with pytest.raises(ValueError, match=r"key column 'x' is not in the DataFrame \(columns: "
                                         r"note, k, delay, t, seat\)"):
        call_fields(FIELDS, ["k", "x"], "t", source="the DataFrame")
    with pytest.raises(ValueError, match="time column 'when' is not in the input"):
        call_fields(FIELDS, "k", "when")
    with pytest.raises(ValueError, match="order_by column 'seq'"):
        call_fields(FIELDS, "k", "t", order_by="seq")
    with pytest.raises(ValueError, match="column 't' cannot be both the key and the time"):
        call_fields(FIELDS, ["k", "t"], "t")
