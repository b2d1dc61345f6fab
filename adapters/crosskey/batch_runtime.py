"""The cross-key batch runtime: :meth:`adapters.WindowDriver.process_batch` and
:meth:`~adapters.WindowDriver.advance_keys` for the commonest query, with the per-event and
per-window work done once per call in NumPy over all keys instead of per key in Python.

What it covers (:meth:`BatchRuntime.for_query`): one sliding or tumbling window spec; one or
more outputs, each ``count`` of events or ``count`` (``nulls="skip"``), ``max``, ``min``,
``sum`` or ``mean`` of a field (kernels, :mod:`adapters.driver.kernels`), over one or more
fields (a count of a field is the count of events here: the intake takes finite floats only);
at most :data:`MAX_SLICES` slices per window; no forced algorithm; batches the columnar intake
takes (:meth:`adapters.crosskey.columnar.ColumnarIntake.read`: ``(key, int time, {field:
value, ...})`` holding exactly the fields read, each field all finite floats or all int64 ints
over the batch (a long column: max / min partials are then ints, as the per-key path's), at
least ``MIN_BATCH`` events; with several fields every dict's keys in one order); states that
keep their event log. Anything else takes the per-key path, which is also the reference the
tests compare with.

Why: the per-key path touches every event several times in Python (a record tuple, the
pending buffer, the release, the fold) and makes a few structure calls per window; with
about 100 events per key and call those costs exceed what the engines' per-window
assignment pays at one window per event (``docs/benchmarks.md``). Here, per call
(:meth:`BatchRuntime._apply`):

* pending events of every key wait in arrays sorted by (key id, time, arrival), one value
  array per field (:mod:`~adapters.crosskey.sorted_rows`); late events, the release (``time <
  watermark - allowed lateness``) and the grouping of the released events into (key, slice)
  runs are array operations (:mod:`~adapters.crosskey.call_events`);
* each run becomes a slice partial, one array per kind of output and field
  (:mod:`~adapters.crosskey.partials`); a key's open slice (the one the boundary is inside)
  continues with the kernels' folds;
* closed slices of every key are arrays sorted by (key id, slice start); the due windows of
  all keys are reduced from them at once (:mod:`~adapters.crosskey.emission`): the rows equal
  the per-key path's bit for bit.

Everything else about a key goes through the driver's
:class:`~adapters.driver.key_store.KeyStore`, the seam both paths share: loading (a key this
runtime does not hold, or holds stale, is rebuilt from its log or taken over from the per-key
path, :mod:`~adapters.crosskey.key_loading`), the state writes (one log entry per key and
call, the metadata with a fresh nonce), the trim point and which log entries go, and the
timers. So the state is the per-key path's, either path continues from what the other wrote,
restarts rebuild from it, and a key's cached runtime is checked against its metadata before
use, as the per-key cache is. With ``max_cached_keys`` this runtime keeps at most that many
keys between calls, least recently used out first (:meth:`BatchRuntime._bound_cache`).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from adapters.crosskey import call_events
from adapters.crosskey.call_events import NO_NEW_EVENTS, Boundaries, NewEvents, Runs
from adapters.crosskey.columnar import BatchColumns, ColumnarIntake, key_time_order
from adapters.crosskey.emission import Advance, WindowGrid, emit
from adapters.crosskey.key_loading import CrossKey, KeyLoader, LoadedKey
from adapters.crosskey.partials import NotCovered, Partials
from adapters.crosskey.sorted_rows import (
    INT64_MIN,
    SortedRows,
    concat_rows,
    merge_rows,
    sort_rows,
)
from adapters.driver.key_runtime import INF
from adapters.driver.key_store import KeyStore, Removal
from adapters.driver.results import LateEvent, Output
from adapters.driver.time_lane import TimeLane
from adapters.query.builtins import CROSS_KEY, fns_taking
from adapters.query.specs import AggSpec
from adapters.state.backend import KeyState, StateBackend

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

#: Most slices a window may span for this runtime (range / slice width): it reduces each
#: window's slices afresh (in C), where a structure pays O(1) interpreter-level calls per
#: window. Up to this bound the runtime stays faster than the per-key path (figures:
#: docs/adapters.md); above it the structures' O(1) per window is the safer choice.
MAX_SLICES = 2048
_FNS = fns_taking(CROSS_KEY)


class ClosingSlice(NamedTuple):
    """An open slice that closed in a call."""

    key_id: int
    start: int
    partial: Any


#: What a call writes for a key: ``(position in the call, log removal, log entry, late
#: events)``. A plain tuple, as :data:`~adapters.crosskey.emission.Advance`.
KeyWrite = tuple[int, Removal, Any, "list[LateEvent] | None"]


@dataclass(slots=True)
class CallPlan:
    """What the per-key part of a call decided, for the array work and writes after it."""

    closing: list[ClosingSlice] = field(default_factory=list)
    advances: list[Advance] = field(default_factory=list)
    writes: list[KeyWrite] = field(default_factory=list)
    #: per key id: closed slices before ``need_at`` go (all of them if ``need_beyond``)
    need_at: Any = None
    need_beyond: Any = None
    #: the trim point of each boundary (the keys of a call mostly share one)
    need_of: dict[int | float, int | float] = field(default_factory=dict)

    @classmethod
    def for_ids(cls, id_count: int) -> CallPlan:
        """An empty plan for a call on keys with ids below ``id_count``."""
        return cls(need_at=np.full(id_count, INT64_MIN, np.int64),
                   need_beyond=np.zeros(id_count, bool))


class BatchRuntime:
    """See the module docstring. Build it with :meth:`for_query` (``None``: not covered)."""

    def __init__(self, store: KeyStore, intake: ColumnarIntake, lane: TimeLane,
                 fns: Sequence[str]) -> None:
        assert lane.kernels is not None
        self._store = store
        self._intake = intake
        self._lane = lane
        self._width = lane.width
        self._lateness = store.lateness
        #: the partial arrays of the outputs and the fields the pending arrays hold
        self._partials = Partials(fns, lane.kernels, intake.fields, lane.aggregation.lower_fn)
        assert (lane.out is not None) == self._partials.single
        self._loader = KeyLoader(store, lane, self._partials)
        _, index, span, slide, first_end = lane.sliding[0]
        self._grid = WindowGrid(index, span, slide, first_end)
        #: one output: rows get row[out] = value; several: row.update(lowered dict)
        self._out = lane.out
        #: the cached keys, least recently used first (bounded by ``store.max_cached``
        #: after each call)
        self._keys: OrderedDict[Any, CrossKey] = OrderedDict()
        #: ids of dropped keys, reused (so per-call arrays indexed by id stay as small as
        #: the keys held), and the next new id
        self._free_ids: list[int] = []
        self._next_id = 0
        self._clear_arrays()

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

    @property
    def _ints(self) -> tuple[bool, ...]:
        """Per field: whether its values are ints (as the last batch read)."""
        return self._partials.ints

    def _set_types(self, ints: tuple[bool, ...]) -> None:
        """Hold the fields as ints (``True``) or floats from now on. Every key is dropped
        (reloaded from its state, where partials of the other type make the call run per key
        until they are gone)."""
        self._partials.set_types(ints)
        self.drop()

    def _clear_arrays(self) -> None:
        #: pending events of every key, sorted by (key id, time, arrival)
        self._pending = SortedRows.empty(self._partials.value_dtypes())
        #: closed slices, sorted by (key id, start)
        self._closed = SortedRows.empty(self._partials.dtypes())

    # ------------------------------------------------------------------ cache
    def drop(self, key: Hashable | None = None) -> None:
        """Forget the cached runtime of ``key`` (all keys if ``None``)."""
        if key is None:
            self._keys.clear()
            self._free_ids.clear()
            self._next_id = 0
            self._clear_arrays()
        else:
            self.drop_keys([key])

    def drop_keys(self, keys: Sequence[Any]) -> None:
        """Forget the cached runtimes of ``keys`` (one pass over the arrays)."""
        gone = []
        for key in keys:
            k = self._keys.pop(key, None)
            if k is not None:
                gone.append(k.id)
        if gone:
            ids = np.array(gone, np.int64)
            self._pending = self._pending.without_keys(ids)
            self._closed = self._closed.without_keys(ids)
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
            self.drop_keys(list(itertools.islice(cached, len(cached) - bound)))

    def _key(self, key: Any, state: KeyState, reload: list[tuple[int, LoadedKey | None]]
             ) -> CrossKey:
        """The key's runtime, loaded from state if it is not cached or does not match the
        state's metadata; ``reload`` gets ``(id, loaded rows or None)`` of a key whose rows
        in the arrays are replaced."""
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
        k = CrossKey(ident)
        loaded = None
        if meta is not None:
            try:
                loaded = self._loader.load(key, state, meta, k)
            except BaseException:
                if not stale:
                    self._free_ids.append(ident)  # never used
                raise
        if stale or loaded is not None:
            reload.append((ident, loaded))
        self._keys[key] = k
        return k

    def _replace(self, reload: list[tuple[int, LoadedKey | None]]) -> None:
        """Put the rows of reloaded keys in place of what the arrays held for them."""
        ids = np.array([ident for ident, _ in reload], np.int64)
        pending = self._pending.without_keys(ids)
        closed = self._closed.without_keys(ids)
        loaded = [(ident, rows) for ident, rows in reload if rows is not None]
        loaded_pending = [SortedRows.of_key(ident, rows.pending.times, rows.pending.columns)
                          for ident, rows in loaded if len(rows.pending.times)]
        if loaded_pending:
            pending = merge_rows(pending, sort_rows(loaded_pending))
        loaded_closed = [SortedRows.of_key(ident, rows.closed.times, rows.closed.columns)
                         for ident, rows in loaded if len(rows.closed.times)]
        if loaded_closed:
            closed = merge_rows(closed, sort_rows(loaded_closed))
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
        if ints != self._partials.ints:
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
             out: Output, cols: BatchColumns | None, touched: Sequence[Any]) -> bool:
        states = [backend.key_state(key) for key in keys]
        if not all(getattr(state, "keeps_log", True) for state in states):
            return False  # no log to rebuild from: the per-key path keeps such keys
        try:
            self._apply(keys, states, watermark, out, cols)
        except NotCovered:
            # raised while loading, before any change to state: every key of the call is
            # dropped from this runtime (the per-key path now runs them; keys taken over
            # earlier in the call rebuild from their state there)
            self.drop_keys(keys)
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
        reload: list[tuple[int, LoadedKey | None]] = []
        ks = [self._key(key, state, reload) for key, state in zip(keys, states)]
        if reload:
            self._replace(reload)
        ids = np.array([k.id for k in ks], np.int64)
        bounds = call_events.boundaries(ks, watermark, self._lateness, self._next_id)
        released, self._pending = call_events.release(self._pending, bounds)
        new = NO_NEW_EVENTS
        if cols is not None:
            new, self._pending = call_events.accept(cols, keys, ids, bounds, self._pending,
                                                    self._partials.fields)
        lane = self._lane
        runs = call_events.slice_runs(released, ks, ids, self._next_id, lane.width, lane.base,
                                      self._partials)
        plan = CallPlan.for_ids(self._next_id)
        for pos, k in enumerate(ks):
            self._advance_key(pos, k, bounds, runs, new, plan)
        # closed slices into the shared arrays, then every due window at once
        if len(runs) or plan.closing:
            self._add_closed(runs, plan.closing)
        if plan.advances:
            emit(self._closed, keys, ids, plan.advances, self._grid, self._partials,
                 self._out, out.rows)
            self._evict_closed(plan)
        # state writes, then timers
        write = self._store.write
        for pos, removal, entry, late_events in plan.writes:
            if late_events:
                out.late.extend(late_events)
            write(states[pos], ks[pos], removal, entry)
        self._timers(keys, ks, ids, out.timers)

    def _advance_key(self, pos: int, k: CrossKey, bounds: Boundaries, runs: Runs,
                     new: NewEvents, plan: CallPlan) -> None:
        """The per-key part of a call for the key at ``pos``: its watermark, open slice and
        log trim if it advances, its log entry, its counters; records what the array work
        and the writes need in ``plan``."""
        first, stop = (new.first[pos], new.stop[pos]) if new.first else (0, 0)
        late_events = new.late_of.get(pos) if new.late_of else None
        mark = bounds.marks[pos]
        if mark <= k.wm and first == stop and not late_events:
            return
        removal: Removal = None
        if mark > k.wm:
            old_bound, bound = k.wm - self._lateness, mark - self._lateness
            plan.advances.append((pos, old_bound, bound))
            k.wm = mark
            k.released += runs.released[pos]
            self._move_open_slice(k, pos, bound, runs, plan.closing)
            removal = self._trim(k, bound, plan)
        entry = None
        if first < stop:
            entry = call_events.log_entry(k, new, first, stop, new.newest[pos])
        if late_events:
            k.late += len(late_events)
        plan.writes.append((pos, removal, entry, late_events))

    def _move_open_slice(self, k: CrossKey, pos: int, bound: int | float, runs: Runs,
                         closing: list[ClosingSlice]) -> None:
        """The key's open slice after its released runs: continued by its first run (the
        kernel's ``fold_onto``) or closed; the newest run stays open if ``bound`` is inside
        it."""
        width, partials = self._width, self._partials
        start, acc = k.open_start, k.open_acc
        first, stop = runs.key_first[pos], runs.key_stop[pos]
        if stop > first:
            if start == int(runs.starts[first]):  # the open slice goes on
                partials.put(runs.parts, first, partials.fold_run(
                    acc, runs.parts, runs.values, first, runs.first, runs.stop))
            elif start is not None:
                closing.append(ClosingSlice(k.id, start, acc))
            last = int(runs.starts[stop - 1])
            if last + width > bound:  # the newest run stays open
                runs.closes[stop - 1] = False
                start, acc = last, partials.get(runs.parts, stop - 1)
            else:
                start = acc = None
        elif start is not None and start + width <= bound:
            closing.append(ClosingSlice(k.id, start, acc))
            start = acc = None
        k.open_start, k.open_acc = start, acc

    def _trim(self, k: CrossKey, bound: int | float, plan: CallPlan) -> Removal:
        """The trim point at ``bound`` (the lane's :meth:`TimeLane.need`, as the per-key
        path's): closed slices before it go after the emission, and the log entries older
        than it now (:meth:`KeyStore.trim_log`)."""
        final = plan.need_of.get(bound)
        if final is None:
            final = plan.need_of[bound] = self._lane.need(bound)
        if final == INF:
            plan.need_beyond[k.id] = True
        elif final > INT64_MIN:
            plan.need_at[k.id] = int(final)
        return self._store.trim_log(k, final)

    def _add_closed(self, runs: Runs, closing: list[ClosingSlice]) -> None:
        """Add the runs that close and the open slices that closed to the closed arrays."""
        parts: list[SortedRows] = []
        if len(runs):
            parts.append(SortedRows(runs.ids, runs.starts, tuple(runs.parts)).take(runs.closes))
        if closing:
            split = self._partials.split
            columns = [_filled(values, comp.dtype) for comp, values in zip(
                self._partials.comps, zip(*[split(c.partial) for c in closing]))]
            parts.append(SortedRows(np.array([c.key_id for c in closing], np.int64),
                                    np.array([c.start for c in closing], np.int64),
                                    tuple(columns)))
        new = concat_rows(parts)
        if closing:  # in call order, not key order
            new = new.take(key_time_order(new.ids, new.times))
        self._closed = merge_rows(self._closed, new)

    def _evict_closed(self, plan: CallPlan) -> None:
        """Drop the closed slices before each advanced key's trim point."""
        closed = self._closed
        keep = ~((closed.times < plan.need_at[closed.ids]) | plan.need_beyond[closed.ids])
        if not keep.all():
            self._closed = closed.take(keep)

    # ------------------------------------------------------------------ timers
    def _timers(self, keys: list[Any], ks: list[CrossKey], ids: Any,
                timers: dict[Any, int | None]) -> None:
        """Each key's next timer: :meth:`KeyStore.timer` of its watermark, its newest
        retained slice (the open one, else the newest closed) and its oldest pending event
        (a loop over :meth:`KeyStore.timer`, one rule for every path: a vectorized copy of
        it is no faster)."""
        pending, closed = self._pending, self._closed
        pending_lo = np.searchsorted(pending.ids, ids, "left").tolist()
        pending_hi = np.searchsorted(pending.ids, ids, "right").tolist()
        closed_lo = np.searchsorted(closed.ids, ids, "left").tolist()
        closed_hi = np.searchsorted(closed.ids, ids, "right").tolist()
        timer, starts, times = self._store.timer, closed.times, pending.times
        for key, k, p_lo, p_hi, c_lo, c_hi in zip(keys, ks, pending_lo, pending_hi, closed_lo,
                                                  closed_hi):
            last = k.open_start if k.open_start is not None else \
                int(starts[c_hi - 1]) if c_hi > c_lo else None
            timers[key] = timer(k.wm, last, int(times[p_lo]) if p_hi > p_lo else INF)


def _filled(values: Sequence[Any], dtype: Any) -> Any:
    """An array of ``dtype`` holding ``values`` (an object array keeps Python ints)."""
    arr = np.empty(len(values), dtype)
    arr[:] = values
    return arr


__all__ = ["MAX_SLICES", "BatchRuntime"]
