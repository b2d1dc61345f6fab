"""What an engine's Python workers hold for one call (engine-free): the call's
:class:`Plan`, pickled to them with the engine's function or processor, and each worker
process's drivers, kept across the engine's calls (a streaming query's micro-batches) so
that their structure caches survive. Spark's workers: ``spark_adapter._batch`` and
``spark_adapter._buckets``."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.driver.window_driver import WindowDriver
from adapters.engine.buckets import BucketPairs
from adapters.engine.columns import Typed
from adapters.engine.presliced import SliceLayout
from adapters.planning import QueryPlan
from adapters.query.specs import Query

#: the plans whose drivers a worker process keeps (the most recently used)
CACHED_PLANS = 8


@dataclass
class Plan:
    """Everything the workers need (the column codec's
    :class:`~adapters.engine.columns.ColumnPlan`, the query, slicing and the driver's
    plan).

    ``token`` identifies one plan (one engine call such as Spark's ``sliding_aggregate``):
    workers keep one :class:`WindowDriver` per token, so its structure cache survives across
    micro-batches.
    """

    query: Query
    key_names: tuple[str, ...]
    time_name: str
    #: repairs what ``json.loads`` makes of the JSON value columns (``None``: nothing to do)
    value_fixer: Callable[[Any], Any] | None
    agg_encoders: dict[str, Callable[[Any], Any]]
    #: the value columns that travel as JSON text (``swag_v``), in order
    json_values: tuple[str, ...]
    #: the aggregates that travel as JSON text (``_swag_aggs``), in order
    json_aggs: tuple[str, ...]
    #: whether the driver's input has the order-by column ``swag_o`` (slice rows have none)
    has_order: bool
    #: the typed columns
    typed: Typed
    max_cached_keys: int | None = 100_000
    #: pre-slicing (:mod:`adapters.engine.presliced`): the input is one row per key and
    #: slice, and the driver runs ``slices.query``; ``None``: one row per event
    slices: SliceLayout | None = None
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
        while len(_DRIVERS) > CACHED_PLANS:
            _DRIVERS.popitem(last=False)
    else:
        _DRIVERS.move_to_end(plan.token)
    return entry


def driver_for(plan: Plan) -> WindowDriver:
    """The worker process's driver for ``plan`` (created on first use)."""
    return driver_entry(plan)[0]


__all__ = ["CACHED_PLANS", "Plan", "driver_entry", "driver_for"]
