"""The events of one cross-key call as arrays: each key's boundary, the late events, the
release of pending events, the accepted new events and their log entries, and the grouping of
the released events into (key, slice) runs with their slice partials.

An event with ``time < B = watermark - allowed lateness`` is late; pending events older than
their key's ``B`` are released (a prefix of each key's pending rows), in (time, arrival)
order, into slices of general stream slicing (:mod:`adapters.driver.time_lane`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from adapters.crosskey.columnar import BatchColumns, key_time_order
from adapters.crosskey.key_loading import CrossKey
from adapters.crosskey.partials import Partials
from adapters.crosskey.sorted_rows import INT64_MAX, INT64_MIN, SortedRows, merge_rows
from adapters.driver.results import LateEvent
from adapters.state.codec import (
    encode_entry,
    encode_float_record_segment,
    encode_float_records_segment,
)

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]


class Boundaries(NamedTuple):
    """Each key's boundary after a call's watermark."""

    #: per key position: its new watermark
    marks: list[int | float]
    #: per key id: ``B = watermark - lateness`` as int64 (events with ``time < B`` are late
    #: or released) and whether ``B`` exceeds every int64 time
    bound: Any
    beyond: Any

    def late(self, ids: Any, times: Any) -> Any:
        """Whether each event (key id, time) is older than its key's boundary."""
        return (times < self.bound[ids]) | self.beyond[ids]


def boundaries(keys: list[CrossKey], watermark: int | float | None, lateness: int,
               id_count: int) -> Boundaries:
    """The keys' watermarks and boundaries after ``watermark`` (``None``: unchanged)."""
    bound = np.full(id_count, INT64_MIN, np.int64)
    beyond = np.zeros(id_count, bool)
    marks: list[int | float] = []
    for k in keys:
        mark = k.wm if watermark is None or watermark <= k.wm else watermark
        marks.append(mark)
        boundary = mark - lateness
        if boundary > INT64_MAX:
            beyond[k.id] = True
        elif boundary > INT64_MIN:
            bound[k.id] = int(boundary)
    return Boundaries(marks, bound, beyond)


def release(pending: SortedRows, bounds: Boundaries) -> tuple[SortedRows, SortedRows]:
    """``(released, still pending)``: the pending events older than their key's boundary."""
    released = bounds.late(pending.ids, pending.times)
    if not released.any():  # nothing released (e.g. a batch under an unchanged watermark)
        return pending.take(slice(0, 0)), pending
    return pending.take(released), pending.take(~released)


class NewEvents(NamedTuple):
    """The accepted new events of a call, sorted by (key id, time, arrival)."""

    #: per key position in the call: its late events (arrival order), if any
    late_of: dict[int, list[LateEvent]]
    #: per key position: its rows ``first .. stop - 1`` of the sorted arrays
    first: list[int]
    stop: list[int]
    #: per key position: its newest new event time (if it has one)
    newest: list[int]
    #: the sorted times and each field's values as little-endian bytes (log segments are
    #: slices of them; an int field's array itself), the fields in ``order``, the key order
    #: of the events' dicts
    time_bytes: bytes
    value_bytes: tuple[Any, ...]
    times: Any
    values: tuple[Any, ...]
    order: tuple[str, ...]


#: a call without new events
NO_NEW_EVENTS = NewEvents({}, [], [], [], b"", (), None, (), ())


def _late_events(cols: BatchColumns, keys: list[Any], late: Any) -> dict[int, list[LateEvent]]:
    """Per key position: its late events of the batch, in arrival order."""
    late_of: dict[int, list[LateEvent]] = {}
    at = np.flatnonzero(late)
    for i, code, time in zip(at.tolist(), cols.codes[at].tolist(), cols.times[at].tolist()):
        late_of.setdefault(code, []).append(LateEvent(keys[code], time, cols.events[i][2]))
    return late_of


def accept(cols: BatchColumns, keys: list[Any], ids: Any, bounds: Boundaries,
           pending: SortedRows, fields: tuple[str, ...]) -> tuple[NewEvents, SortedRows]:
    """The batch's late events out, the rest sorted by (key, time, arrival); returns them
    and the pending rows with them merged in."""
    event_ids = ids[cols.codes]
    times = cols.times
    values = [cols.values] if len(fields) == 1 else list(cols.values)
    late = bounds.late(event_ids, times)
    late_of: dict[int, list[LateEvent]] = {}
    if late.any():
        late_of = _late_events(cols, keys, late)
        kept = ~late
        event_ids, times = event_ids[kept], times[kept]
        values = [column[kept] for column in values]
    order = key_time_order(event_ids, times)  # ties stay in arrival order
    new = SortedRows(event_ids[order], times[order], tuple(column[order] for column in values))
    first = np.searchsorted(new.ids, ids, "left").tolist()
    stop = np.searchsorted(new.ids, ids, "right").tolist()
    newest = new.times[np.maximum(np.array(stop) - 1, 0)].tolist() if len(times) else []
    # the log holds the fields in the events' own key order
    key_order = cols.order or fields
    in_order = tuple(new.columns[fields.index(name)] for name in key_order)
    # float columns as packed bytes; int columns stay arrays (the log holds them as JSON)
    value_bytes = tuple(column if column.dtype == np.int64
                        else column.astype("<f8", copy=False).tobytes() for column in in_order)
    events = NewEvents(late_of, first, stop, newest,
                       new.times.astype("<i8", copy=False).tobytes(), value_bytes, new.times,
                       in_order, key_order)
    return events, merge_rows(pending, new)


