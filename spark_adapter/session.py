"""A small embedded local Spark session configured for the adapter, and the Java check.

Pitfalls handled here (``docs/spark.md``): Python workers must run the driver's own Python
(``PYSPARK_PYTHON`` set before the session starts, else they may lack ``swag``); streaming
needs the RocksDB state store and no exchange reuse; Spark's UI and console progress bars
are noise for a local job; a Spark Connect session has no ``sparkContext``, so its settings
go on the builder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from typing import Any

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
INSTALL_HINT = ("install Java 17 or newer, e.g. 'sudo apt-get install openjdk-17-jre-headless' "
                "(Debian/Ubuntu) or 'brew install openjdk@17' (macOS), or point JAVA_HOME at "
                "one")


class JavaNotFoundError(RuntimeError):
    """No usable Java runtime (17+) for the embedded Spark."""


def java_version() -> tuple[str, int]:
    """``(path, major version)`` of the Java Spark would use (``JAVA_HOME`` first, then
    ``PATH``); raises :class:`JavaNotFoundError` with an install hint otherwise."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else None
    if not (java and os.access(java, os.X_OK)):
        java = shutil.which("java")
    if java is None:
        raise JavaNotFoundError(f"Spark needs Java 17+, but no 'java' was found (JAVA_HOME "
                                f"unset or wrong, none on PATH); {INSTALL_HINT}")
    try:
        text = subprocess.run([java, "-version"], capture_output=True, text=True,
                              timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"could not run '{java} -version' ({exc}); {INSTALL_HINT}") \
            from None
    m = re.search(r'version "([^"]+)"', text)
    if not m:
        raise JavaNotFoundError(f"could not read the Java version from '{java} -version' "
                                f"(got {text.strip()[:100]!r}); Spark needs Java 17+: "
                                f"{INSTALL_HINT}")
    ver = m.group(1)
    parts = ver.split(".")
    major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(
        re.match(r"\d+", parts[0]).group(0))  # type: ignore[union-attr]
    if major < 17:
        raise JavaNotFoundError(f"Spark needs Java 17+, but {java} is Java {major} ({ver}); "
                                f"{INSTALL_HINT}")
    return java, major


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
