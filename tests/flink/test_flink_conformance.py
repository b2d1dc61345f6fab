"""The conformance corpus through PyFlink (``engine.py``): one job for every batch scenario,
one job for every streaming scenario (marker watermarks), each in both Python execution
modes (process: worker processes; thread: embedded in the JVM).

* Batch (``RuntimeExecutionMode.BATCH``): every scenario whose result does not depend on the
  watermark steps nor on the arrival order of equal times (Flink's batch sort keeps none).
* Streaming with marker watermarks: every scenario, exact rows and late counts at each
  scenario's own watermark steps (including scenarios that stop without ``"end"``), with
  parallelism 2. The bad-input scenarios (``expect_error``) run in the same job: the
  adapter's exception for their bad element is checked in the worker (class, key, field)
  and the scenario goes on, and their rows must be the oracle's over the other events:
  the refused element changed nothing, nothing else was lost.

Every run reports, for each scenario, the declared output type of ``sliding_aggregate``
over that scenario's elements (``engine.declared_schema``), which the runner checks against
:mod:`tests.conformance.schema`; over rows of typed columns (the columns Spark's runners
give, :func:`tests.conformance.schema.typed_feed`) the declared type of every scenario's
query is checked too (graphs built, never run).

A job failing on bad input, and Flink's own watermarks: ``test_flink_adapter.py``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from pyflink.common import Types

from adapters import parse_query
from flink_adapter._types import StreamNames, layout_and_type
from tests.conformance import corpus
from tests.conformance.oracle import expected
from tests.conformance.runner import assert_conforms, compare, load, scenario_names
from tests.conformance.schema import expected_schema, schema_problem, typed_feed
from tests.flink.conftest import MODES
from tests.flink.engine import arrival_order_free, batch_eligible, run_corpus, typed_schema

ALL = scenario_names()
GOOD = [n for n in ALL if not load(n).get("expect_error")]
BAD = [n for n in ALL if load(n).get("expect_error")]
BATCH = [n for n in GOOD if batch_eligible(load(n)) and arrival_order_free(load(n))]


def test_selection_is_meaningful() -> None:
    assert len(GOOD) >= 50
    assert len(BATCH) >= 25
    assert len(GOOD) - len(BATCH) >= 15  # what only streaming checks
    assert len(BAD) >= 5


@pytest.fixture(scope="module", params=MODES)
def batch_runs(flink_env: Any, request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    return run_corpus(flink_env(streaming=False, mode=request.param),
                      [load(n) for n in BATCH], markers=False,
                      runner=f"Flink batch ({request.param} mode)")


@pytest.fixture(scope="module", params=MODES)
def stream_runs(flink_env: Any, request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    # Two operator instances: keys spread over two drivers, caches and state partitions.
    return run_corpus(flink_env(streaming=True, parallelism=2, mode=request.param),
                      [load(n) for n in ALL], markers=True,
                      runner=f"Flink streaming ({request.param} mode)")


@pytest.mark.parametrize("name", BATCH)
def test_batch(batch_runs: dict[str, dict[str, Any]], name: str) -> None:
    assert_conforms(lambda _: batch_runs[name], load(name))


@pytest.mark.parametrize("name", GOOD)
def test_streaming_marker_watermarks(stream_runs: dict[str, dict[str, Any]], name: str
                                     ) -> None:
    assert_conforms(lambda _: stream_runs[name], load(name))


def without(scenario: dict[str, Any], refused: list[Any]) -> dict[str, Any]:
    """``scenario`` without the events ``refused`` (``[key, time, value]``, once each;
    matched by their JSON text, so that NaN matches NaN)."""
    todo = [json.dumps(ev, sort_keys=True) for ev in refused]
    steps = []
    for step in scenario["steps"]:
        if "events" in step:
            kept = []
            for ev in step["events"]:
                text = json.dumps(list(ev), sort_keys=True)
                if text in todo:
                    todo.remove(text)
                else:
                    kept.append(ev)
            step = dict(step, events=kept)
        steps.append(step)
    assert not todo, f"refused events not in the scenario: {todo}"
    return dict(scenario, steps=steps, expect_error=None)


@pytest.mark.parametrize("name", BAD)
def test_streaming_bad_input(stream_runs: dict[str, dict[str, Any]], name: str) -> None:
    run = stream_runs[name]
    assert run["errors"], "the bad input was accepted"
    assert [problem for _, problem in run["errors"] if problem] == []
    rest = without(load(name), [event for event, _ in run["errors"]])
    diff = compare(expected(rest), run)  # the oracle refuses input that is still bad
    assert diff is None, diff


@pytest.mark.parametrize("name", GOOD)
def test_typed_rows_schema(name: str) -> None:
    scenario = corpus.expand(load(name))
    feed = typed_feed(scenario)
    why = schema_problem(expected_schema(scenario, feed), typed_schema(scenario, feed))
    assert why is None, f"{name}: {why}"


def test_whole_event_argmax_is_a_row_of_the_other_fields() -> None:
    """argmax without ``result`` over rows: the event's fields but the key and time, as a
    ``Row`` of the declared ``ROW_NAMED`` (as on Spark and Beam); a timestamp field stays a
    timestamp."""
    element = Types.ROW_NAMED(["k", "t", "at", "v"], [Types.STRING(), Types.LONG(),
                                                      Types.SQL_TIMESTAMP(), Types.LONG()])
    query = parse_query({"windows": [{"kind": "tumbling", "size": 1_000}],
                         "aggregations": {"best": {"fn": "argmax", "field": "v"}}})
    layout, declared = layout_and_type(query, Types.STRING(), element, StreamNames("k", "t"),
                                       {})
    best = declared.get_field_types()[3]
    assert best.get_field_names() == ["at", "v"]
    event = {"k": "a", "t": 10, "at": 1_500, "v": 3}  # the driver's value (times in ms)
    row = layout.to_row({"window": 0, "key": "a", "start": 0, "end": 1_000, "best": event})
    assert list(row[3]) == [dt.datetime(1970, 1, 1, 0, 0, 1, 500_000), 3]
