"""``local_session`` and Spark Connect: the session the suite runs on is a Connect one with
``local_session``'s settings, and a client in another process reaches its server by URL
(``local_session(master="sc://...", connect=True)``), as a user's program reaches a remote
Connect server."""

from __future__ import annotations

import os
import subprocess
import sys

from spark_adapter.session import ROCKSDB

EVENTS = [("a", 0, 1.0), ("a", 1500, 2.0), ("b", 500, 4.0)]
RANGE, SLIDE = 2000, 1000
CLIENT = """
from spark_adapter import local_session, sliding, sliding_aggregate
spark = local_session(master="sc://localhost:{port}", connect=True)
assert type(spark).__module__ == "pyspark.sql.connect.session", type(spark)
assert spark.conf.get("spark.sql.exchange.reuse") == "false"
df = spark.createDataFrame({events!r}, "k string, t long, v double")
out = sliding_aggregate(df, key="k", time="t", window=sliding({range}, {slide}),
                        aggregations={{"total": {{"fn": "sum", "field": "v"}}}})
print(sorted((r.k, r.window_start, r.total) for r in out.collect()))
"""


def test_the_session_has_local_sessions_settings(spark):
    assert type(spark).__module__ == "pyspark.sql.connect.session"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB
    assert spark.conf.get("spark.sql.exchange.reuse") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "1"  # the suite's conf


def test_a_client_in_another_process_reaches_the_server_by_url(spark):
    port = spark.conf.get("spark.connect.grpc.binding.port", "15002")
    client = CLIENT.format(port=port, events=EVENTS, range=RANGE, slide=SLIDE)
    done = subprocess.run([sys.executable, "-c", client], env=os.environ,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == repr(_brute_force())


def _brute_force() -> list[tuple[str, int, float]]:
    """(key, window start, sum) of every non-empty window."""
    out = []
    for key in sorted({k for k, _, _ in EVENTS}):
        for start in range(-RANGE, 4 * RANGE, SLIDE):
            inside = [v for k, t, v in EVENTS if k == key and start <= t < start + RANGE]
            if inside:
                out.append((key, start, sum(inside)))
    return out
