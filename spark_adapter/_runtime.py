"""The Spark side of what runs in the Python workers: Spark's schema of the rows they return.
The plan the workers get and their drivers are engine-free (:mod:`adapters.engine.worker`);
translation only: every decision about windows, lateness and state lives in
:class:`adapters.WindowDriver`.

The rows between Spark and Python are :mod:`adapters.engine.columns`' (built by
:mod:`spark_adapter.api`):

* batch (Arrow tables, :func:`batch_schema` out): the keys typed if every key column has a
  scalar type, each scalar value column typed, the others (arrays, structs) as JSON;
* streaming (:mod:`spark_adapter._buckets`): the same typed rows, except that the keys come
  in as ``swag_k`` JSON text, packed per bucket into Arrow IPC rows and back
  (:mod:`spark_adapter._packed`);
* pre-sliced, batch and streaming (:mod:`spark_adapter._presliced`): the keys as above,
  ``swag_t`` the slice start and the typed per-slice partials: one row per key and slice.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from adapters.engine import columns
from adapters.engine.columns import (
    AGGS_OUT,
    END_OUT,
    EVENT_OUT,
    KEY_OUT,
    START_OUT,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    WINDOW_OUT,
)
from adapters.engine.worker import Plan

from ._types import SparkTypeError


def batch_schema(plan: Plan) -> StructType:
    """Batch: the schema of the grouped function's output (see the module docstring)."""
    typed = plan.typed
    fields = [StructField(WINDOW_OUT, IntegerType()), StructField(START_OUT, LongType()),
              StructField(END_OUT, LongType()), StructField(TIME_OUT, LongType())]
    if typed.keys is None:
        fields.append(StructField(KEY_OUT, StringType()))
    else:
        fields += [StructField(f"{KEY_OUT}{i}", t) for i, t in enumerate(typed.keys)]
    fields += [StructField(f"{TYPED_EVENT_OUT}{i}", t) for i, (_, t) in enumerate(typed.values)]
    if plan.json_values:
        fields.append(StructField(EVENT_OUT, StringType()))
    fields += [StructField(f"{TYPED_AGG_OUT}{i}", t) for i, (_, t) in enumerate(typed.aggs)]
    if plan.json_aggs:
        fields.append(StructField(AGGS_OUT, StringType()))
    return StructType(fields)


def arrow_schema(plan: Plan) -> Any:
    """The Arrow form of :func:`batch_schema` (Spark's string and binary types)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(batch_schema(plan), timezone="UTC",
                           prefers_large_types=plan.typed.large_var_types)


def arrow_table(plan: Plan, schema: Any, cols: dict[str, list[Any]]) -> Any:
    """Batch: :func:`adapters.engine.columns.arrow_table` of :func:`batch_schema`'s Arrow
    form, a misfit value raising :class:`SparkTypeError`."""
    return columns.arrow_table(plan, schema, cols, SparkTypeError)


__all__ = ["arrow_schema", "arrow_table", "batch_schema"]
