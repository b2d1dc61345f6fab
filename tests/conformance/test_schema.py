"""The engine-free output schema (``schema.py``) and the runner's check of a reported one:
a wrong name, order or type fails, naming the runner, the scenario and the column."""

from __future__ import annotations

from typing import Any

import pytest

from . import corpus
from .driver_engine import DriverEngine
from .runner import assert_conforms, check, scenario_names
from .schema import (
    Feed,
    expected_schema,
    field_types,
    key_type,
    schema_problem,
    untyped_feed,
    value_type,
)

#: a typed feed as Spark's runners give it: key, time, the test's seq column, two fields
TYPED = Feed(("key", "string"), ("time", "long"),
             (("key", "string"), ("time", "long"), ("seq", "long"), ("v", "long"),
              ("id", "string")), late_flag=True)


def _scenario(windows: list[dict[str, Any]], aggregations: dict[str, Any]) -> dict[str, Any]:
    return {"name": "made_up", "query": {"windows": windows, "aggregations": aggregations},
            "steps": [{"events": [["a", 0, {"v": 1, "id": "x"}]]}, {"watermark": "end"}]}


TUMBLING = {"kind": "tumbling", "size": 1000}
OVER = {"kind": "over", "range": 1000}


def test_value_types() -> None:
    assert value_type([1, None, 2]) == "long"
    assert value_type([1, 2.5]) == "double"
    assert value_type([True, None]) == "bool"
    assert value_type(["a"]) == "string"
    assert value_type([None]) == "double"
    assert value_type([1, "a"]) == "any"
    scenario = _scenario([TUMBLING], {"n": {"fn": "count"}, "m": {"fn": "max", "field": "w"}})
    assert field_types(scenario) == {"w": "double", "v": "long", "id": "string"}
    assert key_type(scenario) == "string"


def test_aggregate_types_follow_the_fields() -> None:
    aggs = {"n": {"fn": "count"}, "s": {"fn": "sum", "field": "v"},
            "mean": {"fn": "mean", "field": "v"}, "ids": {"fn": "collect", "field": "id"},
            "mc": {"fn": "maxcount", "field": "v"},
            "who": {"fn": "argmax", "field": "v", "result": "id"},
            "row": {"fn": "argmin", "field": "v"}, "b": {"fn": "bloom", "field": "id"}}
    got = dict(expected_schema(_scenario([TUMBLING], aggs), TYPED))
    assert {n: got[n] for n in aggs} == {
        "n": "long", "s": "long", "mean": "double", "ids": "array<string>",
        "mc": "struct<value: long, count: long>", "who": "string",
        # the whole event: its fields other than the key and the time column
        "row": "struct<seq: long, v: long, id: string>", "b": "binary"}
    untyped = dict(expected_schema(_scenario([TUMBLING], aggs), untyped_feed(
        _scenario([TUMBLING], aggs))))
    assert {n: untyped[n] for n in aggs} == {
        "n": "long", "s": "any", "mean": "double", "ids": "any", "mc": "any", "who": "any",
        "row": "any", "b": "binary"}


def test_names_and_order_of_each_form() -> None:
    aggs = {"n": {"fn": "count"}}
    one = _scenario([TUMBLING], aggs)
    assert expected_schema(one, untyped_feed(one)) == [
        ("key", "string"), ("window_start", "long"), ("window_end", "long"), ("n", "long")]
    over = _scenario([OVER], aggs)
    assert expected_schema(over, untyped_feed(over)) == [
        ("key", "string"), ("time", "long"), ("event", "any"), ("n", "long")]
    stamped = Feed(("k", "long"), ("t", "time"), (("k", "long"), ("t", "time"), ("v", "long")))
    assert expected_schema(_scenario([TUMBLING, OVER], aggs), stamped) == [
        ("window", "int"), ("k", "long"), ("window_start", "time"), ("window_end", "time"),
        ("t", "time"), ("v", "long"), ("n", "long")]
    assert expected_schema(one, TYPED)[-2:] == [("n", "long"), ("late", "bool")]


def test_schema_problem_names_the_column() -> None:
    exp = [("key", "string"), ("n", "long")]
    assert schema_problem(exp, exp) is None
    assert schema_problem(exp, [("key", "string"), ("n", "double")]) == \
        "column 1 'n': double != expected long"
    assert "order differs" in str(schema_problem(exp, exp[::-1]))
    assert "missing ['n']" in str(schema_problem(exp, exp[:1]))
    assert "unexpected ['x']" in str(schema_problem(exp, [*exp, ("x", "any")]))


def _reporting(schema: Any, feed: Any = None) -> Any:
    """The driver engine, reporting ``schema`` (a function of the expected one over the
    untyped feed) and that feed (or ``feed`` instead)."""
    engine = DriverEngine()

    def run(scenario: dict[str, Any]) -> dict[str, Any]:
        result = engine(scenario)
        used = untyped_feed(scenario)
        return dict(result, schema=schema(expected_schema(scenario, used)),
                    feed=feed or used, runner="test runner")
    return run


def test_runner_checks_a_reported_schema() -> None:
    scenario = corpus.load("all_aggregations_one_query")
    assert_conforms(_reporting(list), scenario)
    swapped = _reporting(lambda cols: [cols[1], cols[0], *cols[2:]])
    with pytest.raises(AssertionError, match=r"scenario all_aggregations_one_query: .*\n"
                                             r"output schema on runner test runner: "
                                             r"column names .* \(order differs\)"):
        assert_conforms(swapped, scenario)
    retyped = _reporting(lambda cols: [(n, "double" if n == "count" else t) for n, t in cols])
    outcome = check(retyped, scenario)
    assert not outcome.ok
    assert "column 6 'count': double != expected long" in outcome.message
    renamed = _reporting(lambda cols: [("start" if n == "window_start" else n, t)
                                       for n, t in cols])
    assert "missing ['window_start'], unexpected ['start']" in check(renamed, scenario).message
    no_feed = _reporting(list, feed="typed")
    assert "needs the 'feed'" in check(no_feed, scenario).message


@pytest.mark.parametrize("name", scenario_names())
def test_every_scenario_has_a_schema(name: str) -> None:
    """The rule gives every scenario a schema over both feeds the runners use (an
    aggregation's field or type the rule cannot resolve would raise or leave ``any``)."""
    scenario = corpus.expand(corpus.load(name))
    untyped = expected_schema(scenario, untyped_feed(scenario))
    # untyped values: only the event and what an aggregation reads of it are unknown
    reading = {n for n, spec in scenario["query"]["aggregations"].items() if "field" in spec}
    assert {n for n, t in untyped if t == "any"} <= {"event", *reading}
    types = field_types(scenario)
    if "any" in types.values() or key_type(scenario) == "any":
        assert scenario.get("expect_error"), "mixed value types outside a bad-input scenario"
        return
    fields = (("key", key_type(scenario)), ("time", "long"), *types.items())
    typed = expected_schema(scenario, Feed(fields[0], fields[1], fields))
    assert "any" not in dict(typed).values()
