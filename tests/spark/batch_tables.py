"""Helpers for the batch tests without a JVM: a table of many keys as Spark's
``mapInArrow`` hands it over (sorted by key, cut into record batches of random sizes), the
batch function's output, and output tables compared row for row (``repr``: NaN, -0.0)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from adapters.engine.worker import Plan
from spark_adapter._batch import make_batch_function


def batches_of(table: pa.Table, keys: list[str], cuts: list[int]) -> list[pa.RecordBatch]:
    """``table`` sorted by ``keys`` (stable: each key's rows keep their order) as record
    batches cut after the rows ``cuts`` (some may be empty)."""
    table = table.sort_by([(k, "ascending") for k in keys]).combine_chunks()
    out, at = [], 0
    for cut in sorted(c for c in cuts if 0 <= c <= table.num_rows):
        out.append(table.slice(at, cut - at).to_batches()[0] if cut > at else
                   pa.RecordBatch.from_pylist([], schema=table.schema))
        at = cut
    out.append(table.slice(at).combine_chunks().to_batches()[0] if at < table.num_rows
               else pa.RecordBatch.from_pylist([], schema=table.schema))
    return out


def run_batches(plan: Plan, batches: list[pa.RecordBatch], schema: Any = None) -> pa.Table:
    """The batch function's output over ``batches`` (one partition) as one table."""
    out = list(make_batch_function(plan)(iter(batches)))
    if not out:
        from spark_adapter._runtime import arrow_schema

        return arrow_schema(plan).empty_table()
    return pa.Table.from_batches(out)


def rows(table: pa.Table) -> list[str]:
    """The table's rows as sorted ``repr`` texts (NaN and -0.0 told apart)."""
    cols = [table.column(n).to_pylist() for n in table.column_names]
    return sorted(repr(r) for r in zip(*cols))


def same(a: pa.Table, b: pa.Table) -> None:
    """Same schema, same rows (in any order)."""
    assert a.schema == b.schema
    assert rows(a) == rows(b)
