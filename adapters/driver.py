"""The engine-free window driver: a per-key state machine on top of ``swag_core``.

An engine adapter calls :meth:`WindowDriver.process` when events arrive for a key (Flink
``processElement``, Beam ``process``, Spark ``handleInputRows``) and
:meth:`WindowDriver.advance_watermark` when the key's timer fires (``onTimer``,
``on_timer``, ``handleExpiredTimer``); both return an :class:`Output` with the rows to emit,
the late events (for a side output) and the time of the key's next timer. Everything else is
here, written once: lateness, the pending buffer, watermark-driven release into the
structures as sorted bulk inserts, emission of due windows in time order, bulk eviction, the
state layout and its codec.

How one key is processed (``docs/adapters.md`` has the full story):

* Let ``W`` be the largest watermark seen and ``B = W - allowed_lateness``. An event with
  ``time < B`` is late. Others are appended to the key's event log (one O(1) state write)
  and wait in the pending buffer.
* When ``W`` advances, pending events with ``time < B`` are *released*: no event older than
  ``B`` can be accepted any more, so they go into the structures in ``(time, arrival)`` order,
  which keeps every structure in order. Due windows (``end <= B``; per-event rows for
  ``t < B``; count and policy rows for released events) are emitted in time order, the
  structures are bulk-evicted, and log entries no window can need are removed.
* The structures live in a process-local cache; the engine's state holds only the raw event
  log and a small metadata value, from which the cache is rebuilt on a miss (restart,
  rescaling, cache eviction). A random nonce in the metadata detects a cache that does not
  match the engine's state (e.g. after a restore from an older checkpoint).
"""

from __future__ import annotations

import heapq
import math
import operator
import random
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from adapters.codec import CODEC_VERSION, decode_meta, decode_value, encode_value
from adapters.errors import BadEventError, CodecError, StateError
from adapters.selection import capability_problem, choose_algorithm
from adapters.specs import (
    AggSpec,
    CountWindow,
    OverWindow,
    PolicyWindow,
    Query,
    SlidingWindow,
    exact_number,
    get_field,
    parse_query,
)
from adapters.state import KeyState, LogEntry, MemoryStateBackend, StateBackend
from swag_core import Aggregation, Window, make_window, product

INF = math.inf
#: The watermark that means "end of input": everything pending is released and emitted.
END_OF_INPUT = math.inf

_nonce = random.Random()
_COMPACT_MIN = 4096


# =====================================================================================
# public result types
# =====================================================================================
class LateEvent(NamedTuple):
    """An event that arrived with ``time < watermark - allowed_lateness``: counted, never
    aggregated, returned so that the engine can route it to a side output."""

    key: Any
    time: int
    value: Any


