"""The cross-key batch runtime: :meth:`adapters.WindowDriver.process_batch` and
:meth:`~adapters.WindowDriver.advance_keys` for the commonest query, with the per-event and
per-window work done once per call in NumPy over all keys instead of per key in Python.

What it covers: one sliding or tumbling window spec; one or more outputs, each ``count`` of
events or ``count`` (``nulls="skip"``), ``max``, ``min``, ``sum`` or ``mean`` of a field
(kernels, :mod:`adapters.driver.kernels`), over one or more fields (a count of a field is the
count of events here: the intake takes finite floats only); at most :data:`MAX_SLICES` slices
per window; no forced algorithm; batches the columnar intake takes
(:meth:`adapters.crosskey.columnar.ColumnarIntake.read`: ``(key, int time, {field: value,
...})`` holding exactly the fields read, each field all finite floats or all int64 ints over
the batch (a long column: max / min partials are then ints, as the per-key path's), at least
``MIN_BATCH`` events; with several fields every dict's keys in one order); states that keep
their event log.
Anything else takes the per-key path, which is also the reference the tests compare with.

Why: the per-key path touches every event several times in Python (a record tuple, the
pending buffer, the release, the fold) and makes a few structure calls per window; with
about 100 events per key and call those costs exceed what the engines' per-window
assignment pays at one window per event (``docs/benchmarks.md``). Here, per call:

* pending events of every key wait in arrays sorted by (key id, time, arrival), one value
  array per field; late events, the release (``time < watermark - allowed lateness``) and
  the grouping of the released events into (key, slice) runs are array operations;
* each run becomes a slice partial, one array per kind of output and field (:class:`_Comp`,
  shared: ``sum`` and ``mean`` of a field share its exact sum): ``count`` the run's length
  (int64), ``max``/``min`` with ``numpy`` (a zero is refolded in Python, so that of ``0.0``
  and ``-0.0`` the older one wins, as with ``max``), ``sum`` and ``mean`` with the kernel's
  fold (the exact partial of :mod:`swag_core.exact`, a Python ``int``, held in an object
  array); a key's open slice (the one the boundary is inside) continues with the kernels'
  folds. The per-key path's partial of a slice is the output's partial, or for several
  outputs the tuple of them (:func:`swag_core.aggregation.product`): :meth:`BatchRuntime._join`
  and :meth:`BatchRuntime._split` convert, so state moves between the paths unchanged;
* closed slices of every key are arrays sorted by (key id, slice start): general stream
  slicing (:mod:`adapters.driver.time_lane`, Traub et al., EDBT 2019). A due window ``[e - range,
  e)`` is the reduction of its at most ``MAX_SLICES`` slices, all windows of the call in one
  ``ufunc.reduceat``: recalculation over slices, in C, which costs less than a
  ``swag_core`` structure's per-slice interpreter overhead while windows hold few slices.
  Window sums add exact int partials (``np.add`` on Python ints) and counts add int64, so
  NumPy's order changes nothing; each array is reduced once for all windows, then the
  lane's ``lower`` (a dict of every output for several) gives the row values: the rows
  equal the per-key path's bit for bit.

Everything else about a key goes through the driver's
:class:`~adapters.driver.key_store.KeyStore`, the seam both paths share: loading (a key this
runtime does not hold, or holds stale, is loaded there, rebuilt from its log on a miss, and
taken over), the state writes (one log entry per key and call, the metadata with a fresh
nonce), the trim point and which log entries go, and the timers. So the state is the per-key
path's, either path continues from what the other wrote, restarts rebuild from it, and a
key's cached runtime is checked against its metadata before use, as the per-key cache is.
With ``max_cached_keys`` this runtime keeps at most that many keys between calls, least
recently used out first (:meth:`BatchRuntime._bound_cache`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

from adapters.crosskey.columnar import BatchColumns, ColumnarIntake, key_time_order
from adapters.driver.kernels import Kernel
from adapters.driver.key_runtime import INF, KeyRuntime
from adapters.driver.key_store import KeyStore, Removal
from adapters.driver.kvs_lanes import is_kvs
from adapters.driver.results import LateEvent, Output
from adapters.driver.time_lane import TimeLane, due_window_ends, end_after
from adapters.errors import CodecError, StateError
from adapters.query.builtins import CROSS_KEY, fns_taking
from adapters.query.specs import AggSpec
from adapters.state.backend import KeyState, StateBackend
from adapters.state.codec import (
    decode_entry_columns,
    decode_meta,
    decode_watermark,
    encode_entry,
    encode_float_record_segment,
    encode_float_records_segment,
    types_of,
)

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

#: Most slices a window may span for this runtime (range / slice width): it reduces each
#: window's slices afresh (in C), where a structure pays O(1) interpreter-level calls per
#: window. Up to this bound the runtime stays faster than the per-key path (figures:
#: docs/adapters.md); above it the structures' O(1) per window is the safer choice.
MAX_SLICES = 2048
_I64_MIN, _I64_MAX = -2**63, 2**63 - 1
#: due windows of one key enumerated arithmetically up to this many, empty ones dropped in
#: bulk (more: a gap in the key's data; ``time_lane.due_window_ends`` skips the empty windows
#: by binary search). Enumerating is no slower than that generator, and faster when each
#: event falls in many windows (range much longer than slide).
_DENSE_WINDOWS = 4096
_FNS = fns_taking(CROSS_KEY)
#: the value types a log column must hold, by whether its field is an int field
_TYPES = {False: frozenset({float}), True: frozenset({int})}


class _NotCovered(Exception):
    """A key's state holds what this runtime cannot hold exactly (raised before any
    change)."""


def _merge(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """Merge two column sets ``(ids, times, *values)``, each sorted by (id, time), into
    one; ``a`` before ``b`` on ties. One binary search per ``b`` row on a combined int64
    key when the span allows it, else a sort."""
    if not len(a[0]):
        return b
    if not len(b[0]):
        return a
    aid, at, bid, bt = a[0], a[1], b[0], b[1]
    lo = min(int(at.min()), int(bt.min()))
    span = max(int(at.max()), int(bt.max())) - lo + 1
    top = max(int(aid.max()), int(bid.max())) + 1
    if span * top < 2**62:
        # each b row lands after the a rows not greater than it, and after earlier b rows
        where = np.searchsorted(aid * span + (at - lo), bid * span + (bt - lo), "right")
        where += np.arange(len(where))
        n = len(aid) + len(bid)
        from_a = np.ones(n, bool)
        from_a[where] = False
        out = []
        for x, y in zip(a, b):
            z = np.empty(n, x.dtype)
            z[where] = y
            z[from_a] = x
            out.append(z)
        return tuple(out)
    cat = tuple(np.concatenate((x, y)) for x, y in zip(a, b))
    order = key_time_order(cat[0], cat[1])
    return tuple(x[order] for x in cat)


def _column(values: Any, ints: bool) -> Any:
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


def _sorted_rows(parts: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Column sets ``(ids, times, *values)`` (each sorted by time) as one sorted by (id,
    time), ties in the order given."""
    if len(parts) == 1:
        return parts[0]
    cat = tuple(np.concatenate(cols) for cols in zip(*parts))
    return _take(cat, key_time_order(cat[0], cat[1]))


