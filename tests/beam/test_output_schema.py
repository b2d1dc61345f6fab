"""Beam's output rows follow the one output schema (``adapters.engine.rows.output_columns``):
names and order from ``output_columns``, Beam types written out here (what the schema table
says: ``window`` int32, bounds and time int ms, key and event fields as declared, count
long, mean double, max of a double double...), schema'd ``beam.Row`` elements that
``apache_beam.dataframe.convert.to_dataframe`` accepts, values checked against brute force.

Query shapes: one sliding spec, one per-event (over) spec, several specs (over + sliding);
inputs: ``NamedTuple`` rows keyed by the transform (``key="origin"``), ``beam.Row`` rows,
``(key, value)`` pairs, dicts (fields unknown: ``<key>, <time>, event``)."""

from __future__ import annotations

import random
import typing
from typing import Any, NamedTuple

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp

from adapters import QuerySpecError, parse_query
from adapters.engine.rows import output_columns
from beam_adapter import SlidingAggregate, over, sliding
from tests.beam import sink

try:
    from apache_beam.dataframe.convert import to_dataframe, to_pcollection
except AttributeError:  # Beam 2.77's dataframe module does not import with pandas >= 2.4
    to_dataframe = to_pcollection = None
needs_dataframe = pytest.mark.skipif(
    to_dataframe is None, reason="apache_beam.dataframe needs pandas < 2.4 "
                                 "(requirements/beam.txt pins 2.3.3)")

Opt = typing.Optional


class Flight(NamedTuple):
    origin: str
    at: int
    delay: Opt[float]
    label: str


class Reading(NamedTuple):
    sensor: str
    ts: Timestamp
    v: int


AGGREGATIONS = {"worst": {"fn": "max", "field": "delay"},
                "n": {"fn": "count"},
                "mean_delay": {"fn": "mean", "field": "delay"},
                "who": {"fn": "argmax", "field": "delay", "result": "label"}}
#: the aggregations' Beam types (count long, mean double, max of a double, argmax's result)
AGG_TYPES = [("worst", Opt[float]), ("n", Opt[int]), ("mean_delay", Opt[float]),
             ("who", Opt[str])]
SHAPES: dict[str, tuple[list[Any], list[tuple[str, Any]]]] = {
    "sliding": ([sliding(3000, 1000)],
                [("origin", str), ("window_start", int), ("window_end", int), *AGG_TYPES]),
    "over": ([over(2000)],
             [("origin", str), ("at", int), ("delay", Opt[float]), ("label", str),
              *AGG_TYPES]),
    "several": ([over(2000), sliding(3000, 1000)],
                [("window", np.int32), ("origin", str), ("window_start", Opt[int]),
                 ("window_end", Opt[int]), ("at", Opt[int]), ("delay", Opt[float]),
                 ("label", Opt[str]), *AGG_TYPES]),
}


def flights(n: int = 60, seed: int = 5) -> list[Flight]:
    rng = random.Random(seed)
    return [Flight(rng.choice(["EWR", "JFK"]), rng.randrange(0, 20_000),
                   None if rng.random() < 0.2 else float(rng.randint(-10, 90)), f"f{i}")
            for i in range(n)]


def aggregate(windows: list[Any], **options: Any) -> SlidingAggregate:
    return SlidingAggregate(windows=windows, aggregations=AGGREGATIONS, key="origin",
                            time="at", **options)


def run(elements: list[Any], transform: SlidingAggregate) -> tuple[Any, list[Any]]:
    """(the output's element type, the rows)."""
    rows = sink.new_run()
    with beam.Pipeline(runner=FnApiRunner()) as p:
        out = p | beam.Create(elements, reshuffle=False) | transform
        _ = out | beam.ParDo(sink.Collect(rows))
    return out.element_type, [row for row, _ in sink.take(rows)]


def brute(events: list[Flight], start: int, end: int, origin: str) -> tuple[Any, ...]:
    """(worst, n, mean_delay, who) over the flights of ``origin`` in ``[start, end)``,
    arrival order breaking ties as the driver does (the oldest)."""
    inside = sorted((e for e in events if e.origin == origin and start <= e.at < end),
                    key=lambda e: e.at)
    delays = [e for e in inside if e.delay is not None]
    if not delays:
        return None, len(inside), None, None
    worst = max(e.delay for e in delays if e.delay is not None)
    who = next(e.label for e in delays if e.delay == worst)
    return worst, len(inside), sum(e.delay for e in delays if e.delay is not None) / len(
        delays), who


def expected_names(windows: list[Any], key: str = "origin", time: str = "at",
                   fields: tuple[str, ...] | None = Flight._fields) -> tuple[str, ...]:
    query = parse_query({"windows": windows, "aggregations": AGGREGATIONS})
    return output_columns(query, key_names=[key], time_name=time, event_fields=fields).names


