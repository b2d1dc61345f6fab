"""One small local SparkSession for the whole Spark test session (JVM start-up costs tens of
seconds on 2 cores); a clear stop, not a stack trace, when Java is missing.

The session is ``local_session()``'s (RocksDB state store and the rest) plus settings that
only make the tests cheaper; none changes what a query computes. Measured on the whole
conformance corpus through streaming (``streaming.py``, 62 scenarios) on the shared 2-core
machine: 377 s of CPU with one shuffle partition and none of the other settings, 153 s with
them all.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

#: One shuffle partition: one transformWithState task per operator and micro-batch instead
#: of two (-24 % CPU on the streaming corpus; keys still share a partition).
SHUFFLE_PARTITIONS = 1

TEST_CONF = {
    "spark.sql.streaming.minBatchesToRetain": "4",
    # Many short, different queries: the C2 JIT compiler's work never pays off in a test run
    # (it used as much CPU as the queries); C1 only (halves the JVM's CPU), and a GC without
    # helper threads.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    # transformWithState builds new state encoders in every task; generating and compiling
    # their code costs more than interpreting them on test-sized data (Spark's own switch
    # for tests; -11 % CPU).
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def worker_python(directory: Path, python: str = sys.executable) -> str:
    """An executable for Spark's Python workers: ``python`` (this interpreter by default),
    minus Spark's bundled ``pyspark.zip`` on ``PYTHONPATH``, so that the workers import the
    installed (same version) ``pyspark`` package with its compiled bytecode. A zip holds no
    bytecode, so every fresh Python process Spark starts (one per transformWithState
    operator and query start, to read its state schema) compiled pyspark again: ~1.3 s of
    CPU each."""
    path = directory / "python"
    path.write_text('#!/bin/sh\n'
                    'PYTHONPATH="${PYTHONPATH#*/pyspark.zip:}"\n'
                    'export PYTHONPATH\n'
                    f'exec "{python}" "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cluster tests (``test_cluster.py``) first: a process has one SparkContext at a
    time, and theirs (master ``spark://...``) must start and stop before the session-wide
    local one below starts (the order is otherwise unchanged)."""
    items.sort(key=lambda item: item.get_closest_marker("cluster") is None)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from spark_adapter import JavaNotFoundError, local_session

    try:
        session = local_session("swag-tests", cores=2, shuffle_partitions=SHUFFLE_PARTITIONS,
                                conf=TEST_CONF)
    except JavaNotFoundError as exc:
        pytest.exit(f"Spark tests need Java: {exc}", returncode=3)
    # Python UDFs take the interpreter from here when they are created (local_session()
    # has just set PYSPARK_PYTHON to sys.executable, which the context copied).
    session.sparkContext.pythonExec = worker_python(tmp_path_factory.mktemp("python"))
    yield session
    session.stop()
