"""Spark types <-> the driver's plain Python values, and the Spark types of aggregates.

Values travel between Spark and the Python workers (:mod:`adapters.engine.columns`) exactly:
columns of a scalar type (:func:`is_native`) as typed Arrow columns; arrays, structs and
binary aggregates as JSON text made and parsed by Spark itself (``to_json`` / ``from_json``),
never through pandas' conversions (which turn a nullable ``long`` into ``float64``, null into
NaN, timestamps into naive local times). Timestamps travel as integer microseconds and dates
as integer days (:func:`json_type`, :func:`to_json_column`), turned back on the way out
(:func:`restore`). Importing this module needs no JVM.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from adapters.query.output_types import StructOf
from adapters.query.specs import AggSpec, declared_output, output_type

INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
FLOATING = (FloatType, DoubleType)


class SparkTypeError(TypeError):
    """A column has a type the adapter cannot carry (the message names the column)."""


# ----------------------------------------------------------------------------- to JSON
def json_type(dt: DataType, column: str, output: bool = False) -> DataType:
    """The type a value of ``dt`` has inside the adapter's JSON (timestamps -> long micros,
    dates -> int days); raises :class:`SparkTypeError` for unsupported types. ``output``:
    the type of an aggregate (binary allowed: written as base64, read by ``from_json``)."""
    if output and isinstance(dt, BinaryType):
        return dt
    if isinstance(dt, TimestampType):
        return LongType()
    if isinstance(dt, DateType):
        return IntegerType()
    if isinstance(dt, (*INTEGRAL, *FLOATING, BooleanType, StringType)):
        return dt
    if isinstance(dt, ArrayType):
        return ArrayType(json_type(dt.elementType, column, output), dt.containsNull)
    if isinstance(dt, StructType):
        return StructType([StructField(f.name, json_type(f.dataType, f"{column}.{f.name}",
                                                         output), f.nullable)
                           for f in dt.fields])
    raise SparkTypeError(
        f"column {column!r} has type {dt.simpleString()}, which swag cannot carry through "
        f"its window state; supported: boolean, integral, float, double, string, timestamp, "
        f"date, and arrays/structs of them (cast it, e.g. decimal -> double)")


#: Types whose values travel as typed Arrow columns in batch mode (``applyInArrow``), in their
#: :func:`json_type` form (timestamps as long microseconds, dates as int days).
NATIVE = (*INTEGRAL, *FLOATING, BooleanType, StringType, TimestampType, DateType)


def is_native(dt: DataType) -> bool:
    """Whether a column of ``dt`` can travel as its own typed Arrow column in batch mode
    (exact both ways: Arrow keeps nulls, NaN, -0.0 and 64-bit integers apart); the other
    supported types (arrays, structs; binary outputs) travel inside JSON text."""
    return isinstance(dt, NATIVE)


def to_json_column(col: Column, dt: DataType, key: bool = False) -> Column:
    """``col`` (of type ``dt``) converted to its :func:`json_type` form. Floats (32-bit)
    become doubles first, so that Python sees their exact value (``to_json`` would write the
    shortest decimal of the float, ``0.1``, which parses to another double than the float's
    ``0.10000000149011612``; Spark's own ``sum`` and ``avg`` widen exactly). A ``key`` column's
    floating values, nested ones too, have ``-0.0`` turned into ``0.0``
    (:func:`grouping_key`)."""
    if isinstance(dt, TimestampType):
        return F.unix_micros(col)
    if isinstance(dt, DateType):
        return F.unix_date(col)
    if isinstance(dt, FLOATING) and key:
        return grouping_key(col.cast(DoubleType()))
    if isinstance(dt, FloatType):
        return col.cast(DoubleType())
    if isinstance(dt, ArrayType) and _needs_conversion(dt.elementType, True, key):
        return F.transform(col, lambda x: to_json_column(x, dt.elementType, key))
    if isinstance(dt, StructType) and _needs_conversion(dt, True, key):
        return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*[
            to_json_column(col.getField(f.name), f.dataType, key).alias(f.name)
            for f in dt.fields]))
    return col


def grouping_key(col: Column) -> Column:
    """A floating column as Spark's ``groupBy`` keys it: ``-0.0`` is ``0.0`` (IEEE
    ``-0.0 + 0.0`` is ``0.0``; other values, NaN and null stay). Without it a streaming key
    would be two keys, ``-0.0`` and ``0.0``, since its JSON text is its identity."""
    return col + F.lit(0.0)


def restore(col: Column, dt: DataType) -> Column:
    """Inverse of :func:`to_json_column`: a column of ``json_type(dt)`` back to ``dt``."""
    if isinstance(dt, TimestampType):
        return F.timestamp_micros(col)
    if isinstance(dt, DateType):
        return F.date_from_unix_date(col)
    if isinstance(dt, ArrayType) and _needs_conversion(dt.elementType):
        return F.transform(col, lambda x: restore(x, dt.elementType))
    if isinstance(dt, StructType) and _needs_conversion(dt):
        return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*[
            restore(col.getField(f.name), f.dataType).alias(f.name) for f in dt.fields]))
    return col


def _needs_conversion(dt: DataType, floats: bool = False, doubles: bool = False) -> bool:
    """Whether ``dt`` holds timestamps or dates (or, with ``floats``, 32-bit floats; with
    ``doubles``, doubles)."""
    if isinstance(dt, (TimestampType, DateType)) or (floats and isinstance(dt, FloatType)) \
            or (doubles and isinstance(dt, DoubleType)):
        return True
    if isinstance(dt, ArrayType):
        return _needs_conversion(dt.elementType, floats, doubles)
    if isinstance(dt, StructType):
        return any(_needs_conversion(f.dataType, floats, doubles) for f in dt.fields)
    return False


def json_shape(dt: DataType) -> Any:
    """``dt``'s shape as :func:`adapters.engine.columns.json_fixer` reads it (Spark's
    ``to_json`` writes NaN and the infinities as strings)."""
    if isinstance(dt, FLOATING):
        return "float"
    if isinstance(dt, ArrayType):
        return ("array", json_shape(dt.elementType))
    if isinstance(dt, StructType):
        return ("struct", tuple((f.name, json_shape(f.dataType)) for f in dt.fields))
    return None


# ----------------------------------------------------------------------------- outputs
def _field_type(fields: Mapping[str, DataType], name: str, agg: str) -> DataType:
    if name not in fields:
        known = ", ".join(fields) or "none"
        raise SparkTypeError(f"aggregation {agg!r} reads column {name!r}, which is not in the "
                             f"input DataFrame (value columns: {known})")
    return fields[name]


class _SparkTypes:
    """Spark's types of the engine-neutral output types (:mod:`adapters.query.output_types`)."""

    def named(self, name: str) -> DataType:
        return {"long": LongType(), "double": DoubleType(), "binary": BinaryType()}[name]

    def array(self, element: DataType) -> DataType:
        return ArrayType(element, True)

    def struct(self, fields: list[tuple[str, DataType]]) -> DataType:
        return StructType([StructField(name, t, True) for name, t in fields])

    def numeric(self, t: DataType) -> str | None:
        return "long" if isinstance(t, INTEGRAL) else "double" if isinstance(t, FLOATING) \
            else None


