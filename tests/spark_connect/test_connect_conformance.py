"""The conformance corpus through Spark Connect, against the oracle, with the Spark suite's
own engines (``tests/spark/engine.py``, ``tests/spark/streaming.py``): batch
(``applyInArrow``) for every scenario a batch run can reproduce, streaming
(``transformWithStateInPandas``: sliding, tumbling and over windows, late events returned
with ``late_rows="include"`` and counted by the observed metric, nulls, errors) for every
scenario, and a streaming restart from a checkpoint."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import corpus
from tests.conformance.runner import assert_conforms
from tests.spark.engine import batch_engine
from tests.spark.streaming import MemberRun, run_corpus, streaming_run
from tests.spark.test_spark_conformance import ALL, BATCH

#: Restarted from its checkpoint after micro-batch file RESTART_AFTER (of 5): sliding,
#: tumbling, over and count windows over 20 keys, out of order, with late events.
RESTART, RESTART_AFTER = "mixed_kinds_stream", 2


@pytest.mark.parametrize("name", BATCH)
def test_batch(spark, name):
    assert_conforms(batch_engine, corpus.load(name))


@pytest.fixture(scope="module")
def streaming_runs(spark) -> dict[str, MemberRun]:
    return run_corpus(spark, [corpus.expand(corpus.load(n)) for n in ALL])


@pytest.mark.parametrize("name", ALL)
def test_streaming(streaming_runs, name):
    assert_conforms(streaming_runs[name].replay, corpus.load(name))


def test_streaming_late_rows_and_metric(streaming_runs):
    """Late events come back as rows (``late_rows="include"``) and the observed metric of
    each query branch counts exactly those."""
    counted = {n: (r.observed_late, r.observed_rows) for n, r in streaming_runs.items()
               if r.result is not None}
    returned = {n: (sum(r.result["late"].values()), len(r.result["rows"]))
                for n, r in streaming_runs.items() if r.result is not None}
    assert counted == returned
    assert sum(late for late, _ in counted.values()) > 0


def test_restart_from_checkpoint_continues_exactly(spark, tmp_path):
    """Stopped after a micro-batch and started again (new ``sliding_aggregate`` calls) from
    the checkpoint: the oracle's rows exactly once (Parquet file sink), the second query
    continuing the first's batch numbering with its RocksDB state."""
    progress: list[Any] = []

    def engine(scenario: dict[str, Any]) -> dict[str, Any]:
        return streaming_run(scenario, restart_after=RESTART_AFTER, workdir=str(tmp_path),
                             progress=progress)

    assert_conforms(engine, corpus.load(RESTART))
    runs: dict[str, set[int]] = {}
    for p in progress:
        runs.setdefault(p["runId"], set()).add(p["batchId"])
    first, second = runs.values()
    assert min(first) == 0 and min(second) == max(first) + 1
    metrics = progress[-1]["stateOperators"][0]["customMetrics"]
    assert any(name.startswith("rocksdb") for name in metrics), metrics
