"""Loading a key into the cross-key runtime: rebuilt from its log in arrays, or taken over
from the per-key path, through the driver's :class:`~adapters.driver.key_store.KeyStore`.

A miss is the common case on an engine whose tasks move between worker processes (Spark
gives a bucket's task to either Python worker; the other one's cache is then stale), so the
rebuild from the log (:meth:`KeyLoader.rebuild`) is a hot path: it reads the log's columns
straight into arrays, without a Python record per event. A log it cannot read exactly, and a
key the per-key path holds current, go through the per-key path's own load, whose runtime
is then taken over (:meth:`KeyLoader.take_over`), or refused (:class:`NotCovered`).
"""

from __future__ import annotations

import heapq
from array import array
from typing import Any, NamedTuple

from adapters.crosskey.partials import NotCovered, Partials
from adapters.crosskey.sorted_rows import INT64_MAX, INT64_MIN
from adapters.driver.key_runtime import INF, KeyRuntime
from adapters.driver.key_store import KeyStore
from adapters.driver.kvs_lanes import is_kvs
from adapters.driver.time_lane import TimeLane
from adapters.errors import CodecError, StateError
from adapters.state.backend import KeyState
from adapters.state.codec import decode_entry_columns, decode_meta, decode_watermark, types_of

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

#: the value types a log column must hold, by whether its field is an int field
_TYPES = {False: frozenset({float}), True: frozenset({int})}


class CrossKey:
    """One key's runtime here: the per-key path's counters and log bookkeeping, the open
    slice; its pending events and closed slices are rows of the shared arrays."""

    __slots__ = ("id", "late", "meta_bytes", "open_acc", "open_start", "released",
                 "segments", "seq", "wm")

    def __init__(self, ident: int) -> None:
        self.id = ident
        self.meta_bytes: bytes | None = None
        self.wm: int | float = -INF
        self.seq = 0
        self.released = 0
        self.late = 0
        self.open_start: int | None = None
        self.open_acc: Any = None
        self.segments: list[tuple[int, int]] = []  # (newest time, seq) of the log entries


class KeyRows(NamedTuple):
    """One key's rows: pending events (times, one value array per field) or closed slices
    (starts, one partial array per component)."""

    times: Any
    columns: list[Any]


class LoadedKey(NamedTuple):
    """What a loaded key puts into the shared arrays."""

    pending: KeyRows
    closed: KeyRows


class _Log(NamedTuple):
    """A key's log as arrays sorted by (time, arrival)."""

    times: Any
    columns: list[Any]
    #: (newest time, seq) of each log entry
    segments: list[tuple[int, int]]


def log_column(values: Any, ints: bool) -> Any:
    """A log column as an int64 (``ints``) or float64 array, or ``None`` if it holds other
    types (a packed ``array`` is read without a copy; :class:`OverflowError` beyond
    int64)."""
    if values is None:
        return None
    if type(values) is array:
        return np.frombuffer(values, np.int64 if ints else np.float64) \
            if values.typecode == ("q" if ints else "d") else None
    if types_of(values) != _TYPES[ints]:
        return None
    return np.array(values, np.int64 if ints else np.float64)


def _arrival_sorted(times: list[Any], columns: list[list[Any]], seqs: list[tuple[int, int]],
                    ints: tuple[bool, ...]) -> tuple[Any, list[Any]] | None:
    """The log entries' columns as arrays sorted by (time, arrival), or ``None`` if a float
    is not finite."""
    all_times = np.concatenate(times) if times else np.zeros(0, np.int64)
    values = [np.concatenate(pieces) if pieces else np.zeros(0, np.int64 if is_int else np.float64)
              for pieces, is_int in zip(columns, ints)]
    if any(not is_int and not np.isfinite(column).all()
           for column, is_int in zip(values, ints)):
        return None
    # arrival numbers: an entry written with seq s holds events s, s + 1, ...
    first = np.array([seq for seq, _ in seqs], np.int64)
    sizes = np.array([size for _, size in seqs], np.int64)
    offsets = np.arange(len(all_times), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes,
                                                                      sizes)
    order = np.lexsort((np.repeat(first, sizes) + offsets, all_times))
    return all_times[order], [column[order] for column in values]


