"""Validation, lifting and encoding of the events of one call, column-wise.

:meth:`Intake.accept` turns the ``(time, value)`` events of one key into columns: times,
values, lifted values (the query's aggregations), policy measures and codec bytes, and
separates the late events. The common case runs in a few C-level passes over the whole batch
(``map`` with ``operator.itemgetter``, the aggregations' lifts and one codec call). Any
irregularity (a non-int time, a late event, a value a lift refuses, a missing field, a value
the codec cannot store) sends the batch through the exact per-event path instead, which
raises :class:`~adapters.errors.BadEventError` naming the key, field and time of the first
bad event, as before anything changes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any, NamedTuple

from adapters.driver.kernels import Kernel
from adapters.driver.key_runtime import TIME, Record
from adapters.driver.results import LateEvent
from adapters.errors import BadEventError, CodecError
from adapters.query.specs import AggSpec, PolicyWindow, get_field, is_missing, plain_field
from adapters.query.times import parse_time
from adapters.state.codec import Columns, encode_entry, to_json

_TIME = operator.itemgetter(TIME)


#: What :meth:`Intake.accept` returns: the pending-buffer records
#: (:mod:`adapters.driver.key_runtime`) of the accepted events, sorted by time, ties in arrival
#: order; the data of the call's log entry (:func:`~adapters.state.codec.encode_entry`), ``None``
#: without accepted events; the late events.
Accepted = tuple[list[Record], bytes | None, Sequence[LateEvent]]


class PolicyMeasure(NamedTuple):
    """What the intake needs of a policy lane: its measure lift and, for errors, its spec."""

    window: int
    spec: PolicyWindow
    lift: Callable[[int, Any], Any]


class Intake:
    """Lifts and validates events for one query (see the module docstring).

    Args:
        specs: the query's output aggregations.
        policies: the measures of the query's policy windows, in lane order.
        time_field: the name of the event time in error messages.
        kernels: one column kernel per output (kernel mode), or ``None``.
        with_values: records carry the event value (a lane shows it in rows).
    """

    def __init__(self, specs: tuple[AggSpec, ...], policies: list[PolicyMeasure],
                 time_field: str, kernels: list[Kernel] | None = None,
                 with_values: bool = True) -> None:
        self.specs = specs
        self.policies = policies
        self.time_field = time_field
        #: records carry the event value (OVER rows show it; policy records always do)
        self.with_values = with_values or bool(policies)
        self.single = len(specs) == 1
        #: Kernel mode: the pending buffer holds raw field values (one per output), folded by
        #: the kernels; otherwise lifted values.
        self.kernels = kernels
        components = [(s.extract, s.aggregation.lift_fn) for s in specs]
        if self.single:
            extract, lift = components[0]
            if extract is None:
                self._lift_fast: Callable[[Any], Any] = lift
            else:
                ex = extract

                def lift_one(value: Any) -> Any:
                    return lift(ex(value))
                self._lift_fast = lift_one
        else:
            fns = components

            def lift_all(value: Any) -> tuple[Any, ...]:
                return tuple([lf(value) if ex is None else lf(ex(value)) for ex, lf in fns])
            self._lift_fast = lift_all
        # Column plan: per output, the field read (or how to read it) and the lift.
        self._columns: list[tuple[Any, Callable[[Any], Any] | None, Callable[[Any], Any] | None]]
        self._columns = [(plain_field(s.extract), s.extract, s.aggregation.lift) for s in specs]

    # ------------------------------------------------------------------ one event
    def lift(self, key: Any, time: int, value: Any) -> Any:
        """The lifted value of one event; :class:`BadEventError` naming the failing field."""
        try:
            return self._lift_fast(value)
        except Exception:  # find which output failed, and report it precisely
            pass
        parts = []
        for spec in self.specs:
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
        return parts[0] if self.single else tuple(parts)

    def policy_lifts(self, key: Any, time: int, value: Any) -> tuple[Any, ...] | None:
        """The measure lifts of one event for every policy lane (``None`` without any)."""
        if not self.policies:
            return None
        lifts = []
        for p in self.policies:
            try:
                lifts.append(p.lift(time, value))
            except Exception as exc:
                fld = p.spec.field
                what = "missing" if isinstance(exc, KeyError) else "cannot be measured"
                raise BadEventError(
                    f"key {key!r}, event at time {time}: field {fld!r} {what} for the policy "
                    f"window {p.window} ({p.spec.measure!r} measure): {exc}",
                    key=key, field=fld, time=time) from exc
        return tuple(lifts)

    def raw(self, value: Any) -> Any:
        """Kernel mode: what the pending buffer keeps of an accepted event (the field of the
        single output, or a tuple of one field per output)."""
        assert self.kernels is not None
        if self.single:
            return _raw_field(value, self.kernels[0])
        return tuple([_raw_field(value, k) for k in self.kernels])

    # ------------------------------------------------------------------ a batch
    def _lift_columns(self, columns: Columns) -> Sequence[Any]:
        """The lifted values of the batch, column by column (may raise anything: the caller
        falls back to the per-event path)."""
        values = columns.values
        cols = []
        xs: Sequence[Any]
        for name, extract, lift in self._columns:
            if name is not None:
                xs = columns.column(name)
            elif extract is not None:
                xs = list(map(extract, values))
            else:
                xs = values
            if lift is not None:
                xs = list(map(lift, xs))
            cols.append(xs)
        return cols[0] if self.single else list(zip(*cols))

    def _raw_columns(self, columns: Columns) -> Sequence[Any] | None:
        """Kernel mode: the raw field values of the batch if every kernel accepts its column
        (``None`` otherwise: the per-event path decides)."""
        assert self.kernels is not None
        cols = []
        for k in self.kernels:
            if k.field is None:  # count: reads no field
                cols.append([None] * len(columns.values))
                continue
            held = k.accepts(columns.column(k.field), columns.types(k.field))
            if held is None:
                return None
            cols.append(held)
        return cols[0] if self.single else list(zip(*cols))

    def _records(self, key: Any, times: Sequence[int], values: Sequence[Any],
                 lifted: Sequence[Any]) -> list[Record]:
        """Records ``(time, lifted[, value[, policy lifts]])``, sorted by time (stable: ties
        in arrival order). Policy lifts may raise :class:`BadEventError`."""
        records: list[Record]
        if self.policies:
            lifts = self.policy_lifts
            policy = [lifts(key, t, v) for t, v in zip(times, values)]
            records = list(zip(times, lifted, values, policy))
        elif self.with_values:
            records = list(zip(times, lifted, values))
        else:
            records = list(zip(times, lifted))
        if len(records) > 1:
            records.sort(key=_TIME)
        return records

    def accept(self, key: Any, times: Sequence[Any], values: Sequence[Any],
               boundary: int | float, encode: bool = True) -> Accepted:
        """Validate, lift and encode the events ``zip(times, values)`` of ``key``; events
        with ``time < boundary`` are late. Raises :class:`BadEventError` for the first bad
        event (nothing is changed: this only computes). ``encode=False``: no log entry (the
        data is ``None``: the state keeps no log), so values need not be storable."""
        if times:
            try:
                types = list(map(type, times))
                if types.count(int) == len(types):
                    late: Sequence[LateEvent] = ()
                    on_time, on_values = times, values
                    if min(times) < boundary:  # late events: set aside, not validated
                        keep = [t >= boundary for t in times]
                        late = [LateEvent(key, t, v)
                                for t, v, k in zip(times, values, keep) if not k]
                        on_time = list(compress(times, keep))
                        on_values = list(compress(values, keep))
                        if not on_time:
                            return [], None, late
                    columns = Columns(on_values)
                    lifted = self._lift_columns(columns) if self.kernels is None \
                        else self._raw_columns(columns)
                    if lifted is not None:
                        records = self._records(key, on_time, on_values, lifted)
                        data = encode_entry(on_time, on_values, columns) if encode else None
                        return records, data, late
                    # else: the per-event path below, on all the events (late ones included)
            except Exception:
                pass  # the per-event path below reports it exactly
        return self._accept_each(key, times, values, boundary, encode)

    def _accept_each(self, key: Any, times: Sequence[Any], values: Sequence[Any],
                     boundary: int | float, encode: bool = True) -> Accepted:
        out_times: list[int] = []
        out_values: list[Any] = []
        out_lifted: list[Any] = []
        late: list[LateEvent] = []
        time_field = self.time_field
        lift = self.lift
        raw = self.raw if self.kernels is not None else None
        for time, value in zip(times, values):
            if type(time) is not int:
                time = parse_time(time, key, time_field)
            if time < boundary:
                late.append(LateEvent(key, time, value))
                continue
            lifted = lift(key, time, value)
            if raw is not None:
                lifted = raw(value)
            self.policy_lifts(key, time, value)
            if encode:
                try:
                    to_json(value)  # storable?
                except CodecError as exc:
                    raise BadEventError(f"key {key!r}, event at time {time}: {exc}", key=key,
                                        field=_bad_field(value), time=time) from None
            out_times.append(time)
            out_values.append(value)
            out_lifted.append(lifted)
        if not out_times:
            return [], None, late
        return (self._records(key, out_times, out_values, out_lifted),
                encode_entry(out_times, out_values) if encode else None, late)


def _raw_field(value: Any, kernel: Kernel) -> Any:
    """What the pending buffer holds of ``value`` for ``kernel``: ``None`` for no field read
    or a missing value (an absent field, for a kernel whose field is optional)."""
    name = kernel.field
    if name is None:
        return None
    try:
        return _present(get_field(value, name))
    except KeyError:
        if kernel.optional:
            return None
        raise


def _present(x: Any) -> Any:
    """A raw kernel value as the pending buffer holds it: ``None`` for a missing value (a
    lift that refuses missing values has refused it before)."""
    return None if is_missing(x) else x


def _shown(x: Any, spec: AggSpec) -> str:
    if spec.keyed and isinstance(x, tuple) and len(x) == 2:
        x = x[0]
    return f"{x!r:.60}"


def _bad_field(value: Any) -> str | None:
    """The first top-level field of a dict event whose value the codec refuses."""
    if isinstance(value, dict):
        for k, v in value.items():
            try:
                to_json(v)
            except CodecError:
                return str(k)
    return None


__all__ = ["Accepted", "Intake", "PolicyMeasure"]
