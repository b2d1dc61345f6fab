"""The conformance corpus through Spark: a batch engine and a streaming engine for
``tests/conformance/runner.py`` (``engine(scenario) -> {"rows": [...], "late": {...}}``).

Both build a DataFrame from the scenario's events (``frames.py``) and call
:func:`spark_adapter.sliding_aggregate` with the scenario's windows and aggregations, with
``late_rows="include"`` so that one query gives the rows and the late events.

Batch (``groupBy().applyInPandas``): everything is released at end of input, so it runs only
the scenarios whose expected result does not depend on the watermark steps
(:func:`batch_eligible`); arrival order comes from an ``order_by`` column.

Streaming (``transformWithStateInPandas``): :func:`streaming_engine` and
:func:`streaming_run` run one scenario as one streaming query; ``streaming.py`` explains how
steps become micro-batches and watermark marker rows, and how the test suite runs the whole
corpus several scenarios per query.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.frames import (
    aggregate,
    events_of,
    field_types,
    key_type,
    result_columns,
    rows,
    schema,
    shift_for,
    time_is_int,
    to_result,
)
from tests.spark.streaming import streaming_engine, streaming_run

__all__ = ["batch_eligible", "batch_engine", "session", "streaming_engine", "streaming_run"]


def session() -> SparkSession:
    """The active SparkSession (the tests' conftest starts one)."""
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active SparkSession (the tests' conftest starts one)")
    return spark


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
    """Run a scenario as one batch DataFrame (``applyInPandas``)."""
    spark = session()
    events = events_of(scenario)
    fields = field_types(events, scenario)
    int_time = time_is_int(events)
    shift = shift_for(scenario) if int_time else 0
    df = spark.createDataFrame(rows(events, fields, int_time, shift),
                               schema(fields, key_type(events), int_time, marker=False))
    out = aggregate(df, scenario)
    records = [r.asDict() for r in out.select(*result_columns(out)).collect()]
    return to_result(scenario, records, shift, fields)
