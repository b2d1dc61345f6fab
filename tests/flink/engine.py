"""The conformance corpus through PyFlink, many scenarios per job (a job costs ~15-20 s).

All scenarios of a run share one job and one keyed operator: an element's key is
``json.dumps([scenario index, key])``, and :class:`CorpusFunction` (a
:class:`flink_adapter.SwagProcessFunction`) serves each scenario's keys with that scenario's
own driver (:meth:`driver_for`, built from the scenario's whole query dict, so its
``nulls`` and ``algorithm`` apply); everything else (state, timers, late output, watermark
mapping) is the adapter's code. Elements are ``Row(key, time, value, mark)``: the raw
scenario time and value travel pickled, so bad times and values reach the driver as they
are.

* **Batch** (``RuntimeExecutionMode.BATCH``): every event, then the end of input; Flink
  sorts each key's elements and fires its timers at ``Long.MAX_VALUE``. Runs the scenarios
  whose result does not depend on the watermark steps (:func:`batch_eligible`).
* **Streaming with marker watermarks** (``markers=True``): PyFlink 2.3 has no Python
  ``WatermarkGenerator`` and emits watermarks periodically, so a scenario's exact watermark
  steps cannot be reproduced with Flink watermarks. Each step ``W`` becomes a marker element
  for every key of the scenario (in arrival order); :class:`CorpusFunction` takes the
  scenario's watermark from the markers instead of ``current_watermark()`` and fires the
  key's armed timer (from the adapter's ``swag_timer`` state) when the marker passes it.
  This tests the adapter's mapping of watermarks and timers onto the driver, not Flink's
  watermark propagation (``test_flink_adapter.py`` runs real watermarks).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyflink.common import Row, Types
from pyflink.common.typeinfo import (
    BasicTypeInfo,
    ListTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TypeInformation,
)
from pyflink.datastream import StreamExecutionEnvironment

import flink_adapter
from adapters import END_OF_INPUT, WindowDriver, parse_query
from adapters.engine.rows import OutputColumns
from flink_adapter import LATE_TAG_NAME
from flink_adapter._checks import check_stream
from flink_adapter._types import (
    OutputLayout,
    StreamNames,
    key_type_of,
    layout_and_type,
    plain_type,
    time_kind,
)
from flink_adapter.function import SwagProcessFunction
from tests.conformance.oracle import expected
from tests.conformance.runner import compare, error_problem
from tests.conformance.schema import Column, Feed, array_of, struct_of, untyped_feed

INPUT = Types.ROW_NAMED(["key", "time", "value", "mark"],
                        [Types.STRING(), Types.PICKLED_BYTE_ARRAY(),
                         Types.PICKLED_BYTE_ARRAY(), Types.PICKLED_BYTE_ARRAY()])


def batch_eligible(scenario: dict[str, Any]) -> bool:
    """True when the expected result equals that of every event followed by the end of
    input (what a batch run computes)."""
    if scenario.get("expect_error"):
        return True
    events = [ev for step in scenario["steps"] for ev in step.get("events", ())]
    as_batch = dict(scenario, steps=[{"events": events}, {"watermark": "end"}])
    return compare(expected(scenario), expected(as_batch)) is None


@dataclass
class DictLayout(OutputLayout):
    """Rows leave as the driver's dicts (scenarios differ in their columns)."""

    def to_row(self, row: dict[str, Any]) -> Any:  # type: ignore[override]
        return row


class CorpusFunction(SwagProcessFunction):
    """The adapter's function serving several scenarios, one driver each.

    ``expect_errors[i]``: scenario i's ``expect_error`` (or ``None``). An exception the
    adapter raises for an element of such a scenario is checked in the worker with
    :func:`tests.conformance.runner.error_problem` and reported as a ``("error", index,
    [key, time, value], problem)`` record instead of failing the job, so the bad-input
    scenarios share the streaming job; the scenario then goes on, which shows that the
    refused element changed nothing (its rows are the oracle's without it).
    """

    def __init__(self, queries: list[dict[str, Any]], markers: bool,
                 expect_errors: list[dict[str, Any] | None] | None = None) -> None:
        super().__init__(queries[0], DictLayout(columns=OutputColumns((), ()), value_field="value",
                                                input_fields=tuple(INPUT.get_field_names())),
                         LATE_TAG_NAME, time="time")
        self._queries = queries
        self._markers = markers
        self._expect_errors = expect_errors or [None] * len(queries)

    def open(self, runtime_context: Any) -> None:
        super().open(runtime_context)
        self._drivers = [WindowDriver(q, algorithm=q.get("algorithm"))
                         for q in self._queries]
        self._marks: dict[int, Any] = {}

    def driver_for(self, key: Any) -> tuple[WindowDriver, OutputLayout]:
        return self._drivers[json.loads(key)[0]], self._layout

    def watermark(self, ctx: Any) -> Any:
        if not self._markers:
            return super().watermark(ctx)
        return self._marks.get(json.loads(ctx.get_current_key())[0])

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        key = ctx.get_current_key()
        index = json.loads(key)[0]
        if value[3] is None:
            expect = self._expect_errors[index]
            if expect is None:
                yield from super().process_element(value, ctx)
                return
            try:
                out = list(super().process_element(value, ctx))
            except Exception as exc:  # the job would fail here: check the error instead
                event = [json.loads(key)[1], value[1], value[2]]
                yield ("error", index, event, error_problem(expect, exc))
                return
            yield from out
            return
        w = END_OF_INPUT if value[3] == "end" else value[3]
        old = self._marks.get(index)
        if old is None or w > old:
            self._marks[index] = w
        w = self._marks[index]
        armed = self.armed_timer(key)
        # Flink fires a timer at T once its watermark wm >= T, i.e. W = wm + 1 > T.
        if armed is not None and w > armed:
            yield from self.fire(ctx, key, w)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        if not self._markers:
            yield from super().on_timer(timestamp, ctx)
        # With markers, Flink's own end-of-input watermark must not release anything the
        # scenario's watermarks did not: the markers fired every due timer.


