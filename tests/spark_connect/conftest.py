"""One Spark Connect session for the whole suite: ``local_session(connect=True)``, PySpark's
in-process Connect server over ``local[2]``, with the Spark suite's test settings
(``tests/spark/conftest.py``: none changes what a query computes), and its workers'
Python, which imports the installed ``pyspark`` with its compiled bytecode (a Connect
session has no ``sparkContext.pythonExec`` to set afterwards: a worker that compiles
Spark's ``pyspark.zip`` first can miss the time within which it must connect back to a busy
machine's JVM, "Python worker failed to connect back").

The client talks to the server through gRPC only: no ``sparkContext``, no ``_jdf``, no RDDs,
which is what this suite checks the adapter does without. A process that opened a Connect
session makes every later session a Connect one, so this suite runs in its own pytest
process (``make test-spark-connect``), never together with ``tests/spark``.
"""

from __future__ import annotations

import pytest

from tests.spark.conftest import SHUFFLE_PARTITIONS, TEST_CONF, worker_python


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    from spark_adapter import JavaNotFoundError, local_session

    try:
        session = local_session("swag-connect-tests", cores=2,
                                shuffle_partitions=SHUFFLE_PARTITIONS, conf=TEST_CONF,
                                connect=True,
                                python=worker_python(tmp_path_factory.mktemp("python")))
    except JavaNotFoundError as exc:
        pytest.exit(f"Spark Connect tests need Java: {exc}", returncode=3)
    yield session
    session.stop()
