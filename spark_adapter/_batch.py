"""Batch (``mapInArrow`` over ``repartition(keys).sortWithinPartitions(keys)``): the function
that streams a partition's Arrow batches, cuts them at key boundaries and hands the complete
keys of each batch to the driver at once (:mod:`adapters.engine.finished_keys`), returning
their rows as Arrow batches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from adapters.engine.finished_keys import complete_keys, finished_table, key_columns, key_runs
from adapters.engine.gc_pause import gc_paused
from adapters.engine.worker import Plan, driver_for

from ._runtime import arrow_schema, arrow_table


def make_batch_function(plan: Plan) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: a partition's record batches (each key's rows together,
    in ``order_by`` order when given) in, the output rows of its keys out, every key
    released at the end of its input."""
    assert plan.typed is not None
    schema = arrow_schema(plan)
    names = key_columns(plan)

    def to_table(cols: dict[str, list[Any]]) -> Any:
        return arrow_table(plan, schema, cols)

    def swag_batch(batches: Iterable[Any]) -> Iterator[Any]:
        driver = driver_for(plan)
        for whole, first_rows in complete_keys(batches, names):
            for table, starts in key_runs(whole, first_rows):
                with gc_paused():
                    out = finished_table(plan, driver, schema, table, starts, to_table)
                if out is not None and out.num_rows:
                    yield from out.to_batches()

    return swag_batch