class KeyLoader:
    """Loads keys of the query whose keys ``store`` holds (one sliding ``lane``) into the
    cross-key runtime, whose partial arrays are ``partials``."""

    def __init__(self, store: KeyStore, lane: TimeLane, partials: Partials) -> None:
        self.store = store
        self.lane = lane
        self.partials = partials

    def load(self, key: Any, state: KeyState, meta: bytes, k: CrossKey) -> LoadedKey:
        """A key this runtime does not hold (or holds stale) into ``k``: rebuilt from its
        log here (:meth:`rebuild`) unless the per-key path holds it current, else taken over
        from the per-key path."""
        cached = self.store.cached(key)
        if cached is None or cached.meta_bytes != meta:
            rebuilt = self.rebuild(key, state, meta, k)
            if rebuilt is not None:
                return rebuilt
        pending, closed = self.take_over(key, state, meta, k)
        partials = self.partials
        dtypes = [np.int64, *partials.value_dtypes()]
        pending_columns = [np.array(column, dtype)
                           for column, dtype in zip(zip(*pending), dtypes)] \
            if pending else [np.zeros(0, dtype) for dtype in dtypes]
        starts = np.array([start for start, _ in closed], np.int64)
        return LoadedKey(KeyRows(pending_columns[0], pending_columns[1:]),
                         KeyRows(starts, partials.arrays_of([parts for _, parts in closed])))

    # ------------------------------------------------------------------ from the log
    def rebuild(self, key: Any, state: KeyState, meta_bytes: bytes,
                k: CrossKey) -> LoadedKey | None:
        """The key's runtime straight from its log into arrays: what the per-key path's
        rebuild (``KeyStore.load`` then ``TimeLane.restore``) makes of it.

        Its pending events (``time >= B = watermark - lateness``) as arrays; its released
        events from the lane's trim point ``need(B)`` on folded into slice partials by the
        same reductions as a call's runs, the newest slice open if ``B`` is inside it.
        ``None`` (nothing changed) for a log this cannot read exactly: values of another type
        than the fields' (or not finite floats), times beyond int64, entries of other
        shapes, metadata it does not check; the per-key path's rebuild then reads it and
        reports what is wrong."""
        checked = self._checked_meta(meta_bytes)
        if checked is None:
            return None
        meta, wm = checked
        log = self._read_log(state)
        if log is None:
            return None
        bound = wm - self.store.lateness
        released = len(log.times) if bound > INT64_MAX else 0 if bound <= INT64_MIN else \
            int(np.searchsorted(log.times, int(bound), "left"))
        if released > int(meta["rel"]):
            return None  # more released events than the metadata counts: corrupt
        closed = self._fold_released(log, released, bound, k)
        heapq.heapify(log.segments)
        k.segments = log.segments
        k.meta_bytes = meta_bytes
        k.wm, k.seq, k.released, k.late = wm, int(meta["seq"]), int(meta["rel"]), \
            int(meta["late"])
        self.store.forget(key)  # a per-key runtime of the key is stale now
        pending = KeyRows(log.times[released:], [column[released:] for column in log.columns])
        return LoadedKey(pending, closed)

    def _checked_meta(self, meta_bytes: bytes) -> tuple[dict[str, Any], int | float] | None:
        """The key's metadata and watermark, if the rebuild can take it."""
        store = self.store
        if store.kvs.eligible:
            return None
        try:
            meta = decode_meta(meta_bytes)
            wm = decode_watermark(meta["wm"])
        except (StateError, CodecError):
            return None
        if meta.get("q") != store.query.fingerprint or meta["pol"]:
            return None
        return meta, wm

    def _read_log(self, state: KeyState) -> _Log | None:
        """The key's log entries as arrays sorted by (time, arrival), if every entry holds
        exactly the fields' types."""
        fields, ints = self.partials.fields, self.partials.ints
        times: list[Any] = []
        seqs: list[tuple[int, int]] = []
        columns: list[list[Any]] = [[] for _ in fields]
        segments: list[tuple[int, int]] = []
        try:
            for time, seq, data in state.read_events():
                segments.append((time, seq))
                entry = decode_entry_columns(time, data)
                if entry is None:
                    return None
                entry_times, entry_columns = entry
                for j, name in enumerate(fields):
                    column = log_column(entry_columns.get(name), ints[j])
                    if column is None:
                        return None
                    columns[j].append(column)
                times.append(log_column(entry_times, True))
                seqs.append((seq, len(entry_times)))
        except (CodecError, OverflowError):  # (beyond int64)
            return None
        if any(t is None for t in times):
            return None
        ordered = _arrival_sorted(times, columns, seqs, ints)
        return None if ordered is None else _Log(*ordered, segments)

    def _fold_released(self, log: _Log, released: int, bound: int | float,
                       k: CrossKey) -> KeyRows:
        """The closed slices of the log's first ``released`` events from the trim point
        ``need(bound)`` on; the newest slice goes to ``k``'s open slice if ``bound`` is
        inside it."""
        need = self.lane.need(bound)
        lo = released if need == INF else 0 if need <= INT64_MIN else \
            int(np.searchsorted(log.times[:released], int(need), "left"))
        partials = self.partials
        if lo >= released:
            return KeyRows(np.zeros(0, np.int64),
                           [np.zeros(0, dtype) for dtype in partials.dtypes()])
        times = log.times[lo:released]
        width = self.lane.width
        slice_of = times - (times - self.lane.base) % width
        cut = np.flatnonzero(slice_of[1:] != slice_of[:-1]) + 1
        first = np.concatenate(([0], cut))
        stop = np.concatenate((cut, [len(times)]))
        starts = slice_of[first]
        parts = partials.of_runs([column[lo:released] for column in log.columns], first, stop,
                                 np.zeros(len(first), bool))
        last = len(first) - 1
        if int(starts[last]) + width > bound:  # the boundary is inside the newest slice
            k.open_start, k.open_acc = int(starts[last]), partials.get(parts, last)
            starts, parts = starts[:last], [column[:last] for column in parts]
        return KeyRows(starts, parts)

    # ------------------------------------------------------------------ from the per-key path
    def take_over(self, key: Any, state: KeyState, meta: bytes, k: CrossKey
                  ) -> tuple[list[Any], list[tuple[int, tuple[Any, ...]]]]:
        """Take the key's runtime over from the per-key path, which rebuilds (or holds) it:
        its counters, log entries and open slice into ``k``; returns its pending records and
        closed slices. :class:`NotCovered` (nothing changed) if it holds what the arrays
        cannot hold exactly."""
        store = self.store
        rt = store.load(key, state, meta)
        lane_state = rt.lanes[0]
        if is_kvs(lane_state.w):
            # its window lives in the key's pair map and its log keeps only pending events:
            # the arrays would write a log without the window, so the key stays per-key
            raise NotCovered
        pending = self.pending_pairs(rt)
        checked = self.partials.checked
        closed = [(start, checked(part)) for start, part in lane_state.w.items()]
        if lane_state.open_acc is not None:
            checked(lane_state.open_acc)
        # taken over (only now: if this key is refused, its per-key cache stays)
        store.forget(key)
        k.meta_bytes = meta
        k.wm, k.seq, k.released, k.late = rt.wm, rt.seq, rt.released, rt.late
        k.segments = list(rt.segments)
        k.open_start, k.open_acc = lane_state.open_start, lane_state.open_acc
        return pending, closed

    def pending_pairs(self, rt: KeyRuntime) -> list[tuple[Any, ...]]:
        """The per-key runtime's pending events as ``(time, value of each field)`` sorted by
        (time, arrival); :class:`NotCovered` if a value is not of its field's type."""
        pending = sorted(rt.pending, key=lambda rec: rec[0])  # stable: (time, arrival)
        partials = self.partials
        types = [int if i else float for i in partials.ints]
        if partials.single:
            want = types[0]
            if any(type(rec[1]) is not want for rec in pending):
                raise NotCovered  # e.g. NumPy floats the per-key path holds as they came
            if want is int and any(not INT64_MIN <= rec[1] <= INT64_MAX for rec in pending):
                raise NotCovered
            return pending
        # several outputs: a tuple of each output's field value, or None (counts of events)
        first_reader, reads = partials.first_reader, partials.reads
        out = []
        for time, raw in pending:
            values = [raw[i] for i in first_reader]
            if any(type(x) is not want or (want is int and not INT64_MIN <= x <= INT64_MAX)
                   for x, want in zip(values, types)) or any(
                    (y is not values[j]) if j >= 0 else (y is not None)
                    for y, j in zip(raw, reads)):
                raise NotCovered  # e.g. a missing value (None) of a skipping output
            out.append((time, *values))
        return out


__all__ = ["CrossKey", "KeyLoader", "KeyRows", "LoadedKey", "NotCovered", "log_column"]
