"""The KVS layout (``docs/adapters.md``, "KVS layout") on Spark streaming state: the bucket
processor keeps its keys' per-event structures in the ``MapState`` ``swag_bpairs``, keyed
by ``(key id, map key)``."""

from __future__ import annotations

import os
import random

from adapters.state.buckets import decode_bucket
from adapters.state.segments import decode_segment
from spark_adapter._buckets import BLOG_STATE, BMETA_STATE, BPAIRS_STATE
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.spark.frames import active_session
from tests.spark.streaming import streaming_run

RANGE = 30
LAG = 4
BATCHES = 6
PER_BATCH = 12  # events per key and micro-batch
KEYS = ("a", "b")


def _scenario() -> dict:
    """Two keys in one bucket, six micro-batches of slightly out-of-order events, each
    followed by a watermark ``LAG`` behind its newest event; no end of input (events stay
    pending)."""
    rng = random.Random(17)
    steps: list[dict] = []
    t = 0
    for _ in range(BATCHES):
        events = []
        for _ in range(PER_BATCH):
            t += rng.randint(1, 3)
            for key in KEYS:
                events.append([key, t - rng.randint(0, 2), {"v": rng.randint(-50, 50)}])
        steps += [{"events": events}, {"watermark": t - LAG}]
    return {"name": "kvs_spark", "spark": {"key_buckets": 1},
            "query": {"windows": [{"kind": "over", "range": RANGE}],
                      "aggregations": {"mx": {"fn": "max", "field": "v"},
                                       "n": {"fn": "count"}}},
            "steps": steps}


def _state(ckpt: str, name: str) -> list:
    """The rows of state variable ``name`` in checkpoint ``ckpt`` (Spark's state reader)."""
    return (active_session().read.format("statestore").option("path", ckpt)
            .option("stateVarName", name).load().collect())


def test_kvs_layout_on_spark_state_restarts_exactly(spark, tmp_path):
    """Run 1 with ``layout="memory"``, then two restarts from the checkpoint with
    ``layout="kvs"`` (the keys move to the map state, then reopen from it): the rows are
    the oracle's, both keys of the one bucket have pairs in the map, and the event log's
    live entries are only the pending events (the released ones are in the map only)."""
    scenario = _scenario()
    result = streaming_run(scenario, restart_after=[1, 3], workdir=str(tmp_path),
                           part_queries=[{"layout": "memory"}, {"layout": "kvs"},
                                         {"layout": "kvs"}])
    assert compare(expected(scenario), result) is None
    ckpt = os.path.join(str(tmp_path), "ckpt")
    pair_keys = {bytes(r["user_map_key"]["k"]) for r in _state(ckpt, BPAIRS_STATE)}
    assert {k.decode() for k in pair_keys} == {f'{{"key":"{k}"}}' for k in KEYS}
    (meta,) = _state(ckpt, BMETA_STATE)
    bucket = decode_bucket(bytes(meta["value"]["m"]), 1)
    # The log's live entries (at or after their key's trim bound) are those with a pending
    # event only, here the last micro-batch's (arrival numbers from 5 * PER_BATCH on); the
    # memory layout also keeps the entries that the pending events' windows reach back to.
    live = []
    for r in _state(ckpt, BLOG_STATE):
        kid, seg = (bytes(x) for x in r["list_element"])
        trim = bucket.keys[kid].trim
        live += [seq for time, seq, _ in decode_segment(seg) if trim is None or time >= trim]
    assert sorted(live) == [(BATCHES - 1) * PER_BATCH] * len(KEYS)
