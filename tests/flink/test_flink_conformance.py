"""The conformance corpus through PyFlink (``engine.py``): one job for every batch scenario,
one job for every streaming scenario (marker watermarks).

* Batch (``RuntimeExecutionMode.BATCH``): every scenario whose result does not depend on the
  watermark steps nor on the arrival order of equal times (Flink's batch sort keeps none).
* Streaming with marker watermarks: every scenario without bad input, exact rows and late
  counts at each scenario's own watermark steps (including scenarios that stop without
  ``"end"``), with parallelism 2.

Bad input and Flink's own watermarks: ``test_flink_adapter.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.runner import assert_conforms, load, scenario_names
from tests.flink.engine import arrival_order_free, batch_eligible, run_corpus

ALL = scenario_names()
GOOD = [n for n in ALL if not load(n).get("expect_error")]
BATCH = [n for n in GOOD if batch_eligible(load(n)) and arrival_order_free(load(n))]


def test_selection_is_meaningful() -> None:
    assert len(GOOD) >= 50
    assert len(BATCH) >= 25
    assert len(GOOD) - len(BATCH) >= 15  # what only streaming checks


@pytest.fixture(scope="module")
def batch_runs(flink_env: Any) -> dict[str, dict[str, Any]]:
    return run_corpus(flink_env(streaming=False), [load(n) for n in BATCH], markers=False)


@pytest.fixture(scope="module")
def stream_runs(flink_env: Any) -> dict[str, dict[str, Any]]:
    # Two operator instances: keys spread over two drivers, caches and state partitions.
    return run_corpus(flink_env(streaming=True, parallelism=2), [load(n) for n in GOOD],
                      markers=True)


@pytest.mark.parametrize("name", BATCH)
def test_batch(batch_runs: dict[str, dict[str, Any]], name: str) -> None:
    assert_conforms(lambda _: batch_runs[name], load(name))


@pytest.mark.parametrize("name", GOOD)
def test_streaming_marker_watermarks(stream_runs: dict[str, dict[str, Any]], name: str
                                     ) -> None:
    assert_conforms(lambda _: stream_runs[name], load(name))
