"""What runs in the Spark Python workers: the plan, the drivers, and the rows' encoding for
the stateful processor (streaming, ``transformWithStateInPandas``,
:mod:`spark_adapter._buckets`) and the grouped function (batch, ``applyInArrow``).
Translation only: every decision about windows, lateness and state lives in
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

import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from adapters import Query, QueryPlan, WindowDriver
from adapters.engine import columns
from adapters.engine.buckets import BucketPairs
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
    Typed,
)

from ._presliced import SlicePlan
from ._types import SparkTypeError


@dataclass
class Plan:
    """Everything the workers need, pickled with the processor / function.

    ``token`` identifies one plan (one ``sliding_aggregate`` call): workers keep one
    :class:`WindowDriver` per token, so its structure cache survives across micro-batches.
    """

    query: Query
    key_names: tuple[str, ...]
    time_name: str
    time_is_string: bool
    #: repairs what ``json.loads`` makes of the JSON value columns (``None``: nothing to do)
    value_fixer: Callable[[Any], Any] | None
    agg_encoders: dict[str, Callable[[Any], Any]]
    #: the value columns that travel as JSON text (``swag_v``), in order
    json_values: tuple[str, ...]
    #: the aggregates that travel as JSON text (``_swag_aggs``), in order
    json_aggs: tuple[str, ...]
    has_order: bool
    #: the typed columns
    typed: Typed
    max_cached_keys: int | None = 100_000
    #: pre-slicing (:mod:`spark_adapter._presliced`): the input is one row per key and
    #: slice, and the driver runs ``slices.query``; ``None``: one row per event
    slices: SlicePlan | None = None
    #: the driver's plan of the query on this call (``None``: no OVER kernel, no pair map)
    route: QueryPlan | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


_DRIVERS: OrderedDict[str, tuple[WindowDriver, BucketPairs]] = OrderedDict()


def driver_entry(plan: Plan) -> tuple[WindowDriver, BucketPairs]:
    """The worker process's driver for ``plan`` (created on first use) and the pair maps its
    cached KVS structures use (:class:`~adapters.engine.buckets.BucketPairs`: the processor
    binds its map state to them before each call)."""
    entry = _DRIVERS.get(plan.token)
    if entry is None:
        query = plan.query if plan.slices is None else plan.slices.query
        entry = (WindowDriver(query, max_cached_keys=plan.max_cached_keys,
                              time_field=plan.time_name), BucketPairs())
        _DRIVERS[plan.token] = entry
        while len(_DRIVERS) > 8:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(plan.token)
    return entry


def driver_for(plan: Plan) -> WindowDriver:
    """The worker process's driver for ``plan`` (created on first use)."""
    return driver_entry(plan)[0]


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
