"""Batch (``applyInArrow``): the grouped function that hands each key's whole input to the
driver (:meth:`adapters.WindowDriver.finish`, or its OVER kernel through
:mod:`adapters.engine.arrow_kernel`) and returns its rows as an Arrow table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.engine.arrow_kernel import over_table
from adapters.engine.columns import arrow_events, decode_key, wide_columns
from adapters.engine.gc_pause import gc_paused
from adapters.engine.worker import Plan, driver_for

from ._runtime import arrow_schema, arrow_table


def make_batch_function(plan: Plan) -> Callable[[Any, Any], Any]:
    """The ``applyInArrow`` function ``(key, table) -> table``: one key's whole input (its
    events, or its slices when ``plan.slices`` is set), released at end of input."""
    typed = plan.typed
    assert typed is not None
    schema = arrow_schema(plan)
    empty = schema.empty_table()
    single_key = len(plan.key_names) == 1
    over = plan.route.over_kernel if plan.route is not None else None

    def swag_batch(key: tuple[Any, ...], table: Any) -> Any:
        if table.num_rows == 0:
            return empty
        with gc_paused():
            return one_key(key, table)

    def one_key(key: tuple[Any, ...], table: Any) -> Any:
        if typed.keys is None:
            out_key = key[0].as_py()
            dkey = decode_key(plan, out_key)
        else:
            parts = tuple(k.as_py() for k in key)
            dkey = out_key = parts[0] if single_key else parts
        driver = driver_for(plan)
        if over is not None:
            fast = over_table(plan, over, driver, schema, out_key, table)
            if fast is not None:
                return fast
        texts: dict[int, str] = {}
        if plan.slices is None:
            events = arrow_events(plan, table, texts)
        else:
            events = plan.slices.table_events(table, dkey, plan.time_name)
        cols = wide_columns(plan, out_key, driver.finish(dkey, events), texts)
        return empty if cols is None else arrow_table(plan, schema, cols)

    return swag_batch
