"""Flink types of the adapter's output, and the value conversions between Flink rows and the
driver's plain Python values.

The driver sees each event value as a plain ``dict`` (a ``Row`` input: its fields, with
``TIMESTAMP``/``TIMESTAMP_LTZ`` fields as integer ms, which the state codec can store). Its
output rows (dicts) leave as ``Row`` objects of the declared ``Types.ROW_NAMED``, with the
columns every engine gives (:func:`adapters.engine.rows.output_columns`): the key column is
named by ``key=`` (``"key"`` for a key function), the time column by ``time=`` (``"time"``
for the record timestamp); a per-event row carries the input row's fields with their
declared types. Window bounds and the time column are integer ms (``LONG``), or the time
field's own type when it is a declared time type (:func:`time_kind`).

Aggregate types follow the input column types (:func:`aggregate_type`); where they cannot
(a custom aggregation without ``output_types``, a column of unknown type) the column is
``Types.PICKLED_BYTE_ARRAY()``: the Python value itself, which Python operators downstream
read as is. :class:`OutputLayout` holds only plain data, so the process function that
carries it pickles without Java objects.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyflink.common import Row, Types
from pyflink.common.typeinfo import BasicTypeInfo, ExternalTypeInfo, RowTypeInfo, TypeInformation

from adapters import BadEventError
from adapters.engine.rows import OutputColumns, output_columns
from adapters.query.output_types import BINARY, StructOf
from adapters.query.specs import AggSpec, Query, declared_output, get_field, output_type

from . import _time

_EPOCH = _dt.datetime(1970, 1, 1)


def plain_type(t: TypeInformation | None) -> TypeInformation | None:
    """``t`` without the ``ExternalTypeInfo`` wrapper of streams made from tables."""
    while isinstance(t, ExternalTypeInfo):
        t = t._type_info
    return t


def _basic(t: TypeInformation | None) -> str | None:
    """The basic type name (``"LONG"``, ``"DOUBLE"``...) of ``t``, or ``None``."""
    if isinstance(t, BasicTypeInfo):
        return str(t._basic_type.name)
    return None


def is_integral(t: TypeInformation | None) -> bool:
    return _basic(t) in ("BYTE", "SHORT", "INT", "LONG", "BIG_INT")


def is_floating(t: TypeInformation | None) -> bool:
    return _basic(t) in ("FLOAT", "DOUBLE")


def time_kind(t: TypeInformation | None) -> str | None:
    """``"local"`` for ``SQL_TIMESTAMP``/``LOCAL_DATE_TIME`` (naive ``datetime``, read as
    UTC), ``"instant"`` for ``INSTANT`` (``TIMESTAMP_LTZ``), else ``None``."""
    name = type(t).__name__
    if name == "TimestampTypeInfo":
        return "local"
    kind = getattr(t, "_time_type", None)
    if name == "LocalTimeTypeInfo" and kind is not None and kind.name == "LOCAL_DATE_TIME":
        return "local"
    if name == "InstantTypeInfo":
        return "instant"
    return None


def from_ms(ms: Any, kind: str | None) -> Any:
    """The inverse of :func:`flink_adapter._time.to_ms` for a column of ``kind``."""
    if ms is None or kind is None or not isinstance(ms, int):
        return ms
    if kind == "instant":
        from pyflink.common.time import Instant
        return Instant.of_epoch_milli(ms)
    return _EPOCH + _dt.timedelta(milliseconds=ms)


class _FlinkTypes:
    """Flink's types of the engine-neutral output types (:mod:`adapters.query.output_types`);
    ``None`` where Flink has none the adapter can fill (a list of timestamps)."""

    def named(self, name: str) -> TypeInformation:
        if name == "long":
            return Types.LONG()
        if name == "double":
            return Types.DOUBLE()
        assert name == "binary", name
        return Types.PRIMITIVE_ARRAY(Types.BYTE())

    def array(self, element: TypeInformation) -> TypeInformation | None:
        return Types.LIST(element) if time_kind(element) is None else None

    def struct(self, fields: list[tuple[str, TypeInformation]]) -> TypeInformation:
        return Types.ROW_NAMED([name for name, _ in fields], [t for _, t in fields])

    def numeric(self, t: TypeInformation) -> str | None:
        return "long" if is_integral(t) else "double" if is_floating(t) else None


FLINK_TYPES = _FlinkTypes()


def aggregate_type(spec: AggSpec, fields: Mapping[str, TypeInformation],
                   row_type: TypeInformation | None,
                   output_types: Mapping[str, TypeInformation]) -> TypeInformation:
    """The Flink type of output column ``spec.name`` given the input field types
    (``fields``; empty when unknown) and the type of a whole event value (``row_type``):
    ``output_types[spec.name]`` if given, else the built-in's declared output type
    (:data:`adapters.query.builtins.BUILTINS`), else (a custom aggregation, an unknown
    field type) ``PICKLED_BYTE_ARRAY``."""
    if spec.name in output_types:
        return output_types[spec.name]
    t = output_type(spec, FLINK_TYPES, fields.get, row_type)
    return Types.PICKLED_BYTE_ARRAY() if t is None else t


@dataclass
class OutputLayout:
    """How values cross between Flink and the driver (plain data: it is pickled with the
    process function).

    * ``value_field``: the driver's value is this field of the element (``None``: the whole
      element); a ``Row`` becomes a ``dict`` of its declared fields;
    * ``input_fields``: the input ``Row``'s field names (when known); ``event_fields``: the
      field names of the driver's value (``input_fields``, or the ``value_field`` row's),
      ``time_fields`` those holding timestamps (``name -> kind``); ``whole_fields``: the
      fields of a whole-event argmin/argmax (the event's other than the key and time);
    * ``columns``: the output columns and where each value comes from
      (:func:`adapters.engine.rows.output_columns`); ``converters``: output column -> how a
      driver value becomes the Flink value (``"row"``, ``"pair"``, ``"bytes"``, or
      ``"time:<kind>"``).
    """

    columns: OutputColumns
    value_field: str | None = None
    input_fields: tuple[str, ...] | None = None
    event_fields: tuple[str, ...] | None = None
    time_fields: dict[str, str] = field(default_factory=dict)
    whole_fields: tuple[str, ...] | None = None
    converters: dict[str, str] = field(default_factory=dict)

    def read(self, value: Any, name: str) -> Any:
        """Field ``name`` of an input element. Rows built positionally (as Python operators
        pass them on) carry no field names: they are read by the declared position."""
        return _read(value, name, self.input_fields)

    def read_event(self, event: Any, name: str) -> Any:
        """Field ``name`` of a driver value (:meth:`to_driver`'s result)."""
        return _read(event, name, self.event_fields)

    def to_driver(self, key: Any, value: Any) -> Any:
        """The driver's value for an input element: the element or its ``value_field``; a
        ``Row`` of declared fields becomes a ``dict`` (timestamps as ms), which the state
        codec stores."""
        if self.value_field is not None:
            try:
                value = self.read(value, self.value_field)
            except (KeyError, ValueError, IndexError):
                raise BadEventError(f"key {key!r}: the element has no value field "
                                    f"{self.value_field!r}: {value!r:.100}", key=key,
                                    field=self.value_field) from None
        if isinstance(value, Row):
            names = self.event_fields
            if names is None:
                try:
                    return value.as_dict()
                except (TypeError, AttributeError):
                    return value
            out = dict(zip(names, value))
            for name in self.time_fields:
                # A bad time field is left as is: the aggregation reading it reports it.
                with contextlib.suppress(KeyError, ValueError):
                    out[name] = _time.to_ms(out[name])
            return out
        return value

    def _convert(self, how: str | None, x: Any) -> Any:
        if how is None or x is None:
            return x
        if how == "row" and isinstance(x, dict) and self.whole_fields is not None:
            return Row(*[from_ms(x.get(n), self.time_fields.get(n)) for n in self.whole_fields])
        if how == "pair":
            return Row(x[0], x[1])
        if how == "bytes":
            return x.to_bytes() if hasattr(x, "to_bytes") else bytes(x)
        if how.startswith("time:"):
            return from_ms(x, how[5:])
        return x

    def to_row(self, row: dict[str, Any]) -> Row:
        """A driver row as a Flink ``Row`` of the declared output columns."""
        convert = self._convert
        conv = self.converters
        names = self.columns.names
        values = self.columns.values(row, self.read_event)
        out = Row(*[convert(conv.get(n), x) for n, x in zip(names, values)])
        out.set_field_names(list(names))
        return out


def _read(value: Any, name: str, names: tuple[str, ...] | None) -> Any:
    if names is not None and isinstance(value, (Row, tuple)) and name in names:
        return value[names.index(name)]
    return get_field(value, name)


def row_fields(t: TypeInformation | None) -> dict[str, TypeInformation] | None:
    """The field names and types of a row type, in order; ``None`` for any other type."""
    t = plain_type(t)
    if isinstance(t, RowTypeInfo):
        return dict(zip(t.get_field_names(), t.get_field_types()))
    return None


@dataclass(frozen=True)
class StreamNames:
    """How the user names the stream's parts: ``key``/``time`` (field names, functions or,
    for ``time``, ``None``: the record timestamp), ``value`` (the field the aggregations
    read, ``None``: the whole element) and ``times_in_ms``: give the window bounds and the
    time column as integer ms whatever the time field's type (the Table API converts them
    itself)."""

    key: str | Callable[[Any], Any]
    time: str | Callable[[Any], Any] | None = None
    value: str | None = None
    times_in_ms: bool = False

    def time_type(self, fields: Mapping[str, TypeInformation] | None
                  ) -> tuple[TypeInformation, str | None]:
        """The type of the window bounds and the time column, and its time kind
        (:func:`time_kind`): the time field's own type when it is a declared time type,
        else ``LONG`` (integer ms)."""
        if isinstance(self.time, str) and fields and not self.times_in_ms:
            t = fields.get(self.time)
            kind = time_kind(t)
            if kind is not None and t is not None:
                return t, kind
        return Types.LONG(), None


def layout_and_type(query: Query, key_type: TypeInformation,
                    input_type: TypeInformation | None, names: StreamNames,
                    output_types: Mapping[str, TypeInformation]
                    ) -> tuple[OutputLayout, TypeInformation]:
    """The :class:`OutputLayout` and the declared ``Types.ROW_NAMED`` of the output: the
    columns of :func:`adapters.engine.rows.output_columns` with the input's types."""
    fields = row_fields(input_type)
    value_field = names.value
    event = fields if value_field is None else row_fields((fields or {}).get(value_field))
    value_type = (plain_type(input_type) if value_field is None
                  else (fields or {}).get(value_field))
    time_fields = {n: k for n, t in (event or {}).items() if (k := time_kind(t)) is not None}
    key_name = names.key if isinstance(names.key, str) else "key"
    time_name = names.time if isinstance(names.time, str) else "time"
    columns = output_columns(query, key_names=[key_name], time_name=time_name,
                             event_fields=None if event is None else list(event))
    # a whole-event argmin/argmax: the event's fields but the key and time (as on Spark)
    whole = None if event is None else {n: t for n, t in event.items()
                                        if n not in (key_name, time_name)}
    whole_type = (value_type if whole is None
                  else Types.ROW_NAMED(list(whole), list(whole.values())))
    time_type, kind = names.time_type(fields)
    source_types = {"window": Types.INT(), "key": key_type, "start": time_type,
                    "end": time_type, "time": time_type,
                    "event": value_type if value_type is not None and event is None
                    else Types.PICKLED_BYTE_ARRAY()}
    aggs = {a.name: a for a in query.aggregations}
    types: list[TypeInformation] = []
    converters: dict[str, str] = {}
    for name, (source, ref) in zip(columns.names, columns.sources):
        if source == "agg":
            t, how = _aggregate_column(aggs[ref], event or {},
                                       whole_type if value_field is None else None,
                                       output_types)
        elif source == "field":
            t, how = (event or {})[ref], _time_converter(time_fields.get(ref))
        else:
            t = source_types[source]
            how = _time_converter(kind) if source in ("start", "end", "time") else None
        types.append(t)
        if how is not None:
            converters[name] = how
    layout = OutputLayout(columns=columns, value_field=value_field,
                          input_fields=None if fields is None else tuple(fields),
                          event_fields=None if event is None else tuple(event),
                          time_fields=time_fields,
                          whole_fields=None if whole is None else tuple(whole),
                          converters=converters)
    return layout, Types.ROW_NAMED(list(columns.names), types)


def _time_converter(kind: str | None) -> str | None:
    return None if kind is None else f"time:{kind}"


def _aggregate_column(spec: AggSpec, event: Mapping[str, TypeInformation],
                      row_type: TypeInformation | None,
                      output_types: Mapping[str, TypeInformation]
                      ) -> tuple[TypeInformation, str | None]:
    """An aggregate column's Flink type (:func:`aggregate_type`; ``event``: the event's
    field types, ``row_type``: the type of a whole event, when the event is the input row)
    and its converter."""
    t = aggregate_type(spec, event, row_type, output_types)
    declared = declared_output(spec)
    if isinstance(declared, StructOf) and isinstance(t, RowTypeInfo):
        return t, "pair"
    if declared == BINARY:
        return t, "bytes"
    if row_type is not None and t is row_type:
        return t, "row"
    return t, _time_converter(time_kind(t))


def key_type_of(key: str | Callable[[Any], Any], input_type: TypeInformation | None,
                given: TypeInformation | None) -> TypeInformation:
    """The declared key type: ``given``, else the key field's type, else pickled."""
    if given is not None:
        return given
    input_type = plain_type(input_type)
    if isinstance(key, str) and isinstance(input_type, RowTypeInfo):
        types = dict(zip(input_type.get_field_names(), input_type.get_field_types()))
        if key in types:
            return types[key]
    return Types.PICKLED_BYTE_ARRAY()


__all__ = ["OutputLayout", "StreamNames", "aggregate_type", "from_ms", "key_type_of",
           "layout_and_type", "plain_type", "row_fields", "time_kind"]