SPARK_TYPES = _SparkTypes()


def aggregate_type(spec: AggSpec, fields: Mapping[str, DataType],
                   output_types: Mapping[str, Any]) -> DataType:
    """The Spark type of output column ``spec.name``, in terms of the *original* column types
    (``fields``: value column name -> Spark type): ``output_types[spec.name]`` if given (a DDL
    string or a DataType; required for custom aggregation objects), else the built-in's
    declared output type (:data:`adapters.query.builtins.BUILTINS`)."""
    from pyspark.sql.types import _parse_datatype_string

    if spec.name in output_types:
        t = output_types[spec.name]
        return _parse_datatype_string(t) if isinstance(t, str) else t
    if spec.fn is None:
        raise SparkTypeError(
            f"aggregation {spec.name!r} is a custom aggregation: give its Spark result type "
            f"in output_types={{{spec.name!r}: 'double'}} (a DDL string or a DataType)")
    row = StructType([StructField(n, t, True) for n, t in fields.items()])
    dt = output_type(spec, SPARK_TYPES, lambda name: _field_type(fields, name, spec.name), row)
    if dt is None:
        column = "" if spec.field is None else \
            f" of column {spec.field!r} ({fields[spec.field].simpleString()})"
        raise SparkTypeError(f"aggregation {spec.name!r}: {spec.fn}{column} has no Spark type "
                             f"(it needs a numeric column); cast the column or give the type "
                             f"in output_types")
    return dt


def aggregate_encoder(spec: AggSpec, dt: DataType) -> Callable[[Any], Any] | None:
    """How a lowered aggregate becomes JSON that ``from_json`` reads as ``dt``, or ``None``
    when it already is."""
    if isinstance(dt, BinaryType):
        def encode_binary(x: Any) -> Any:
            if x is None:
                return None
            data = x.to_bytes() if hasattr(x, "to_bytes") else bytes(x)
            return base64.b64encode(data).decode("ascii")
        return encode_binary
    declared = declared_output(spec)
    if isinstance(declared, StructOf):  # lowered as a sequence in the declared field order
        names = [name for name, _ in declared.fields]

        def encode_struct(x: Any) -> Any:
            return None if x is None else dict(zip(names, x))
        return encode_struct
    return None
