"""The conformance corpus through Beam, as engines for ``tests/conformance/runner.py``
(``engine(scenario) -> {"rows": [...], "late": {...}}``).

Both build a pipeline around :class:`beam_adapter.SlidingAggregate` with the scenario's
windows and aggregations; events are ``(key, value)`` elements whose Beam timestamp is the
event time (``time * 1000`` us). A time Beam cannot represent (null, ``"ten"``) becomes an
element without a timestamp (``MIN_TIMESTAMP``), which the adapter rejects with
``BadEventError``; a decimal-string time (``"1000"``) becomes that timestamp.

* **Batch** (:func:`batch_engine`): ``beam.Create`` on the ``FnApiRunner`` (what the
  DirectRunner runs batch pipelines on): every event, then the end of input. It runs the
  scenarios whose expected result does not depend on the watermark steps
  (:func:`batch_eligible`).
* **Streaming** (:func:`streaming_engine`): a ``TestStream`` replays the steps, events in
  arrival order and ``advance_watermark_to(W * 1000 us)`` for each watermark step (``"end"``:
  to infinity), on the ``BundleBasedDirectRunner`` (what the DirectRunner runs ``TestStream``
  pipelines on). A ``TestStream`` always ends with the watermark at infinity, but a scenario
  that stops without ``"end"`` must only see what its last watermark ``W`` released: the
  transform runs with ``timestamps="emission"``, where a row is never stamped earlier than
  the timer that emitted it. Rows released while the watermark was at most ``W`` carry a
  timestamp ``< W * 1000`` us (a wake timer for ``N <= W`` is at ``(N - 1) * 1000``, a row's own
  timestamp is ``end * 1000 - 1`` with ``end <= W``); rows released by the final jump carry
  ``>= W * 1000`` and are dropped. A timer that fires too late is therefore still caught.

Rows leave as ``beam.Row`` objects of the one output schema; :func:`runner_row` maps them
back to the runner's rows by where each column comes from (:class:`OutputColumns`).

Beam-late events (``time < watermark`` when the ``TestStream`` adds them) are not ordered
with later watermark advances (they do not hold the watermark), and a Python stateful
``DoFn`` cannot read the input watermark: see :func:`beam_late_events` and
``docs/beam.md``.
"""

from __future__ import annotations

import collections.abc
import logging
import math
import typing
from collections import Counter
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.typehints.row_type import RowTypeConstraint
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

from adapters import parse_query
from adapters.engine.rows import OutputColumns, output_columns
from beam_adapter import SlidingAggregate
from beam_adapter._rows import InputShape, OutputSchema, base_type, output_schema
from tests.beam import sink
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.conformance.schema import Column, Feed, array_of, struct_of, untyped_feed

logging.getLogger("apache_beam").setLevel(logging.ERROR)


def beam_timestamp(time: Any) -> Timestamp:
    """The element timestamp carrying an event time (``MIN_TIMESTAMP``: none)."""
    if isinstance(time, str):
        try:
            time = int(time.strip())
        except ValueError:
            return MIN_TIMESTAMP
    if isinstance(time, float) and time.is_integer():
        time = int(time)
    if type(time) is not int:
        return MIN_TIMESTAMP
    return Timestamp(micros=time * 1000)


def _events(scenario: dict[str, Any]) -> list[list[Any]]:
    return [ev for step in scenario["steps"] for ev in step.get("events", ())]


def batch_eligible(scenario: dict[str, Any]) -> bool:
    """True when the expected result equals that of every event followed by the end of
    input (what a batch run computes)."""
    if scenario.get("expect_error"):
        return True
    as_batch = dict(scenario, steps=[{"events": _events(scenario)}, {"watermark": "end"}])
    return compare(expected(scenario), expected(as_batch)) is None


def _transform(scenario: dict[str, Any], **options: Any) -> SlidingAggregate:
    q = scenario["query"]
    return SlidingAggregate(windows=q["windows"], aggregations=q["aggregations"],
                            allowed_lateness=q.get("allowed_lateness", 0),
                            algorithm=q.get("algorithm"), nulls=q.get("nulls", "skip"),
                            with_late_output=True, **options)


