"""Several ``sliding_aggregate`` calls on one DataFrame, in one query: each gives its own rows.

The Beam adapter lost a whole transform's output when two transforms shared timer names
(``docs/beam.md``, "Several transforms in one pipeline"). Spark has no such conflation of
ours: each ``transformWithStateInPandas`` operator has its own state store and timers
(scoped by operator id), and each call's workers use their own ``WindowDriver`` (keyed by
the call's plan token; the same result DataFrame used twice makes two operators sharing one
driver, whose cache is checked against each operator's own state metadata). But Spark
itself loses an operator's output when it reads a reused exchange
(:func:`test_spark_reused_exchange_hides_the_watermark`), so streaming needs
``spark.sql.exchange.reuse=false`` (``local_session`` sets it; ``docs/spark.md``).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tests.conformance.multiple import DOUBLED, QUERIES, scenario
from tests.conformance.multiple import steps as multiple_steps
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.frames import aggregate, result_columns, rows, schema, shift_for, to_result
from tests.spark.memory_sink import memory_table
from tests.spark.streaming import END_WATERMARK, _marker, _write_file, step_batches

FIELDS = {"v": "long"}
REUSE = "spark.sql.exchange.reuse"


def _branches(src: DataFrame, steps: list[dict[str, Any]]) -> tuple[DataFrame, list[int]]:
    """The three calls on ``src`` (plus branch 0's result a second time, as member 3), each
    member's rows in its own struct column, unioned; and which query each member ran."""
    outs = []
    for i in range(len(QUERIES)):
        df = src.withColumn("v", F.col("v") * 2) if i == DOUBLED else src  # double()
        metric = f"swag_multi{i}" if src.isStreaming else None
        outs.append(aggregate(df, scenario(i, steps), metric=metric))
    members = [*range(len(QUERIES)), 0]
    parts = [out.select(F.lit(m).alias("member"), F.struct(*result_columns(out)).alias(f"r{m}"))
             for m, out in zip(range(len(members)), [*outs, outs[0]])]
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    return union, members


def _check(emitted: list[Any], members: list[int], steps: list[dict[str, Any]],
           shift: int, which: Iterable[int]) -> None:
    """Members ``which`` gave exactly the oracle's rows for their query."""
    for m in which:
        i = members[m]
        query = scenario(i, steps)
        records = [row[f"r{m}"].asDict() for row in emitted if row["member"] == m]
        result = to_result(query, records, shift, FIELDS)
        exp = expected(query)
        assert len(exp["rows"]) > 20
        problem = compare(exp, result)
        assert problem is None, f"member {m} (query {i}): {problem}"


def _shift() -> int:
    """One time shift for every query (a multiple of each one's slides)."""
    return shift_for({"query": {"windows": [w for q in QUERIES for w in q["windows"]]}})


def _stream(spark: Any, steps: list[dict[str, Any]], reuse: bool
            ) -> tuple[list[Any], list[int], int]:
    """One streaming query: the calls of :func:`_branches` on one file source, unioned into
    one memory sink, with ``spark.sql.exchange.reuse`` set to ``reuse`` for it. Returns the
    emitted rows, the members' queries and the time shift."""
    shift = _shift()
    base = tempfile.mkdtemp(prefix="swag-multi-")
    indir = os.path.join(base, "in")
    os.makedirs(indir)
    sink = f"swag_multi_{uuid.uuid4().hex}"
    before = spark.conf.get(REUSE, None)
    try:
        seq = 0
        for b, (events, mark) in enumerate(step_batches(scenario(0, steps))):
            out = rows(events, FIELDS, True, shift, seq)
            seq += len(events)
            if mark is not None:
                out.append(_marker(END_WATERMARK if mark == "end" else mark + shift))
            _write_file(indir, b, out)
        src = (spark.readStream.schema(schema(FIELDS, "string", True, marker=True))
               .option("maxFilesPerTrigger", 1).json(indir)
               .withWatermark("_wm", "0 seconds")
               .where(F.col("_wm").isNull()).drop("_wm"))
        union, members = _branches(src, steps)
        # Set after the calls (which refuse reuse): Spark reads it when it plans the query.
        spark.conf.set(REUSE, str(reuse).lower())
        with memory_table(union, sink, os.path.join(base, "ckpt")) as table:
            return table.collect(), members, shift
    finally:
        if before is None:
            spark.conf.unset(REUSE)
        else:
            spark.conf.set(REUSE, before)
        shutil.rmtree(base, ignore_errors=True)


def test_several_calls_on_one_streaming_source(spark):
    """Three calls on one streaming source (one behind a column change) and the first
    call's result twice, in one query, without exchange reuse (``local_session``'s
    setting): every member's rows are the oracle's."""
    steps = multiple_steps(2, 3, 25)
    emitted, members, shift = _stream(spark, steps, reuse=False)
    _check(emitted, members, steps, shift, range(len(members)))


def test_spark_reused_exchange_hides_the_watermark(spark):
    """SPARK'S BEHAVIOUR, not ours (Spark 4.3): with ``spark.sql.exchange.reuse`` on, the
    second operator over an identical input reads a ``ReusedExchangeExec``, a leaf node:
    ``PropagateWatermarkSimulator`` (``WatermarkPropagator.scala``) takes an operator's
    input watermark from its ``children`` only, finds no ``EventTimeWatermarkExec`` below
    it, and gives it watermark 0 in every micro-batch. Its event-time timers never fire:
    it keeps its events in state and emits nothing, with no error. The first call's result
    used twice always has a reused exchange (member 3); a second call with the same input
    columns has one too (member 1; not checked here, as a per-call input column would
    avoid it). The other members are exact. If this fails after a Spark upgrade, Spark
    fixed it."""
    steps = multiple_steps(2, 3, 25)
    emitted, members, shift = _stream(spark, steps, reuse=True)
    assert not [row for row in emitted if row["member"] == 3]
    _check(emitted, members, steps, shift, (0, 2))


def test_several_calls_on_one_batch_frame(spark):
    """Batch: the same calls on one DataFrame, unioned into one job."""
    steps = multiple_steps(3, 3, 25)
    shift = _shift()
    events = [(0, k, t, v) for step in steps for k, t, v in step.get("events", ())]
    src = spark.createDataFrame(rows(events, FIELDS, True, shift),
                                schema(FIELDS, "string", True, marker=False))
    union, members = _branches(src, steps)
    _check(union.collect(), members, steps, shift, range(len(members)))