# ----------------------------------------------------------------------------- schema
#: Flink's basic types by logical type name (:mod:`tests.conformance.schema`)
_BASIC = {"STRING": "string", "BOOLEAN": "bool", "BYTE": "byte", "SHORT": "short",
          "INT": "int", "LONG": "long", "FLOAT": "float", "DOUBLE": "double"}


def logical_type(t: TypeInformation) -> str:
    """A Flink ``TypeInformation`` as a logical type (timestamps as ``time``, pickled
    values as ``any``, byte arrays as ``binary``, lists and rows recursively; a type
    without a logical name as its own)."""
    t = plain_type(t)
    if time_kind(t) is not None:
        return "time"
    if isinstance(t, PickledBytesTypeInfo):
        return "any"
    if isinstance(t, PrimitiveArrayTypeInfo) and t._element_type == Types.BYTE():
        return "binary"
    if isinstance(t, ListTypeInfo):
        return array_of(logical_type(t.elem_type))
    if isinstance(t, RowTypeInfo):
        return struct_of(zip(t.get_field_names(), map(logical_type, t.get_field_types())))
    if isinstance(t, BasicTypeInfo) and t._basic_type.name in _BASIC:
        return _BASIC[t._basic_type.name]
    return f"flink:{t!r}"


def logical_schema(t: TypeInformation) -> list[Column]:
    """An output ``DataStream``'s ``Types.ROW_NAMED`` as ``(column, logical type)`` pairs."""
    t = plain_type(t)
    assert isinstance(t, RowTypeInfo), t
    return [(n, logical_type(f)) for n, f in zip(t.get_field_names(), t.get_field_types())]


#: Flink types of the key types a feed may declare
_KEY_TYPES = {"string": Types.STRING, "long": Types.LONG}


#: declared schemas by (query, key type): the declared type depends on neither the
#: execution mode nor the runtime mode, so the four corpus runs build each graph once
_DECLARED: dict[tuple[str, str], list[Column]] = {}


def declared_schema(scenario: dict[str, Any], feed: Feed) -> list[Column]:
    """The declared output type of :func:`flink_adapter.sliding_aggregate` with the
    scenario's query over one scenario's elements in the job's shape, ``Row(key, time,
    value)`` with ``key=``, ``time=`` and ``value=`` naming them: the key of the feed's
    type, the time in ms (``LONG``), the value pickled. The graph is built on a scratch
    environment that never runs: the corpus job multiplexes scenarios through one function
    of pickled output, whose own type says nothing."""
    q = scenario["query"]
    cache_key = (json.dumps(q), feed.key[1])  # not sorted: the aggregations keep their order
    if cache_key not in _DECLARED:
        key = _KEY_TYPES.get(feed.key[1], Types.PICKLED_BYTE_ARRAY)()
        element = Types.ROW_NAMED(["key", "time", "value"],
                                  [key, Types.LONG(), Types.PICKLED_BYTE_ARRAY()])
        scratch = StreamExecutionEnvironment.get_execution_environment()
        stream = scratch.from_collection(["probe"], Types.STRING()).map(lambda t: t, element)
        out = flink_adapter.sliding_aggregate(
            stream, key="key", time="time", value="value", windows=q["windows"],
            aggregations=q["aggregations"], allowed_lateness=q.get("allowed_lateness", 0),
            algorithm=q.get("algorithm"), nulls=q.get("nulls", "skip"))
        _DECLARED[cache_key] = logical_schema(out.get_type())
    return _DECLARED[cache_key]


#: Flink types of the logical types a typed feed's columns have
_FLINK_TYPES = {"long": Types.LONG, "double": Types.DOUBLE, "string": Types.STRING,
                "bool": Types.BOOLEAN}