@pytest.mark.parametrize("shape", list(SHAPES))
def test_names_order_and_types(shape: str) -> None:
    windows, types = SHAPES[shape]
    events = flights()
    element_type, rows = run(events, aggregate(windows))
    assert [name for name, _ in types] == list(expected_names(windows))
    assert list(element_type._fields) == types
    assert rows and all(list(row.as_dict()) == [n for n, _ in types] for row in rows)
    for row in rows:
        if getattr(row, "window_start", None) is not None:
            want = brute(events, row.window_start, row.window_end, row.origin)
        else:  # per-event: the event itself, then the last 2 s of its origin
            event = next(e for e in events if e.label == row.label)
            assert (row.origin, row.at, row.delay) == (event.origin, event.at, event.delay)
            want = brute(events, row.at - 2000, row.at + 1, row.origin)
        assert (row.worst, row.n, row.who) == (want[0], want[1], want[3])
        assert row.mean_delay == pytest.approx(want[2])


@needs_dataframe
@pytest.mark.parametrize("shape", list(SHAPES))
def test_to_dataframe_reads_the_rows(shape: str) -> None:
    """``to_dataframe`` accepts the output; the frame's columns are the schema's, and its
    values (read back with ``to_pcollection``) are the rows'."""
    assert to_dataframe is not None and to_pcollection is not None
    windows, types = SHAPES[shape]
    events = flights()
    _, rows = run(events, aggregate(windows))
    back = sink.new_run()
    with beam.Pipeline(runner=FnApiRunner()) as p:
        out = p | beam.Create(events, reshuffle=False) | aggregate(windows)
        frame = to_dataframe(out)
        assert list(frame.columns) == [n for n, _ in types]
        if shape == "several":
            assert str(frame.dtypes["window"]) == "int32"
        _ = (to_pcollection(frame, include_indexes=False)
             | beam.Map(lambda r: tuple(r)) | beam.ParDo(sink.Collect(back)))
    got = sorted((tuple(row for row, _ in sink.take(back))), key=repr)
    want = sorted((tuple(row.as_dict().values()) for row in rows), key=repr)
    assert len(got) == len(want) > 20
    for g, w in zip(got, want):
        assert [None if x != x else x for x in g] == [None if x != x else x for x in w]


def test_beam_rows_pairs_and_dicts() -> None:
    """beam.Row elements are keyed like NamedTuples; (key, beam.Row) pairs name the key
    "key"; dicts have no known fields: ``<key>, <time>, event``."""
    events = flights(20)
    as_rows = [beam.Row(origin=e.origin, at=e.at, delay=e.delay, label=e.label)
               for e in events]
    windows = [over(2000)]
    element_type, rows = run(as_rows, aggregate(windows))
    assert list(element_type._fields) == SHAPES["over"][1]
    pairs = [(r.origin, r) for r in as_rows]
    element_type, pair_rows = run(pairs, SlidingAggregate(
        windows=windows, aggregations=AGGREGATIONS, time="at"))
    names = expected_names(windows, key="key")
    assert names[:5] == ("key", "origin", "at", "delay", "label")
    assert [n for n, _ in element_type._fields] == list(names)
    assert sorted((r.key, r.at, r.n) for r in pair_rows) == sorted(
        (r.origin, r.at, r.n) for r in rows)
    # pairs with key=: the key column takes that name (here the value's own field). Types:
    # Beam infers pairs of rows with and without nulls as a Union, whose value fields it
    # merges to Any, so only the names are the rows'
    element_type, named_rows = run(pairs, SlidingAggregate(
        windows=windows, aggregations=AGGREGATIONS, key="origin", time="at"))
    assert [n for n, _ in element_type._fields] == [n for n, _ in SHAPES["over"][1]]
    assert sorted(named_rows, key=repr) == sorted(rows, key=repr)
    dicts = [e._asdict() for e in events]
    element_type, dict_rows = run(dicts, aggregate(windows))
    assert [n for n, _ in element_type._fields] == [
        "origin", "at", "event", "worst", "n", "mean_delay", "who"]
    assert element_type._fields[2][1] is Any
    assert sorted((r.origin, r.at, r.event["label"], r.n) for r in dict_rows) == sorted(
        (r.origin, r.at, r.label, r.n) for r in rows)


