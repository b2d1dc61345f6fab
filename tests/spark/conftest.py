"""One small local SparkSession for the whole Spark test session (JVM start-up costs tens of
seconds on 2 cores); a clear stop, not a stack trace, when Java is missing."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_adapter import JavaNotFoundError, local_session

    try:
        session = local_session("swag-tests", cores=2, shuffle_partitions=2,
                                conf={"spark.sql.streaming.minBatchesToRetain": "4"})
    except JavaNotFoundError as exc:
        pytest.exit(f"Spark tests need Java: {exc}", returncode=3)
    yield session
    session.stop()
