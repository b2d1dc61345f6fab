"""The conformance corpus through Beam's DirectRunner runners: batch (``FnApiRunner``) and
streaming (``TestStream`` on the ``BundleBasedDirectRunner``), see :mod:`tests.beam.engine`.

* Batch: every scenario whose result does not depend on the watermark steps, exact.
* Streaming, exact: every scenario in which no event is behind the watermark when it is
  added. Those events hold Beam's watermark, so they reach the ``DoFn`` before any later
  advance: the run must give exactly the oracle's rows and no late events (including the
  scenarios that stop without ``"end"``: rows released by the final jump to infinity are
  recognised by their emission timestamps).
* Streaming, Beam-late events (``time < watermark`` when added): Beam does not order them
  with later watermark advances, and a Python stateful ``DoFn`` cannot read the input
  watermark, so the adapter judges lateness against the watermark the key has seen through
  its timers (``docs/beam.md``). Checked exactly: only Beam-late events may be reported late,
  and the rows are exactly the oracle's rows over the events the adapter accepted (same final
  watermark).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.beam.engine import batch_eligible, batch_engine, beam_late_events, streaming_engine
from tests.conformance.oracle import expected
from tests.conformance.runner import assert_conforms, compare, load, scenario_names

ALL = scenario_names()
BATCH = [n for n in ALL if batch_eligible(load(n))]
STREAM_EXACT = [n for n in ALL if not beam_late_events(load(n))]
STREAM_LATE = [n for n in ALL if beam_late_events(load(n))]


def _ident(ev: list[Any]) -> tuple[Any, ...]:
    key, time, value = ev
    return (key, time, json.dumps(value, sort_keys=True))


def test_partition_of_the_corpus() -> None:
    assert len(STREAM_EXACT) + len(STREAM_LATE) == len(ALL)
    assert len(BATCH) >= 40 and len(STREAM_EXACT) >= 45


@pytest.mark.parametrize("name", BATCH)
def test_batch(name: str) -> None:
    assert_conforms(batch_engine, load(name))


@pytest.mark.parametrize("name", STREAM_EXACT)
def test_streaming_exact(name: str) -> None:
    assert_conforms(streaming_engine, load(name))


@pytest.mark.parametrize("name", STREAM_LATE)
def test_streaming_beam_late(name: str) -> None:
    scenario = load(name)
    result = streaming_engine(scenario)
    late = Counter(_ident(ev) for ev in result["late_events"])
    candidates = Counter(_ident(ev) for ev in beam_late_events(scenario))
    assert not late - candidates, f"reported late but not behind the watermark: {late - candidates}"
    # The rows are exactly the oracle's over the accepted events, all present before the
    # scenario's final watermark.
    accepted, final = [], None
    for step in scenario["steps"]:
        for ev in step.get("events", ()):
            if late[_ident(ev)]:
                late[_ident(ev)] -= 1
            else:
                accepted.append(ev)
        if "watermark" in step:
            w = step["watermark"]
            final = w if final is None or w == "end" or (final != "end" and w > final) else final
    steps: list[dict[str, Any]] = [{"events": accepted}]
    if final is not None:
        steps.append({"watermark": final})
    exp = expected(dict(scenario, steps=steps))
    diff = compare(exp, {"rows": result["rows"], "late": {}})
    assert diff is None, f"{name}: rows differ from the oracle over the accepted events\n{diff}"