def _take(cols: tuple[Any, ...], mask: Any) -> tuple[Any, ...]:
    return tuple(x[mask] for x in cols)


class _Key:
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


class _New(NamedTuple):
    """The accepted new events of a call, sorted by (key id, time, arrival)."""

    #: per key position in the call: its late events (arrival order), if any
    late_of: dict[int, list[LateEvent]]
    #: per key position: its rows ``lo .. hi - 1`` of the sorted arrays
    lo: list[int]
    hi: list[int]
    #: per key position: its newest new event time (if it has one)
    newest: list[int]
    #: the sorted times and each field's values as little-endian bytes (log segments are
    #: slices of them; an int field's array itself), the fields in ``order``, the key order
    #: of the events' dicts
    t_bytes: bytes
    x_bytes: tuple[Any, ...]
    times: Any
    values: tuple[Any, ...]
    order: tuple[str, ...]


#: a call without new events
_NO_NEW = _New({}, [], [], [], b"", (), None, (), ())


class _Runs:
    """The released events of a call as (key, slice) runs, each with its slice partial."""

    __slots__ = ("at", "closes", "end", "hi", "ids", "lo", "parts", "rel_n", "starts", "x")

    def __init__(self, nkeys: int) -> None:
        #: per key position: its runs ``lo .. hi - 1`` and its number of released events
        self.lo = self.hi = self.rel_n = [0] * nkeys
        self.ids: Any = None     # per run: key id, slice start, rows at .. end - 1 of x
        self.starts: Any = None
        self.at: Any = None
        self.end: Any = None
        self.x: Any = None
        self.parts: list[Any] = []  # per run: the slice partial (component arrays)
        self.closes: Any = None     # per run: whether it closes (else it stays open)

    def __len__(self) -> int:
        return 0 if self.ids is None else len(self.ids)


class _Step:
    """What the per-key part of a call decided, for the array work and writes after it."""

    __slots__ = ("closing", "need_at", "need_beyond", "need_of", "windows", "writes")

    def __init__(self, nid: int) -> None:
        #: open slices that closed: (key id, start, partial)
        self.closing: list[tuple[int, int, Any]] = []
        #: advancing keys: (position, old boundary, new boundary)
        self.windows: list[tuple[int, int | float, int | float]] = []
        #: per key that changed: (position, log removal, log entry, late events)
        self.writes: list[tuple[int, Removal, Any, list[LateEvent] | None]] = []
        #: per key id: closed slices before ``need_at`` go (all of them if ``need_beyond``)
        self.need_at = np.full(nid, _I64_MIN, np.int64)
        self.need_beyond = np.zeros(nid, bool)
        self.need_of: dict[int | float, int | float] = {}  # keys of a call mostly share B


class _Comp(NamedTuple):
    """One partial array of the closed slices (a column after ids and starts): the slice
    partial of one kind of output, shared by the outputs of that kind (``sum`` and ``mean``
    share the exact sum; the same fn twice shares it too)."""

    #: ``"count"`` (int64: events per slice), ``"select"`` (float64: max / min) or
    #: ``"exact"`` (object: the exact int partial of :mod:`swag_core.exact`)
    kind: str
    #: the NumPy dtype of the array and the Python type of the partial in the per-key path
    dtype: Any
    part_type: type
    #: ``np.maximum`` / ``np.minimum`` (select), ``np.add`` (count), ``None`` (exact)
    ufunc: Any
    #: the output's kernel fold and fold_onto (:class:`~adapters.driver.kernels.Kernel`)
    fold: Any
    fold_onto: Any
    #: the field it reads, as an index into the intake's fields (0 for a count of events)
    col: int = 0


def _in_int64(x: Any) -> bool:
    return bool(_I64_MIN <= x <= _I64_MAX)


def _comp_key(fn: str, field: str | None) -> tuple[str, str | None]:
    # count of the field is the count of events here: the intake takes finite floats only
    return ("exact" if fn in ("sum", "mean") else fn, None if fn == "count" else field)