def _plain(value: Any) -> Any:
    """A struct column's ``beam.Row`` (or the named tuple Beam decodes it to) as the list
    the runner's rows hold; anything else as is."""
    if isinstance(value, beam.Row):
        return list(value.as_dict().values())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return list(value)
    return value


def runner_row(row: Any, columns: OutputColumns) -> dict[str, Any]:
    """An output ``beam.Row`` as the runner's row (``window``, ``key``, ``start``/``end`` or
    ``time``/``event``, the aggregations), by where each column comes from; the other
    window kind's empty columns are left out."""
    out: dict[str, Any] = {"window": 0}
    for name, (kind, source) in zip(columns.names, columns.sources):
        value = getattr(row, name)
        if kind == "agg":
            out[source] = _plain(value)
        elif value is not None or kind in ("window", "key"):
            out[kind] = value
    return out


def output_columns_of(scenario: dict[str, Any]) -> OutputColumns:
    """The output columns of the scenario's query on Beam: ``(key, value)`` elements with
    the time in the element timestamp (key ``"key"``, time ``"time"``, no event fields)."""
    q = scenario["query"]
    query = parse_query({"windows": q["windows"], "aggregations": q["aggregations"]})
    return output_columns(query, key_names=["key"], time_name="time", event_fields=None)


def pairs_schema(query: dict[str, Any]) -> OutputSchema:
    """The output schema of ``query`` (the dict form) over untyped ``(key, value)``
    elements, for tests that build the ``DoFn`` themselves."""
    return output_schema(parse_query(query), InputShape("untyped", Any, None), None, None)


# ----------------------------------------------------------------------------- schema
#: Beam schema types (Python types) by logical type name (:mod:`tests.conformance.schema`)
_LOGICAL = ((np.int32, "int"), (int, "long"), (np.int64, "long"), (np.int16, "short"),
            (np.int8, "byte"), (float, "double"), (np.float64, "double"),
            (np.float32, "float"), (str, "string"), (bool, "bool"), (bytes, "binary"),
            (Timestamp, "time"))


def logical_type(t: Any) -> str:
    """A Beam schema field type as a logical type (``Optional`` dropped, sequences and rows
    recursively, ``typing.Any`` as ``any``; a type without a logical name as its own)."""
    t = base_type(t)
    if t is Any:
        return "any"
    if isinstance(t, RowTypeConstraint):
        return struct_of((name, logical_type(f)) for name, f in t._fields)
    if typing.get_origin(t) in (list, collections.abc.Sequence):
        return array_of(logical_type(typing.get_args(t)[0]))
    for cls, name in _LOGICAL:
        if t is cls:
            return name
    return f"beam:{t!r}"


def logical_schema(element_type: Any) -> list[Column]:
    """The output ``PCollection``'s element type (a ``RowTypeConstraint``) as
    ``(column, logical type)`` pairs, in order."""
    assert isinstance(element_type, RowTypeConstraint), element_type
    return [(name, logical_type(t)) for name, t in element_type._fields]


def input_type(feed: Feed) -> Any:
    """The element type the runners declare for their ``(key, value)`` elements: the key's
    type (``feed.key``), untyped values."""
    key = {"string": str, "long": int}.get(feed.key[1], Any)
    return typing.Tuple[key, Any]  # noqa: UP006 (Beam reads typing's form)


#: Python types of the logical types a typed feed's columns have
_PYTHON_TYPES = {"long": int, "double": float, "string": str, "bool": bool}


def typed_schema(scenario: dict[str, Any], feed: Feed) -> list[Column]:
    """The output schema of the scenario's query over ``beam.Row`` elements of ``feed``'s
    typed columns (``key=`` and ``time=`` naming its key and time; the value fields
    nullable), from a pipeline that is built, never run."""
    assert feed.fields is not None
    fixed = {feed.key[0], feed.time[0]}
    row = RowTypeConstraint.from_fields([
        (n, _PYTHON_TYPES[t] if n in fixed else typing.Optional[_PYTHON_TYPES[t]])  # noqa: UP045
        for n, t in feed.fields])
    q = scenario["query"]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    rows = pipeline | "Rows" >> beam.Create([]).with_output_types(row)
    out = rows | "Aggregate" >> SlidingAggregate(
        windows=q["windows"], aggregations=q["aggregations"],
        allowed_lateness=q.get("allowed_lateness", 0), nulls=q.get("nulls", "skip"),
        key=feed.key[0], time=feed.time[0])
    return logical_schema(out.element_type)


