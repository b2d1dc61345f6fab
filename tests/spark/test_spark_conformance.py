"""The conformance corpus through Spark batch (every scenario whose result a batch run can
reproduce) and Spark Structured Streaming (every scenario: several per streaming query,
several queries at once, see ``streaming.py``). Both engines report the output DataFrame's
schema, which the runner checks against :mod:`tests.conformance.schema` (so does the Spark
Connect suite, which runs the same engines)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conformance import corpus
from tests.conformance.runner import assert_conforms, scenario_names
from tests.spark.engine import batch_eligible, batch_engine
from tests.spark.streaming import (
    END_WATERMARK,
    MemberRun,
    check_group,
    combine_congruences,
    plan_groups,
    run_corpus,
    step_batches,
)

ALL = scenario_names()
BATCH = [n for n in ALL if batch_eligible(corpus.expand(corpus.load(n)))]


def _expanded(names: list[str]) -> list[dict]:
    return [corpus.expand(corpus.load(n)) for n in names]


def test_selection_is_meaningful():
    assert len(BATCH) >= 35
    assert len(ALL) - len(BATCH) >= 15  # what only streaming can check: watermark steps


@pytest.mark.parametrize("name", BATCH)
def test_batch(spark, name):
    assert_conforms(batch_engine, corpus.load(name))


# ----------------------------------------------------------------------------- streaming
@pytest.fixture(scope="module")
def streaming_runs(spark) -> dict[str, MemberRun]:
    """Every scenario through streaming once (about two minutes on 2 cores)."""
    return run_corpus(spark, _expanded(ALL))


@pytest.mark.parametrize("name", ALL)
def test_streaming(streaming_runs, name):
    assert_conforms(streaming_runs[name].replay, corpus.load(name))


def test_streaming_late_metric_counts_every_late_event(streaming_runs):
    """The observed metric of each query branch counts the late events and rows that the
    scenario's own branch returned (and no other scenario's)."""
    counted = {n: (r.observed_late, r.observed_rows) for n, r in streaming_runs.items()
               if r.result is not None}
    returned = {n: (sum(r.result["late"].values()), len(r.result["rows"]))
                for n, r in streaming_runs.items() if r.result is not None}
    assert counted == returned
    assert sum(late for late, _ in counted.values()) > 0


# ----------------------------------------------------------------------------- groups
def test_plan_runs_every_scenario_once_and_errors_alone():
    groups = plan_groups(_expanded(ALL))
    names = [m.name for g in groups for m in g.members]
    assert sorted(names) == ALL
    for g in groups:
        if any(m.scenario.get("expect_error") for m in g.members):
            assert len(g.members) == 1
    assert len(groups) <= len(ALL) // 2  # the point of grouping


def test_check_group_refuses_a_member_off_the_schedule():
    group = next(g for g in plan_groups(_expanded(ALL))
                 if len(g.members) > 1 and any(isinstance(w, int) and w != END_WATERMARK
                                               for w in g.watermarks))
    first = group.members[0]
    moved = dataclasses.replace(first, shift=first.shift + 1)
    with pytest.raises(AssertionError, match="micro-batch 0 would carry"):
        check_group(dataclasses.replace(group, members=(moved, *group.members[1:])))


def test_alignments_that_conflict_are_not_grouped():
    # x = 5 (mod 1000) and x = 0 (mod 1000): no common first watermark
    assert combine_congruences(5, 1000, 0, 1000) is None
    assert combine_congruences(0, 1000, 500, 1500) == (2000, 3000)
    scenario = corpus.expand(corpus.load("late_no_lateness"))  # tumbling 1000, W 2000
    odd = dict(scenario, name="odd",
               steps=[{"watermark": 2005} if "watermark" in s and s["watermark"] != "end"
                      else s for s in scenario["steps"]])
    assert len(plan_groups([scenario, odd])) == 2
    assert len(plan_groups([scenario, dict(scenario, name="twin")])) == 1


def test_step_batches_carry_each_watermark_after_its_events():
    scenario = {"steps": [{"watermark": 10}, {"events": [["a", 1, {}]]},
                          {"watermark": 30}, {"watermark": 20}, {"events": [["a", 2, {}]]},
                          {"watermark": "end"}, {"watermark": 5}]}
    assert step_batches(scenario) == [([], 10), ([(1, "a", 1, {})], 30),
                                      ([(4, "a", 2, {})], "end")]
