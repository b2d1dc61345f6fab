"""The compiled batch reader (``adapters/crosskey/_batch_reader.c``) reads exactly what the Python
reader reads: :meth:`ColumnarIntake.read` (compiled first, Python for what it leaves) and
:meth:`ColumnarIntake.read_python` give the same columns, or both ``None``, for any batch;
the compiled reader itself takes every regular batch of tuples (so the comparison is not
the Python reader's with itself) and leaves no reference behind."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters.crosskey.columnar as columnar
from adapters.crosskey.columnar import MIN_BATCH, BatchColumns, ColumnarIntake

np = pytest.importorskip("numpy")

FIELD = "v"
reader = columnar.compiled_reader
needs_reader = pytest.mark.skipif(reader is None,
                                  reason="adapters.crosskey._batch_reader not built")


def _can_compile() -> bool:
    """A C compiler and the Python headers: `pip install` then builds the reader."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(cc) is not None and os.path.exists(headers)


def test_the_reader_is_built_where_it_can_be() -> None:
    """setup.py marks the extension optional (a failed build is only a warning): this
    catches a build that fails where it should not."""
    if not _can_compile():
        pytest.skip("no C compiler or Python headers: the Python reader runs")
    assert reader is not None, "a compiler exists but adapters.crosskey._batch_reader is not built"


