"""``sliding_aggregate``: exact sliding, tumbling, per-event (OVER), count and policy windows
over a PyFlink ``DataStream``, as one keyed process function.

The function only translates; :class:`adapters.WindowDriver` decides (lateness, release,
emission, eviction, state layout). See ``docs/flink.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pyflink.common import Duration, Types
from pyflink.common.typeinfo import TypeInformation
from pyflink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from pyflink.datastream import DataStream, OutputTag

from adapters import BadEventError, WindowDriver, parse_query
from adapters.query.windows import duration_ms, query_of_call

from . import _time, java_errors
from ._checks import check_stream
from ._types import OutputLayout, StreamNames, key_type_of, layout_and_type
from .function import SwagProcessFunction

#: Name of the late-events side output.
LATE_TAG_NAME = "swag-late"


class Aggregated(NamedTuple):
    """``rows``: the output ``DataStream`` of ``Row``; ``late``: the late input elements
    (side output ``swag-late``, same type as the input)."""

    rows: DataStream
    late: DataStream


class _FieldTimestamps(TimestampAssigner):
    # ``read``: the layout's field reader (rows may carry no field names).
    """Flink record timestamps from the ``time`` field or function (integer ms,
    ``datetime`` or ``Instant``). An element whose time cannot be read gets
    ``Long.MIN_VALUE``: it holds no watermark back, and the process function, which reads the
    time again, rejects it with an error naming the field."""

    def __init__(self, time: str | Callable[[Any], Any], layout: OutputLayout) -> None:
        self._time = time
        self._layout = layout

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        try:
            t = (self._layout.read(value, self._time) if isinstance(self._time, str)
                 else self._time(value))
            t = _time.to_ms(t)
        except Exception:
            return _time.LONG_MIN
        return t if type(t) is int else _time.LONG_MIN


def _key_selector(key: str | Callable[[Any], Any], layout: OutputLayout
                  ) -> Callable[[Any], Any]:
    if callable(key):
        return key
    name = key
    read = layout.read

    def by_field(value: Any) -> Any:
        try:
            return read(value, name)
        except (KeyError, ValueError, IndexError):
            raise BadEventError(f"the element has no key field {name!r}: {value!r:.100}",
                                field=name) from None
    return by_field


def _query(window: Any, windows: Sequence[Any] | None, aggregations: Any,
           allowed_lateness: Any, nulls: str, layout: str) -> dict[str, Any]:
    return query_of_call(window, windows, aggregations, allowed_lateness, nulls=nulls,
                         layout=layout)


def _with_watermarks(stream: DataStream, watermark: Any,
                     time: str | Callable[[Any], Any] | None, layout: OutputLayout
                     ) -> DataStream:
    if watermark is None:
        return stream
    if isinstance(watermark, WatermarkStrategy):
        strategy = watermark
    else:
        bound = duration_ms(watermark, "watermark")
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(bound))
    if time is not None:
        strategy = strategy.with_timestamp_assigner(_FieldTimestamps(time, layout))
    return stream.assign_timestamps_and_watermarks(strategy)


def _checked_query(window: Any, windows: Sequence[Any] | None, aggregations: Any,
                   allowed_lateness: Any, nulls: str, layout: str, algorithm: str | None,
                   time: Any) -> tuple[dict[str, Any], Any]:
    """The driver's query dict and its parsed form, validated now (errors name the bad
    field) rather than when the job runs."""
    query = _query(window, windows, aggregations, allowed_lateness, nulls, layout)
    parsed = parse_query(query)
    WindowDriver(parsed, algorithm=algorithm)
    if time is not None and not (isinstance(time, str) or callable(time)):
        raise TypeError(f"time must be None, a field name or a function, got {time!r}")
    return query, parsed


def sliding_aggregate(stream: DataStream, *, key: str | Callable[[Any], Any],
                      aggregations: Mapping[str, Any] | Any, window: Any = None,
                      windows: Sequence[Any] | None = None,
                      time: str | Callable[[Any], Any] | None = None,
                      value: str | None = None, watermark: Any = None,
                      allowed_lateness: Any = 0, algorithm: str | None = None,
                      key_type: TypeInformation | None = None,
                      output_types: Mapping[str, TypeInformation] | None = None,
                      max_cached_keys: int | None = None, with_late_output: bool = False,
                      name: str = "swag", nulls: str = "skip", layout: str = "memory",
                      times_in_ms: bool = False) -> Any:
    """Exact window aggregates per key over a ``DataStream`` (``docs/flink.md``).

    Args:
        stream: the input; elements are ``Row`` objects (or anything ``key``/``time``/the
            aggregations can read: ``value[field]`` or ``value.field``).
        key: the key field name, or a function ``element -> key`` (give ``key_type``).
        window / windows: one window spec or a list (rows carry ``window``, the index):
            :func:`sliding`, :func:`tumbling`, :func:`over`, :func:`count_window`, dicts or
            ``adapters`` spec objects; durations in integer ms, ``timedelta`` or strings.
        aggregations: ``{output: spec}``: built-ins (``{"fn": "max", "field": "delay"}``),
            a ``swag_core.Aggregation``, a ``(field, aggregation)`` pair, or a PyFlink
            ``AggregateFunction`` (its ``merge`` must be associative).
        time: ``None``: the element's Flink timestamp; or a field name / function giving
            integer ms, a ``datetime`` (naive: UTC) or an ``Instant``. ``value``: the field
            the aggregations read (default: the whole element).
        watermark: ``None``: the stream's own timestamps and watermarks; a duration: a
            bounded out-of-orderness strategy with timestamps from ``time``; or a
            ``WatermarkStrategy``.
        allowed_lateness: L: an event older than ``watermark - L`` is late (counter
            ``swag.late_events``); windows are emitted once ``watermark - L`` passed them.
        algorithm, max_cached_keys: force a ``swag_core`` algorithm; bound the per-task
            structure cache.
        key_type, output_types: declared Flink types of the key and of aggregate columns
            (defaults: derived from the input ``Row`` type, else ``PICKLED_BYTE_ARRAY``).
        with_late_output: return :class:`Aggregated` ``(rows, late input elements)``.
        nulls: ``"skip"`` (default, as Flink SQL): built-ins leave out null and NaN values;
            ``"error"``: such a value is bad input (``BadEventError``).
        layout: where a key's per-event window structure lives: ``"memory"`` (default),
            ``"kvs"`` (the ``swag_pairs`` ``MapState``) or ``"auto"``.
        times_in_ms: give the window bounds and the time column as integer ms (``LONG``)
            even when the ``time`` field is a declared timestamp.

    Returns:
        A ``DataStream`` of ``Row`` of a declared ``Types.ROW_NAMED``, each window once, when
        final, in the columns every engine gives (``docs/adapters.md``, "Output rows");
        ``<key>`` is the ``key`` field's name (``"key"`` for a key function), the time
        column the ``time`` field's (``"time"`` otherwise).

    Raises:
        QuerySpecError, TypeError: when the query is malformed or the stream's declared
            type shows it cannot be read (a missing key, time, value or aggregated field,
            a time field that is not an integer or a timestamp, ``key``/``time`` field
            names on a stream without a row type), before any job runs.
    """
    query, parsed = _checked_query(window, windows, aggregations, allowed_lateness, nulls,
                                   layout, algorithm, time)
    return _aggregate(stream, query, parsed, StreamNames(key, time, value, times_in_ms),
                      watermark, algorithm, key_type, output_types, max_cached_keys,
                      with_late_output, name)


def _aggregate(stream: DataStream, query: dict[str, Any], parsed: Any, names: StreamNames,
               watermark: Any, algorithm: str | None, key_type: TypeInformation | None,
               output_types: Mapping[str, TypeInformation] | None,
               max_cached_keys: int | None, with_late_output: bool, name: str) -> Any:
    """:func:`sliding_aggregate` once its query is validated: the stream's type is checked
    against ``names`` and the query, then the job graph is built."""
    input_type = stream.get_type()
    check_stream(parsed, names, input_type)
    java_errors.install()
    key, time = names.key, names.time
    ktype = key_type_of(key, input_type, key_type)
    rows_layout, out_type = layout_and_type(parsed, ktype, input_type, names,
                                            dict(output_types or {}))
    # a late tag only when the late stream is read (thread mode: function.py)
    fn = SwagProcessFunction(query, rows_layout, LATE_TAG_NAME if with_late_output else None,
                             time=time, algorithm=algorithm, max_cached_keys=max_cached_keys)
    keyed = _with_watermarks(stream, watermark, time, rows_layout).key_by(
        _key_selector(key, rows_layout), ktype)
    rows = keyed.process(fn, out_type).name(name)
    if not with_late_output:
        return rows
    late_tag = OutputTag(LATE_TAG_NAME, input_type or Types.PICKLED_BYTE_ARRAY())
    return Aggregated(rows, rows.get_side_output(late_tag))


__all__ = ["LATE_TAG_NAME", "Aggregated", "sliding_aggregate"]