def _result(run: int, late_run: int, cutoff: int | None, columns: OutputColumns,
            reported: dict[str, Any]) -> dict[str, Any]:
    """Rows (those stamped before ``cutoff`` us when given) as the runner's rows, late
    counts, and the late events themselves (``late_events``: ``[key, time, value]``, the
    time from the element's timestamp); ``reported``: the output's ``schema``, ``feed`` and
    ``runner``."""
    rows = [runner_row(row, columns) for row, micros in sink.take(run)
            if cutoff is None or micros < cutoff]
    late_events = [[key, micros // 1000, value] for (key, value), micros in sink.take(late_run)]
    late = Counter(ev[0] for ev in late_events)
    return {"rows": rows, "late": dict(late), "late_events": late_events, **reported}


def beam_late_events(scenario: dict[str, Any]) -> list[list[Any]]:
    """Events whose time is behind the watermark when they are added (late for Beam)."""
    out = []
    watermark: float = -math.inf
    for step in scenario["steps"]:
        if "events" in step:
            for ev in step["events"]:
                micros = beam_timestamp(ev[1]).micros
                if micros != MIN_TIMESTAMP.micros and micros < watermark * 1000:
                    out.append(ev)
        else:
            w = step["watermark"]
            watermark = max(watermark, math.inf if w == "end" else w)
    return out


def batch_engine(scenario: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Every event through ``beam.Create`` and the ``FnApiRunner`` (batch)."""
    elements = [TimestampedValue((key, value), beam_timestamp(time))
                for key, time, value in _events(scenario)]
    feed = untyped_feed(scenario)
    run, late_run = sink.new_run(), sink.new_run()
    try:
        with beam.Pipeline(runner=FnApiRunner()) as p:
            events = p | "Events" >> beam.Create(elements, reshuffle=False).with_output_types(
                input_type(feed))
            out = events | "Aggregate" >> _transform(scenario, **options)
            _ = out.rows | "Rows" >> beam.ParDo(sink.Collect(run))
            _ = out.late | "Late" >> beam.ParDo(sink.Collect(late_run))
            reported = {"schema": logical_schema(out.rows.element_type), "feed": feed,
                        "runner": "Beam batch (FnApiRunner)"}
        return _result(run, late_run, None, output_columns_of(scenario), reported)
    finally:
        sink.discard(run, late_run)


def streaming_engine(scenario: dict[str, Any], **options: Any) -> dict[str, Any]:
    """The steps through a ``TestStream`` on the ``BundleBasedDirectRunner`` (streaming)."""
    stream = TestStream()
    watermark: Any = None
    ends = False
    for step in scenario["steps"]:
        if "events" in step:
            if step["events"]:
                stream.add_elements([TimestampedValue((key, value), beam_timestamp(time))
                                     for key, time, value in step["events"]])
            continue
        w = step["watermark"]
        if w == "end":
            ends = True
            stream.advance_watermark_to_infinity()
            break
        if watermark is None or w > watermark:
            watermark = w
            stream.advance_watermark_to(Timestamp(micros=w * 1000))
    feed = untyped_feed(scenario)
    run, late_run = sink.new_run(), sink.new_run()
    opts = PipelineOptions()
    opts.view_as(StandardOptions).streaming = True
    options.setdefault("timestamps", "emission")
    try:
        with beam.Pipeline(runner=BundleBasedDirectRunner(), options=opts) as p:
            events = p | "Events" >> stream.with_output_types(input_type(feed))
            out = events | "Aggregate" >> _transform(scenario, **options)
            _ = out.rows | "Rows" >> beam.ParDo(sink.Collect(run))
            _ = out.late | "Late" >> beam.ParDo(sink.Collect(late_run))
            reported = {"schema": logical_schema(out.rows.element_type), "feed": feed,
                        "runner": "Beam streaming (TestStream, BundleBasedDirectRunner)"}
        if ends:
            cutoff = None
        else:
            cutoff = MIN_TIMESTAMP.micros if watermark is None else watermark * 1000
        return _result(run, late_run, cutoff, output_columns_of(scenario), reported)
    finally:
        sink.discard(run, late_run)
