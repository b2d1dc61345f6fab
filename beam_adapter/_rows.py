"""The one output schema (:func:`adapters.engine.rows.output_columns`) as schema'd Beam rows.

* :func:`input_shape`: what the input ``PCollection``'s element type tells: whether the
  elements are ``(key, value)`` pairs or rows the transform keys itself (``key=``), the
  key's type, and the event's field names and types (a ``beam.Row`` or ``NamedTuple``
  schema; unknown for dicts and untyped elements).
* :class:`OutputSchema`: the output columns, their Beam types (a ``RowTypeConstraint``,
  which ``apache_beam.dataframe`` and Beam SQL read) and how a driver row becomes a
  ``beam.Row``.

Types: ``window`` is ``numpy.int32`` (Beam's INT32); ``window_start``/``window_end``/
``<time>`` are ``int`` ms (INT64), or ``Timestamp`` when ``time=`` names a ``Timestamp``
field; key and event fields keep their declared types; the built-in aggregations' types come
from their engine-free declarations (:func:`adapters.query.specs.output_type`; a whole-event
argmin/argmax is a row of the event's fields but the key and time, as on Spark and Flink);
anything unknown is ``typing.Any`` (Beam's pickled "any" logical type).

The driver stores event values with the state codec, which takes plain values: a row event
reaches it as a ``dict`` of its fields (``Timestamp`` fields as integer ms, turned back on
output), see :func:`driver_value`.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.typehints.native_type_compatibility import convert_to_python_type
from apache_beam.typehints.row_type import RowTypeConstraint
from apache_beam.typehints.schemas import typing_to_runner_api
from apache_beam.typehints.typehints import coerce_to_kv_type
from apache_beam.utils.timestamp import Timestamp

from adapters import QuerySpecError
from adapters.engine.fields import fields_read
from adapters.engine.rows import OutputColumns, output_columns
from adapters.query.output_types import BINARY
from adapters.query.specs import Query, declared_output, get_field, output_type

#: the key column's name when ``key=`` gives none
DEFAULT_KEY = "key"
#: the time column's name when the time is the element timestamp or a function
DEFAULT_TIME = "time"


class _BeamTypes:
    """Beam schema types (Python types) of the engine-neutral output types
    (:class:`adapters.query.output_types.EngineTypes`)."""

    def named(self, name: str) -> Any:
        return {"long": int, "double": float, "binary": bytes}[name]

    def array(self, element: Any) -> Any:
        return typing.Sequence[element]

    def struct(self, fields: list[tuple[str, Any]]) -> Any:
        return RowTypeConstraint.from_fields(fields)

    def numeric(self, t: Any) -> str | None:
        if isinstance(t, type) and issubclass(t, (int, np.integer)) and t is not bool:
            return "long"
        if isinstance(t, type) and issubclass(t, (float, np.floating)):
            return "double"
        return None


BEAM_TYPES = _BeamTypes()


def base_type(t: Any) -> Any:
    """``t`` without ``Optional``."""
    args = typing.get_args(t)
    if typing.get_origin(t) is typing.Union and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else Any
    return t


def schema_type(t: Any) -> Any:
    """``t`` as a Python type (Beam's own type hints converted), or ``typing.Any`` when
    Beam's schemas have no such type (a ``Union``, an inferred ``Dict`` of mixed
    values...)."""
    try:
        t = convert_to_python_type(t)
        typing_to_runner_api(t)
    except Exception:  # Beam raises ValueError, TypeError or its own errors: no schema
        return Any
    return t


def row_fields(t: Any) -> dict[str, Any] | None:
    """The ``{field: type}`` of a schema'd element type (``beam.Row``, ``NamedTuple``), in
    order, or ``None``. Annotations written as strings (``from __future__ import
    annotations``) are resolved."""
    row = t if isinstance(t, RowTypeConstraint) else RowTypeConstraint.from_user_type(t)
    if row is None:
        return None
    try:
        hints = typing.get_type_hints(t) if isinstance(t, type) else {}
    except Exception:  # an annotation that does not resolve: keep Beam's
        hints = {}
    return {name: schema_type(hints.get(name, field)) for name, field in row._fields}


@dataclass(frozen=True)
class InputShape:
    """What the element type tells about the input (see :func:`input_shape`)."""

    #: ``"pairs"``: ``(key, value)`` elements; ``"rows"``: rows the transform keys by the
    #: ``key=`` field; ``"untyped"``: no element type (each element is checked: a pair, or
    #: with ``key=`` a row or a pair)
    form: str
    key_type: Any
    #: the event's ``{field: type}`` in order, ``None`` when unknown
    fields: dict[str, Any] | None


def input_shape(element_type: Any, key: str | None) -> InputShape:
    """The :class:`InputShape` of a ``PCollection`` of ``element_type`` for ``key=``.

    Raises :class:`~adapters.QuerySpecError` for row elements without ``key=`` or without
    the ``key=`` field."""
    fields = row_fields(element_type)
    if fields is not None:
        if key is None or key not in fields:
            how = ("pass key=<field>" if key is None else f"it has no field {key!r}: pass "
                   f"key=<one of {sorted(fields)}>")
            raise QuerySpecError("key", f"the elements are rows {list(fields)}: {how}, or "
                                 f"give (key, value) pairs")
        return InputShape("rows", fields[key], fields)
    try:
        kv = coerce_to_kv_type(element_type)
    except ValueError:
        return InputShape("untyped", Any, None)
    key_type, value_type = kv.tuple_types
    return InputShape("pairs", schema_type(key_type), row_fields(value_type))


def check_fields(query: Query, shape: InputShape, time: str | None) -> None:
    """Raise :class:`~adapters.QuerySpecError` when the element type declares the event's
    fields and a field the query reads (the ``time=`` field, the fields of
    :func:`adapters.engine.fields.fields_read`) is not among them: named when the transform
    is built, not at run time."""
    if shape.fields is None:
        return
    wanted = [("time", time)] if time is not None else []
    wanted += [("", name) for name in sorted(fields_read(query).names)]
    for path, name in wanted:
        if name not in shape.fields:
            raise QuerySpecError(path, f"the query reads field {name!r}, which the elements "
                                       f"do not have; their fields are {list(shape.fields)}")


def is_row(element: Any) -> bool:
    """Whether ``element`` is a row (``beam.Row``, ``NamedTuple`` or ``dict``), not a
    ``(key, value)`` pair."""
    return (isinstance(element, (beam.Row, dict))
            or (isinstance(element, tuple) and hasattr(element, "_fields")))


def driver_value(value: Any) -> Any:
    """The value the driver stores for an event: a ``beam.Row`` or ``NamedTuple`` as a
    ``dict`` of its fields (``Timestamp`` fields as integer ms); anything else as is."""
    if isinstance(value, beam.Row):
        fields = value.as_dict()
    elif isinstance(value, tuple) and hasattr(value, "_asdict"):
        fields = value._asdict()
    else:
        return value
    for name, x in fields.items():
        if isinstance(x, Timestamp):
            fields[name] = x.micros // 1000
    return fields


@dataclass(frozen=True)
class OutputSchema:
    """The output rows of one transform: columns (names, where each value comes from),
    their Beam row type, and per column how a driver value becomes the Beam value
    (``"time"``: ms -> ``Timestamp``, ``"bytes"``, ``"struct"``: a sequence -> ``beam.Row``
    of ``struct_fields``, or a whole event's ``dict`` -> ``beam.Row`` of those of its
    fields). Plain data: the ``DoFn`` carries it."""

    columns: OutputColumns
    types: tuple[Any, ...]
    converters: tuple[str | None, ...]
    struct_fields: Mapping[str, tuple[str, ...]]

    @property
    def row_type(self) -> RowTypeConstraint:
        """The declared type of the output ``PCollection``."""
        return RowTypeConstraint.from_fields(list(zip(self.columns.names, self.types)))

    def to_row(self, row: dict[str, Any]) -> beam.Row:
        """A driver row as a ``beam.Row`` of the output columns, in order."""
        values = self.columns.values(row, get_field)
        names = self.columns.names
        for i, how in enumerate(self.converters):
            if how is not None and values[i] is not None:
                values[i] = self._convert(how, names[i], values[i])
        return beam.Row(**dict(zip(names, values)))

    def _convert(self, how: str, name: str, x: Any) -> Any:
        if how == "time":
            return Timestamp(micros=x * 1000) if isinstance(x, int) else x
        if how == "bytes":
            return x.to_bytes() if hasattr(x, "to_bytes") else bytes(x)
        if isinstance(x, Mapping):  # a whole event (driver_value: timestamps as ms)
            struct = base_type(self.types[self.columns.names.index(name)])
            return beam.Row(**{n: self._convert("time", n, x.get(n))
                               if base_type(t) is Timestamp else x.get(n)
                               for n, t in struct._fields})
        return beam.Row(**dict(zip(self.struct_fields[name], x)))


def output_schema(query: Query, shape: InputShape, key: str | None,
                  time: str | None) -> OutputSchema:
    """The :class:`OutputSchema` of ``query`` over input of ``shape``; ``key``: the key
    column's name (``None``: ``"key"``), ``time``: the time field (``None``: the element
    timestamp or a function, column ``"time"``)."""
    fields = shape.fields or {}
    time_type = Timestamp if time is not None and base_type(fields.get(time)) is Timestamp \
        else int
    columns = output_columns(query, key_names=[key or DEFAULT_KEY],
                             time_name=time or DEFAULT_TIME,
                             event_fields=None if shape.fields is None else list(fields))
    several = len(query.windows) > 1
    aggs = {spec.name: spec for spec in query.aggregations}
    types: list[Any] = []
    converters: list[str | None] = []
    structs: dict[str, tuple[str, ...]] = {}
    # a whole-event argmin/argmax: the event's fields but the key and time (as on Spark)
    whole = None if shape.fields is None else RowTypeConstraint.from_fields(
        [(n, t) for n, t in fields.items() if n not in (key or DEFAULT_KEY, time)])
    for name, (kind, source) in zip(columns.names, columns.sources):
        if kind == "agg":
            t = output_type(aggs[source], BEAM_TYPES, lambda f: base_type(fields.get(f)), whole)
            if isinstance(t, RowTypeConstraint):
                structs[name] = tuple(n for n, _ in t._fields)
            converter = ("struct" if name in structs else
                         "bytes" if declared_output(aggs[source]) == BINARY else None)
        else:
            t = {"window": np.int32, "key": shape.key_type, "start": time_type,
                 "end": time_type, "time": time_type, "field": fields.get(source, Any),
                 "event": Any}[kind]
            converter = None
        if base_type(t) is Timestamp:
            converter = "time"
        t = Any if t is None else t
        nullable = kind == "agg" or (several and kind not in ("window", "key"))
        # typing.Optional, not ``t | None``: a RowTypeConstraint has no ``|``
        types.append(typing.Optional[t] if nullable and t is not Any else t)  # noqa: UP045
        converters.append(converter)
    return OutputSchema(columns, tuple(types), tuple(converters), structs)


__all__ = ["BEAM_TYPES", "DEFAULT_KEY", "DEFAULT_TIME", "InputShape", "OutputSchema",
           "base_type", "check_fields", "driver_value", "input_shape", "is_row",
           "output_schema", "row_fields", "schema_type"]
