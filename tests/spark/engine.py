"""The conformance corpus through Spark batch: an engine for ``tests/conformance/runner.py``
(``engine(scenario) -> {"rows": [...], "late": {...}}``).

It builds a DataFrame from the scenario's events (``frames.py``) and calls
:func:`spark_adapter.sliding_aggregate` with the scenario's windows and aggregations, with
``late_rows="include"`` so that one query gives the rows and the late events, and reports
the output DataFrame's schema (``frames.reported``). The adapter
runs it with ``groupBy().applyInArrow``, pre-sliced (the default ``presliced=None``: auto)
when the query is eligible. Everything is released at end of input, so it runs only the
scenarios whose expected result does not depend on the watermark steps
(:func:`batch_eligible`); arrival order comes from an ``order_by`` column.

Streaming (``transformWithStateInPandas``) is in ``streaming.py``: :func:`streaming_run`
runs one scenario as one streaming query, :func:`run_corpus` the whole corpus several
scenarios per query.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.frames import (
    active_session,
    aggregate,
    events_of,
    field_types,
    key_type,
    reported,
    result_columns,
    rows,
    schema,
    shift_for,
    time_is_int,
    to_result,
)

__all__ = ["batch_eligible", "batch_engine"]


def batch_eligible(scenario: dict[str, Any]) -> bool:
    """True when the scenario's expected result equals the result with every event present
    and then the end of input (what a batch run computes): no late events, and every
    window released."""
    if scenario.get("expect_error"):
        return True
    events = [[k, t, v] for _, k, t, v in events_of(scenario)]
    as_batch = dict(scenario, steps=[{"events": events}, {"watermark": "end"}])
    return compare(expected(scenario), expected(as_batch)) is None


def batch_engine(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run a scenario as one batch DataFrame (``applyInArrow``, pre-sliced when eligible)."""
    spark = active_session()
    events = events_of(scenario)
    fields = field_types(events, scenario)
    int_time = time_is_int(events)
    shift = shift_for(scenario) if int_time else 0
    df = spark.createDataFrame(rows(events, fields, int_time, shift),
                               schema(fields, key_type(events), int_time, marker=False))
    out = aggregate(df, scenario)
    records = [r.asDict() for r in out.select(*result_columns(out)).collect()]
    key = key_type(events)
    return to_result(scenario, records, shift, fields,
                     reported(spark, "batch", out.schema, fields, key, int_time))
