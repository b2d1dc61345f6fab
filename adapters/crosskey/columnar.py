"""Columnar intake of a whole micro-batch with NumPy: reads the batches the cross-key
batch runtime (:mod:`adapters.crosskey.batch_runtime`) takes into columns.

What it reads: a batch of at least :data:`MIN_BATCH` events ``(key, int time, {field:
value, ...})`` whose dicts hold exactly the query's kernel fields, each field all finite
floats or all ints (int64) over the batch (:meth:`ColumnarIntake.read`). Anything else, and
any batch with one irregular event, gives ``None``: the general per-key path
(:class:`adapters.driver.intake.Intake`) then runs and reports bad events, so results and
errors never depend on which path ran. Without NumPy the general path always runs.

How: each event is read once, in arrival order: in one C pass by the compiled reader
(``adapters/crosskey/_batch_reader.c``, one float field, where it is built), else with
``operator.itemgetter`` and one ``numpy.array`` per column, in chunks that stay in the CPU
cache; :func:`key_time_order` then orders a batch by key and time for the runtime.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from adapters.driver.intake import Intake
from adapters.state.codec import encode_float_record_segment, encode_float_records_segment

try:  # optional: engines ship NumPy, the core does not need it
    import numpy as np
except ImportError:  # pragma: no cover - exercised by the fallback test with a stub
    np = None  # type: ignore[assignment]

try:  # optional: compiled by `pip install` where a C compiler exists (setup.py)
    from adapters.crosskey import _batch_reader as compiled_reader
except ImportError:  # pragma: no cover - the tests run both readers where it is built
    compiled_reader = None  # type: ignore[assignment]

#: Batches smaller than this take the general path (array set-up would cost more).
MIN_BATCH = 64
#: Events checked per pass (a few hundred KB of objects: stays in the CPU cache).
_CHUNK = 1024
#: Batches with fewer distinct keys get int16 key codes (NumPy radix-sorts 16-bit integers).
_INT16_KEYS = 2**15

_KEY, _TIME, _VALUE = (operator.itemgetter(i) for i in range(3))


class BatchColumns(NamedTuple):
    """A validated batch as columns, in arrival order (:meth:`ColumnarIntake.read`)."""

    #: the distinct keys, in order of first appearance
    keys: list[Any]
    #: per event: the index of its key in ``keys`` (a NumPy integer array)
    codes: Any
    #: per event: its time (int64) and field value (float64)
    times: Any
    values: Any
    #: the batch itself (event ``i`` is ``events[i]``; its value ``events[i][2]``)
    events: Sequence[Any]
    #: several fields (:attr:`ColumnarIntake.fields`): ``values`` is a list of one array per
    #: field in the intake's field order, and this is the key order of every event's dict
    order: tuple[str, ...] = ()
    #: per field (intake order): whether its values are all ``int`` (an int64 array), else
    #: all finite floats; ``()``: one float field (the compiled reader's batches)
    ints: tuple[bool, ...] = ()


def _kind(xs: Sequence[Any], m: int) -> Any:
    """``np.float64`` if the ``m`` values ``xs`` are all floats, ``np.int64`` if all ints
    (``bool`` is not one), else ``None``."""
    types = list(map(type, xs))
    if types.count(float) == m:
        return np.float64
    if types.count(int) == m:
        return np.int64
    return None


def key_time_order(codes: Any, times: Any) -> Any:
    """The stable order of events by (key code, time), ties in their given (arrival) order;
    ``codes`` are non-negative integers.

    Two stable sorts, cheaper than ``numpy.lexsort``: by code (NumPy radix-sorts 16-bit
    integers), then by the combined int64 key ``code * span + time``, which the first sort
    leaves nearly sorted when each key's times are (mildly out-of-order streams), so NumPy's
    stable sort (timsort) takes about one pass; by time, then code, where the combined key
    could overflow."""
    if not len(codes):
        return np.zeros(0, np.intp)
    top = int(codes.max()) + 1
    small = codes.astype(np.int16) if top <= _INT16_KEYS else codes
    lo = int(times.min())
    span = int(times.max()) - lo + 1
    if span * top < 2**62:
        by_code = np.argsort(small, kind="stable")
        combined = codes[by_code].astype(np.int64) * span + (times[by_code] - lo)
        return by_code[np.argsort(combined, kind="stable")]
    by_time = np.argsort(times, kind="stable")
    return by_time[np.argsort(small[by_time], kind="stable")]


class ArrowEvents(Sequence[tuple[Any, Any, dict[str, Any]]]):
    """A batch of ``(key, time, {field: value, ...})`` events held as columns: what an engine
    that receives its events as Arrow columns hands :meth:`adapters.WindowDriver.
    process_batch` (:func:`adapters.engine.bucket_rows.bucket_events`), so that
    :meth:`ColumnarIntake.read` takes the columns as they are instead of reading one Python
    tuple per event. The events themselves are made only if a path asks for them (the
    general per-key path, a late event's value), each exactly as the engine's row decoding
    would make it.

    Args:
        keys: the distinct driver keys, in order of first appearance.
        codes: per event, the index of its key in ``keys`` (a NumPy integer array).
        times: the events' times (int64 array, no nulls).
        names: the value fields, in the order of every event's dict.
        values: per field, its values (an int64 array if ``ints`` says so, else float64).
        ints: per field, whether its values are Python ints (else floats).
        rows: makes the events as Python tuples (called at most once).
    """

    def __init__(self, keys: list[Any], codes: Any, times: Any, names: tuple[str, ...],
                 values: list[Any], ints: tuple[bool, ...],
                 rows: Any) -> None:
        self.keys, self.codes, self.times = keys, codes, times
        self.names, self.values, self.ints = names, values, ints
        self._rows = rows
        self._events: list[tuple[Any, Any, dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return len(self.times)

    def _made(self) -> list[tuple[Any, Any, dict[str, Any]]]:
        if self._events is None:
            self._events = self._rows()
        return self._events

    def __getitem__(self, i: Any) -> Any:
        return self._made()[i]

    def __iter__(self) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
        return iter(self._made())

    def columns(self, fields: tuple[str, ...]) -> BatchColumns | None:
        """:meth:`ColumnarIntake.read`'s columns of ``fields`` (one field: as
        :meth:`ColumnarIntake.read_python` makes them, several: as
        :meth:`ColumnarIntake.read_fields`), or ``None`` where those return ``None``."""
        if len(self) < MIN_BATCH or len(self.names) != len(fields) or \
                set(self.names) != set(fields):
            return None  # small, or dicts with other fields
        if not all(i or np.isfinite(x).all() for i, x in zip(self.ints, self.values)):
            return None
        if len(fields) == 1:
            return BatchColumns(self.keys, self.codes, self.times, self.values[0], self,
                                (), (self.ints[0],))
        if encode_float_records_segment(self.names, 2, b"", [[] if i else b""
                                                             for i in self.ints]) is None:
            return None
        at_of = {f: i for i, f in enumerate(self.names)}
        return BatchColumns(self.keys, self.codes, self.times,
                            [self.values[at_of[f]] for f in fields], self, self.names,
                            tuple(self.ints[at_of[f]] for f in fields))


class ColumnarIntake:
    """Reads a batch into :class:`BatchColumns` (see the module docstring).

    Build it with :meth:`for_intake`, which returns ``None`` when the query is not covered.
    """

    def __init__(self, field: str, fields: tuple[str, ...] | None = None) -> None:
        #: the fields read (the first is ``field``)
        self.fields = fields if fields is not None else (field,)
        self.field = field
        self._get_field = operator.itemgetter(field)

    @classmethod
    def for_intake(cls, intake: Intake) -> ColumnarIntake | None:
        """The columnar intake of a query, or ``None`` (no NumPy, not kernel mode)."""
        kernels = intake.kernels
        if np is None or kernels is None:
            return None
        # kernel mode has no OVER or policy lanes, so records never carry event values
        assert not intake.with_values
        fields = tuple(dict.fromkeys(k.field for k in kernels if k.field is not None))
        if not fields:
            return None
        if any(encode_float_record_segment(f, 2, b"", b"") is None for f in fields):
            return None  # not storable as a packed header key
        return cls(fields[0], fields if len(fields) > 1 else None)

    def read(self, events: Sequence[Any]) -> BatchColumns | None:
        """The batch as columns in arrival order, or ``None`` if it is small or irregular
        (then the general path must run: it validates every event).

        The compiled reader (:mod:`adapters.crosskey._batch_reader`, one pass in C), where it is
        built, takes batches of tuples; anything it leaves, and every batch without it, the
        Python reader decides (:meth:`read_python`): the same columns either way."""
        if len(events) < MIN_BATCH:
            return None
        if type(events) is ArrowEvents:
            return events.columns(self.fields)
        if len(self.fields) > 1:
            return self.read_fields(events)
        reader = compiled_reader
        got = reader.read_columns(events, self.field) if reader is not None else None
        if got is None:
            return self.read_python(events)
        first_seen, code_bytes, time_bytes, value_bytes = got
        codes = np.frombuffer(code_bytes, np.intp)
        if len(first_seen) < _INT16_KEYS:
            codes = codes.astype(np.int16)
        return BatchColumns(first_seen, codes, np.frombuffer(time_bytes, np.int64),
                            np.frombuffer(value_bytes, np.float64), events)

    def read_python(self, events: Sequence[Any]) -> BatchColumns | None:
        """:meth:`read` in Python (NumPy for the conversions), for batches of at least
        ``MIN_BATCH`` events."""
        n = len(events)
        keys: list[Any] = []
        time_parts = []
        value_parts: list[Any] = []
        get_field = self._get_field
        try:
            # Chunks small enough to stay in the CPU cache across the checks' passes: each
            # event's objects are read from memory once.
            for at in range(0, n, _CHUNK):
                chunk = events[at:at + _CHUNK]
                m = len(chunk)
                # strict: every event the same length; unpacking: that length is 3
                ks, ts, vs = zip(*chunk, strict=True)
                if list(map(type, ts)).count(int) != m or \
                        list(map(type, vs)).count(dict) != m or \
                        list(map(len, vs)).count(1) != m:
                    return None
                xs = list(map(get_field, vs))  # KeyError: not all {field: ...}
                kind = _kind(xs, m)
                if kind is None or (at and kind is not value_parts[0].dtype.type):
                    return None  # not all floats or all ints (over the whole batch)
                time_parts.append(np.array(ts, dtype=np.int64))  # OverflowError: > 64 bits
                value_parts.append(np.array(xs, dtype=kind))  # OverflowError: an int > 64 bits
                keys.extend(ks)
            first_seen = list(dict.fromkeys(keys))  # TypeError: an unhashable key
        except (TypeError, ValueError, KeyError, OverflowError):
            return None
        x = np.concatenate(value_parts)
        ints = x.dtype == np.int64
        if not ints and not np.isfinite(x).all():
            return None  # NaN / inf: the general path decides (lifts may refuse them)
        code_of = {k: i for i, k in enumerate(first_seen)}
        code_type = np.int16 if len(first_seen) < _INT16_KEYS else np.intp
        codes = np.fromiter(map(code_of.__getitem__, keys), dtype=code_type, count=n)
        return BatchColumns(first_seen, codes, np.concatenate(time_parts), x, events,
                            (), (bool(ints),))

    def read_fields(self, events: Sequence[Any]) -> BatchColumns | None:
        """:meth:`read` of several fields (in Python, NumPy for the conversions): every
        event ``(key, int time, dict)`` whose dict holds exactly the fields, each field all
        finite floats or all ints (int64) over the batch, with its keys in the order of the
        first event's (so a log segment of them is what
        :func:`~adapters.state.codec.encode_entry` writes)."""
        n = len(events)
        fields = self.fields
        nf = len(fields)
        keys: list[Any] = []
        time_parts = []
        columns: list[list[Any]] = [[] for _ in fields]  # per field (key order): its parts
        order: tuple[str, ...] | None = None
        try:
            for at in range(0, n, _CHUNK):
                chunk = events[at:at + _CHUNK]
                m = len(chunk)
                ks, ts, vs = zip(*chunk, strict=True)
                if list(map(type, ts)).count(int) != m or \
                        list(map(type, vs)).count(dict) != m:
                    return None
                if order is None:
                    order = tuple(vs[0])
                    if len(order) != nf or set(order) != set(fields):
                        return None  # other fields
                    get = operator.itemgetter(*order)
                if list(map(tuple, vs)).count(order) != m:
                    return None  # other keys, or the same in another order
                for parts, xs in zip(columns, zip(*map(get, vs))):
                    kind = _kind(xs, m)
                    if kind is None or (at and kind is not parts[0].dtype.type):
                        return None
                    parts.append(np.array(xs, dtype=kind))  # OverflowError: > 64 bits
                time_parts.append(np.array(ts, dtype=np.int64))  # OverflowError: > 64 bits
                keys.extend(ks)
            first_seen = list(dict.fromkeys(keys))  # TypeError: an unhashable key
        except (TypeError, ValueError, KeyError, OverflowError):
            return None
        assert order is not None
        by_key = [np.concatenate(parts) for parts in columns]
        kinds = [x.dtype == np.int64 for x in by_key]
        if not all(k or np.isfinite(x).all() for k, x in zip(kinds, by_key)):
            return None
        if encode_float_records_segment(order, 2, b"", [[] if k else b"" for k in kinds]) \
                is None:
            return None  # not storable as one packed header
        at_of = {f: i for i, f in enumerate(order)}
        values = [by_key[at_of[f]] for f in fields]
        code_of = {k: i for i, k in enumerate(first_seen)}
        code_type = np.int16 if len(first_seen) < _INT16_KEYS else np.intp
        codes = np.fromiter(map(code_of.__getitem__, keys), dtype=code_type, count=n)
        return BatchColumns(first_seen, codes, np.concatenate(time_parts), values, events,
                            order, tuple(bool(kinds[at_of[f]]) for f in fields))


__all__ = ["MIN_BATCH", "ArrowEvents", "BatchColumns", "ColumnarIntake", "compiled_reader",
           "key_time_order"]