class BatchRuntime:
    """See the module docstring. Build it with :meth:`for_query` (``None``: not covered)."""

    #: whether batches of int values (:attr:`BatchColumns.ints`) are taken
    _TAKES_INTS = True

    def __init__(self, store: KeyStore, intake: ColumnarIntake, lane: TimeLane,
                 fns: Sequence[str], kernels: Sequence[Kernel] | None = None) -> None:
        if kernels is None:
            assert lane.kernels is not None
            kernels = lane.kernels
        self._store = store
        self._intake = intake
        self._field = intake.field
        #: the fields read: the pending arrays hold one value column per field
        self._fields = intake.fields
        #: per field: whether its values are ints (an int64 column; max / min partials are
        #: ints), else floats: as the last batch read (:meth:`_set_types`)
        self._ints = (False,) * len(self._fields)
        self._lane = lane
        #: the partial arrays (:class:`_Comp`) and, per output, the index of its array
        self._comps: list[_Comp] = []
        self._of: list[int] = []
        keys: dict[tuple[str, str | None], int] = {}
        for fn, kernel in zip(fns, kernels, strict=True):
            key = _comp_key(fn, kernel.field)
            c = keys.get(key)
            if c is None:
                c = keys[key] = len(self._comps)
                col = 0 if key[1] is None else self._fields.index(key[1])
                self._comps.append(_Comp(
                    "count", np.int64, int, np.add, kernel.fold, kernel.fold_onto, col)
                    if fn == "count" else _Comp(
                    "select", np.float64, float, np.maximum if fn == "max" else np.minimum,
                    kernel.fold, kernel.fold_onto, col)
                    if fn in ("max", "min") else _Comp(
                    "exact", object, int, None, kernel.fold, kernel.fold_onto, col))
            self._of.append(c)
        #: per array: the first output that reads it (a partial's component)
        self._first = [self._of.index(c) for c in range(len(self._comps))]
        #: one output: the partial is its own (rows get row[out] = value); several: a tuple
        #: of one partial per output (rows get row.update(lowered dict)), as the per-key path
        self._single = len(self._of) == 1
        #: per output: the index of the field it reads, or -1 (a count of events); the
        #: pending records of several outputs hold a tuple of one raw value per output
        self._reads = [-1 if k.field is None else self._fields.index(k.field)
                       for k in kernels]
        #: per field: the first output that reads it
        self._vi = [self._reads.index(j) for j in range(len(self._fields))]
        self._g, self._base = lane.width, lane.base
        if lane.single:
            _, self._idx, self._r, self._s, self._e0 = lane.sliding[0]
        assert (lane.out is not None) == self._single
        self._out = lane.out
        self._lower = lane.aggregation.lower_fn
        #: one max / min output: its results are its partials (no lowering)
        self._raw_results = self._single and self._comps[0].kind == "select"
        self._float_comps = list(self._comps)
        self._lateness = store.lateness
        #: the cached keys, least recently used first (bounded by ``store.max_cached``
        #: after each call)
        self._keys: OrderedDict[Any, _Key] = OrderedDict()
        #: ids of dropped keys, reused (so per-call arrays indexed by id stay as small as
        #: the keys held), and the next new id
        self._free_ids: list[int] = []
        self._next_id = 0
        self._clear_arrays()

    def _set_types(self, ints: tuple[bool, ...]) -> None:
        """Hold the fields as ints (``True``) or floats from now on: the max / min partials
        of an int field are ints (an int64 array), as the per-key path's. Every key is
        dropped (reloaded from its state, where partials of the other type make the call
        run per key until they are gone)."""
        self._ints = ints
        self._comps = [c._replace(dtype=np.int64, part_type=int)
                       if c.kind == "select" and ints[c.col] else c for c in self._float_comps]
        self.drop()

    def _clear_arrays(self) -> None:
        i64, f64 = np.zeros(0, np.int64), np.zeros(0, np.float64)
        # pending events of every key, sorted by (key id, time, arrival): (ids, times, one
        # value array per field, int64 for int fields)
        self._pending: tuple[Any, ...] = (i64, i64, *[i64 if i else f64 for i in self._ints])
        # closed slices, sorted by (key id, start): (ids, starts, *partial arrays)
        self._closed: tuple[Any, ...] = (i64, i64, *[np.zeros(0, c.dtype) for c in self._comps])

    @classmethod
    def for_query(cls, store: KeyStore, intake: ColumnarIntake,
                  aggregations: Sequence[AggSpec], forced: str | None) -> BatchRuntime | None:
        """The runtime of the query whose keys ``store`` holds and whose batches ``intake``
        reads (``aggregations``: its outputs; ``forced``: a forced algorithm), or ``None`` if
        it does not cover it."""
        lanes = store.lanes
        if (np is None or forced is not None or len(lanes) != 1
                or not isinstance(lanes[0], TimeLane)):
            return None
        lane = lanes[0]
        kernels = lane.kernels
        if not lane.single or kernels is None or len(kernels) != len(aggregations):
            return None
        fns = [a.fn or "" for a in aggregations]
        for fn, kernel in zip(fns, kernels):
            # count of events reads no field; the others (count of the field included) read
            # the intake's one field
            if fn not in _FNS or not ((fn == "count" and kernel.field is None)
                                      or kernel.field in intake.fields):
                return None
        if all(k.field is None for k in kernels) or \
                lane.sliding[0][2] // lane.width > MAX_SLICES:
            return None
        probe = object()
        if len(fns) == 1 and fns[0] in ("max", "min") and \
                lane.aggregation.lower_fn(probe) is not probe:
            return None  # one max or min output: results are its partials
        return cls(store, intake, lane, fns)

    # ------------------------------------------------------------------ cache
    def drop(self, key: Hashable | None = None) -> None:
        """Forget the cached runtime of ``key`` (all keys if ``None``)."""
        if key is None:
            self._keys.clear()
            self._free_ids.clear()
            self._next_id = 0
            self._clear_arrays()
        else:
            self._drop_keys([key])

    def _drop_keys(self, keys: Sequence[Any]) -> None:
        gone = []
        for key in keys:
            k = self._keys.pop(key, None)
            if k is not None:
                gone.append(k.id)
        if gone:
            ids = np.array(gone, np.int64)
            self._pending = _take(self._pending, ~np.isin(self._pending[0], ids))
            self._closed = _take(self._closed, ~np.isin(self._closed[0], ids))
            self._free_ids.extend(gone)

    def _bound_cache(self, touched: Sequence[Any]) -> None:
        """Mark ``touched`` (keys of a call, in the order the per-key path last touches
        them) as the most recently used and drop the least recently used keys beyond
        ``max_cached_keys``: the same keys the per-key path's cache keeps."""
        bound = self._store.max_cached
        if bound is None:
            return
        cached = self._keys
        for key in touched:
            if key in cached:
                cached.move_to_end(key)
        if len(cached) > bound:
            self._drop_keys(list(itertools.islice(cached, len(cached) - bound)))

    def _components(self, part: Any) -> tuple[Any, ...]:
        """A slice partial of the per-key path as one value per partial array, checked to fit
        them exactly (:class:`_NotCovered` if not: e.g. int values of max / min the per-key
        path took, or a ``None`` partial of a skipping output)."""
        if self._single:
            parts: Any = (part,)
        elif type(part) is tuple and len(part) == len(self._of):
            parts = part
        else:
            raise _NotCovered
        comps: list[Any] = [None] * len(self._comps)
        for j, c in enumerate(self._of):
            p: Any = parts[j]
            comp = self._comps[c]
            if type(p) is not comp.part_type or (comp.dtype is np.int64 and not _in_int64(p)):
                raise _NotCovered  # (an int partial beyond int64: the per-key path took it)
            if self._first[c] != j:  # an array shared by outputs: the same partial
                q = comps[c]
                if p != q or (type(p) is float and math.copysign(1.0, p) !=
                              math.copysign(1.0, q)):
                    raise _NotCovered
            comps[c] = p
        return tuple(comps)

    def _split(self, part: Any) -> list[Any]:
        """A partial this runtime made as one value per partial array (unchecked)."""
        return [part] if self._single else [part[j] for j in self._first]

    def _join(self, comps: Sequence[Any]) -> Any:
        """The per-key path's partial of one value per partial array."""
        return comps[0] if self._single else tuple([comps[c] for c in self._of])

    def _key(self, key: Any, state: KeyState, reload: list[tuple[int, Any, Any]]) -> _Key:
        """The key's runtime, loaded from state if it is not cached or does not match the
        state's metadata; ``reload`` gets ``(id, pending, closed)`` of a loaded key (its
        pending events as ``(times, *values)`` and closed slices as ``(starts, *partials)``
        arrays), whose rows in the arrays they replace."""
        meta = state.get_meta()
        k = self._keys.get(key)
        if k is not None and (k.meta_bytes is meta or k.meta_bytes == meta):
            return k
        stale = k is not None  # the arrays hold the rows of an older runtime of the key
        if k is not None:
            ident = k.id
        elif self._free_ids:
            ident = self._free_ids.pop()
        else:
            ident, self._next_id = self._next_id, self._next_id + 1
        k = _Key(ident)
        loaded = None
        if meta is not None:
            try:
                loaded = self._load(key, state, meta, k)
            except BaseException:
                if not stale:
                    self._free_ids.append(ident)  # never used
                raise
        if stale or loaded is not None:
            reload.append((ident, *(loaded or (None, None))))
        self._keys[key] = k
        return k

    def _load(self, key: Any, state: KeyState, meta: bytes, k: _Key
              ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """A key this runtime does not hold (or holds stale) into ``k``: rebuilt from its
        log here (:meth:`_rebuild`) unless the per-key path holds it current, else taken
        over from the per-key path; returns its pending events and closed slices."""
        cached = self._store.cached(key)
        if cached is None or cached.meta_bytes != meta:
            rebuilt = self._rebuild(key, state, meta, k)
            if rebuilt is not None:
                return rebuilt
        pending, closed = self._take_over(key, state, meta, k)
        dtypes = [x.dtype for x in self._pending[1:]]
        pending_cols = tuple(np.array(c, dt) for c, dt in zip(zip(*pending), dtypes)) \
            if pending else tuple(np.zeros(0, dt) for dt in dtypes)
        starts = np.array([start for start, _ in closed], np.int64)
        parts = []
        for c, comp in enumerate(self._comps):
            arr = np.empty(len(closed), comp.dtype)
            arr[:] = [comps[c] for _, comps in closed]
            parts.append(arr)
        return pending_cols, (starts, *parts)

    def _rebuild(self, key: Any, state: KeyState, meta_bytes: bytes, k: _Key
                 ) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
        """The key's runtime straight from its log into arrays: what the per-key path's
        rebuild (``KeyStore.load`` then ``TimeLane.restore``) makes of it, without a Python
        record per event. A miss is the common case on an engine whose tasks move between
        worker processes (Spark gives a bucket's task to either Python worker; the other
        one's cache is then stale), so this is a hot path.

        Its pending events (``time >= B = watermark - lateness``) as arrays; its released
        events from the lane's trim point ``need(B)`` on folded into slice partials by the
        same reductions as a call's runs (:meth:`_run_partials`), the newest slice open if
        ``B`` is inside it. ``None`` (nothing changed) for a log this cannot read exactly:
        values of another type than the fields' (or not finite floats), times beyond
        int64, entries of other shapes, metadata it does not check; the per-key path's
        rebuild then reads it and reports what is wrong."""
        store = self._store
        if store.kvs.eligible:
            return None
        try:
            meta = decode_meta(meta_bytes)
            wm = decode_watermark(meta["wm"])
        except (StateError, CodecError):
            return None
        if meta.get("q") != store.query.fingerprint or meta["pol"]:
            return None
        fields, ints = self._fields, self._ints
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
                ts, cols = entry
                for j, name in enumerate(fields):
                    col = _column(cols.get(name), ints[j])
                    if col is None:
                        return None
                    columns[j].append(col)
                times.append(_column(ts, True))
                seqs.append((seq, len(ts)))
        except (CodecError, OverflowError):  # (beyond int64)
            return None
        if any(t is None for t in times):
            return None
        t = np.concatenate(times) if times else np.zeros(0, np.int64)
        xs = [np.concatenate(c) if c else np.zeros(0, np.int64 if i else np.float64)
              for c, i in zip(columns, ints)]
        if any(not i and not np.isfinite(x).all() for x, i in zip(xs, ints)):
            return None
        # arrival numbers: an entry written with seq s holds events s, s + 1, ...
        first = np.array([s for s, _ in seqs], np.int64)
        sizes = np.array([n for _, n in seqs], np.int64)
        offsets = np.arange(len(t), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        order = np.lexsort((np.repeat(first, sizes) + offsets, t))
        t = t[order]
        xs = [x[order] for x in xs]
        b = wm - self._lateness
        r = len(t) if b > _I64_MAX else 0 if b <= _I64_MIN else \
            int(np.searchsorted(t, int(b), "left"))
        if r > int(meta["rel"]):
            return None  # more released events than the metadata counts: corrupt
        need = self._lane.need(b)
        lo = r if need == INF else 0 if need <= _I64_MIN else \
            int(np.searchsorted(t[:r], int(need), "left"))
        starts = np.zeros(0, np.int64)
        parts: list[Any] = [np.zeros(0, c.dtype) for c in self._comps]
        if lo < r:
            rt, rx = t[lo:r], [x[lo:r] for x in xs]
            g = self._g
            sl = rt - (rt - self._base) % g
            cut = np.flatnonzero(sl[1:] != sl[:-1]) + 1
            at = np.concatenate(([0], cut))
            end = np.concatenate((cut, [len(rt)]))
            starts = sl[at]
            parts = self._run_partials(rx, at, end, np.zeros(len(at), bool))
            last = len(at) - 1
            if int(starts[last]) + g > b:  # the boundary is inside the newest slice
                k.open_start, k.open_acc = int(starts[last]), self._get_part(parts, last)
                starts, parts = starts[:last], [p[:last] for p in parts]
        heapq.heapify(segments)
        k.segments = segments
        k.meta_bytes = meta_bytes
        k.wm, k.seq, k.released, k.late = wm, int(meta["seq"]), int(meta["rel"]), \
            int(meta["late"])
        store.forget(key)  # a per-key runtime of the key is stale now
        return (t[r:], *[x[r:] for x in xs]), (starts, *parts)

    def _take_over(self, key: Any, state: KeyState, meta: bytes, k: _Key
                   ) -> tuple[list[Any], list[tuple[int, Any]]]:
        """Take the key's runtime over from the per-key path, which rebuilds (or holds) it:
        its counters, log entries and open slice into ``k``; returns its pending records and
        closed slices. :class:`_NotCovered` (nothing changed) if it holds what the arrays
        cannot hold exactly."""
        store = self._store
        rt = store.load(key, state, meta)
        ls = rt.lanes[0]
        if is_kvs(ls.w):
            # its window lives in the key's pair map and its log keeps only pending events:
            # the arrays would write a log without the window, so the key stays per-key
            raise _NotCovered
        pending = self._pending_pairs(rt)
        closed = [(start, self._components(part)) for start, part in ls.w.items()]
        if ls.open_acc is not None:
            self._components(ls.open_acc)
        # taken over (only now: if this key is refused, its per-key cache stays)
        store.forget(key)
        k.meta_bytes = meta
        k.wm, k.seq, k.released, k.late = rt.wm, rt.seq, rt.released, rt.late
        k.segments = list(rt.segments)
        k.open_start, k.open_acc = ls.open_start, ls.open_acc
        return pending, closed

    def _pending_pairs(self, rt: KeyRuntime) -> list[tuple[Any, ...]]:
        """The per-key runtime's pending events as ``(time, float value of each field)``
        sorted by (time, arrival); :class:`_NotCovered` if a value is not a float."""
        pending = sorted(rt.pending, key=lambda rec: rec[0])  # stable: (time, arrival)
        types = [int if i else float for i in self._ints]
        if self._single:
            want = types[0]
            if any(type(rec[1]) is not want for rec in pending):
                raise _NotCovered  # e.g. NumPy floats the per-key path holds as they came
            if want is int and any(not _I64_MIN <= rec[1] <= _I64_MAX for rec in pending):
                raise _NotCovered
            return pending
        # several outputs: a tuple of each output's field value, or None (counts of events)
        vi, reads = self._vi, self._reads
        out = []
        for t, raw in pending:
            xs = [raw[i] for i in vi]
            if any(type(x) is not w or (w is int and not _I64_MIN <= x <= _I64_MAX)
                   for x, w in zip(xs, types)) or any(
                    (y is not xs[j]) if j >= 0 else (y is not None) for y, j in zip(raw, reads)):
                raise _NotCovered  # e.g. a missing value (None) of a skipping output
            out.append((t, *xs))
        return out

    def _replace(self, reload: list[tuple[int, Any, Any]]) -> None:
        """Put the rows of reloaded keys in place of what the arrays held for them."""
        ids = np.array([ident for ident, _, _ in reload], np.int64)
        pending = _take(self._pending, ~np.isin(self._pending[0], ids))
        closed = _take(self._closed, ~np.isin(self._closed[0], ids))
        loaded_pending = [(np.full(len(p[0]), ident, np.int64), *p)
                          for ident, p, _ in reload if p is not None and len(p[0])]
        if loaded_pending:
            pending = _merge(pending, _sorted_rows(loaded_pending))
        loaded_closed = [(np.full(len(c[0]), ident, np.int64), *c)
                         for ident, _, c in reload if c is not None and len(c[0])]
        if loaded_closed:
            closed = _merge(closed, _sorted_rows(loaded_closed))
        self._pending, self._closed = pending, closed

    # ------------------------------------------------------------------ calls
    def process(self, events: Sequence[Any], backend: StateBackend,
                watermark: int | float | None, out: Output) -> bool:
        """:meth:`WindowDriver.process_batch`; ``False`` if the batch is not covered (then
        nothing changed and the per-key path must run)."""
        cols = self._intake.read(events)
        if cols is None:
            return False
        ints = cols.ints or (False,)
        if ints != self._ints:
            if any(ints) and not self._TAKES_INTS:
                return False
            self._set_types(ints)
        return self._run(cols.keys, backend, watermark, out, cols, cols.keys)

    def advance(self, keys: Sequence[Any], backend: StateBackend, watermark: int | float,
                out: Output) -> bool:
        """:meth:`WindowDriver.advance_keys`; ``False`` if not covered (nothing changed)."""
        try:
            distinct = list(dict.fromkeys(keys))
        except TypeError:  # an unhashable key: the per-key path reports it
            return False
        # the per-key path touches a repeated key again at its last place
        touched = list(dict.fromkeys(reversed(keys)))[::-1] \
            if len(distinct) < len(keys) and self._store.max_cached is not None else distinct
        return self._run(distinct, backend, watermark, out, None, touched)

    def _run(self, keys: list[Any], backend: StateBackend, watermark: int | float | None,
             out: Output, cols: Any, touched: Sequence[Any]) -> bool:
        states = [backend.key_state(key) for key in keys]
        if not all(getattr(state, "keeps_log", True) for state in states):
            return False  # no log to rebuild from: the per-key path keeps such keys
        try:
            self._apply(keys, states, watermark, out, cols)
        except _NotCovered:
            # raised while loading, before any change to state: every key of the call is
            # dropped from this runtime (the per-key path now runs them; keys taken over
            # earlier in the call rebuild from their state there)
            self._drop_keys(keys)
            return False
        except BaseException:
            self.drop()  # the cache may be half-changed: reload everything from state
            raise
        self._bound_cache(touched)
        return True

    # ------------------------------------------------------------------ one call
    def _apply(self, keys: list[Any], states: list[KeyState], watermark: int | float | None,
               out: Output, cols: BatchColumns | None) -> None:
        """One call: load the keys, release their pending events, take the new ones, fold
        the released into slices, advance each key, emit the due windows, write the state,
        compute the timers."""
        reload: list[tuple[int, Any, Any]] = []
        ks = [self._key(key, state, reload) for key, state in zip(keys, states)]
        if reload:
            self._replace(reload)
        ids = np.array([k.id for k in ks], np.int64)
        marks, bound, beyond = self._boundaries(ks, watermark)
        released = self._release(bound, beyond)
        new = _NO_NEW if cols is None else self._accept(cols, keys, ids, bound, beyond)
        runs = self._runs(released, ks, ids)
        step = _Step(self._next_id)
        for pos, k in enumerate(ks):
            self._advance_key(pos, k, marks[pos], runs, new, step)
        # closed slices into the shared arrays, then every due window at once
        if len(runs) or step.closing:
            self._add_closed(runs, step.closing)
        if step.windows:
            self._emit(keys, ids, step.windows, out.rows, released)
            closed = self._closed
            keep = ~((closed[1] < step.need_at[closed[0]]) | step.need_beyond[closed[0]])
            if not keep.all():
                self._closed = _take(closed, keep)
        # state writes, then timers
        write = self._store.write
        for pos, removal, entry, late_events in step.writes:
            if late_events:
                out.late.extend(late_events)
            write(states[pos], ks[pos], removal, entry)
        self._timers(keys, ks, ids, out.timers)

    def _boundaries(self, ks: list[_Key], watermark: int | float | None
                    ) -> tuple[list[int | float], Any, Any]:
        """Per key: its new watermark; per key id: the boundary ``B = watermark - lateness``
        as int64 for the arrays (events with ``time < B`` are late or released) and whether
        ``B`` exceeds every int64 time."""
        lateness = self._lateness
        nid = self._next_id
        bound = np.full(nid, _I64_MIN, np.int64)
        beyond = np.zeros(nid, bool)
        marks: list[int | float] = []
        for k in ks:
            wm = k.wm if watermark is None or watermark <= k.wm else watermark
            marks.append(wm)
            b = wm - lateness
            if b > _I64_MAX:
                beyond[k.id] = True
            elif b > _I64_MIN:
                bound[k.id] = int(b)
        return marks, bound, beyond

    def _release(self, bound: Any, beyond: Any) -> tuple[Any, ...]:
        """Take the pending events older than their key's boundary (a prefix of each key's)
        out of the pending arrays; returns them as ``(ids, times, values)``."""
        pending = self._pending
        rel = (pending[1] < bound[pending[0]]) | beyond[pending[0]]
        if not rel.any():  # nothing released (e.g. a batch under an unchanged watermark)
            return _take(pending, slice(0, 0))
        self._pending = _take(pending, ~rel)
        return _take(pending, rel)

    def _accept(self, cols: BatchColumns, keys: list[Any], ids: Any, bound: Any,
                beyond: Any) -> _New:
        """The batch's late events out, the rest sorted by (key, time, arrival) and merged
        into the pending arrays."""
        late_of: dict[int, list[LateEvent]] = {}
        ev_id = ids[cols.codes]
        t = cols.times
        xs = [cols.values] if len(self._fields) == 1 else list(cols.values)
        late = (t < bound[ev_id]) | beyond[ev_id]
        if late.any():
            at = np.flatnonzero(late)
            for i, code, time in zip(at.tolist(), cols.codes[at].tolist(), t[at].tolist()):
                late_of.setdefault(code, []).append(
                    LateEvent(keys[code], time, cols.events[i][2]))
            ok = ~late
            ev_id, t = ev_id[ok], t[ok]
            xs = [x[ok] for x in xs]
        order = key_time_order(ev_id, t)  # ties stay in arrival order
        new = (ev_id[order], t[order], *[x[order] for x in xs])
        lo = np.searchsorted(new[0], ids, "left").tolist()
        hi = np.searchsorted(new[0], ids, "right").tolist()
        newest = new[1][np.maximum(np.array(hi) - 1, 0)].tolist() if len(t) else []
        self._pending = _merge(self._pending, new)
        # the log holds the fields in the events' own key order
        fields = self._fields
        keys_order = cols.order or fields
        values = tuple(new[2 + fields.index(f)] for f in keys_order)
        # float columns as packed bytes; int columns stay arrays (the log holds them as JSON)
        return _New(late_of, lo, hi, newest, new[1].astype("<i8", copy=False).tobytes(),
                    tuple(v if v.dtype == np.int64 else v.astype("<f8", copy=False).tobytes()
                          for v in values), new[1], values, keys_order)

    def _runs(self, released: tuple[Any, ...], ks: list[_Key], ids: Any) -> _Runs:
        """The released events as (key, slice) runs with their slice partials; a key's
        first run that continues its open slice is left for :meth:`_advance_key`."""
        runs = _Runs(len(ks))
        rid, rtime, *rx = released
        if not len(rid):
            return runs
        g, base = self._g, self._base
        sl = rtime - (rtime - base) % g
        cut = np.flatnonzero((rid[1:] != rid[:-1]) | (sl[1:] != sl[:-1])) + 1
        runs.at = np.concatenate(([0], cut))
        runs.end = np.concatenate((cut, [len(rid)]))
        runs.ids, runs.starts, runs.x = rid[runs.at], sl[runs.at], rx
        runs.lo = np.searchsorted(runs.ids, ids, "left").tolist()
        runs.hi = np.searchsorted(runs.ids, ids, "right").tolist()
        runs.rel_n = (np.searchsorted(rid, ids, "right")
                      - np.searchsorted(rid, ids, "left")).tolist()
        open_of = np.full(self._next_id, _I64_MIN, np.int64)
        open_of[ids] = [k.open_start if k.open_start is not None else _I64_MIN for k in ks]
        is_first = np.ones(len(runs.ids), bool)
        is_first[1:] = runs.ids[1:] != runs.ids[:-1]
        run_open = open_of[runs.ids]
        goes_on = is_first & (runs.starts == run_open) & (run_open != _I64_MIN)
        runs.parts = self._run_partials(rx, runs.at, runs.end, goes_on)
        runs.closes = np.ones(len(runs.at), bool)
        return runs

    def _advance_key(self, pos: int, k: _Key, wm: int | float, runs: _Runs, new: _New,
                     step: _Step) -> None:
        """The per-key part of a call for the key at ``pos``: its watermark, open slice and
        log trim if it advances, its log entry, its counters; records what the array work
        and the writes need in ``step``."""
        a, e = (new.lo[pos], new.hi[pos]) if new.lo else (0, 0)
        late_events = new.late_of.get(pos) if new.late_of else None
        if wm <= k.wm and a == e and not late_events:
            return
        removal: Removal = None
        if wm > k.wm:
            b_old, b = k.wm - self._lateness, wm - self._lateness
            step.windows.append((pos, b_old, b))
            k.wm = wm
            k.released += runs.rel_n[pos]
            self._move_open_slice(k, pos, b, runs, step.closing)
            removal = self._trim(k, b, step)
        entry = None
        if a < e:
            entry = self._log_entry(k, new, a, e, new.newest[pos])
        if late_events:
            k.late += len(late_events)
        step.writes.append((pos, removal, entry, late_events))

    def _move_open_slice(self, k: _Key, pos: int, b: int | float, runs: _Runs,
                         closing: list[tuple[int, int, Any]]) -> None:
        """The key's open slice after its released runs: continued by its first run (the
        kernel's ``fold_onto``) or closed; the newest run stays open if ``b`` is inside it."""
        g = self._g
        cur, acc = k.open_start, k.open_acc
        j0, j1 = runs.lo[pos], runs.hi[pos]
        if j1 > j0:
            first = int(runs.starts[j0])
            if cur == first:  # the open slice goes on
                self._set_part(runs.parts, j0, self._continue(acc, runs, j0))
            elif cur is not None:
                closing.append((k.id, cur, acc))
            last = int(runs.starts[j1 - 1])
            if last + g > b:  # the newest run stays open
                runs.closes[j1 - 1] = False
                cur, acc = last, self._get_part(runs.parts, j1 - 1)
            else:
                cur = acc = None
        elif cur is not None and cur + g <= b:
            closing.append((k.id, cur, acc))
            cur = acc = None
        k.open_start, k.open_acc = cur, acc

    def _trim(self, k: _Key, b: int | float, step: _Step) -> Removal:
        """The trim point at boundary ``b`` (the lane's :meth:`TimeLane.need`, as the
        per-key path's): closed slices before it go after the emission, and the log
        entries older than it now (:meth:`KeyStore.trim_log`)."""
        final = step.need_of.get(b)
        if final is None:
            final = step.need_of[b] = self._lane.need(b)
        if final == INF:
            step.need_beyond[k.id] = True
        elif final > _I64_MIN:
            step.need_at[k.id] = int(final)
        return self._store.trim_log(k, final)

    def _log_entry(self, k: _Key, new: _New, a: int, e: int,
                   newest: int) -> tuple[int, int, bytes]:
        """The key's log entry for its new events (rows ``a .. e - 1``): the per-key path's
        entry for one event, else one packed segment; counted in ``k``."""
        n = e - a
        if n == 1:  # what the per-key path writes for one event
            data = encode_entry([int(new.times[a])],
                                [{f: v[a].item() for f, v in zip(new.order, new.values)}])
        else:
            if len(new.order) == 1 and type(new.x_bytes[0]) is bytes:  # one float field
                segment = encode_float_record_segment(
                    new.order[0], n, new.t_bytes[8 * a:8 * e], new.x_bytes[0][8 * a:8 * e])
            else:
                segment = encode_float_records_segment(
                    new.order, n, new.t_bytes[8 * a:8 * e],
                    [x[8 * a:8 * e] if type(x) is bytes else x[a:e].tolist()
                     for x in new.x_bytes])
            assert segment is not None  # the columnar intake checked the fields
            data = segment
        entry = (newest, k.seq, data)
        heapq.heappush(k.segments, (newest, k.seq))
        k.seq += n
        return entry

    # ------------------------------------------------------------------ slices
    def _reduce(self, ufunc: Any, values: Any, lo: Any, hi: Any, fold: Any = None) -> Any:
        """``ufunc.reduce(values[lo[j]:hi[j]])`` for every j (``hi > lo``), ranges in any
        order (``reduceat`` on interleaved bounds). For ``maximum``/``minimum`` a zero result
        is refolded by the kernel's ``fold``, so that of ``0.0`` and ``-0.0`` the older wins,
        as the per-key path's ``max`` does (``0.0 == -0.0``: NumPy may return either)."""
        bounds = np.empty(2 * len(lo), np.int64)
        bounds[0::2] = lo
        bounds[1::2] = hi
        out = ufunc.reduceat(np.append(values, values.dtype.type(0)), bounds)[0::2]
        if ufunc is not np.add and values.dtype == np.float64:
            for j in np.flatnonzero(out == 0).tolist():
                out[j] = fold(values[lo[j]:hi[j]].tolist(), int(hi[j] - lo[j]))
        return out

    def _run_partials(self, rx: list[Any], run_at: Any, run_end: Any,
                      goes_on: Any) -> list[Any]:
        """Slice partials of the runs ``rx[field][run_at[j]:run_end[j]]``, one array per
        :class:`_Comp`; exact sums of the runs that continue an open slice (``goes_on``) are
        left at 0 (the caller folds them onto the open slice)."""
        arrays: list[Any] = []
        lists: dict[int, list[float]] = {}
        for comp in self._comps:
            if comp.kind == "count":
                arrays.append(run_end - run_at)
            elif comp.kind == "select":
                arrays.append(self._reduce(comp.ufunc, rx[comp.col], run_at, run_end,
                                           comp.fold))
            else:
                xs = lists.get(comp.col)
                if xs is None:
                    xs = lists[comp.col] = rx[comp.col].tolist()
                fold = comp.fold
                parts = np.empty(len(run_at), object)
                parts[:] = [0 if skip else fold(xs[a:e], e - a) for a, e, skip in
                            zip(run_at.tolist(), run_end.tolist(), goes_on.tolist())]
                arrays.append(parts)
        return arrays

    def _continue(self, acc: Any, runs: _Runs, j: int) -> Any:
        """The open slice's partial ``acc`` folded on with run ``j``, each array's kind by
        its kernel: for ``max``/``min`` the older operand of a tie is ``acc``, so combining
        with the run's partial is the same left fold; counts add the run's length; sums add
        the run's exact partial."""
        if self._single:  # (the single-output path without the loop: once per key and call)
            return self._continue_one(self._comps[0], acc, runs.parts[0], runs, j)
        return self._join([self._continue_one(comp, part, arr, runs, j) for comp, part, arr
                           in zip(self._comps, self._split(acc), runs.parts)])

    @staticmethod
    def _continue_one(comp: _Comp, part: Any, arr: Any, runs: _Runs, j: int) -> Any:
        """One partial array's part of :meth:`_continue` (``arr``: its run partials)."""
        if comp.kind == "select":
            return comp.fold_onto(part, (comp.part_type(arr[j]),), 1)
        a, e = int(runs.at[j]), int(runs.end[j])
        if comp.kind == "count":
            return comp.fold_onto(part, (), e - a)
        return comp.fold_onto(part, runs.x[comp.col][a:e].tolist(), e - a)

    def _get_part(self, arrays: list[Any], j: int) -> Any:
        """The per-key path's partial of row ``j`` of the partial arrays."""
        if self._single:
            comp = self._comps[0]
            return arrays[0][j] if comp.kind == "exact" else comp.part_type(arrays[0][j])
        return self._join([arr[j] if comp.kind == "exact" else comp.part_type(arr[j])
                           for comp, arr in zip(self._comps, arrays)])

    def _set_part(self, arrays: list[Any], j: int, part: Any) -> None:
        if self._single:
            arrays[0][j] = part
            return
        for arr, value in zip(arrays, self._split(part)):
            arr[j] = value

    def _add_closed(self, runs: _Runs, closing: list[tuple[int, int, Any]]) -> None:
        """Add the runs that close and the open slices that closed to the closed arrays."""
        parts: list[tuple[Any, ...]] = []
        if len(runs):
            parts.append(_take((runs.ids, runs.starts, *runs.parts), runs.closes))
        if closing:
            ident, start, part = zip(*closing)
            arrays = []
            for comp, values in zip(self._comps, zip(*map(self._split, part))):
                arr = np.empty(len(part), comp.dtype)
                arr[:] = values
                arrays.append(arr)
            parts.append((np.array(ident, np.int64), np.array(start, np.int64), *arrays))
        new = parts[0] if len(parts) == 1 else tuple(
            np.concatenate(pair) for pair in zip(*parts))
        if closing:  # in call order, not key order
            new = _take(new, key_time_order(new[0], new[1]))
        self._closed = _merge(self._closed, new)

    # ------------------------------------------------------------------ windows
    def _emit(self, keys: list[Any], ids: Any,
              windows: list[tuple[int, int | float, int | float]],
              rows: list[dict[str, Any]], released: tuple[Any, ...]) -> None:
        """Rows of the due windows ``[e - range, e)`` (``b_old < e <= b``) of the advancing
        keys that hold a closed slice, per key in call order, ends ascending (``released``:
        the call's released events, which per-event windows answer)."""
        closed = self._closed
        cid, cst = closed[0], closed[1]
        if not len(cid):
            return
        r, s, e0 = self._r, self._s, self._e0
        pos_of = np.array([p for p, _, _ in windows])
        lo = np.searchsorted(cid, ids[pos_of], "left").tolist()
        hi = np.searchsorted(cid, ids[pos_of], "right").tolist()
        oldest = cst[np.minimum(lo, len(cst) - 1)].tolist()
        newest = cst[np.maximum(np.array(hi) - 1, 0)].tolist()
        w_pos: list[int] = []   # per window: the key's position in the call
        w_end: list[int] = []
        firsts: list[int] = []  # dense runs of ends: (position, first end, count)
        counts: list[int] = []
        dense_pos: list[int] = []
        for (pos, b_old, b), a, z, old, new in zip(windows, lo, hi, oldest, newest):
            if z == a:
                continue
            first = end_after(old if b_old == -INF else b_old, s, e0)
            last = end_after(new + r, s, e0) - s  # the last window holding the newest slice
            if b != INF:
                last = min(last, end_after(b, s, e0) - s)
            if last < first:
                continue
            n = (int(last) - first) // s + 1
            if n <= _DENSE_WINDOWS:
                dense_pos.append(pos)
                firsts.append(first)
                counts.append(n)
            else:  # a gap in the key's data: skip its empty windows by binary search
                starts = cst[a:z].tolist()
                for end in due_window_ends(starts, 0, first - 1, last, r, s, e0):
                    w_pos.append(pos)
                    w_end.append(end)
        if counts:
            total = sum(counts)
            offsets = np.repeat(np.cumsum(counts) - counts, counts)
            ends = np.repeat(np.array(firsts, np.int64), counts) + s * (
                np.arange(total, dtype=np.int64) - offsets)
            pos_arr = np.repeat(np.array(dense_pos, np.int64), counts)
            if w_end:
                ends = np.concatenate((ends, np.array(w_end, np.int64)))
                pos_arr = np.concatenate((pos_arr, np.array(w_pos, np.int64)))
                order = key_time_order(pos_arr, ends)
                ends, pos_arr = ends[order], pos_arr[order]
        elif w_end:
            ends, pos_arr = np.array(w_end, np.int64), np.array(w_pos, np.int64)
        else:
            return
        # slices [e - r, e) of each window: binary searches on (key id, start)
        wid = ids[pos_arr]
        t0 = int(cst.min())
        span = int(cst.max()) - t0 + 1
        top = int(cid.max()) + 1
        if span * (top + 1) < 2**62:
            key = cid * span + (cst - t0)
            w_lo = np.searchsorted(key, wid * span + np.clip(ends - r - t0, 0, span), "left")
            w_hi = np.searchsorted(key, wid * span + np.clip(ends - t0, 0, span), "left")
        else:  # times spanning beyond 2**62 / keys (tested)
            w_lo = np.empty(len(ends), np.int64)
            w_hi = np.empty(len(ends), np.int64)
            for j, (i, e) in enumerate(zip(wid.tolist(), ends.tolist())):
                a = int(np.searchsorted(cid, i, "left"))
                z = int(np.searchsorted(cid, i, "right"))
                w_lo[j] = a + int(np.searchsorted(cst[a:z], e - r, "left"))
                w_hi[j] = a + int(np.searchsorted(cst[a:z], e, "left"))
        full = w_hi > w_lo
        if not full.all():
            ends, pos_arr, w_lo, w_hi = ends[full], pos_arr[full], w_lo[full], w_hi[full]
        values = self._window_values(closed, w_lo, w_hi)
        idx, name = self._idx, self._out
        if name is not None:
            rows.extend([{"window": idx, "key": keys[p], "start": e - r, "end": e, name: v}
                         for p, e, v in zip(pos_arr.tolist(), ends.tolist(), values)])
        else:  # several outputs: the lowered dict of each window, as the per-key path
            rows.extend([{"window": idx, "key": keys[p], "start": e - r, "end": e, **v}
                         for p, e, v in zip(pos_arr.tolist(), ends.tolist(), values)])

    def _window_values(self, closed: tuple[Any, ...], lo: Any, hi: Any) -> list[Any]:
        """Lowered aggregates of the closed slices ``lo[j] .. hi[j] - 1``, all windows at
        once (``hi > lo``): one reduction per partial array, then the lane's ``lower`` (a
        dict of the outputs, for several)."""
        per_comp = []
        for comp, arr in zip(self._comps, closed[2:]):
            if comp.kind == "select":
                per_comp.append(self._reduce(comp.ufunc, arr, lo, hi, comp.fold).tolist())
            else:
                per_comp.append(self._sums(arr, lo, hi))
        if self._raw_results:
            return per_comp[0]
        if self._single:
            return list(map(self._lower, per_comp[0]))
        return list(map(self._lower, zip(*[per_comp[c] for c in self._of])))

    def _sums(self, parts: Any, lo: Any, hi: Any) -> list[int]:
        """Sums of the counts (int64) or exact partials (Python ints) ``parts[lo[j]:hi[j]]``
        as Python ints: exact either way, so NumPy's order changes nothing."""
        if int((hi - lo).sum()) > len(parts):
            # Sums are invertible: a window is the difference of two prefix sums, one
            # addition per closed slice instead of one per slice of every window.
            prefix = np.zeros(len(parts) + 1, parts.dtype)
            np.cumsum(parts, out=prefix[1:])
            return (prefix[hi] - prefix[lo]).tolist()
        return self._reduce(np.add, parts, lo, hi).tolist()

    # ------------------------------------------------------------------ timers
    def _timers(self, keys: list[Any], ks: list[_Key], ids: Any,
                timers: dict[Any, int | None]) -> None:
        """Each key's next timer: :meth:`KeyStore.timer` of its watermark, its newest
        retained slice (the open one, else the newest closed) and its oldest pending event
        (a loop over :meth:`KeyStore.timer`, one rule for every path: a vectorized copy of
        it is no faster)."""
        pid, pt = self._pending[0], self._pending[1]
        p_lo = np.searchsorted(pid, ids, "left").tolist()
        p_hi = np.searchsorted(pid, ids, "right").tolist()
        cid, cst = self._closed[0], self._closed[1]
        c_lo = np.searchsorted(cid, ids, "left").tolist()
        c_hi = np.searchsorted(cid, ids, "right").tolist()
        timer = self._store.timer
        for key, k, pl, ph, cl, ch in zip(keys, ks, p_lo, p_hi, c_lo, c_hi):
            last = k.open_start if k.open_start is not None else \
                int(cst[ch - 1]) if ch > cl else None
            timers[key] = timer(k.wm, last, int(pt[pl]) if ph > pl else INF)


__all__ = ["MAX_SLICES", "BatchRuntime"]
