"""``SliceLayout.table_events``: a key's slice rows (an Arrow table) as driver events, with
the event path's error for a null time."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from adapters import BadEventError, parse_query  # noqa: E402
from adapters.engine.presliced import (  # noqa: E402
    COUNT,
    LONG,
    MAX,
    NON_NULL,
    START,
    partial_field,
    slice_layout,
)

QUERY = parse_query({"windows": [{"kind": "tumbling", "size": 10}],
                     "aggregations": {"n": {"fn": "count"}, "m": {"fn": "max", "field": "v"}}})


def layout():
    found = slice_layout(QUERY, {"v": LONG})
    assert not isinstance(found, str), found
    return found


def test_slice_rows_become_events_at_the_slice_start():
    table = pa.table({START: [0, 10], COUNT: [3, 1], f"{NON_NULL}0": [3, 0],
                      f"{MAX}0": [7, None]})
    events = layout().table_events(table, "k", "t")
    assert [t for t, _ in events] == [0, 10]
    first = events[0][1]
    assert first[partial_field("count", None)] == 3 and first[partial_field("max", "v")] == 7
    assert events[1][1][partial_field("max", "v")] is None


def test_a_null_slice_start_is_the_event_paths_null_time_error():
    table = pa.table({START: [None], COUNT: [1], f"{NON_NULL}0": [1], f"{MAX}0": [2]})
    with pytest.raises(BadEventError, match=r"'k'.*field 't'.*null"):
        layout().table_events(table, "k", "t")
