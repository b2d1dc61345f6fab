"""The NumPy columnar intake of ``process_batch`` (``adapters.crosskey.columnar``) changes nothing
observable: same rows, late events, timers and restart behaviour as the general path, and
log entries that decode to the same events in the same (time, arrival) order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adapters.crosskey.columnar as columnar
from adapters import MemoryStateBackend, WindowDriver
from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.state.codec import decode_entry, encode_entry, encode_float_record_segment

pytest.importorskip("numpy")


@pytest.fixture(autouse=True)
def _per_key_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This file tests the per-key path's columnar intake; queries the cross-key batch
    runtime covers would take that instead (tested in ``test_batch_runtime.py``)."""
    monkeypatch.setattr(BatchRuntime, "for_query", classmethod(lambda cls, *a: None))


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
    "mean+min, two windows": {
        "windows": [{"kind": "sliding", "range": 50, "slide": 10, "offset": 5},
                    {"kind": "tumbling", "size": 30}],
        "aggregations": {"avg": {"fn": "mean", "field": FIELD},
                         "lo": {"fn": "min", "field": FIELD}},
        "allowed_lateness": 7},
    "sum": {"windows": [{"kind": "tumbling", "size": 25}],
            "aggregations": {"s": {"fn": "sum", "field": FIELD}}},
    "count+mean+max": {"windows": [{"kind": "sliding", "range": 40, "slide": 10}],
                       "aggregations": {"n": {"fn": "count"},
                                        "avg": {"fn": "mean", "field": FIELD},
                                        "mx": {"fn": "max", "field": FIELD}}},
}

floats = st.one_of(st.sampled_from([0.0, -0.0, 1.5, -2.25, 3.0]),
                   st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
event = st.tuples(st.sampled_from(["a", "b", "c", 7]), st.integers(0, 400),
                  st.builds(lambda x: {FIELD: x}, floats))
irregular = st.sampled_from([
    ("a", 10, {FIELD: 1}),                   # an int value
    ("b", 11, {FIELD: 1.0, "other": 2}),     # a second field
    ("c", 12, {FIELD: float("nan")}),        # NaN: the lifts decide (an error for max)
    ("a", 2**70, {FIELD: 1.0}),              # a time beyond 64 bits
    ("b", 13.5, {FIELD: 1.0}),               # a float time
    ("c", 14),                               # not a triple: too short ...
    ("a", 15, {FIELD: 1.0}, "extra"),        # ... or too long
])
# small batches take the general path; columnar.MIN_BATCH and more, the columnar one
batch = st.one_of(st.lists(event, max_size=10),
                  st.lists(event, min_size=columnar.MIN_BATCH, max_size=160))


def _run(query: dict[str, Any], steps: list[tuple[list[Any], int]], columnar_on: bool,
         restart_at: int | None = None) -> tuple[list[Any], list[Any], list[Any], Any]:
    driver = WindowDriver(query, columnar=columnar_on)
    backend = MemoryStateBackend()
    rows: list[Any] = []
    late: list[Any] = []
    timers: list[Any] = []
    watermark = None
    for i, (events, mark) in enumerate(steps):
        if i == restart_at:
            driver = WindowDriver(query, columnar=columnar_on)  # rebuilt from state
        try:
            out = driver.process_batch(events, backend, watermark=watermark)
        except Exception as exc:  # the same error, state unchanged, on both paths
            rows.append(("error", type(exc).__name__, str(exc)))
            continue
        rows.extend(out.rows)
        late.extend((e.key, e.time, e.value) for e in out.late)
        timers.append(sorted(out.timers.items(), key=repr))
        watermark = mark
    out = driver.advance_keys(backend.keys(), "end", backend)
    rows.extend(out.rows)
    logs = {}
    stored = backend.keys()
    for key in stored:
        events = [e for entry in backend.key_state(key).entries() for e in decode_entry(*entry)]
        logs[repr(key)] = [(t, v) for t, _, v in sorted(events, key=lambda e: (e[0], e[1]))]
    return rows, late, timers, logs


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(QUERIES)),
       st.lists(st.tuples(batch, st.integers(0, 450)), min_size=1, max_size=5),
       st.one_of(st.none(), st.integers(0, 4)), st.data())
def test_same_results_as_the_general_path(name: str, steps: list[Any],
                                          restart_at: int | None, data: Any) -> None:
    if data.draw(st.booleans(), label="one irregular event"):
        i = data.draw(st.integers(0, len(steps) - 1))
        events, mark = steps[i]
        j = data.draw(st.integers(0, len(events)))
        steps[i] = ([*events[:j], data.draw(irregular), *events[j:]], mark)
    query = QUERIES[name]
    fast = _run(query, steps, True, restart_at)
    general = _run(query, steps, False, restart_at)
    assert fast[:3] == general[:3]
    assert fast[3] == general[3]  # the logs hold the same events in the same order


def test_large_batches_take_the_columnar_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = columnar.ColumnarIntake.accept

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return original(self, *args, **kwargs)
    monkeypatch.setattr(columnar.ColumnarIntake, "accept", spy)
    driver = WindowDriver(QUERIES["max"])
    events = [("k", t, {FIELD: float(t % 7)}) for t in range(200)]
    driver.process_batch(events)
    assert calls == ["k"]
    driver.process_batch(events[:10])  # small: the general path
    assert calls == ["k"]
    driver.process_batch([*events, ("k", 5, {FIELD: 1})])  # one int value: general path
    assert calls == ["k"]


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
    # several fields: read for the cross-key batch runtime only (batches it refuses, e.g.
    # with a forced algorithm, take the general path, not the columnar split)
    intake = WindowDriver(two_fields)._columnar
    assert intake is not None and intake.fields == ("x", "y")
    assert intake.split([("k", t, {"x": 1.0, "y": 2.0}) for t in range(100)]) is None
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
    value beyond int64, or ints mixed with floats, is refused); :meth:`split` leaves it to
    the general path. Its log segment is what ``encode_entry`` writes."""
    import numpy as np

    from adapters.state.codec import encode_float_records_segment

    intake = columnar.ColumnarIntake(FIELD, [True])
    events = [("k", t, {FIELD: (-1) ** t * (2**62 + t)}) for t in range(100)]
    cols = intake.read(events)
    assert cols is not None and cols.ints == (True,) and cols.values.dtype == np.int64
    assert cols.values.tolist() == [v[FIELD] for _, _, v in events]
    assert intake.split(events) is None
    assert intake.read([*events, ("k", 5, {FIELD: 2**63})]) is None
    assert intake.read([*events, ("k", 5, {FIELD: 1.5})]) is None
    assert intake.read([*events, ("k", 5, {FIELD: True})]) is None
    times = [3, 1, 2]
    ints, floats = [2**63 - 1, -(2**63), 0], [0.5, -0.0, 1e300]
    data = encode_float_records_segment(
        ("w", FIELD), 3, np.array(times, "<i8").tobytes(),
        [ints, np.array(floats, "<f8").tobytes()])
    assert data == encode_entry(times, [{"w": i, FIELD: x} for i, x in zip(ints, floats)])
