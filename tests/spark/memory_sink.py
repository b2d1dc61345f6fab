"""A streaming query's rows for a test: the query run into Spark's memory sink until its
available input is processed (classic and Connect sessions alike)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame


@contextmanager
def memory_table(out: DataFrame, name: str, checkpoint: str) -> Iterator[DataFrame]:
    """Runs the streaming ``out`` (append mode, checkpoint directory ``checkpoint``) into
    the memory table ``name`` until its available input is processed, stops it and yields
    the table; the table is dropped afterwards."""
    query = (out.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", checkpoint).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    spark = out.sparkSession
    try:
        yield spark.table(name)
    finally:
        spark.catalog.dropTempView(name)