def log_entry(k: CrossKey, new: NewEvents, first: int, stop: int,
              newest: int) -> tuple[int, int, bytes]:
    """The key's log entry for its new events (rows ``first .. stop - 1``): the per-key
    path's entry for one event, else one packed segment; counted in ``k``."""
    count = stop - first
    if count == 1:  # what the per-key path writes for one event
        data = encode_entry([int(new.times[first])],
                            [{name: column[first].item()
                              for name, column in zip(new.order, new.values)}])
    else:
        lo, hi = 8 * first, 8 * stop
        if len(new.order) == 1 and type(new.value_bytes[0]) is bytes:  # one float field
            segment = encode_float_record_segment(
                new.order[0], count, new.time_bytes[lo:hi], new.value_bytes[0][lo:hi])
        else:
            segment = encode_float_records_segment(
                new.order, count, new.time_bytes[lo:hi],
                [column[lo:hi] if type(column) is bytes else column[first:stop].tolist()
                 for column in new.value_bytes])
        assert segment is not None  # the columnar intake checked the fields
        data = segment
    entry = (newest, k.seq, data)
    heapq.heappush(k.segments, (newest, k.seq))
    k.seq += count
    return entry


@dataclass(slots=True)
class Runs:
    """The released events of a call as (key, slice) runs, each with its slice partial."""

    #: per key position: its runs ``key_first[pos] .. key_stop[pos] - 1`` and its number of
    #: released events
    key_first: list[int]
    key_stop: list[int]
    released: list[int]
    #: per run: key id, slice start, and its events ``first .. stop - 1`` of ``values``
    ids: Any = None
    starts: Any = None
    first: Any = None
    stop: Any = None
    #: the released events' value arrays, one per field
    values: list[Any] = field(default_factory=list)
    #: per run: the slice partial (one array per component) and whether it closes (else
    #: it stays open)
    parts: list[Any] = field(default_factory=list)
    closes: Any = None

    def __len__(self) -> int:
        return 0 if self.ids is None else len(self.ids)


def slice_runs(released: SortedRows, keys: list[CrossKey], ids: Any, id_count: int,
               width: int, base: int, partials: Partials) -> Runs:
    """The released events as (key, slice) runs with their slice partials; a key's first run
    that continues its open slice is left to the caller (its exact sums at 0)."""
    no_runs = [0] * len(keys)
    runs = Runs(no_runs, no_runs, no_runs)
    if not len(released.ids):
        return runs
    event_ids = released.ids
    starts = released.times - (released.times - base) % width
    cut = np.flatnonzero((event_ids[1:] != event_ids[:-1]) | (starts[1:] != starts[:-1])) + 1
    runs.first = np.concatenate(([0], cut))
    runs.stop = np.concatenate((cut, [len(event_ids)]))
    runs.ids, runs.starts = event_ids[runs.first], starts[runs.first]
    runs.values = list(released.columns)
    runs.key_first = np.searchsorted(runs.ids, ids, "left").tolist()
    runs.key_stop = np.searchsorted(runs.ids, ids, "right").tolist()
    runs.released = (np.searchsorted(event_ids, ids, "right")
                     - np.searchsorted(event_ids, ids, "left")).tolist()
    open_of = np.full(id_count, INT64_MIN, np.int64)
    open_of[ids] = [k.open_start if k.open_start is not None else INT64_MIN for k in keys]
    is_first = np.ones(len(runs.ids), bool)
    is_first[1:] = runs.ids[1:] != runs.ids[:-1]
    run_open = open_of[runs.ids]
    goes_on = is_first & (runs.starts == run_open) & (run_open != INT64_MIN)
    runs.parts = partials.of_runs(runs.values, runs.first, runs.stop, goes_on)
    runs.closes = np.ones(len(runs.first), bool)
    return runs


__all__ = ["NO_NEW_EVENTS", "Boundaries", "NewEvents", "Runs", "accept", "boundaries",
           "log_entry", "release", "slice_runs"]
