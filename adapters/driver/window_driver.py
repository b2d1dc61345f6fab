"""The engine-free window driver: a per-key state machine on top of ``swag_core``.

An engine adapter calls :meth:`WindowDriver.process` when events arrive for a key (Flink
``processElement``, Beam ``process``, Spark ``handleInputRows``) and
:meth:`WindowDriver.advance_watermark` when the key's timer fires (``onTimer``,
``on_timer``, ``handleExpiredTimer``); both return an :class:`Output` with the rows to emit,
the late events (for a side output) and the time of the key's next timer. Everything else is
here, written once: lateness, the pending buffer, watermark-driven release into the
structures, emission of due windows in time order, bulk eviction, the state layout and its
codec.

How one key is processed (``docs/adapters.md`` has the full story):

* Let ``W`` be the largest watermark seen and ``B = W - allowed_lateness``. An event with
  ``time < B`` is late. Others are appended to the key's event log (one O(1) state write)
  and wait in the pending buffer.
* When ``W`` advances, pending events with ``time < B`` are *released*: no event older than
  ``B`` can be accepted any more, so they go to the lanes in ``(time, arrival)`` order, which
  keeps every structure in order. Sliding, tumbling and OVER windows are answered from
  *slices* (:mod:`adapters.driver.time_lane`), count and policy windows per event
  (:mod:`adapters.driver.position_lanes`). Due windows (``end <= B``; per-event rows for ``t < B``;
  count and policy rows for released events) are emitted in time order, the structures are
  bulk-evicted, and log entries no window can need are removed.
* The structures live in a process-local cache; the engine's state holds only the raw event
  log and a small metadata value, from which the cache is rebuilt on a miss (restart,
  rescaling, cache eviction). A random nonce in the metadata detects a cache that does not
  match the engine's state (e.g. after a restore from an older checkpoint).

The modules it is made of are listed in :mod:`adapters.driver`.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.columnar import ColumnarIntake, KeyColumns
from adapters.driver.intake import Accepted, Intake, PolicyMeasure
from adapters.driver.kernels import Kernel, kernel_for
from adapters.driver.key_runtime import (
    INF,
    TIME,
    KeyCounters,
    KeyRuntime,
    LaneState,
    Record,
    pop_segments,
)
from adapters.driver.position_lanes import CountLane, PolicyLane
from adapters.driver.results import KeyInfo, LateEvent, Output
from adapters.driver.selection import capability_problem, choose_algorithm
from adapters.driver.time_lane import TimeLane, end_after, slice_grid
from adapters.errors import BadEventError, CodecError, StateError
from adapters.query.policy import pair_aggregation, policy_measure, policy_rule
from adapters.query.specs import (
    CountWindow,
    OverWindow,
    PolicyWindow,
    Query,
    SlidingWindow,
    lifted_aggregation,
    parse_query,
)
from adapters.query.times import END_OF_INPUT, parse_time, parse_watermark
from adapters.state.backend import KeyState, MemoryStateBackend, StateBackend
from adapters.state.codec import MetaWriter, decode_entry, decode_meta, decode_watermark
from swag_core import make_window

_COMPACT_MIN = 4096
_TIME = operator.itemgetter(TIME)

_Lane = TimeLane | CountLane | PolicyLane
_NOTHING: Accepted = ([], None, ())  # no events (never modified)


#: A validated call for one key, ready to apply: key, state, runtime, watermark and the
#: accepted events (:data:`adapters.driver.intake.Accepted`).
_Prepared = tuple[Any, KeyState, KeyRuntime, "int | float", Accepted]


def _row_time(row: dict[str, Any]) -> int:
    end = row.get("end")
    return end if end is not None else row["time"] + 1


def _pairs(key: Any, events: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """``(times, values)`` of ``(time, value)`` pairs; :class:`BadEventError` otherwise."""
    evs = events if type(events) is list or type(events) is tuple else list(events)
    try:
        return [t for t, _ in evs], [v for _, v in evs]
    except (TypeError, ValueError):
        for item in evs:
            try:
                _, _ = item
            except (TypeError, ValueError):
                raise BadEventError(f"key {key!r}: events must be (time, value) pairs, got "
                                    f"{item!r:.80}", key=key) from None
        raise


def _group_each(events: Sequence[Any]) -> list[tuple[Any, list[Any], list[Any]]]:
    """``(key, times, values)`` per key of ``(key, time, value)`` events, item by item;
    :class:`BadEventError` for the first item that is not a triple (else what grouping
    raises, e.g. for an unhashable key)."""
    for item in events:
        try:
            _, _, _ = item
        except (TypeError, ValueError):
            raise BadEventError(f"events must be (key, time, value) triples, got "
                                f"{item!r:.80}") from None
    groups: dict[Any, tuple[list[Any], list[Any]]] = {}
    for key, time, value in events:
        group = groups.get(key)
        if group is None:
            groups[key] = [time], [value]
        else:
            group[0].append(time)
            group[1].append(value)
    return [(key, times, values) for key, (times, values) in groups.items()]


# =====================================================================================
# the driver
# =====================================================================================
class WindowDriver:
    """Per-key window state machine shared by every engine adapter.

    Args:
        query: a :class:`~adapters.query.specs.Query` or its dict form.
        algorithm: force a ``swag_core`` algorithm for the time and count structures
            (overrides ``query.algorithm``); policy windows use it only if it has
            ``enforce``. Default: :func:`~adapters.driver.selection.choose_algorithm`.
        backend: state used when a call passes no ``state`` (default: a fresh
            :class:`~adapters.state.backend.MemoryStateBackend`, handy outside engines).
        max_cached_keys: bound of the process-local structure cache (least recently used
            keys are dropped and rebuilt from state when they come back); ``None``: no bound.
        time_field: the name used for the event time in error messages.
        columnar: let :meth:`process_batch` and :meth:`advance_keys` use NumPy when the
            query and the batch allow it: the cross-key batch runtime
            (:mod:`adapters.crosskey.batch_runtime`) or else the columnar intake
            (:mod:`adapters.crosskey.columnar`); the same rows, late events, timers and errors
            either way, window sums of floats within rounding (``False``: always the
            per-key path).

    Thread safety: one driver per engine task/operator instance; calls must not overlap.
    """

    def __init__(self, query: Query | dict[str, Any], *, algorithm: str | None = None,
                 backend: StateBackend | None = None, max_cached_keys: int | None = None,
                 time_field: str = "time", columnar: bool = True) -> None:
        self.query = parse_query(query)
        q = self.query
        self.allowed_lateness = q.allowed_lateness
        self.time_field = time_field
        self.backend: StateBackend = backend if backend is not None else MemoryStateBackend()
        if max_cached_keys is not None and max_cached_keys < 1:
            raise ValueError(f"max_cached_keys must be >= 1 or None, got {max_cached_keys}")
        self._max_cached = max_cached_keys
        self._cache: dict[Any, KeyRuntime] = OrderedDict() if max_cached_keys else {}
        self._agg_specs = q.aggregations
        self._core = lifted_aggregation(q.aggregations)
        self._finish = self._core.lower_fn
        forced = algorithm if algorithm is not None else q.algorithm
        self._lanes: list[_Lane] = []
        time_specs = [(i, w) for i, w in enumerate(q.windows)
                      if isinstance(w, (SlidingWindow, OverWindow))]
        count_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, CountWindow)]
        policy_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, PolicyWindow)]
        time_groups = self._group(time_specs, forced)
        # Kernel mode (adapters.driver.kernels): every output has a kernel and every lane is a
        # sliced time lane, so no lane needs per-event lifted values.
        found = [k for k in map(kernel_for, q.aggregations) if k is not None]
        kernels: list[Kernel] | None = found if (
            len(found) == len(q.aggregations) and time_groups
            and not count_specs and not policy_specs
            and all(slice_grid([s for _, s in g])[0] > 1 for _, g in time_groups)) else None
        # a row gets the lowered result as row[out] (one output) or row.update(result)
        out = q.aggregations[0].name if len(q.aggregations) == 1 else None
        for name, group in time_groups:
            self._lanes.append(TimeLane(group, name, self._core, kernels, out))
        for name, group in self._group(count_specs, forced):
            self._lanes.append(CountLane(group, name, self._core, out))
        measures: list[PolicyMeasure] = []
        for slot, (i, spec) in enumerate(policy_specs):
            measure, measure_lift = policy_measure(spec)
            agg = pair_aggregation(self._core, measure)
            use_forced = forced is not None and capability_problem(
                forced, agg, policy=True) is None
            name = choose_algorithm(agg, policy=True, forced=forced if use_forced else None)
            self._lanes.append(PolicyLane(i, spec, name, agg, policy_rule(spec),
                                          measure_lift, slot, self._finish, out))
            measures.append(PolicyMeasure(i, spec, measure_lift))
        self._intake = Intake(q.aggregations, measures, time_field, kernels,
                              with_values=any(isinstance(s, OverWindow) for _, s in time_specs))
        #: batch-wide NumPy intake for the commonest queries (None: not covered / no NumPy)
        self._columnar = ColumnarIntake.for_intake(self._intake) if columnar else None
        self._first_policy = len(self._lanes) - len(measures)  # policy lanes last
        self._sliding = [(spec.range, spec.slide, spec.offset + spec.range)
                         for _, spec in time_specs if isinstance(spec, SlidingWindow)]
        self._write_meta = MetaWriter(q.fingerprint)
        self._per_event = bool(count_specs or policy_specs
                               or any(isinstance(s, OverWindow) for _, s in time_specs))
        #: the cross-key batch runtime for the commonest queries (None: not covered)
        self._batch = BatchRuntime.for_driver(self, forced)

    # ------------------------------------------------------------------ set-up
    def _group(self, specs: list[tuple[int, Any]],
               forced: str | None) -> list[tuple[str, list[tuple[int, Any]]]]:
        """Lanes for ``specs``: one shared structure, or one per spec if the forced algorithm
        cannot answer ``query_since``."""
        if not specs:
            return []
        if len(specs) == 1:
            return [(choose_algorithm(self._core, forced=forced), specs)]
        if forced is not None and capability_problem(forced, self._core,
                                                     range_queries=True) is not None:
            name = choose_algorithm(self._core, forced=forced)
            return [(name, [s]) for s in specs]
        return [(choose_algorithm(self._core, range_queries=True, forced=forced), specs)]

    @property
    def structures(self) -> list[tuple[str, tuple[int, ...], str]]:
        """``(kind, window indices, algorithm)`` of each structure a key holds."""
        return [(lane.kind, tuple(i for i, _ in lane.specs), lane.algorithm)
                for lane in self._lanes]

    @property
    def batch_runtime(self) -> bool:
        """Whether :meth:`process_batch` and :meth:`advance_keys` use the cross-key batch
        runtime for this query (:mod:`adapters.crosskey.batch_runtime`: windows reduced from
        slices in NumPy, not by :attr:`structures`, which the per-key calls use)."""
        return self._batch is not None

    # ------------------------------------------------------------------ public API
    def process(self, key: Hashable, events: Iterable[tuple[Any, Any]],
                state: KeyState | None = None, watermark: Any = None) -> Output:
        """Handle new events ``(time, value)`` of one key (arrival order).

        ``watermark`` is the engine's current watermark if it knows one (Spark's
        ``timerValues``, Flink's ``current_watermark() + 1``); it is applied first, so that
        lateness is judged against it. Raises :class:`~adapters.errors.BadEventError` (state
        unchanged) for a bad time or value.
        """
        if state is None:
            state = self.backend.key_state(key)
        times, values = _pairs(key, events)
        prepared = self._prepare(key, times, values, state, watermark)
        out = Output()
        self._apply(prepared, out)
        return out

    def process_event(self, key: Hashable, time: Any, value: Any,
                      state: KeyState | None = None, watermark: Any = None) -> Output:
        """:meth:`process` for one event."""
        if state is None:
            state = self.backend.key_state(key)
        prepared = self._prepare(key, [time], [value], state, watermark)
        out = Output()
        self._apply(prepared, out)
        return out

    def advance_watermark(self, key: Hashable, watermark: Any,
                          state: KeyState | None = None) -> Output:
        """The watermark reached ``watermark`` for ``key`` (its timer fired): release, emit,
        evict. A watermark that does not advance changes nothing."""
        if state is None:
            state = self.backend.key_state(key)
        prepared = self._prepare(key, [], [], state, watermark)
        out = Output()
        self._apply(prepared, out)
        return out

    #: Alias for engine code: ``on_timer(key, timer_time, state)``.
    on_timer = advance_watermark

    def process_batch(self, events: Iterable[tuple[Any, Any, Any]],
                      backend: StateBackend | None = None, watermark: Any = None) -> Output:
        """Handle ``(key, time, value)`` events of many keys (arrival order within each key).

        Every event of every key is validated before any state changes, so a
        :class:`~adapters.errors.BadEventError` leaves all keys unchanged. Rows, late events
        and timers come per key in order of first appearance; with :attr:`batch_runtime` the
        keys are processed together (:mod:`adapters.crosskey.batch_runtime`), with the same results.
        """
        backend = backend if backend is not None else self.backend
        if type(events) is not list and type(events) is not tuple:
            events = list(events)
        out = Output()
        if watermark is not None and type(watermark) is not int:
            watermark = parse_watermark(watermark)  # once, not per key
        if self._batch is not None and self._batch.process(events, backend, watermark, out):
            return out
        split = self._columnar.split(events) if self._columnar is not None else None
        if split is not None:
            prepared_columns = [self._prepare_columns(key, cols, backend.key_state(key),
                                                      watermark) for key, cols in split]
            for p in prepared_columns:
                self._apply(p, out)
            return out
        groups: dict[Any, tuple[list[Any], list[Any]]] = {}
        get = groups.get
        try:
            for key, time, value in events:
                group = get(key)
                if group is None:
                    groups[key] = [time], [value]
                else:
                    group[0].append(time)
                    group[1].append(value)
        except (TypeError, ValueError):  # report the first item that is not a triple
            groups = {key: (times, values) for key, times, values in _group_each(events)}
        prepared = [self._prepare(key, times, values, backend.key_state(key), watermark)
                    for key, (times, values) in groups.items()]
        for p in prepared:
            self._apply(p, out)
        return out

    def advance_keys(self, keys: Iterable[Hashable], watermark: Any,
                     backend: StateBackend | None = None) -> Output:
        """:meth:`advance_watermark` for several keys (together, with
        :attr:`batch_runtime`). ``watermark`` is parsed first, even for no keys: ``None``
        raises :class:`BadEventError` (only :meth:`process_batch` takes ``None``, "no
        watermark yet")."""
        backend = backend if backend is not None else self.backend
        out = Output()
        w = parse_watermark(watermark)
        keys = list(keys)
        if self._batch is not None and self._batch.advance(keys, backend, w, out):
            return out
        for key in keys:
            self._apply(self._prepare(key, [], [], backend.key_state(key), w), out)
        return out

    def info(self, key: Hashable, state: KeyState | None = None) -> KeyInfo:
        """Metrics of ``key`` (watermark, late count, ...), from the cache or its state."""
        if state is None:
            state = self.backend.key_state(key)
        rt = self._load(key, state)
        return KeyInfo(rt.wm, rt.late, rt.released, len(rt.pending),
                       len(rt.times) - rt.head)

    def drop_cache(self, key: Hashable | None = None) -> None:
        """Forget the cached structures of ``key`` (all keys if ``None``); they are rebuilt
        from state on the next call."""
        if key is None:
            self._cache.clear()
        else:
            self._cache.pop(key, None)
        if self._batch is not None:
            self._batch.drop(key)

    # ------------------------------------------------------------------ a call
    def _runtime(self, key: Any, state: KeyState,
                 watermark: Any) -> tuple[KeyRuntime, int | float]:
        """The key's runtime (cached or rebuilt) and its watermark after ``watermark``."""
        meta = state.get_meta()
        rt = self._cache.get(key)
        if rt is None or (rt.meta_bytes is not meta and rt.meta_bytes != meta) or \
                self._max_cached is not None:
            rt = self._load(key, state, meta)
        wm = rt.wm
        if watermark is not None:
            w = watermark if type(watermark) is int else parse_watermark(watermark)
            if w > wm:
                wm = w
        return rt, wm

    def _prepare(self, key: Any, times: Sequence[Any], values: Sequence[Any],
                 state: KeyState, watermark: Any) -> _Prepared:
        rt, wm = self._runtime(key, state, watermark)
        if not times:
            return key, state, rt, wm, _NOTHING
        return key, state, rt, wm, self._intake.accept(
            key, times, values, wm - self.allowed_lateness,
            encode=getattr(state, "keeps_log", True))

    def _prepare_columns(self, key: Any, cols: KeyColumns, state: KeyState,
                         watermark: Any) -> _Prepared:
        """:meth:`_prepare` for a key of a batch split by the columnar intake."""
        rt, wm = self._runtime(key, state, watermark)
        assert self._columnar is not None
        return key, state, rt, wm, self._columnar.accept(
            key, cols, wm - self.allowed_lateness, encode=getattr(state, "keeps_log", True))

    def _apply(self, p: _Prepared, out: Output) -> None:
        key, state, rt, watermark, (records, data, late) = p
        advances = watermark > rt.wm
        if not advances and not records and not late:
            out.timers[key] = self._next_timer(rt)
            return
        try:
            rows: list[dict[str, Any]] = []
            removal = self._advance(rt, key, watermark, rows) if advances else None
            entry = None
            if records:
                seq = rt.seq
                if data is not None:
                    # one log entry for the call: its newest time, first seq, all the events
                    entry = (records[-1][0], seq, data)
                    heapq.heappush(rt.segments, (entry[0], seq))
                # Pending records are appended unsorted (O(1) per event even when events
                # arrive out of order while the watermark stands still) and sorted once, at
                # release; ``records`` is sorted, so its first time is its smallest.
                pending = rt.pending
                first = records[0][0]
                if pending and first < pending[-1][0]:
                    rt.pending_sorted = False
                pending.extend(records)
                if first < rt.pending_min:
                    rt.pending_min = first
                rt.seq = seq + len(records)
            if late:
                rt.late += len(late)
            self._write(state, rt, removal, entry, self._policy_lengths(rt))
        except BaseException:
            self._cache.pop(key, None)  # the cache may be half-changed: rebuild from state
            raise
        if self._max_cached is not None:
            self._remember(key, rt)
        if rows:
            out.rows.extend(rows)
        if late:
            out.late.extend(late)
        out.timers[key] = self._next_timer(rt)

    def _write(self, state: KeyState, rt: KeyCounters, removal: tuple[int, list[Any]] | None,
               entry: tuple[int, int, bytes] | None, policy: str = "") -> None:
        """A call's state writes for one key (``rt``: its runtime, per-key or the batch
        runtime's; ``policy``: :meth:`_policy_lengths`): log removals, the new log entry, then
        the metadata, which the cached runtime remembers (a restart or another path is
        detected by it changing)."""
        meta = self._write_meta(rt.wm, rt.seq, rt.released, rt.late, policy)
        if removal is not None:
            state.remove_events(*removal)
        if entry is not None:
            state.add_events([entry])
        state.put_meta(meta)
        rt.meta_bytes = meta

    def _policy_lengths(self, rt: KeyRuntime) -> str:
        """The metadata's policy-lane lengths (comma-separated; empty without policies)."""
        if self._first_policy == len(rt.lanes):
            return ""
        return ",".join([str(len(ls.w)) for ls in rt.lanes[self._first_policy:]])

    def _next_timer(self, rt: KeyRuntime) -> int | None:
        """Smallest watermark at which :meth:`advance_watermark` will emit something."""
        times = rt.times
        return self._timer(rt.wm, times[-1] if len(times) > rt.head else None,
                           rt.pending_min)

    def _timer(self, wm: int | float, last: int | None, pmin: int | float) -> int | None:
        """:meth:`_next_timer` of a key with watermark ``wm``, newest retained released event
        time ``last`` (``None``: none; a time in the same slice answers the same) and oldest
        pending time ``pmin`` (``INF``: none)."""
        boundary = wm - self.allowed_lateness
        best: int | float = INF
        for r, s, e0 in self._sliding:
            if last is not None and -INF < boundary < INF:
                e1 = end_after(boundary, s, e0)
                if last >= e1 - r:  # a released event is in the window ending at e1
                    if e1 < best:
                        best = e1
                    continue
            if pmin != INF:
                e = end_after(pmin, s, e0)
                if e < best:
                    best = e
        if self._per_event and pmin + 1 < best:
            best = pmin + 1
        if best == INF:
            return None
        return int(best) + self.allowed_lateness

    # ------------------------------------------------------------------ release and emit
    def _advance(self, rt: KeyRuntime, key: Any, watermark: int | float,
                 rows: list[dict[str, Any]]) -> tuple[int, list[tuple[int, int]]] | None:
        """Advance the key's watermark; fills ``rows``; returns the log removal to apply."""
        lateness = self.allowed_lateness
        b_old = rt.wm - lateness
        rt.wm = watermark
        b = watermark - lateness
        new: list[Record] = []
        pending = rt.pending
        if pending and rt.pending_min < b:
            if not rt.pending_sorted:  # stable: equal times stay in arrival order
                pending.sort(key=_TIME)
                rt.pending_sorted = True
            if b == INF:
                new, rt.pending = pending, []
                rt.pending_min = INF
            else:  # pending is sorted by (time, seq): release its prefix before b
                i = bisect_left(pending, b, key=_TIME)
                new = pending[:i]
                del pending[:i]
                rt.pending_min = pending[0][0] if pending else INF
            rt.times.extend(map(_TIME, new))
            rt.released += len(new)
        lanes = self._lanes
        if len(lanes) == 1:
            lanes[0].release(rt.lanes[0], rt, key, new, b_old, b, rows)
        else:
            per_lane: list[list[dict[str, Any]]] = []
            for lane, ls in zip(lanes, rt.lanes):
                lane_rows: list[dict[str, Any]] = []
                lane.release(ls, rt, key, new, b_old, b, lane_rows)
                if lane_rows:
                    per_lane.append(lane_rows)
            if len(per_lane) == 1:
                rows.extend(per_lane[0])
            elif per_lane:
                rows.extend(heapq.merge(*per_lane, key=_row_time))
        return self._trim_log(rt, b)

    def _trim_log(self, rt: KeyRuntime, b: int | float
                  ) -> tuple[int, list[tuple[int, int]]] | None:
        """Forget released events no lane needs; returns the ``remove_events`` arguments for
        the log entries whose newest event is older than the retention bound, if any."""
        times, head = rt.times, rt.head
        if head == len(times):
            return None
        bound = self._retention_bound(rt, b)
        if times[head] >= bound:
            return None
        k = bisect_left(times, bound, head)
        if k >= _COMPACT_MIN and k + k >= len(times):
            del times[:k]
            k = 0
        rt.head = k
        return pop_segments(rt.segments, bound)

    def _retention_bound(self, rt: KeyRuntime, b: int | float) -> int | float:
        """The oldest time any lane still needs at boundary ``b`` (at most ``b``)."""
        bound = b
        for lane, ls in zip(self._lanes, rt.lanes):
            need = lane.retention(ls, rt, b)
            if need < bound:
                bound = need
        return bound

    # ------------------------------------------------------------------ cache and rebuild
    def _remember(self, key: Any, rt: KeyRuntime) -> None:
        cache = self._cache
        cache[key] = rt
        if self._max_cached is not None:
            assert isinstance(cache, OrderedDict)
            cache.move_to_end(key)
            while len(cache) > self._max_cached:
                cache.popitem(last=False)

    def _new_runtime(self) -> KeyRuntime:
        return KeyRuntime([LaneState(make_window(lane.algorithm, lane.aggregation))
                           for lane in self._lanes])

    def _load(self, key: Any, state: KeyState, meta: Any = False) -> KeyRuntime:
        if meta is False:
            meta = state.get_meta()
        rt = self._cache.get(key)
        if rt is not None and (rt.meta_bytes is meta or rt.meta_bytes == meta):
            if self._max_cached is not None:
                self._cache.move_to_end(key)  # type: ignore[attr-defined]
            return rt
        if meta is not None and not getattr(state, "keeps_log", True):
            raise StateError(
                f"key {key!r}: its state keeps no event log (TransientKeyState) and its "
                f"structures are no longer cached, so they cannot be rebuilt; do not drop "
                f"the cache of such a key nor bound max_cached_keys below the live keys")
        rt = self._new_runtime() if meta is None else self._rebuild(key, state, meta)
        self._remember(key, rt)
        return rt

    def _rebuild(self, key: Any, state: KeyState, meta_bytes: bytes) -> KeyRuntime:
        meta = decode_meta(meta_bytes)
        if meta.get("q") != self.query.fingerprint:
            raise StateError(
                f"the state of key {key!r} was written by a query with different windows or "
                f"allowed lateness (fingerprint {meta.get('q')!r}, this query "
                f"{self.query.fingerprint!r}); start from empty state or keep the query")
        rt = self._new_runtime()
        wm = meta["wm"]
        rt.wm = decode_watermark(wm)
        rt.seq, rt.released, rt.late = int(meta["seq"]), int(meta["rel"]), int(meta["late"])
        b = rt.wm - self.allowed_lateness
        released: list[Record] = []
        pending: list[Record] = []
        intake = self._intake
        events: list[tuple[int, int, Any]] = []
        segments: list[tuple[int, int]] = []
        for time, seq, data in state.read_events():
            segments.append((time, seq))
            try:
                events.extend(decode_entry(time, seq, data))
            except CodecError as exc:
                raise StateError(f"key {key!r}: corrupt event entry at time {time}: "
                                 f"{exc}") from None
        events.sort(key=lambda e: (e[0], e[1]))
        if events:  # the records a live run made of them (none is late: boundary -inf)
            try:
                records = intake.accept(key, [e[0] for e in events], [e[2] for e in events],
                                        -INF, encode=False)[0]
            except BadEventError as exc:
                raise StateError(f"key {key!r}: a stored event can no longer be aggregated "
                                 f"by this query: {exc}") from None
            i = bisect_left(records, b, key=_TIME)
            released, pending = list(records[:i]), list(records[i:])
        if len(released) > rt.released:
            raise StateError(f"key {key!r}: the state holds {len(released)} released events "
                             f"but its metadata counts {rt.released}")
        heapq.heapify(segments)
        rt.segments = segments
        rt.pending = pending  # sorted by (time, seq)
        rt.pending_min = pending[0][0] if pending else INF
        rt.times = [r[0] for r in released]
        policy_lengths = iter(meta.get("pol", []))
        for lane, ls in zip(self._lanes, rt.lanes):
            lane.restore(ls, rt, released, b, key, policy_lengths)
        # retain what a live runtime retains (``_trim_log``): the log keeps whole entries,
        # some older than the lanes need
        rt.head = bisect_left(rt.times, self._retention_bound(rt, b))
        rt.meta_bytes = meta_bytes
        return rt


__all__ = ["END_OF_INPUT", "KeyInfo", "LateEvent", "Output", "WindowDriver", "parse_time",
           "parse_watermark"]
