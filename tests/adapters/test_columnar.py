"""The NumPy columnar intake (``adapters.crosskey.columnar``), the cross-key runtime's batch
reader: it takes exactly the regular batches (a malformed event gives the general path's
error), and the log segments written from its columns are what ``encode_entry`` writes."""

from __future__ import annotations

from typing import Any

import pytest

import adapters.crosskey.columnar as columnar
from adapters import MemoryStateBackend, WindowDriver
from adapters.state.codec import encode_entry, encode_float_record_segment

pytest.importorskip("numpy")


@pytest.fixture(autouse=True, params=["compiled reader", "python reader"])
def _reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test with each reader of ``ColumnarIntake.read`` (the compiled one where it is
    built; ``test_batch_reader.py`` compares the two directly)."""
    if request.param == "python reader":
        monkeypatch.setattr(columnar, "compiled_reader", None)
    elif columnar.compiled_reader is None:
        pytest.skip("adapters.crosskey._batch_reader not built")

FIELD = "v"
QUERIES = {
    "max": {"windows": [{"kind": "sliding", "range": 60, "slide": 20}],
            "aggregations": {"mx": {"fn": "max", "field": FIELD}}},
}


@pytest.mark.parametrize("bad", [("k", 5), ("k", 5, {FIELD: 1.0}, "extra"), "k5v", None])
@pytest.mark.parametrize("position", [0, 100, 1023, 1024, 1299])
def test_a_malformed_event_is_refused_as_on_the_general_path(bad: Any, position: int) -> None:
    """One event that is not a ``(key, time, value)`` triple, anywhere in a large batch (the
    intake reads in chunks of 1024): the general path's error, and no state change."""
    events: list[Any] = [("k", t, {FIELD: float(t % 7)}) for t in range(1300)]
    events[position] = bad
    errors = []
    for columnar_on in (True, False):
        driver = WindowDriver(QUERIES["max"], columnar=columnar_on)
        backend = MemoryStateBackend()
        with pytest.raises(Exception) as caught:
            driver.process_batch(events, backend)
        errors.append((type(caught.value), str(caught.value)))
        touched = backend.keys()  # states may exist, but nothing was written
        assert all(backend.key_state(k).get_meta() is None and len(backend.key_state(k)) == 0
                   for k in touched)
    assert errors[0] == errors[1]


def test_not_used_without_numpy_or_for_uncovered_queries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert WindowDriver(QUERIES["max"])._columnar is not None
    assert WindowDriver(QUERIES["max"], columnar=False)._columnar is None
    collect = {"windows": [{"kind": "tumbling", "size": 10}],
               "aggregations": {"vs": {"fn": "collect", "field": FIELD}}}
    assert WindowDriver(collect)._columnar is None
    two_fields = {"windows": [{"kind": "tumbling", "size": 10}],
                  "aggregations": {"a": {"fn": "max", "field": "x"},
                                   "b": {"fn": "max", "field": "y"}}}
    intake = WindowDriver(two_fields)._columnar
    assert intake is not None and intake.fields == ("x", "y")
    assert WindowDriver(two_fields, algorithm="two_stacks")._batch is None
    monkeypatch.setattr(columnar, "np", None)
    assert WindowDriver(QUERIES["max"])._columnar is None


def test_segment_is_what_encode_entry_writes() -> None:
    import numpy as np

    times = [5, 5, 9, -3]
    xs = [1.5, -0.0, 2.0**60, 3.25]
    data = encode_float_record_segment(
        FIELD, 4, np.array(times, dtype="<i8").tobytes(), np.array(xs, dtype="<f8").tobytes())
    assert data == encode_entry(times, [{FIELD: x} for x in xs])


def test_segment_of_several_fields_is_what_encode_entry_writes() -> None:
    import numpy as np

    from adapters.state.codec import decode_entry, encode_float_records_segment

    times = [5, 5, 9, -3]
    xs = [1.5, -0.0, 2.0**60, 3.25]
    ys = [0.0, 7.5, -1e300, 5e-324]
    data = encode_float_records_segment(
        ("w", FIELD), 4, np.array(times, dtype="<i8").tobytes(),
        [np.array(ys, dtype="<f8").tobytes(), np.array(xs, dtype="<f8").tobytes()])
    events = [{"w": y, FIELD: x} for x, y in zip(xs, ys)]
    assert data == encode_entry(times, events)
    decoded = decode_entry(9, 0, data)
    assert decoded == list(zip(times, range(4), events))
    assert [list(v) for _, _, v in decoded] == [["w", FIELD]] * 4  # the key order kept


def test_int_columns_for_the_batch_runtime_only() -> None:
    """A batch of int values is read as an int64 column (the cross-key batch runtime's; a
    value beyond int64, or ints mixed with floats, is refused). Its log segment is what
    ``encode_entry`` writes."""
    import numpy as np

    from adapters.state.codec import encode_float_records_segment

    intake = columnar.ColumnarIntake(FIELD)
    events = [("k", t, {FIELD: (-1) ** t * (2**62 + t)}) for t in range(100)]
    cols = intake.read(events)
    assert cols is not None and cols.ints == (True,) and cols.values.dtype == np.int64
    assert cols.values.tolist() == [v[FIELD] for _, _, v in events]
    assert intake.read([*events, ("k", 5, {FIELD: 2**63})]) is None
    assert intake.read([*events, ("k", 5, {FIELD: 1.5})]) is None
    assert intake.read([*events, ("k", 5, {FIELD: True})]) is None
    times = [3, 1, 2]
    ints, floats = [2**63 - 1, -(2**63), 0], [0.5, -0.0, 1e300]
    data = encode_float_records_segment(
        ("w", FIELD), 3, np.array(times, "<i8").tobytes(),
        [ints, np.array(floats, "<f8").tobytes()])
    assert data == encode_entry(times, [{"w": i, FIELD: x} for i, x in zip(ints, floats)])
