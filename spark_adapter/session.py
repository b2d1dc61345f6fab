"""A small embedded local Spark session configured for the adapter, and the Java check.

Pitfalls handled here (``docs/spark.md``): Python workers must run the driver's own Python
(``PYSPARK_PYTHON`` set before the session starts, else they may lack ``swag``); streaming
needs the RocksDB state store and no exchange reuse; Spark's UI and console progress bars
are noise for a local job; a Spark Connect session has no ``sparkContext``, so its settings
go on the builder.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from adapters.engine.java import find_java

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
def java_version() -> tuple[str, int]:
    """``(path, major version)`` of the Java Spark would use (``JAVA_HOME`` first, then
    ``PATH``); raises :class:`JavaNotFoundError` with an install hint if none is 17+."""
    return find_java(17, "Spark")


def local_session(app_name: str = "swag", *, cores: int = 2, shuffle_partitions: int = 4,
                  driver_memory: str = "2g", log_level: str = "ERROR",
                  conf: dict[str, Any] | None = None, master: str | None = None,
                  connect: bool = False, python: str | None = None) -> Any:
    """An embedded ``local[cores]`` SparkSession ready for :func:`sliding_aggregate`
    (``master``: another master URL instead, e.g. ``spark://host:7077`` for a standalone
    cluster, with the same settings).

    Checks Java first (clear error instead of a JVM stack trace), makes the Python workers use
    this interpreter, sets the session time zone to UTC (timestamps print and parse as UTC,
    whatever the machine's zone), the RocksDB state store, no exchange reuse (a stateful
    operator over a reused exchange gets no watermark), few shuffle partitions, no UI and no
    console progress bars, and (local master only) checkpoint files written through
    Hadoop's ``FileSystem`` API, which forks no processes. ``conf`` adds or overrides
    settings. If a session is already active, Spark returns it (static settings such as the
    master cannot change then). ``python``: the Python workers' executable instead of this
    interpreter (it must see the same packages).

    ``connect=True``: a Spark Connect session instead, served by PySpark's in-process Connect
    server (its own jars) over the same master and settings; it needs the Connect client
    (``pip install 'swag[spark]'`` has it). With ``master='sc://host:port'`` it connects to a
    running Connect server instead and sets only the session's ``spark.sql.*`` settings (the
    server's own configuration holds the rest; docs/spark.md, "Spark Connect"). A process
    runs either classic or Connect sessions: once a Connect session started, PySpark makes
    every later session a Connect one.
    """
    settings = _settings(cores, shuffle_partitions, driver_memory, log_level,
                         local_files=master is None)
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    from pyspark.sql import SparkSession

    if connect and master is not None and master.startswith("sc://"):
        builder = SparkSession.builder.remote(master).appName(app_name)
        return builder.config(map={k: v for k, v in settings.items()
                                   if k.startswith("spark.sql.")}).getOrCreate()
    java_version()
    os.environ["PYSPARK_PYTHON"] = python or sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(master or f"local[{cores}]").appName(app_name)
    builder = builder.config(map=settings)
    if not connect:
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(log_level)
        return spark
    # The in-process server starts with every setting; the Connect session then re-applies
    # them one by one and warns about each static one, which already took effect.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Failed to set", UserWarning)
        return builder.config("spark.api.mode", "connect").getOrCreate()


def _settings(cores: int, shuffle_partitions: int, driver_memory: str, log_level: str, *,
              local_files: bool) -> dict[str, str]:
    """:func:`local_session`'s settings (``local_files``: the local master's checkpoint
    file manager)."""
    settings = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(cores),
        "spark.driver.memory": driver_memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        # commit a changelog per micro-batch instead of uploading RocksDB snapshot files
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        # A stateful operator over a reused exchange never gets a watermark (Spark 4.3's
        # watermark propagation does not look through ReusedExchangeExec): a second
        # sliding_aggregate over the same input would emit nothing (docs/spark.md).
        "spark.sql.exchange.reuse": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.log.level": log_level,
    }
    if local_files:
        # The local file system through Hadoop's FileSystem API: the default FileContext
        # manager, without Hadoop's native library, forks `readlink` / `chmod` processes for
        # every checkpoint file it renames (thousands per run). Renames on a local disk are
        # atomic POSIX renames either way (tests/spark/test_kill_restart.py kills queries
        # inside micro-batches with it). Main job: 9 % less streaming time (docs/spark.md).
        settings["spark.sql.streaming.checkpointFileManagerClass"] = (
            "org.apache.spark.sql.execution.streaming.checkpointing."
            "FileSystemBasedCheckpointFileManager")
    return settings