def typed_schema(scenario: dict[str, Any], feed: Feed) -> list[Column]:
    """The output type :func:`flink_adapter.sliding_aggregate` declares for the scenario's
    query over a stream of ``Types.ROW_NAMED`` of ``feed``'s typed columns (``key=`` and
    ``time=`` naming its key and time): the stream's type checked and the output type
    derived by the functions ``sliding_aggregate`` calls, without a graph (building one
    costs ~0.35 s of JVM round trips per query; :func:`declared_schema` builds one)."""
    assert feed.fields is not None
    element = Types.ROW_NAMED([n for n, _ in feed.fields],
                              [_FLINK_TYPES[t]() for _, t in feed.fields])
    query = parse_query(scenario["query"])
    names = StreamNames(feed.key[0], feed.time[0])
    check_stream(query, names, element)
    _, declared = layout_and_type(query, key_type_of(names.key, element, None), element,
                                  names, {})
    return logical_schema(declared)


def reported(scenario: dict[str, Any], runner: str) -> dict[str, Any]:
    """The ``schema``, ``feed`` and ``runner`` the Flink runners report for a scenario
    (:func:`declared_schema` over :func:`tests.conformance.schema.untyped_feed`)."""
    feed = untyped_feed(scenario)
    return {"schema": declared_schema(scenario, feed), "feed": feed, "runner": runner}


def _elements(scenarios: list[dict[str, Any]], markers: bool) -> list[tuple[Any, ...]]:
    out = []
    for i, sc in enumerate(scenarios):
        keys = list(dict.fromkeys(json.dumps([i, ev[0]]) for step in sc["steps"]
                                  for ev in step.get("events", ())))
        for step in sc["steps"]:
            if "events" in step:
                out.extend((json.dumps([i, k]), t, v, None) for k, t, v in step["events"])
            elif markers:
                out.extend((k, None, None, step["watermark"]) for k in keys)
    return out


def run_corpus(env: StreamExecutionEnvironment, scenarios: list[dict[str, Any]],
               markers: bool, runner: str = "Flink") -> dict[str, dict[str, Any]]:
    """Run ``scenarios`` in one job; ``{name: {"rows", "late", "errors"}}`` (``errors``:
    the refused elements ``[key, time, value]`` of ``expect_error`` scenarios, each with
    what is wrong with its exception, ``None`` when it is the expected one), and for the
    other scenarios the ``schema``, ``feed`` and ``runner`` (named ``runner``) of
    :func:`reported`."""
    queries = [dict(sc["query"]) for sc in scenarios]
    # The adapter sees (and its errors name) the job's composite key [index, key].
    expect_errors = [None if not sc.get("expect_error") else dict(
        sc["expect_error"], key=None if sc["expect_error"].get("key") is None
        else json.dumps([i, sc["expect_error"]["key"]])) for i, sc in enumerate(scenarios)]
    # from_collection serializes in the JVM and cannot take pickled fields: the elements
    # travel as JSON text (the scenarios are JSON) and become Rows in a Python map.
    text = [json.dumps(e) for e in _elements(scenarios, markers)]
    # One parsing instance, so that each key's elements keep their order into key_by.
    stream = env.from_collection(text, Types.STRING()).map(
        lambda t: Row(*json.loads(t)), INPUT).set_parallelism(1)
    fn = CorpusFunction(queries, markers, expect_errors)
    rows = stream.key_by(lambda r: r[0], Types.STRING()).process(
        fn, Types.PICKLED_BYTE_ARRAY())
    from pyflink.datastream import OutputTag
    late = rows.get_side_output(OutputTag(LATE_TAG_NAME, INPUT))
    tagged = rows.map(lambda r: r if isinstance(r, tuple) else ("row", r),
                      Types.PICKLED_BYTE_ARRAY()).union(
        late.map(lambda r: ("late", r[0]), Types.PICKLED_BYTE_ARRAY()))
    found_rows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    found_late: dict[int, Counter[Any]] = defaultdict(Counter)
    errors: dict[int, list[tuple[Any, str | None]]] = defaultdict(list)
    with tagged.execute_and_collect() as results:
        for kind, item, *more in results:
            if kind == "error":
                errors[item].append((more[0], more[1]))
            elif kind == "row":
                index, key = json.loads(item["key"])
                found_rows[index].append(dict(item, key=key))
            else:
                index, key = json.loads(item)
                found_late[index][key] += 1
    return {sc["name"]: {"rows": found_rows[i], "late": dict(found_late[i]),
                         "errors": errors[i],
                         **({} if sc.get("expect_error") else reported(sc, runner))}
            for i, sc in enumerate(scenarios)}


def arrival_order_free(scenario: dict[str, Any]) -> bool:
    """True when the result does not depend on the arrival order of each key's events.
    Flink's BATCH execution sorts each key's input with an unstable sort (by key, and by
    timestamp when there is one), so it keeps no arrival order among events of equal time:
    scenarios whose ties are broken by arrival (first/last/collect of peers, count windows)
    run in streaming only."""
    events = [ev for step in scenario["steps"] for ev in step.get("events", ())]
    forward = dict(scenario, steps=[{"events": events}, {"watermark": "end"}])
    backward = dict(scenario, steps=[{"events": events[::-1]}, {"watermark": "end"}])
    return compare(expected(forward), expected(backward)) is None