def _same(a: BatchColumns | None, b: BatchColumns | None) -> None:
    if a is None or b is None:
        assert a is b
        return
    assert a.keys == b.keys and [type(k) for k in a.keys] == [type(k) for k in b.keys]
    assert all(x is y for x, y in zip(a.keys, b.keys))  # the first-seen key objects
    for name in ("codes", "times", "values"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert x.tobytes() == y.tobytes(), name  # bit for bit: -0.0 stays -0.0
    assert a.events is b.events


class _Key:
    """A hashable key object: equality by name (two objects, one key)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and other.name == self.name


floats = st.one_of(st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308]),
                   st.floats(allow_nan=False, allow_infinity=False))
keys = st.one_of(st.sampled_from(["a", "b", 7, 7.0, True, (1, "x"), None]),
                 st.builds(_Key, st.sampled_from(["p", "q"])))
regular = st.tuples(keys, st.integers(-2**63, 2**63 - 1), st.builds(lambda x: {FIELD: x}, floats))


class _Float(float):
    pass


IRREGULAR = [
    ["a", 1, {FIELD: 1.0}],                  # a list, not a tuple: the Python reader's call
    ("a", 2**63, {FIELD: 1.0}),              # a time beyond int64
    ("a", -2**63 - 1, {FIELD: 1.0}),
    ("a", True, {FIELD: 1.0}),               # a bool time
    ("a", 1.0, {FIELD: 1.0}),                # a float time
    ("a", 1, {FIELD: 1}),                    # an int value
    ("a", 1, {FIELD: True}),
    ("a", 1, {FIELD: _Float(1.0)}),          # a float subclass
    ("a", 1, {FIELD: float("nan")}),
    ("a", 1, {FIELD: float("-inf")}),
    ("a", 1, {FIELD: 1.0, "w": 2.0}),        # another field
    ("a", 1, {"w": 1.0}),                    # not the field
    ("a", 1, {}),
    ("a", 1, [1.0]),                         # not a dict
    ("a", 1),                                # not a triple
    ("a", 1, {FIELD: 1.0}, 0),
    ([1], 1, {FIELD: 1.0}),                  # an unhashable key
]
irregular = st.sampled_from(IRREGULAR)


@given(st.lists(regular, min_size=MIN_BATCH, max_size=300),
       st.lists(st.tuples(st.integers(0, 299), irregular), max_size=2))
def test_same_columns_as_the_python_reader(events: list[Any],
                                           bad: list[tuple[int, Any]]) -> None:
    for at, event in bad:
        events.insert(at % (len(events) + 1), event)
    intake = ColumnarIntake(FIELD)
    _same(intake.read(events), intake.read_python(events))


@needs_reader
@given(st.lists(regular, min_size=1, max_size=300))
def test_the_compiled_reader_takes_every_regular_batch(events: list[Any]) -> None:
    got = reader.read_columns(events, FIELD)
    assert got is not None
    first_seen, codes, times, values = got
    assert first_seen == list(dict.fromkeys(e[0] for e in events))
    assert np.frombuffer(codes, np.intp).tolist() == \
        [first_seen.index(e[0]) for e in events]
    assert np.frombuffer(times, np.int64).tolist() == [e[1] for e in events]
    assert np.frombuffer(values, np.float64).tobytes() == \
        np.array([e[2][FIELD] for e in events], np.float64).tobytes()
    # a tuple of events, and a tuple subclass as an event, read alike
    assert reader.read_columns(tuple(events), FIELD) == got


@needs_reader
@pytest.mark.parametrize("bad", IRREGULAR)
def test_the_compiled_reader_leaves_every_irregular_event(bad: Any) -> None:
    events = [("a", 1, {FIELD: 1.0})] * 10
    events[5] = bad
    assert reader.read_columns(events, FIELD) is None


class _Raises:
    """A key whose hash raises ``error``."""

    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def __hash__(self) -> int:
        raise self.error("no hash")


@pytest.mark.parametrize("error, outcome", [(TypeError, None), (ValueError, None),
                                            (RuntimeError, RuntimeError)])
def test_a_key_whose_hash_raises(error: type[Exception], outcome: Any) -> None:
    """The compiled reader leaves the batch; the Python reader then refuses it (``None``:
    the general path reports the key) or the key's own error is raised, as without the
    compiled reader."""
    events = [("a", 1, {FIELD: 1.0})] * MIN_BATCH + [(_Raises(error), 2, {FIELD: 1.0})]
    intake = ColumnarIntake(FIELD)
    if outcome is None:
        assert intake.read(events) is None and intake.read_python(events) is None
    else:
        with pytest.raises(outcome):
            intake.read(events)
        with pytest.raises(outcome):
            intake.read_python(events)


@needs_reader
def test_a_key_that_empties_the_batch_while_read() -> None:
    """The reader works on a private tuple of the events: a key's ``__eq__`` that clears
    the list cannot make it read freed events."""
    events: list[Any] = []

    class Clearing(_Key):
        __hash__ = _Key.__hash__

        def __eq__(self, other: object) -> bool:
            events.clear()
            return super().__eq__(other)

    events.extend((Clearing("p"), t, {FIELD: float(t)}) for t in range(MIN_BATCH))
    got = reader.read_columns(events, FIELD)
    assert got is not None and len(got[0]) == 1
    assert np.frombuffer(got[2], np.int64).tolist() == list(range(MIN_BATCH))


@needs_reader
def test_no_reference_is_leaked() -> None:
    key, value = "k-leak", 1.25
    taken = [(key, t, {FIELD: value}) for t in range(100)]
    left = [*taken[:50], (key, 1.5, {FIELD: value}), *taken[50:]]
    before = sys.getrefcount(key), sys.getrefcount(value)
    for _ in range(1000):
        assert reader.read_columns(taken, FIELD) is not None
        assert reader.read_columns(left, FIELD) is None
    assert (sys.getrefcount(key), sys.getrefcount(value)) == before


@needs_reader
def test_columns_are_writable_arrays() -> None:
    events = [("a", t, {FIELD: 1.0}) for t in range(MIN_BATCH)]
    cols = ColumnarIntake(FIELD).read(events)
    assert cols is not None
    assert cols.codes.flags.writeable and cols.times.flags.writeable
    assert cols.values.flags.writeable


@needs_reader
def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="read_columns"):
        reader.read_columns([], b"v")
    with pytest.raises(TypeError):
        reader.read_columns(5, FIELD)
