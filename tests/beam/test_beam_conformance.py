"""The conformance corpus through Beam's DirectRunner runners: batch (``FnApiRunner``) and
streaming (``TestStream`` on the ``BundleBasedDirectRunner``), see :mod:`tests.beam.engine`.

* Batch: every scenario whose result does not depend on the watermark steps, exact.
* Streaming, exact: every scenario in which no event is behind the watermark when it is
  added. Those events hold Beam's watermark, so they reach the ``DoFn`` before any later
  advance: the run must give exactly the oracle's rows and no late events (including the
  scenarios that stop without ``"end"``: rows released by the final jump to infinity are
  recognised by their emission timestamps).
* The output schema: both runners report their output ``PCollection``'s row type over
  ``(key, value)`` pairs with a typed key (checked by the runner against
  :mod:`tests.conformance.schema`); over ``beam.Row`` elements of typed columns (the columns
  Spark's runners give, :func:`tests.conformance.schema.typed_feed`) the declared row type of
  every scenario's query is checked too, without running the pipeline. The Beam-late
  scenarios below check the reported schema the same way.
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

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.typehints.row_type import RowTypeConstraint

from beam_adapter import SlidingAggregate
from beam_adapter._rows import base_type
from tests.beam import sink
from tests.beam.engine import (
    batch_eligible,
    batch_engine,
    beam_late_events,
    streaming_engine,
    typed_schema,
)
from tests.conformance import corpus
from tests.conformance.oracle import expected
from tests.conformance.runner import (
    assert_conforms,
    compare,
    load,
    reported_schema_problem,
    scenario_names,
)
from tests.conformance.schema import expected_schema, schema_problem, typed_feed

ALL = scenario_names()
BATCH = [n for n in ALL if batch_eligible(load(n))]
STREAM_EXACT = [n for n in ALL if not beam_late_events(load(n))]
STREAM_LATE = [n for n in ALL if beam_late_events(load(n))]
GOOD = [n for n in ALL if not load(n).get("expect_error")]


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
    why = reported_schema_problem(streaming_engine, scenario, result)
    assert why is None, why


@pytest.mark.parametrize("name", GOOD)
def test_typed_rows_schema(name: str) -> None:
    scenario = corpus.expand(load(name))
    feed = typed_feed(scenario)
    why = schema_problem(expected_schema(scenario, feed), typed_schema(scenario, feed))
    assert why is None, f"{name}: {why}"


def test_whole_event_argmax_is_a_row_of_the_other_fields() -> None:
    """argmax without ``result`` over rows: the event's fields but the key and time, as a
    ``beam.Row`` of the declared struct (as on Spark and Flink)."""
    element = RowTypeConstraint.from_fields([("k", str), ("t", int), ("v", int), ("id", str)])
    events = [beam.Row(k="a", t=0, v=1, id="x"), beam.Row(k="a", t=10, v=3, id="y"),
              beam.Row(k="a", t=1_500, v=2, id="z")]
    run = sink.new_run()
    try:
        with beam.Pipeline(runner=FnApiRunner()) as p:
            out = (p | beam.Create(events).with_output_types(element)
                   | SlidingAggregate({"kind": "tumbling", "size": 1_000},
                                      {"best": {"fn": "argmax", "field": "v"}},
                                      key="k", time="t"))
            _ = out | beam.ParDo(sink.Collect(run))
            best = base_type(dict(out.element_type._fields)["best"])
        rows = sorted((r.window_start, r.best) for r, _ in sink.take(run))
    finally:
        sink.discard(run)
    assert [name for name, _ in best._fields] == ["v", "id"]
    assert [(start, row.as_dict()) for start, row in rows] == [
        (0, {"v": 3, "id": "y"}), (1_000, {"v": 2, "id": "z"})]
