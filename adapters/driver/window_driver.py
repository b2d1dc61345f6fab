"""The engine-free window driver: a per-key state machine on top of ``swag_core``.

An engine adapter calls :meth:`WindowDriver.process` when events arrive for a key (Flink
``processElement``, Beam ``process``, Spark ``handleInputRows``) and
:meth:`WindowDriver.advance_watermark` when the key's timer fires (``onTimer``,
``on_timer``, ``handleExpiredTimer``); both return an :class:`Output` with the rows to emit,
the late events (for a side output) and the time of the key's next timer. For many keys at
once it offers :meth:`WindowDriver.process_batch` and :meth:`WindowDriver.advance_keys`,
which run the cross-key NumPy runtime (:mod:`adapters.crosskey.batch_runtime`) where the
query allows, else these per-key calls. For a key's whole bounded input (batch mode) it
offers :meth:`WindowDriver.finish` (cross-key or per-key) and
:meth:`WindowDriver.finish_columns` (the OVER kernel on NumPy columns). Which path a query
takes on an engine, and why, is :meth:`WindowDriver.plan` (:mod:`adapters.planning`).
Everything else is written once, behind these methods: lateness, the pending buffer,
watermark-driven release into the structures, emission of due windows in time order, bulk
eviction, the state layout and its codec. What happens to one key between calls (load, save,
timer, release / emit / evict / trim) is the driver's
:class:`~adapters.driver.key_store.KeyStore`, which both paths use.

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
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.columnar import ArrowEvents, ColumnarIntake
from adapters.crosskey.over_runtime import over_outputs
from adapters.driver.intake import Accepted, Intake, PolicyMeasure
from adapters.driver.key_runtime import KeyRuntime
from adapters.driver.key_store import KeyStore, Lane
from adapters.driver.position_lanes import CountLane, PolicyLane
from adapters.driver.results import KeyInfo, LateEvent, Output
from adapters.driver.selection import capability_problem, choose_algorithm
from adapters.driver.time_lane import TimeLane
from adapters.engine.over_kernel import KernelColumn, KernelRows, over_rows
from adapters.errors import BadEventError
from adapters.planning import EngineFacts, QueryPlan, decide, kernel_mode, use_cross_key
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
from adapters.state.backend import KeyState, MemoryStateBackend, StateBackend, TransientKeyState

_NOTHING: Accepted = ([], None, ())  # no events (never modified)


#: A validated call for one key, ready to apply: key, state, runtime, watermark and the
#: accepted events (:data:`adapters.driver.intake.Accepted`).
_Prepared = tuple[Any, KeyState, KeyRuntime, "int | float", Accepted]


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
            keys are dropped and rebuilt from state when they come back); the per-key cache
            and the cross-key runtime each keep at most this many keys between calls;
            ``None``: no bound.
        time_field: the name used for the event time in error messages.
        columnar: let :meth:`process_batch` and :meth:`advance_keys` use the cross-key batch
            runtime (:mod:`adapters.crosskey.batch_runtime`, NumPy) when the query and the
            batch allow it; the same rows (bit for bit), late events, timers and errors
            either way (``False``: always the per-key path).

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
        self._core = lifted_aggregation(q.aggregations)
        forced = algorithm if algorithm is not None else q.algorithm
        self._algorithm = algorithm
        #: the OVER kernel's plan for finished keys (None: the query has none)
        self._over = over_outputs(q)
        lanes: list[Lane] = []
        time_specs = [(i, w) for i, w in enumerate(q.windows)
                      if isinstance(w, (SlidingWindow, OverWindow))]
        count_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, CountWindow)]
        policy_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, PolicyWindow)]
        time_groups = self._group(time_specs, forced)
        # Kernel mode (adapters.planning.kernel_mode): no lane needs per-event lifted values.
        kernels = kernel_mode(q, [[s for _, s in g] for _, g in time_groups])
        self._kernels = kernels is not None
        # a row gets the lowered result as row[out] (one output) or row.update(result)
        out = q.aggregations[0].name if len(q.aggregations) == 1 else None
        for name, group in time_groups:
            lanes.append(TimeLane(group, name, self._core, kernels, out))
        for name, group in self._group(count_specs, forced):
            lanes.append(CountLane(group, name, self._core, out))
        measures: list[PolicyMeasure] = []
        for slot, (i, spec) in enumerate(policy_specs):
            measure, measure_lift = policy_measure(spec)
            agg = pair_aggregation(self._core, measure)
            use_forced = forced is not None and capability_problem(
                forced, agg, policy=True) is None
            name = choose_algorithm(agg, policy=True, forced=forced if use_forced else None)
            lanes.append(PolicyLane(i, spec, name, agg, policy_rule(spec),
                                    measure_lift, slot, self._core.lower_fn, out))
            measures.append(PolicyMeasure(i, spec, measure_lift))
        self._intake = Intake(q.aggregations, measures, time_field, kernels,
                              with_values=any(isinstance(s, OverWindow) for _, s in time_specs))
        #: the seam both paths use to load, save, time, release, emit, evict and trim a key
        #: (:mod:`adapters.driver.key_store`)
        self.key_store = KeyStore(q, lanes, self._intake, max_cached_keys)
        self._lanes = lanes
        #: the cross-key runtime's batch reader (None: not covered / no NumPy)
        self._columnar = ColumnarIntake.for_intake(self._intake) if columnar else None
        #: the cross-key batch runtime for the commonest queries (None: not covered)
        self._batch = BatchRuntime.for_query(self.key_store, self._columnar, q.aggregations,
                                             forced) if self._columnar is not None else None

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
        slices in NumPy; not by :attr:`structures`, which the per-key calls use)."""
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
        if not isinstance(events, Sequence):  # (a sequence, e.g. of columns, stays so)
            events = list(events)
        out = Output()
        if watermark is not None and type(watermark) is not int:
            watermark = parse_watermark(watermark)  # once, not per key
        if self._batch is not None and self._batch.process(events, backend, watermark, out):
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

    def finish(self, key: Hashable, events: Iterable[tuple[Any, Any]]) -> Output:
        """Every row of one key's whole bounded input ``(time, value)`` (arrival order),
        released at the end of input (batch mode: nothing is kept for a restart). The
        driver runs the cross-key runtime or the per-key lanes
        (:func:`adapters.planning.use_cross_key`) with the same rows either way."""
        evs = events if type(events) is list else list(events)
        try:
            if use_cross_key(self.batch_runtime, len(evs)):
                # the cross-key runtime needs a state that keeps the log (dropped after)
                backend = MemoryStateBackend()
                out = self.process_batch([(key, t, v) for t, v in evs], backend)
                out.extend(self.advance_keys([key], END_OF_INPUT, backend))
            else:
                state = TransientKeyState()  # no restart, so no event log
                out = self.process(key, evs, state)
                out.extend(self.advance_watermark(key, END_OF_INPUT, state))
        finally:
            self.drop_cache(key)
        return out

    def finish_keys(self, events: Sequence[tuple[Any, Any, Any]]) -> Output:
        """:meth:`finish` for many keys at once: ``(key, time, value)`` events holding every
        event of each of their keys (arrival order within a key), released at the end of
        input. The cross-key runtime takes them all together where
        :func:`adapters.planning.use_cross_key` allows (one call, however small each key),
        else each key runs :meth:`finish`; the rows are the same either way."""
        evs = events if isinstance(events, Sequence) else list(events)  # (columns stay so)
        if not use_cross_key(self.batch_runtime, len(evs)):
            out = Output()
            for key, times, values in _group_each(evs):
                out.extend(self.finish(key, list(zip(times, values))))
            return out
        backend = MemoryStateBackend()  # the cross-key runtime keeps a log (dropped after)
        keys = (list(evs.keys) if isinstance(evs, ArrowEvents)
                else list(dict.fromkeys(key for key, _, _ in evs)))
        try:
            out = self.process_batch(evs, backend)
            out.extend(self.advance_keys(keys, END_OF_INPUT, backend))
        finally:  # nothing is kept for a restart: the keys leave the caches, all at once
            for key in keys:
                self.key_store.forget(key)
            if self._batch is not None:
                self._batch.drop_keys(keys)
        return out

    def finish_columns(self, times: Any, columns: dict[str, KernelColumn],
                       ids: Any = None) -> KernelRows | None:
        """Finished keys' whole bounded input as NumPy columns (``times`` int64 and the
        fields of :attr:`QueryPlan.over_kernel`, in input order; ``ids``: each row's key as
        a non-negative int, non-decreasing, or ``None`` for one key): their per-event rows
        by the OVER kernel (:mod:`adapters.engine.over_kernel`), or ``None`` when the query
        has no kernel or the columns break a kernel rule (then call :meth:`finish`)."""
        if self._over is None:
            return None
        return over_rows(self._over, times, columns, ids)

    def plan(self, facts: EngineFacts) -> QueryPlan:
        """Which path this driver's query takes on the engine that ``facts`` describe, and
        why (:mod:`adapters.planning`); ``str()`` of it is the printable explanation.
        Raises :class:`ValueError` if ``facts.presliced`` is ``True`` and the query cannot
        be pre-sliced."""
        forced = self._algorithm

        def view(query: Query) -> tuple[bool, bool, list[tuple[str, tuple[int, ...], str]]]:
            driver = self if query is self.query else WindowDriver(query, algorithm=forced)
            return driver.batch_runtime, driver._kernels, driver.structures

        return decide(self.query, facts, view)

    def info(self, key: Hashable, state: KeyState | None = None) -> KeyInfo:
        """Metrics of ``key`` (watermark, late count, ...), from the cache or its state."""
        if state is None:
            state = self.backend.key_state(key)
        rt = self.key_store.load(key, state)
        return KeyInfo(rt.wm, rt.late, rt.released, len(rt.pending),
                       len(rt.times) - rt.head)

    def drop_cache(self, key: Hashable | None = None) -> None:
        """Forget the cached structures of ``key`` (all keys if ``None``); they are rebuilt
        from state on the next call."""
        if key is None:
            self.key_store.clear()
        else:
            self.key_store.forget(key)
        if self._batch is not None:
            self._batch.drop(key)

    # ------------------------------------------------------------------ a call
    def _runtime(self, key: Any, state: KeyState,
                 watermark: Any) -> tuple[KeyRuntime, int | float]:
        """The key's runtime (cached or rebuilt) and its watermark after ``watermark``."""
        store = self.key_store
        meta = state.get_meta()
        rt = store.cached(key)
        if rt is None or (rt.meta_bytes is not meta and rt.meta_bytes != meta) or \
                store.max_cached is not None:
            rt = store.load(key, state, meta)
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

    def _apply(self, p: _Prepared, out: Output) -> None:
        key, state, rt, watermark, (records, data, late) = p
        advances = watermark > rt.wm
        store = self.key_store
        if not advances and not records and not late:
            out.timers[key] = store.next_timer(rt)
            return
        try:
            rows: list[dict[str, Any]] = []
            removal = store.advance(rt, key, watermark, rows) if advances else None
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
            store.write(state, rt, removal, entry, store.policy_lengths(rt), key)
        except BaseException:
            store.forget(key)  # the cache may be half-changed: rebuild from state
            raise
        if store.max_cached is not None:
            store.remember(key, rt)
        if rows:
            out.rows.extend(rows)
        if late:
            out.late.extend(late)
        out.timers[key] = store.next_timer(rt)


__all__ = ["END_OF_INPUT", "KeyInfo", "LateEvent", "Output", "WindowDriver", "parse_time",
           "parse_watermark"]