@dataclass
class Output:
    """What one driver call produced.

    Attributes:
        rows: emitted rows (dicts, see ``docs/adapters.md``), in time order per key.
        late: late events of this call.
        timers: for every key the call touched, the watermark value at which the engine must
            call :meth:`WindowDriver.advance_watermark` for it next, or ``None`` when no
            timer is needed. Keep one timer per key: replace (or delete) the previous one.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    late: list[LateEvent] = field(default_factory=list)
    timers: dict[Any, int | None] = field(default_factory=dict)

    @property
    def next_timer(self) -> int | None:
        """The timer of the single key of a one-key call."""
        if len(self.timers) != 1:
            raise ValueError(f"next_timer is for one-key calls; this output has "
                             f"{len(self.timers)} keys: use .timers")
        return next(iter(self.timers.values()))

    def extend(self, other: Output) -> None:
        """Append another output (rows, late events; its timers replace ours)."""
        self.rows.extend(other.rows)
        self.late.extend(other.late)
        self.timers.update(other.timers)


class KeyInfo(NamedTuple):
    """Metrics of one key (:meth:`WindowDriver.info`)."""

    watermark: int | float   #: largest watermark seen (``-inf`` before the first)
    late: int                #: late events counted so far
    released: int            #: events released into the structures so far
    pending: int             #: events waiting for the watermark
    retained: int            #: released events still kept in state


# =====================================================================================
# parsing helpers
# =====================================================================================
def parse_watermark(watermark: Any) -> int | float:
    """A watermark as an ``int`` (ms), ``inf`` for ``"end"`` / ``END_OF_INPUT``, or ``-inf``.

    Raises :class:`~adapters.errors.BadEventError` (field ``"watermark"``) otherwise.
    """
    if type(watermark) is int:
        return watermark
    if isinstance(watermark, str) and watermark.strip().lower() == "end":
        return INF
    if isinstance(watermark, float) and not isinstance(watermark, bool):
        if watermark in (INF, -INF):
            return watermark
        if watermark.is_integer():
            return int(watermark)
    elif not isinstance(watermark, (bool, str)) and watermark is not None:
        try:
            return operator.index(watermark)
        except TypeError:
            pass
    raise BadEventError(f"a watermark must be integer milliseconds or 'end', got {watermark!r}",
                        field="watermark", time=watermark)


def _time_error(key: Any, time: Any, time_field: str) -> BadEventError:
    what = "null" if time is None else "not an integer number of milliseconds"
    return BadEventError(f"key {key!r}: event time {time!r} (field {time_field!r}) is {what}",
                         key=key, field=time_field, time=time)


def parse_time(time: Any, key: Any = None, time_field: str = "time") -> int:
    """An event time as ``int`` ms: ints and int-likes, integral floats and decimal strings
    are accepted; ``None``, bools, NaN, fractions and other strings raise
    :class:`~adapters.errors.BadEventError` naming the field and key."""
    if type(time) is int:
        return time
    if time is None or isinstance(time, bool):
        raise _time_error(key, time, time_field)
    if isinstance(time, float):
        if time.is_integer():
            return int(time)
        raise _time_error(key, time, time_field)
    if isinstance(time, str):
        try:
            return int(time.strip())
        except ValueError:
            raise _time_error(key, time, time_field) from None
    try:
        return operator.index(time)
    except TypeError:
        raise _time_error(key, time, time_field) from None


# =====================================================================================
# compiled lanes: one structure (kind) per group of window specs
# =====================================================================================
class _TimeLane:
    """Sliding/tumbling and OVER specs over one time-keyed structure."""

    kind = "time"

    def __init__(self, specs: list[tuple[int, SlidingWindow | OverWindow]], algorithm: str,
                 aggregation: Aggregation) -> None:
        self.specs = specs
        self.algorithm = algorithm
        self.aggregation = aggregation

    def need(self, b: int | float) -> int | float:
        """Oldest time any window emitted after boundary ``b`` can need."""
        need = INF
        for _, spec in self.specs:
            if type(spec) is SlidingWindow:
                v = spec.first_end_after(b) - spec.range
            else:
                v = b - spec.range
            if v < need:
                need = v
        return need


class _CountLane:
    """Count specs over one position-keyed structure (position = release rank, from 1)."""

    kind = "count"

    def __init__(self, specs: list[tuple[int, CountWindow]], algorithm: str,
                 aggregation: Aggregation) -> None:
        self.specs = specs
        self.algorithm = algorithm
        self.aggregation = aggregation
        self.nmax = max(spec.size for _, spec in specs)


class _PolicyLane:
    """One policy spec over its own position-keyed structure with ``enforce``."""

    kind = "policy"

    def __init__(self, index: int, spec: PolicyWindow, algorithm: str,
                 aggregation: Aggregation, rule: Callable[[Any, Any], bool],
                 measure_lift: Callable[[int, Any], Any], slot: int) -> None:
        self.specs = [(index, spec)]
        self.index = index
        self.every = spec.every
        self.algorithm = algorithm
        self.aggregation = aggregation
        self.rule = rule
        self.measure_lift = measure_lift
        self.slot = slot  # index into a record's policy lifts


_Lane = _TimeLane | _CountLane | _PolicyLane


class _LaneState:
    __slots__ = ("low", "w")

    def __init__(self, w: Window) -> None:
        self.w = w
        self.low: int | float = -INF  # every entry with key < low has been evicted


class _KeyRuntime:
    """The cached, process-local runtime of one key (rebuilt from state on a miss)."""

    __slots__ = (
        "head",
        "lanes",
        "late",
        "meta_bytes",
        "pending",
        "released",
        "seq",
        "seqs",
        "times",
        "wm",
    )

    def __init__(self, lanes: list[_LaneState]) -> None:
        self.meta_bytes: bytes | None = None
        self.wm: int | float = -INF
        self.seq = 0
        self.released = 0
        self.late = 0
        # records (time, seq, value, lifted, policy lifts): a heap by (time, seq); seq is
        # unique, so values are never compared
        self.pending: list[tuple[Any, ...]] = []
        # times and seqs of the released events still in the log, sorted; live from head
        self.times: list[int] = []
        self.seqs: list[int] = []
        self.head = 0
        self.lanes = lanes

    def time_of(self, position: int) -> int:
        """Time of the released event at 1-based release ``position`` (must be retained)."""
        return self.times[len(self.times) - (self.released - position) - 1]


class _Prepared(NamedTuple):
    key: Any
    state: KeyState
    rt: _KeyRuntime
    watermark: int | float
    accepted: list[tuple[int, Any, Any, Any, bytes]]
    late: list[LateEvent]


def _evict_below(w: Window, bound: int | float) -> None:
    if bound == INF:
        if len(w):
            w.bulk_evict(w.youngest())
    else:
        w.bulk_evict(int(bound) - 1)


def _row_time(row: dict[str, Any]) -> int:
    end = row.get("end")
    return end if end is not None else row["time"] + 1


# =====================================================================================
# measures of the declarative policy
# =====================================================================================
def _measure_combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    # (count, sum, last value, last time); count 0 is the identity
    if not b[0]:
        return a
    if not a[0]:
        return b
    return (a[0] + b[0], a[1] + b[1], b[2], b[3])


_MEASURE_IDENTITY = (0, 0, None, None)


def _policy_rule(spec: PolicyWindow) -> Callable[[Any, Any], bool]:
    """``rule(total, prefix)`` on the raw ``(outputs, measure)`` pairs of the structure.

    "Evict prefix P" when the run of newest events starting at P's *last* event exceeds the
    limit (MTA paper section 3.2, running example); never the whole window.
    """
    if spec.rule is not None:
        user_rule = spec.rule

        def custom(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and bool(user_rule(tm[1], pm[1]))
        return custom
    limit: Any = spec.limit
    if spec.measure == "count":
        def by_count(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and tm[0] - pm[0] + 1 > limit
        return by_count
    if spec.measure == "span":
        def by_span(total: Any, prefix: Any) -> bool:
            tm, pm = total[1], prefix[1]
            return 0 < pm[0] < tm[0] and tm[3] - pm[3] > limit
        return by_span
    exact_limit = Fraction(limit) if isinstance(limit, float) else limit

    def by_sum(total: Any, prefix: Any) -> bool:
        tm, pm = total[1], prefix[1]
        return 0 < pm[0] < tm[0] and tm[1] - pm[1] + pm[2] > exact_limit
    return by_sum


def _policy_measure(spec: PolicyWindow) -> tuple[Aggregation, Callable[[int, Any], Any]]:
    """The measure aggregation of a policy spec and its lift ``(time, value) -> measure``."""
    if spec.rule is not None:
        user = spec.measure
        assert isinstance(user, Aggregation)
        ucombine, ulift = user.combine, user.lift_fn

        def combine(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
            return (a[0] + b[0], ucombine(a[1], b[1]))

        def custom_lift(time: int, value: Any) -> tuple[int, Any]:
            return (1, ulift((time, value)))
        return (Aggregation(combine=combine, identity=(0, user.identity), name="measure"),
                custom_lift)
    agg = Aggregation(combine=_measure_combine, identity=_MEASURE_IDENTITY, name="measure")
    if spec.measure == "sum":
        fld = spec.field
        assert fld is not None

        def sum_lift(time: int, value: Any) -> tuple[Any, ...]:
            x = exact_number(get_field(value, fld))
            if x < 0:
                raise ValueError(f"the policy's sum measure needs non-negative numbers, "
                                 f"got {x}")
            return (1, x, x, time)
        return agg, sum_lift

    def plain_lift(time: int, value: Any) -> tuple[Any, ...]:
        return (1, 0, 0, time)
    return agg, plain_lift


# =====================================================================================
# the driver
# =====================================================================================
class WindowDriver:
    """Per-key window state machine shared by every engine adapter.

    Args:
        query: a :class:`~adapters.specs.Query` or its dict form.
        algorithm: force a ``swag_core`` algorithm for the time and count structures
            (overrides ``query.algorithm``); policy windows use it only if it has
            ``enforce``. Default: :func:`~adapters.selection.choose_algorithm`.
        backend: state used when a call passes no ``state`` (default: a fresh
            :class:`~adapters.state.MemoryStateBackend`, handy outside engines).
        max_cached_keys: bound of the process-local structure cache (least recently used
            keys are dropped and rebuilt from state when they come back); ``None``: no bound.
        time_field: the name used for the event time in error messages.

    Thread safety: one driver per engine task/operator instance; calls must not overlap.
    """

    def __init__(self, query: Query | dict[str, Any], *, algorithm: str | None = None,
                 backend: StateBackend | None = None, max_cached_keys: int | None = None,
                 time_field: str = "time") -> None:
        self.query = parse_query(query)
        q = self.query
        self.allowed_lateness = q.allowed_lateness
        self.time_field = time_field
        self.backend: StateBackend = backend if backend is not None else MemoryStateBackend()
        if max_cached_keys is not None and max_cached_keys < 1:
            raise ValueError(f"max_cached_keys must be >= 1 or None, got {max_cached_keys}")
        self._max_cached = max_cached_keys
        self._cache: dict[Any, _KeyRuntime] = OrderedDict() if max_cached_keys else {}
        self._compile_aggregations(q.aggregations)
        forced = algorithm if algorithm is not None else q.algorithm
        self._lanes: list[_Lane] = []
        time_specs = [(i, w) for i, w in enumerate(q.windows)
                      if isinstance(w, (SlidingWindow, OverWindow))]
        count_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, CountWindow)]
        policy_specs = [(i, w) for i, w in enumerate(q.windows) if isinstance(w, PolicyWindow)]
        for name, group in self._group(time_specs, forced):
            self._lanes.append(_TimeLane(group, name, self._core))
        for name, group in self._group(count_specs, forced):
            self._lanes.append(_CountLane(group, name, self._core))
        for slot, (i, spec) in enumerate(policy_specs):
            measure, measure_lift = _policy_measure(spec)
            agg = self._pair_aggregation(measure)
            use_forced = forced is not None and capability_problem(
                forced, agg, policy=True) is None
            name = choose_algorithm(agg, policy=True, forced=forced if use_forced else None)
            self._lanes.append(_PolicyLane(i, spec, name, agg, _policy_rule(spec),
                                           measure_lift, slot))
        self._policy_lanes = [lane for lane in self._lanes if isinstance(lane, _PolicyLane)]
        self._first_policy = len(self._lanes) - len(self._policy_lanes)  # policy lanes last
        self._sliding = [spec for _, spec in time_specs if isinstance(spec, SlidingWindow)]
        self._per_event = bool(count_specs or policy_specs
                               or any(isinstance(s, OverWindow) for _, s in time_specs))

    # ------------------------------------------------------------------ set-up
    def _compile_aggregations(self, specs: tuple[AggSpec, ...]) -> None:
        self._agg_specs = specs
        components = [(s.extract, s.aggregation.lift_fn) for s in specs]
        if len(specs) == 1:
            spec = specs[0]
            agg = spec.aggregation
            name, lower = spec.name, agg.lower_fn
            extract, lift = components[0]
            self._core = Aggregation(
                combine=agg.combine, identity=agg.identity,
                lower=lambda a: {name: lower(a)}, subtract=agg.subtract,
                commutative=agg.commutative, selective=agg.selective, name=agg.name)
            if extract is None:
                self._lift_fast: Callable[[Any], Any] = lift
            else:
                ex = extract

                def lift_one(value: Any) -> Any:
                    return lift(ex(value))
                self._lift_fast = lift_one
            self._single = True
        else:
            prod = product({s.name: s.aggregation for s in specs})
            self._core = Aggregation(
                combine=prod.combine, identity=prod.identity, lower=prod.lower,
                subtract=prod.subtract, commutative=prod.commutative, name=prod.name)
            fns = components

            def lift_all(value: Any) -> tuple[Any, ...]:
                return tuple([lf(value) if ex is None else lf(ex(value)) for ex, lf in fns])
            self._lift_fast = lift_all
            self._single = False
        self._finish = self._core.lower_fn

    def _pair_aggregation(self, measure: Aggregation) -> Aggregation:
        oc, mc = self._core.combine, measure.combine

        def combine(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
            return (oc(a[0], b[0]), mc(a[1], b[1]))
        return Aggregation(combine=combine, identity=(self._core.identity, measure.identity),
                           name=f"policy({self._core.name})")

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
        prepared = self._prepare(key, events, state, watermark)
        out = Output()
        self._apply(prepared, out)
        return out

    def process_event(self, key: Hashable, time: Any, value: Any,
                      state: KeyState | None = None, watermark: Any = None) -> Output:
        """:meth:`process` for one event."""
        return self.process(key, ((time, value),), state, watermark)

    def advance_watermark(self, key: Hashable, watermark: Any,
                          state: KeyState | None = None) -> Output:
        """The watermark reached ``watermark`` for ``key`` (its timer fired): release, emit,
        evict. A watermark that does not advance changes nothing."""
        if state is None:
            state = self.backend.key_state(key)
        prepared = self._prepare(key, (), state, watermark)
        out = Output()
        self._apply(prepared, out)
        return out

    #: Alias for engine code: ``on_timer(key, timer_time, state)``.
    on_timer = advance_watermark

    def process_batch(self, events: Iterable[tuple[Any, Any, Any]],
                      backend: StateBackend | None = None, watermark: Any = None) -> Output:
        """Handle ``(key, time, value)`` events of many keys (arrival order within each key).

        Every event of every key is validated before any state changes, so a
        :class:`~adapters.errors.BadEventError` leaves all keys unchanged.
        """
        backend = backend if backend is not None else self.backend
        groups: dict[Any, list[tuple[Any, Any]]] = {}
        for item in events:
            try:
                key, time, value = item
            except (TypeError, ValueError):
                raise BadEventError(f"events must be (key, time, value) triples, got "
                                    f"{item!r:.80}") from None
            group = groups.get(key)
            if group is None:
                group = groups[key] = []
            group.append((time, value))
        prepared = [self._prepare(key, evs, backend.key_state(key), watermark)
                    for key, evs in groups.items()]
        out = Output()
        for p in prepared:
            self._apply(p, out)
        return out

    def advance_keys(self, keys: Iterable[Hashable], watermark: Any,
                     backend: StateBackend | None = None) -> Output:
        """:meth:`advance_watermark` for several keys."""
        backend = backend if backend is not None else self.backend
        out = Output()
        for key in keys:
            out.extend(self.advance_watermark(key, watermark, backend.key_state(key)))
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

    # ------------------------------------------------------------------ validation
    def _lift(self, key: Any, time: int, value: Any) -> Any:
        try:
            return self._lift_fast(value)
        except Exception:  # find which output failed, and report it precisely
            pass
        parts = []
        for spec in self._agg_specs:
            x = value
            if spec.extract is not None:
                try:
                    x = spec.extract(value)
                except KeyError as exc:
                    missing = exc.args[0] if exc.args else spec.field
                    raise BadEventError(
                        f"key {key!r}, event at time {time}: no field {missing!r} (needed by "
                        f"output {spec.name!r}); event: {value!r:.100}",
                        key=key, field=str(missing), time=time) from None
                except Exception as exc:
                    raise BadEventError(
                        f"key {key!r}, event at time {time}: cannot read field "
                        f"{spec.field!r} for output {spec.name!r}: {exc}",
                        key=key, field=spec.field, time=time) from exc
            try:
                parts.append(spec.aggregation.lift_fn(x))
            except Exception as exc:
                where = f"field {spec.field!r} = {_shown(x, spec)}" if spec.field else \
                    f"value {value!r:.60}"
                raise BadEventError(
                    f"key {key!r}, event at time {time}: {where} cannot be aggregated by "
                    f"output {spec.name!r} ({spec.fn or spec.aggregation.name}): {exc}",
                    key=key, field=spec.field, time=time) from exc
        return parts[0] if self._single else tuple(parts)

    def _policy_lifts(self, key: Any, time: int, value: Any) -> tuple[Any, ...] | None:
        lanes = self._policy_lanes
        if not lanes:
            return None
        lifts = []
        for lane in lanes:
            try:
                lifts.append(lane.measure_lift(time, value))
            except Exception as exc:
                spec = lane.specs[0][1]
                assert isinstance(spec, PolicyWindow)
                fld = spec.field
                what = "missing" if isinstance(exc, KeyError) else "cannot be measured"
                raise BadEventError(
                    f"key {key!r}, event at time {time}: field {fld!r} {what} for the policy "
                    f"window {lane.index} ({spec.measure!r} measure): {exc}",
                    key=key, field=fld, time=time) from exc
        return tuple(lifts)

    def _prepare(self, key: Any, events: Iterable[tuple[Any, Any]], state: KeyState,
                 watermark: Any) -> _Prepared:
        rt = self._load(key, state)
        wm = rt.wm
        if watermark is not None:
            w = parse_watermark(watermark)
            if w > wm:
                wm = w
        boundary = wm - self.allowed_lateness
        accepted: list[tuple[int, Any, Any, Any, bytes]] = []
        late: list[LateEvent] = []
        time_field = self.time_field
        lift = self._lift
        policy = self._policy_lanes
        for item in events:
            try:
                time, value = item
            except (TypeError, ValueError):
                raise BadEventError(f"key {key!r}: events must be (time, value) pairs, got "
                                    f"{item!r:.80}", key=key) from None
            if type(time) is not int:
                time = parse_time(time, key, time_field)
            if time < boundary:
                late.append(LateEvent(key, time, value))
                continue
            lifted = lift(key, time, value)
            plifts = self._policy_lifts(key, time, value) if policy else None
            try:
                data = encode_value(value)
            except CodecError as exc:
                raise BadEventError(f"key {key!r}, event at time {time}: {exc}", key=key,
                                    field=_bad_field(value), time=time) from None
            accepted.append((time, value, lifted, plifts, data))
        return _Prepared(key, state, rt, wm, accepted, late)

    # ------------------------------------------------------------------ applying a call
    def _apply(self, p: _Prepared, out: Output) -> None:
        rt, key, state = p.rt, p.key, p.state
        advances = p.watermark > rt.wm
        if not advances and not p.accepted and not p.late:
            out.timers[key] = self._next_timer(rt)
            return
        try:
            rows: list[dict[str, Any]] = []
            removal = self._advance(rt, key, p.watermark, rows) if advances else None
            entries: list[LogEntry] = []
            if p.accepted:
                seq = rt.seq
                pending = rt.pending
                push = heapq.heappush
                for time, value, lifted, plifts, data in p.accepted:
                    push(pending, (time, seq, value, lifted, plifts))
                    entries.append((time, seq, data))
                    seq += 1
                rt.seq = seq
            rt.late += len(p.late)
            meta = self._encode_meta(rt)
            if removal is not None:
                state.remove_events(*removal)
            if entries:
                state.add_events(entries)
            state.put_meta(meta)
            rt.meta_bytes = meta
        except BaseException:
            self._cache.pop(key, None)  # the cache may be half-changed: rebuild from state
            raise
        self._remember(key, rt)
        out.rows.extend(rows)
        out.late.extend(p.late)
        out.timers[key] = self._next_timer(rt)

    def _encode_meta(self, rt: _KeyRuntime) -> bytes:
        # The same JSON as codec.encode_meta(dict) would write, formatted directly: this runs
        # on every call (tests check the two agree).
        wm = rt.wm
        wm_text = "null" if wm == -INF else '"end"' if wm == INF else str(int(wm))
        policy = ",".join([str(len(ls.w)) for ls in rt.lanes[self._first_policy:]])
        return (f'{{"codec":{CODEC_VERSION},"q":"{self.query.fingerprint}",'
                f'"n":{_nonce.getrandbits(62)},"wm":{wm_text},"seq":{rt.seq},'
                f'"rel":{rt.released},"late":{rt.late},"pol":[{policy}]}}').encode()

    def _next_timer(self, rt: _KeyRuntime) -> int | None:
        """Smallest watermark at which :meth:`advance_watermark` will emit something."""
        boundary = rt.wm - self.allowed_lateness
        best: int | float = INF
        pmin = rt.pending[0][0] if rt.pending else INF
        last = rt.times[-1] if len(rt.times) > rt.head else None
        for spec in self._sliding:
            if last is not None and boundary != -INF:
                e1 = spec.first_end_after(boundary)
                if last >= e1 - spec.range:  # a released event is in the window ending at e1
                    if e1 < best:
                        best = e1
                    continue
            if pmin != INF:
                e = spec.first_end_after(pmin)
                if e < best:
                    best = e
        if self._per_event and pmin + 1 < best:
            best = pmin + 1
        if best == INF:
            return None
        return int(best) + self.allowed_lateness

    # ------------------------------------------------------------------ release and emit
    def _advance(self, rt: _KeyRuntime, key: Any, watermark: int | float,
                 rows: list[dict[str, Any]]) -> tuple[int, list[tuple[int, int]]] | None:
        """Advance the key's watermark; fills ``rows``; returns the log removal to apply."""
        lateness = self.allowed_lateness
        b_old = rt.wm - lateness
        rt.wm = watermark
        b = watermark - lateness
        new: list[tuple[Any, ...]] = []
        pending = rt.pending
        if pending and pending[0][0] < b:
            if b == INF:
                new, rt.pending = pending, []
                new.sort()
            else:  # pop the released prefix of the heap: already in (time, seq) order
                pop = heapq.heappop
                while pending and pending[0][0] < b:
                    new.append(pop(pending))
            rt.times.extend([r[0] for r in new])
            rt.seqs.extend([r[1] for r in new])
            rt.released += len(new)
        new_times = [r[0] for r in new]
        if len(self._lanes) == 1:
            self._release(self._lanes[0], rt.lanes[0], rt, key, new, new_times, b_old, b, rows)
        else:
            per_lane: list[list[dict[str, Any]]] = []
            for lane, ls in zip(self._lanes, rt.lanes):
                lane_rows: list[dict[str, Any]] = []
                self._release(lane, ls, rt, key, new, new_times, b_old, b, lane_rows)
                if lane_rows:
                    per_lane.append(lane_rows)
            if len(per_lane) == 1:
                rows.extend(per_lane[0])
            elif per_lane:
                rows.extend(heapq.merge(*per_lane, key=_row_time))
        return self._trim_log(rt, b)

    def _release(self, lane: _Lane, ls: _LaneState, rt: _KeyRuntime, key: Any,
                 new: list[tuple[Any, ...]], new_times: list[int], b_old: int | float,
                 b: int | float, rows: list[dict[str, Any]]) -> None:
        if isinstance(lane, _TimeLane):
            self._release_time(lane, ls, rt, key, new, new_times, b_old, b, rows)
        elif isinstance(lane, _CountLane):
            if new:
                self._release_count(lane, ls, rt, key, new, rows)
        elif new:
            self._release_policy(lane, ls, rt, key, new, rows)

    def _release_time(self, lane: _TimeLane, ls: _LaneState, rt: _KeyRuntime, key: Any,
                      new: list[tuple[Any, ...]], new_times: list[int], b_old: int | float,
                      b: int | float, rows: list[dict[str, Any]]) -> None:
        times, head = rt.times, rt.head
        n = len(times)
        # Emission points (limit, spec order, start, window index, payload): insert the
        # released events with time < limit, then answer the range [start, limit).
        points: list[tuple[Any, ...]] = []
        for order, (idx, spec) in enumerate(lane.specs):
            if type(spec) is SlidingWindow:
                if head == n:
                    continue
                r, s = spec.range, spec.slide
                e = spec.first_end_after(times[head] if b_old == -INF else b_old)
                lo = head
                while e <= b:
                    i = bisect_left(times, e - r, lo, n)
                    if i == n:
                        break
                    t = times[i]
                    if t < e:  # the window [e - r, e) holds the event at t
                        points.append((e, order, e - r, idx, None))
                        e += s
                        lo = i
                    else:      # skip the empty windows up to the first one holding t
                        e = spec.first_end_after(t)
            else:
                r = spec.range
                j, m = 0, len(new)
                while j < m:
                    t = new_times[j]
                    k = j + 1
                    while k < m and new_times[k] == t:
                        k += 1
                    points.append((t + 1, order, t - r, idx, new[j:k]))
                    j = k
        if len(lane.specs) > 1:
            points.sort(key=operator.itemgetter(0, 1))
        final = lane.need(b)
        w, low = ls.w, ls.low
        # Entries older than every later start are evicted before each query.
        bounds: list[Any] = [0] * len(points)
        cur = final
        for j in range(len(points) - 1, -1, -1):
            start = points[j][2]
            if start < cur:
                cur = start
            bounds[j] = cur
        finish_row = rows.append
        inserted, m = 0, len(new)
        for (limit, _, start, idx, payload), bound in zip(points, bounds):
            k = bisect_left(new_times, limit, inserted, m)
            if k > inserted:
                w.bulk_insert([(r[0], r[3]) for r in new[inserted:k]])
                inserted = k
            if bound > low:
                _evict_below(w, bound)
                low = bound
            result = w.query() if start <= low else w.query_since(start)
            if payload is None:
                row = {"window": idx, "key": key, "start": start, "end": limit}
                row.update(result)
                finish_row(row)
            else:
                t = limit - 1
                for rec in payload:
                    row = {"window": idx, "key": key, "time": t, "event": rec[2]}
                    row.update(result)
                    finish_row(row)
        if inserted < m:
            w.bulk_insert([(r[0], r[3]) for r in new[inserted:]])
        if final > low:
            _evict_below(w, final)
            low = final
        ls.low = low

    def _release_count(self, lane: _CountLane, ls: _LaneState, rt: _KeyRuntime, key: Any,
                       new: list[tuple[Any, ...]], rows: list[dict[str, Any]]) -> None:
        m = len(new)
        last = rt.released
        first = last - m + 1  # release position of new[0]
        points: list[tuple[int, int, int, int, int]] = []
        for order, (idx, spec) in enumerate(lane.specs):
            size, every = spec.size, spec.every
            k = -(-first // every) * every
            while k <= last:
                points.append((k + 1, order, max(1, k - size + 1), idx, k))
                k += every
        if len(lane.specs) > 1:
            points.sort(key=operator.itemgetter(0, 1))
        final = max(1, last + 2 - lane.nmax)  # positions start at 1, like the starts
        bounds: list[int] = [0] * len(points)
        cur = final
        for j in range(len(points) - 1, -1, -1):
            start = points[j][2]
            if start < cur:
                cur = start
            bounds[j] = cur
        w, low = ls.w, ls.low
        time_of = rt.time_of
        inserted = 0
        for (limit, _, start, idx, k), bound in zip(points, bounds):
            upto = limit - first
            if upto > inserted:
                w.bulk_insert([(first + i, new[i][3]) for i in range(inserted, upto)])
                inserted = upto
            if bound > low:
                w.bulk_evict(bound - 1)
                low = bound
            result = w.query() if start <= low else w.query_since(start)
            row = {"window": idx, "key": key, "start": time_of(start), "end": time_of(k) + 1}
            row.update(result)
            rows.append(row)
        if inserted < m:
            w.bulk_insert([(first + i, new[i][3]) for i in range(inserted, m)])
        if final > low:
            w.bulk_evict(final - 1)
            low = final
        ls.low = low

    def _release_policy(self, lane: _PolicyLane, ls: _LaneState, rt: _KeyRuntime, key: Any,
                        new: list[tuple[Any, ...]], rows: list[dict[str, Any]]) -> None:
        w = ls.w
        rule, every, idx, slot = lane.rule, lane.every, lane.index, lane.slot
        finish = self._finish
        position = rt.released - len(new)
        time_of = rt.time_of
        for rec in new:
            position += 1
            w.insert(position, (rec[3], rec[4][slot]))
            w.enforce(rule)  # type: ignore[attr-defined]
            if position % every == 0:
                row = {"window": idx, "key": key,
                       "start": time_of(position - len(w) + 1), "end": rec[0] + 1}
                row.update(finish(w.query()[0]))
                rows.append(row)

    def _retention(self, rt: _KeyRuntime, b: int | float) -> int | float:
        """Oldest time some structure may still need (log entries before it can go)."""
        bound = b
        released = rt.released
        first_retained = released - (len(rt.times) - rt.head) + 1
        for lane, ls in zip(self._lanes, rt.lanes):
            if isinstance(lane, _TimeLane):
                need = lane.need(b)
            elif isinstance(lane, _CountLane):
                position = max(released + 2 - lane.nmax, first_retained)
                need = rt.time_of(position) if position <= released else INF
            else:
                n = len(ls.w)
                need = rt.time_of(released - n + 1) if n else INF
            if need < bound:
                bound = need
        return bound

    def _trim_log(self, rt: _KeyRuntime, b: int | float
                  ) -> tuple[int, list[tuple[int, int]]] | None:
        times, head = rt.times, rt.head
        if head == len(times):
            return None
        bound = self._retention(rt, b)
        k = bisect_left(times, bound, head)
        if k == head:
            return None
        keys = list(zip(times[head:k], rt.seqs[head:k]))
        before = int(bound) if bound != INF else times[k - 1] + 1
        if k >= _COMPACT_MIN and k + k >= len(times):
            del times[:k]
            del rt.seqs[:k]
            k = 0
        rt.head = k
        return before, keys

    # ------------------------------------------------------------------ cache and rebuild
    def _remember(self, key: Any, rt: _KeyRuntime) -> None:
        cache = self._cache
        cache[key] = rt
        if self._max_cached is not None:
            assert isinstance(cache, OrderedDict)
            cache.move_to_end(key)
            while len(cache) > self._max_cached:
                cache.popitem(last=False)

    def _new_runtime(self) -> _KeyRuntime:
        return _KeyRuntime([_LaneState(make_window(lane.algorithm, lane.aggregation))
                            for lane in self._lanes])

    def _load(self, key: Any, state: KeyState) -> _KeyRuntime:
        meta = state.get_meta()
        rt = self._cache.get(key)
        if rt is not None and (rt.meta_bytes is meta or rt.meta_bytes == meta):
            if self._max_cached is not None:
                self._cache.move_to_end(key)  # type: ignore[attr-defined]
            return rt
        rt = self._new_runtime() if meta is None else self._rebuild(key, state, meta)
        self._remember(key, rt)
        return rt

    def _rebuild(self, key: Any, state: KeyState, meta_bytes: bytes) -> _KeyRuntime:
        meta = decode_meta(meta_bytes)
        if meta.get("q") != self.query.fingerprint:
            raise StateError(
                f"the state of key {key!r} was written by a query with different windows or "
                f"allowed lateness (fingerprint {meta.get('q')!r}, this query "
                f"{self.query.fingerprint!r}); start from empty state or keep the query")
        rt = self._new_runtime()
        wm = meta["wm"]
        rt.wm = -INF if wm is None else INF if wm == "end" else int(wm)
        rt.seq, rt.released, rt.late = int(meta["seq"]), int(meta["rel"]), int(meta["late"])
        b = rt.wm - self.allowed_lateness
        released: list[tuple[Any, ...]] = []
        pending: list[tuple[Any, ...]] = []
        for time, seq, data in sorted(state.read_events(), key=lambda e: (e[0], e[1])):
            try:
                value = decode_value(data)
            except CodecError as exc:
                raise StateError(f"key {key!r}: corrupt event entry at time {time}: "
                                 f"{exc}") from None
            try:
                rec = (time, seq, value, self._lift(key, time, value),
                       self._policy_lifts(key, time, value))
            except BadEventError as exc:
                raise StateError(f"key {key!r}: a stored event can no longer be aggregated "
                                 f"by this query: {exc}") from None
            (released if time < b else pending).append(rec)
        if len(released) > rt.released:
            raise StateError(f"key {key!r}: the state holds {len(released)} released events "
                             f"but its metadata counts {rt.released}")
        rt.pending = pending  # sorted, hence a valid heap
        rt.times = [r[0] for r in released]
        rt.seqs = [r[1] for r in released]
        policy_lengths = iter(meta.get("pol", []))
        n = len(released)
        first = rt.released - n + 1
        for lane, ls in zip(self._lanes, rt.lanes):
            if isinstance(lane, _TimeLane):
                need = lane.need(b)
                i = bisect_left(rt.times, need)
                ls.w.bulk_insert([(r[0], r[3]) for r in released[i:]])
                ls.low = need
            elif isinstance(lane, _CountLane):
                keep = min(n, max(lane.nmax - 1, 0))
                ls.w.bulk_insert([(first + i, released[i][3]) for i in range(n - keep, n)])
                ls.low = rt.released - keep + 1
            else:
                keep = next(policy_lengths, 0)
                if keep > n:
                    raise StateError(f"key {key!r}: policy window {lane.index} holds {keep} "
                                     f"events but only {n} are stored")
                ls.w.bulk_insert([(first + i, (released[i][3], released[i][4][lane.slot]))
                                  for i in range(n - keep, n)])
        rt.meta_bytes = meta_bytes
        return rt


def _shown(x: Any, spec: AggSpec) -> str:
    if spec.fn in ("argmin", "argmax") and isinstance(x, tuple) and len(x) == 2:
        x = x[0]
    return f"{x!r:.60}"


def _bad_field(value: Any) -> str | None:
    """The first top-level field of a dict event whose value the codec refuses."""
    if isinstance(value, dict):
        from adapters.codec import to_json
        for k, v in value.items():
            try:
                to_json(v)
            except CodecError:
                return str(k)
    return None


__all__ = ["END_OF_INPUT", "KeyInfo", "LateEvent", "Output", "WindowDriver", "parse_time",
           "parse_watermark"]
