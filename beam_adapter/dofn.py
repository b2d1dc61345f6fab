"""The stateful ``DoFn`` behind :class:`beam_adapter.SlidingAggregate`.

It only translates between Beam and :class:`adapters.WindowDriver`:

* ``process`` (one ``(key, value)`` element, or ``(key, element)`` when the transform keyed
  rows itself): the event time (element timestamp, exact ms, or the ``time`` extractor) and
  the value (a row as a ``dict``: :func:`beam_adapter._rows.driver_value`) go to
  ``driver.process``; a late element goes, as it came, to the ``late`` tagged output and the
  ``swag/late_events`` counter.
* The **wake** timer (``TimeDomain.WATERMARK``, one per key) is kept at the driver's next
  timer ``N``: set at ``(N - 1) * 1000`` us, it fires once Beam's watermark proves ``W >= N``
  and calls ``driver.advance_watermark(key, N)``. Unbounded input only: on bounded input
  Beam's watermark jumps from -inf to +inf at the end, so a wake timer could never fire early.
* The **end** timer, set once per key at the end of the global window, fires only at the end
  of input and calls ``driver.advance_watermark(key, END_OF_INPUT)``: everything left is
  emitted in one release.
* State: ``adapters.KeyState`` views over Beam state (:mod:`beam_adapter.state`).
* Names: each ``SlidingAggregate`` gets its own ``DoFn`` class (:func:`dofn_class`) whose
  timers are named after the transform's full label (:func:`timer_suffix`): the FnApiRunner
  conflates equally named timers of different transforms (``docs/beam.md``, "Several
  transforms in one pipeline"). State cells keep fixed names: Beam scopes state by transform.

Rows leave as ``beam.Row`` elements of the transform's :class:`~beam_adapter._rows.OutputSchema`
with the window's timestamp (``end - 1 us``; OVER rows: the event's timestamp), or with
``timestamps="emission"`` never earlier than the firing timer (see ``docs/beam.md``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import TimerSpec, on_timer
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp

from adapters import END_OF_INPUT, BadEventError, WindowDriver
from adapters.engine.event_time import time_extractor
from adapters.engine.timers import rearm
from adapters.query.specs import get_field

from . import _time
from ._rows import OutputSchema, driver_value, is_row
from .state import BAG_LOG_SPEC, META_SPEC, ORDERED_LOG_SPEC, BagLogState, OrderedLogState

#: Metrics namespace of the adapter's counters (``late_events``, ``rows``).
METRICS_NAMESPACE = "swag"
#: Tag of the late-events output.
LATE_TAG = "late"

_END_TS = Timestamp(micros=_time.GLOBAL_MAX_MICROS)
# DoFn parameter defaults (Beam's idiom), as module-level singletons.
_TS = beam.DoFn.TimestampParam
_KEY = beam.DoFn.KeyParam
_META = beam.DoFn.StateParam(META_SPEC)
_LOGS = {"ordered_list": (OrderedLogState, beam.DoFn.StateParam(ORDERED_LOG_SPEC)),
         "bag": (BagLogState, beam.DoFn.StateParam(BAG_LOG_SPEC))}
#: The event-log kinds (``SlidingAggregate(state=...)``).
STATE_KINDS = tuple(_LOGS)
#: Bound of the per-instance "which wake timer is set" memo (dropping it only costs a
#: redundant timer write).
_ARMED_LIMIT = 1 << 16


def timer_suffix(full_label: str) -> str:
    """The suffix of one transform's timer names, from its full label (stable across
    pipeline constructions, distinct for distinct labels).

    The FnApiRunner buffers written timers per timer family *name* for the whole pipeline,
    not per transform (apache/beam#21995, see ``docs/beam.md``): two stateful transforms
    with the same timer names lose one transform's timers. Beam makes full labels unique in
    a pipeline, so names derived from them are too.
    """
    return hashlib.blake2b(full_label.encode("utf-8"), digest_size=8).hexdigest()


class SwagDoFn(beam.DoFn):
    """The adapter's logic; :func:`dofn_class` makes the per-transform subclass that declares
    the state cells and the timers (named by :func:`timer_suffix`) its methods receive."""

    _view_class: type[OrderedLogState] | type[BagLogState]
    #: ``(state kind, timer suffix)``: what :func:`dofn_class` rebuilds the class from.
    _class_key: tuple[str, str]

    def __init__(self, query: dict[str, Any], *, algorithm: str | None,
                 max_cached_keys: int | None, time: str | Callable[[Any], Any] | None,
                 wake_timers: bool, timestamps: str, schema: OutputSchema,
                 keyed: bool = False) -> None:
        super().__init__()
        self._query = query
        self._algorithm = algorithm
        self._max_cached_keys = max_cached_keys
        self._time = time
        self._wake_timers = wake_timers
        self._emission_ts = timestamps == "emission"
        self._schema = schema
        self._keyed = keyed

    def __reduce__(self) -> tuple[Any, ...]:
        # The class is made at run time: pickle how to remake it (on the worker too), and
        # the instance's attributes.
        return _new_instance, self._class_key, self.__dict__

    # ------------------------------------------------------------------ lifecycle
    def setup(self) -> None:
        for fn in _combine_fns(self._query):
            fn.setup()
        time_field = self._time if isinstance(self._time, str) else "timestamp"
        self._driver = WindowDriver(self._query, algorithm=self._algorithm,
                                    max_cached_keys=self._max_cached_keys,
                                    time_field=time_field)
        self._armed: dict[Any, tuple[bytes | None, int | None]] = {}
        self._late_counter = Metrics.counter(METRICS_NAMESPACE, "late_events")
        self._rows_counter = Metrics.counter(METRICS_NAMESPACE, "rows")
        self._extract = (None if self._time is None else
                         time_extractor(self._time, get_field, _time.to_ms))

    def teardown(self) -> None:
        for fn in _combine_fns(self._query):
            fn.teardown()

    # ------------------------------------------------------------------ element and timers
    def _on_element(self, element: Any, ts: Timestamp, meta: Any, log: Any, wake: Any,
                    end: Any) -> Iterator[Any]:
        try:
            key, value = element
        except (TypeError, ValueError):
            raise BadEventError(f"SlidingAggregate needs (key, value) elements, got "
                                f"{element!r:.100}") from None
        original = element
        if self._keyed:  # (key, the element as it came: a row, or a (key, value) pair)
            original = value
            value = value if is_row(value) else value[1]
        value = driver_value(value)
        extract = self._extract
        time = _time.timestamp_ms(ts, key) if extract is None else extract(key, value)
        view = self._view_class(meta, log)
        out = self._driver.process(key, ((time, value),), view)
        if view.meta_read is None:
            end.set(_END_TS)  # first call for this key: the end-of-input timer, once
        if self._wake_timers:
            self._arm(key, view, out.timers.get(key), wake, fired=False)
        if out.late:  # this element (one event per call), as it came
            self._late_counter.inc(len(out.late))
            yield TaggedOutput(LATE_TAG, original)
        if out.rows:
            yield from self._emit(out.rows, None)

    def _on_wake(self, key: Any, ts: Timestamp, meta: Any, log: Any, wake: Any
                 ) -> Iterator[Any]:
        view = self._view_class(meta, log)
        out = self._driver.advance_watermark(key, _time.fired_watermark(ts), view)
        self._arm(key, view, out.timers.get(key), wake, fired=True)
        return self._emit(out.rows, ts.micros)

    def _on_end(self, key: Any, ts: Timestamp, meta: Any, log: Any, wake: Any
                ) -> Iterator[Any]:
        view = self._view_class(meta, log)
        out = self._driver.advance_watermark(key, END_OF_INPUT, view)
        if self._wake_timers:
            wake.clear()
            self._armed.pop(key, None)
        return self._emit(out.rows, ts.micros)

    # ------------------------------------------------------------------ helpers
    def _arm(self, key: Any, view: Any, n: int | None, wake: Any, fired: bool) -> None:
        """Keep the key's wake timer at the driver's next timer ``n``
        (:func:`adapters.engine.timers.rearm`; Beam's ``set`` replaces the armed timer)."""
        target = None if n is None else _time.timer_micros(n)
        armed: tuple[int, ...] | None = ()  # a fired timer is no longer set
        if not fired:
            memo = self._armed.get(key)
            # The memo is valid only if the state is the one this instance last wrote (a
            # restore, or another worker, changes the meta and its nonce).
            if memo is None or memo[0] != view.meta_read:
                armed = None
            elif memo[1] is not None:
                armed = (memo[1],)
        change = rearm(target, armed)
        if change is not None:
            if change.register is not None:
                wake.set(Timestamp(micros=change.register))
            else:
                wake.clear()
        memo_of = self._armed
        if len(memo_of) >= _ARMED_LIMIT and key not in memo_of:
            memo_of.clear()
        memo_of[key] = (view.meta_written, target)

    def _emit(self, rows: list[dict[str, Any]], fired_micros: int | None) -> Iterator[Any]:
        if not rows:
            return
        self._rows_counter.inc(len(rows))
        floor = fired_micros if self._emission_ts and fired_micros is not None else None
        row_micros = _time.row_micros
        to_row = self._schema.to_row
        for row in rows:
            micros = row_micros(row)
            if floor is not None and micros < floor:
                micros = floor
            yield TimestampedValue(to_row(row), Timestamp(micros=micros))


@functools.cache
def dofn_class(state: str, suffix: str) -> type[SwagDoFn]:
    """The :class:`SwagDoFn` subclass with its event log in ``state`` (``"ordered_list"``:
    ``OrderedListState``; ``"bag"``: ``BagState``, for runners without ordered lists) and
    the timers ``swag_wake_<suffix>`` and ``swag_end_<suffix>``.

    One class per (state, suffix), made once per process: Beam finds a timer's callback
    through its ``TimerSpec`` (one callback each), so each pair of timers needs its own
    methods.
    """
    if state not in _LOGS:
        raise ValueError(f"state must be one of {STATE_KINDS}, got {state!r}")
    view_class, log_param = _LOGS[state]
    wake_spec = TimerSpec(f"swag_wake_{suffix}", TimeDomain.WATERMARK)
    end_spec = TimerSpec(f"swag_end_{suffix}", TimeDomain.WATERMARK)
    wake_param = beam.DoFn.TimerParam(wake_spec)
    end_param = beam.DoFn.TimerParam(end_spec)

    def process(self: SwagDoFn, element: Any, ts: Any = _TS, meta: Any = _META,
                log: Any = log_param, wake: Any = wake_param, end: Any = end_param
                ) -> Iterator[Any]:
        return self._on_element(element, ts, meta, log, wake, end)

    def on_wake(self: SwagDoFn, key: Any = _KEY, ts: Any = _TS, meta: Any = _META,
                log: Any = log_param, wake: Any = wake_param) -> Iterator[Any]:
        return self._on_wake(key, ts, meta, log, wake)

    def on_end(self: SwagDoFn, key: Any = _KEY, ts: Any = _TS, meta: Any = _META,
               log: Any = log_param, wake: Any = wake_param) -> Iterator[Any]:
        return self._on_end(key, ts, meta, log, wake)

    name = f"SwagDoFn_{state}_{suffix}"
    return type(name, (SwagDoFn,), {
        "__module__": __name__, "__qualname__": name, "_view_class": view_class,
        "_class_key": (state, suffix), "process": process,
        "on_wake": on_timer(wake_spec)(on_wake), "on_end": on_timer(end_spec)(on_end)})


def _new_instance(state: str, suffix: str) -> SwagDoFn:
    """An uninitialised instance of :func:`dofn_class` (unpickling fills its attributes)."""
    cls = dofn_class(state, suffix)
    return cls.__new__(cls)


def _combine_fns(query: dict[str, Any]) -> list[Any]:
    """The Beam ``CombineFn`` objects among a query's aggregations (they need ``setup``)."""
    out = []
    for spec in query.get("aggregations", {}).values():
        obj = spec[1] if isinstance(spec, tuple) and len(spec) == 2 else spec
        if isinstance(obj, beam.CombineFn):
            out.append(obj)
    return out


__all__ = ["LATE_TAG", "METRICS_NAMESPACE", "STATE_KINDS", "SwagDoFn", "dofn_class",
           "timer_suffix"]
