"""The KVS layout (``docs/adapters.md``, "KVS layout") on Spark streaming state: the
per-key processor (``key_buckets=None``) keeps a key's per-event structure in the
``MapState`` ``swag_pairs``."""

from __future__ import annotations

import os
import random

from adapters.state.segments import decode_segment
from spark_adapter import _runtime as runtime
from spark_adapter._runtime import LOG_STATE
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.frames import active_session
from tests.spark.streaming import streaming_run

RANGE = 30
LAG = 4
BATCHES = 6
PER_BATCH = 12  # events per key and micro-batch


def _scenario() -> dict:
    """Two keys, six micro-batches of slightly out-of-order events, each followed by a
    watermark ``LAG`` behind its newest event; no end of input (events stay pending)."""
    rng = random.Random(17)
    steps: list[dict] = []
    t = 0
    for _ in range(BATCHES):
        events = []
        for _ in range(PER_BATCH):
            t += rng.randint(1, 3)
            for key in ("a", "b"):
                events.append([key, t - rng.randint(0, 2), {"v": rng.randint(-50, 50)}])
        steps += [{"events": events}, {"watermark": t - LAG}]
    return {"name": "kvs_spark", "spark": {"key_buckets": None},
            "query": {"windows": [{"kind": "over", "range": RANGE}],
                      "aggregations": {"mx": {"fn": "max", "field": "v"},
                                       "n": {"fn": "count"}}},
            "steps": steps}


def _state(ckpt: str, name: str) -> list:
    """The rows of state variable ``name`` in checkpoint ``ckpt`` (Spark's state reader)."""
    return (active_session().read.format("statestore").option("path", ckpt)
            .option("stateVarName", name).load().collect())


def test_kvs_layout_on_spark_state_restarts_exactly(spark, tmp_path, monkeypatch):
    """Run 1 with ``layout="memory"`` and without the map state (a checkpoint written before
    it existed), then two restarts from the checkpoint with ``layout="kvs"`` (the map state
    is added; the keys move to it, then reopen from it): the rows are the oracle's and the
    event log holds only the pending events (the released ones are in the map state only)."""
    calls: list[bool] = []
    declares_pairs = runtime.declares_pairs

    def first_without_pairs(plan):  # the processor of run 1 declares no map state
        calls.append(declares_pairs(plan))
        return len(calls) > 1 and calls[-1]

    monkeypatch.setattr(runtime, "declares_pairs", first_without_pairs)
    scenario = _scenario()
    result = streaming_run(scenario, restart_after=[1, 3], workdir=str(tmp_path),
                           part_queries=[{"layout": "memory"}, {"layout": "kvs"},
                                         {"layout": "kvs"}])
    assert compare(expected(scenario), result) is None
    assert calls == [True] * 3
    ckpt = os.path.join(str(tmp_path), "ckpt")
    # The log holds the entries with a pending event only, here the last micro-batch's
    # (arrival numbers from 5 * PER_BATCH on); the memory layout also keeps the entries that
    # the pending events' windows reach back to.
    entries = [e for r in _state(ckpt, LOG_STATE)
               for e in decode_segment(bytes(r["list_element"][0]))]
    assert sorted(seq for _, seq, _ in entries) == [(BATCHES - 1) * PER_BATCH] * 2
