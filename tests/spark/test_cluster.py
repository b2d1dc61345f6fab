"""swag on a Spark standalone cluster (``cluster.py``: a master and two workers in their own
JVMs on this machine, executors with their own Python workers), swag shipped to the
executors as a zip with ``addPyFile``: where the executors import swag from, a batch and a
streaming sample of the conformance corpus (rows equal to the oracle's), and a streaming
query stopped and restarted from its checkpoint (RocksDB state store, checkpoint on a
path every process shares) that continues exactly.

Marked ``cluster`` (``-m "not cluster"`` leaves it out); ``conftest.py`` runs it before the
other Spark tests, because its SparkContext must be the process's first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_adapter import JavaNotFoundError, java_version, local_session
from tests.conformance import corpus
from tests.conformance.runner import assert_conforms
from tests.spark.cluster import (
    EXECUTOR_MEMORY,
    JAVA_OPTIONS,
    StandaloneCluster,
    build_pyfiles,
    executor_python,
    standalone_cluster,
)
from tests.spark.conftest import TEST_CONF
from tests.spark.engine import batch_engine
from tests.spark.streaming import MemberRun, run_corpus, streaming_run

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
#: Every window kind and aggregation in one query; an error raised on an executor.
BATCH = ["all_aggregations_one_query", "bad_null_strict"]
#: Every window kind over five micro-batches, 20 keys, allowed lateness, late events; late
#: events of per-event windows.
STREAMING = ["mixed_kinds_stream", "over_out_of_order_late"]
#: 2,000 events of 50 keys over four micro-batches, stopped after the second.
RESTART, RESTART_AFTER = "many_keys_stream", 1

#: Two executors of one core (one per worker); the scheduler waits for both before the
#: first task, so that the two shuffle partitions' state lives on both.
CLUSTER_CONF = {
    "spark.executor.memory": EXECUTOR_MEMORY,
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.executor.extraJavaOptions": JAVA_OPTIONS,
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    # the bad-input sample fails a task on purpose: once, not Spark's cluster default of 4
    "spark.task.maxFailures": "1",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    try:
        java_version()
    except JavaNotFoundError as exc:
        pytest.exit(f"Spark tests need Java: {exc}", returncode=3)
    with standalone_cluster(tmp_path_factory.mktemp("cluster") / "spark") as running:
        yield running


@pytest.fixture(scope="module")
def cluster_spark(cluster: StandaloneCluster) -> Iterator[Any]:
    """A SparkSession on the cluster (the settings of the tests' local one, two shuffle
    partitions), swag's zip added with ``addPyFile``, executors running
    :func:`executor_python`; ready once both executors have registered (the driver's JVM
    starts while the workers do)."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.fail("a SparkContext already runs in this process: the cluster tests must run "
                    "first (tests/spark/conftest.py orders them so)")
    driver_path = list(sys.path)
    spark = local_session("swag-cluster-tests", cores=2, shuffle_partitions=2,
                          conf={**TEST_CONF, **CLUSTER_CONF}, master=cluster.master_url)
    try:
        sc = spark.sparkContext
        sc.pythonExec = executor_python(cluster.root)
        sc.addPyFile(str(build_pyfiles(REPO, cluster.root / "swag.zip")))
        cluster.wait_for_workers()
        cluster.wait_until(lambda: _executors(spark) == 2, "two executors")
        yield spark
    finally:
        spark.stop()
        _forget_shipped(driver_path)


def _forget_shipped(driver_path: list[str]) -> None:
    """Give the driver back its ``sys.path``: ``addPyFile`` put the zip (in a directory
    that the stopped context has deleted) before the repository, for modules the driver
    imports later, e.g. the Spark tests that run after these on a local session."""
    gone = [p for p in sys.path if p not in driver_path]
    sys.path[:] = driver_path
    for p in gone:
        sys.path_importer_cache.pop(p, None)


# ----------------------------------------------------------------------------- the cluster
def _executors(spark: Any) -> int:
    """Executors registered with the driver (the driver's own block manager not counted)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


def _executor_view(spark: Any) -> list[dict[str, Any]]:
    """What the executors' Python workers see (a local function: cloudpickle ships it by
    value, so the executors need no ``tests`` package)."""
    def probe(_: Any) -> Iterator[dict[str, Any]]:
        import os
        import sys

        import spark_adapter
        from adapters.crosskey import columnar

        yield {"pid": os.getpid(), "cwd": os.getcwd(),
               "swag": os.path.abspath(spark_adapter.__file__),
               "compiled_reader": columnar.compiled_reader is not None, "path": sys.path}

    return spark.sparkContext.parallelize(range(4), 4).mapPartitions(probe).collect()


def test_two_workers_and_executors_import_the_shipped_zip(cluster, cluster_spark):
    app = cluster.state()["activeapps"]
    assert cluster.alive_workers() == 2 and len(app) == 1 and app[0]["cores"] == 2
    assert _executors(cluster_spark) == 2  # one per worker
    for seen in _executor_view(cluster_spark):
        assert seen["pid"] != os.getpid()
        work = [w for w in cluster.worker_dirs if Path(seen["cwd"]).is_relative_to(w)]
        assert work, f"a Python worker outside every worker's directory: {seen['cwd']}"
        assert seen["swag"] == os.path.join(seen["cwd"], "swag.zip", "spark_adapter",
                                            "__init__.py")
        # no source checkout on the path (the venvs may live inside it, as in CI's clone)
        entries = [Path(seen["cwd"], p).resolve() for p in seen["path"]]
        assert not any(e == REPO or (e / "spark_adapter").is_dir() for e in entries), entries
        assert not seen["compiled_reader"]  # not importable from a zip: pure Python
    # and without the zip, the executors' interpreter has no swag at all
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    alone = subprocess.run([cluster_spark.sparkContext.pythonExec, "-c",
                            "import spark_adapter"], cwd=cluster.root, env=env,
                           capture_output=True, text=True)
    assert alone.returncode != 0 and "No module named 'spark_adapter'" in alone.stderr


# ----------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("name", BATCH)
def test_batch(cluster_spark, name):
    assert_conforms(batch_engine, corpus.load(name))


@pytest.fixture(scope="module")
def streaming_runs(cluster_spark) -> dict[str, MemberRun]:
    return run_corpus(cluster_spark, [corpus.expand(corpus.load(n)) for n in STREAMING],
                      concurrency=2)


@pytest.mark.parametrize("name", STREAMING)
def test_streaming(streaming_runs, name):
    assert_conforms(streaming_runs[name].replay, corpus.load(name))


def test_restart_from_checkpoint_continues_exactly(cluster, cluster_spark):
    """Stopped after micro-batch ``RESTART_AFTER`` and started again (new
    ``sliding_aggregate`` calls) from the checkpoint: the oracle's rows, exactly once
    (Parquet file sink), and the second query continues the batch numbering with the state
    of the first, in the RocksDB state store."""
    progress: list[Any] = []
    shared = cluster.root / "shared"

    def engine(scenario: dict[str, Any]) -> dict[str, Any]:
        return streaming_run(scenario, restart_after=RESTART_AFTER, workdir=str(shared),
                             progress=progress)

    assert_conforms(engine, corpus.load(RESTART))
    runs: dict[str, set[int]] = {}
    for p in progress:
        runs.setdefault(p["runId"], set()).add(p["batchId"])
    first, second = runs.values()
    assert min(first) == 0 and min(second) == max(first) + 1
    metrics = progress[-1]["stateOperators"][0]["customMetrics"]
    assert any(name.startswith("rocksdb") for name in metrics), metrics