def test_timestamp_time_field_gives_timestamps() -> None:
    """A ``Timestamp`` time field: bounds and time are ``Timestamp`` values; the element
    timestamp (no ``time=``) gives int ms."""
    readings = [Reading("s", Timestamp(micros=t * 1000), t) for t in (100, 1500, 2500)]
    element_type, rows = run(readings, SlidingAggregate(
        windows=[over(1000), sliding(2000, 1000)], key="sensor", time="ts",
        aggregations={"total": {"fn": "sum", "field": "v"}}))
    assert list(element_type._fields) == [
        ("window", np.int32), ("sensor", str), ("window_start", Opt[Timestamp]),
        ("window_end", Opt[Timestamp]), ("ts", Opt[Timestamp]), ("v", Opt[int]),
        ("total", Opt[int])]
    starts = sorted(r.window_start for r in rows if r.window == 1)
    assert starts[0] == Timestamp(micros=-1_000_000)
    assert sorted((r.ts, r.total) for r in rows if r.window == 0) == [
        (Timestamp(micros=100_000), 100), (Timestamp(micros=1_500_000), 1500),
        (Timestamp(micros=2_500_000), 4000)]
    timed = [TimestampedValue(("s", {"v": r.v}), r.ts) for r in readings]
    element_type, _ = run(timed, SlidingAggregate(
        window=sliding(2000, 1000), aggregations={"total": {"fn": "sum", "field": "v"}}))
    assert list(element_type._fields)[:3] == [("key", Any), ("window_start", int),
                                              ("window_end", int)]


def test_late_rows_leave_unchanged() -> None:
    """With ``key=``, late elements come out of the side output as the rows that came in."""
    def at(ms: int) -> Timestamp:
        return Timestamp(micros=ms * 1000)

    early, late = Flight("EWR", 100, 1.0, "a"), Flight("EWR", 50, 2.0, "b")
    stream = (BeamTestStream()
              .add_elements([TimestampedValue(early, at(early.at))])
              .advance_watermark_to(at(1000))
              .add_elements([TimestampedValue(late, at(late.at))])
              .advance_watermark_to_infinity())
    rows, late_run = sink.new_run(), sink.new_run()
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner=BundleBasedDirectRunner(), options=options) as p:
        out = (p | stream.with_output_types(Flight)
               | aggregate([sliding(200, 200)], with_late_output=True))
        _ = out.rows | "Rows" >> beam.ParDo(sink.Collect(rows))
        _ = out.late | "Late" >> beam.ParDo(sink.Collect(late_run))
    assert [(r.window_start, r.n) for r, _ in sink.take(rows)] == [(0, 1)]
    assert sink.take(late_run) == [(late, 50_000)]


def test_row_input_mistakes_are_named_when_the_pipeline_is_built() -> None:
    p = beam.Pipeline(runner=FnApiRunner())
    source = p | beam.Create(flights(3))
    with pytest.raises(QuerySpecError, match=r"rows \['origin', 'at', 'delay', 'label'\]: "
                                             r"pass key=<field>"):
        _ = source | "No key" >> SlidingAggregate(window=sliding(2, 1),
                                                  aggregations=AGGREGATIONS)
    with pytest.raises(QuerySpecError, match="no field 'airport'"):
        _ = source | "Bad key" >> SlidingAggregate(window=sliding(2, 1), key="airport",
                                                   aggregations=AGGREGATIONS)
    with pytest.raises(QuerySpecError, match=r"^time: the query reads field 'ts', which the "):
        _ = source | "Bad time" >> SlidingAggregate(window=sliding(2, 1), key="origin",
                                                    time="ts", aggregations=AGGREGATIONS)
    with pytest.raises(QuerySpecError, match=r"^the query reads field 'name', which"):
        _ = source | "Bad result" >> SlidingAggregate(
            window=sliding(2, 1), key="origin", time="at", aggregations={
                "who": {"fn": "argmax", "field": "delay", "result": "name"}})
    with pytest.raises(ValueError, match="appear twice"):
        _ = source | "Clash" >> SlidingAggregate(window=over(2), key="origin", time="at",
                                                 aggregations={"delay": {"fn": "count"}})


@pytest.mark.parametrize("element, message", [
    ({"at": 1}, "has no field 'origin'"),
    (2.5, r"takes rows \(beam.Row, NamedTuple, dict\) with a field 'origin', or \(key, "
          r"value\) pairs"),
], ids=["a dict without the key", "a float"])
def test_untyped_elements_with_key_get_swags_message(element: Any, message: str) -> None:
    """Untyped elements (here: TimestampedValue) are checked one by one: a row must carry
    the key field; a (key, value) pair passes; anything else is named."""
    transform = SlidingAggregate(window=sliding(2, 1), key="origin",
                                 aggregations={"n": {"fn": "count"}})
    ok = [TimestampedValue({"origin": "a"}, 0.001), TimestampedValue(("a", {}), 0.002)]
    _, rows = run(ok, transform)
    assert sorted((r.origin, r.window_start, r.n) for r in rows) == [
        ("a", 0, 1), ("a", 1, 2), ("a", 2, 1)]
    with pytest.raises(Exception, match=message):
        run([*ok, TimestampedValue(element, 0.003)], transform)
