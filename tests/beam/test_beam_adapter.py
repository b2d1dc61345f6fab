"""beam_adapter: time conversions, the state views, and pipelines on the DirectRunner's
runners (batch: ``FnApiRunner``; streaming: ``TestStream`` on the ``BundleBasedDirectRunner``).
The conformance corpus runs in ``test_beam_conformance.py``."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.metrics import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.transforms.window import FixedWindows, TimestampedValue
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Duration, Timestamp

from adapters import BadEventError, MemoryStateBackend, QuerySpecError, WindowDriver
from adapters.query.windows import duration_ms
from beam_adapter import SlidingAggregate, _time, count_window, over, sliding, tumbling
from beam_adapter.state import BagLogState, OrderedLogState
from tests.beam import sink
from tests.beam.engine import pairs_schema
from tests.conformance.runner import error_problem


def tv(key: Any, time: int, value: Any) -> TimestampedValue:
    return TimestampedValue((key, value), Timestamp(micros=time * 1000))


def run_batch(elements: list[Any], transform: SlidingAggregate, runner: Any = None
              ) -> tuple[list[tuple[dict[str, Any], int]], list[Any], Any]:
    """(rows with their timestamps in us, late (key, value)s, the pipeline result)."""
    rows, late = sink.new_run(), sink.new_run()
    p = beam.Pipeline(runner=runner if runner is not None else FnApiRunner())
    out = p | beam.Create(elements, reshuffle=False) | transform
    if transform.with_late_output:
        _ = out.late | "Late" >> beam.ParDo(sink.Collect(late))
        out = out.rows
    _ = out | "Rows" >> beam.ParDo(sink.Collect(rows))
    result = p.run()
    result.wait_until_finish()
    return sink.take(rows), [e for e, _ in sink.take(late)], result


def counter(result: Any, name: str) -> int:
    found = result.metrics().query(MetricsFilter().with_namespace("swag").with_name(name))
    return sum(c.committed or 0 for c in found["counters"])


# ----------------------------------------------------------------------------- time
def test_timestamps_convert_exactly() -> None:
    assert _time.timestamp_ms(Timestamp(micros=1_234_000)) == 1234
    assert _time.timestamp_ms(Timestamp(micros=-5_000)) == -5
    with pytest.raises(BadEventError) as err:
        _time.timestamp_ms(Timestamp(micros=1_234_001), key="k")
    assert err.value.field == "timestamp" and err.value.key == "k"
    # float seconds are truncated by Beam: refused, with the reason in the message
    with pytest.raises(BadEventError, match="float seconds"):
        _time.timestamp_ms(Timestamp.of(256.229))
    with pytest.raises(BadEventError, match="no event timestamp"):
        _time.timestamp_ms(MIN_TIMESTAMP, key="k")


def test_times_and_durations() -> None:
    assert _time.to_ms(dt.datetime(1970, 1, 1, 0, 0, 1, 5000)) == 1005
    assert _time.to_ms(dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == 0
    assert _time.to_ms(dt.timedelta(minutes=2)) == 120_000
    assert _time.to_ms(Duration(seconds=3)) == 3000
    assert _time.to_ms(Timestamp(micros=7000)) == 7
    assert _time.to_ms("12") == "12"  # left to the driver's parser
    with pytest.raises(ValueError):
        _time.to_ms(dt.timedelta(microseconds=1500))
    assert duration_ms(dt.timedelta(hours=1), "range") == 3_600_000
    assert duration_ms(Duration(seconds=90), "range") == 90_000
    assert duration_ms("1 hour", "range") == 3_600_000
    with pytest.raises(TypeError, match="range"):
        duration_ms(object(), "range")
    with pytest.raises(ValueError, match="whole number"):
        duration_ms(Duration(micros=1500), "range")
    assert sliding(Duration(seconds=60), dt.timedelta(seconds=10)) == {
        "kind": "sliding", "range": 60_000, "slide": 10_000, "offset": 0}
    assert tumbling(5)["size"] == 5 and over(7)["range"] == 7
    assert count_window(3, 2) == {"kind": "count", "size": 3, "every": 2}


@pytest.mark.parametrize("n", [-10**9, -1001, -1, 0, 1, 999, 1000, 1001, 10**12])
def test_timer_mapping_round_trip(n: int) -> None:
    t = _time.timer_micros(n)
    assert t is not None
    assert _time.fired_watermark(Timestamp(micros=t)) == n
    # Beam fires once wm > t; the smallest such watermark, in ms, is n
    assert -(-(t + 1) // 1000) == n
    assert _time.timer_micros(10**16) is None  # beyond the global window: end timer only


# ----------------------------------------------------------------------------- state
class FakeValue:
    def __init__(self) -> None:
        self.v: Any = None

    def read(self) -> Any:
        return self.v

    def write(self, v: Any) -> None:
        self.v = v


class FakeOrderedList:
    """Beam's OrderedListState contract: (Timestamp, value) sorted by timestamp."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, Any]] = []
        self.n = 0

    def add(self, item: tuple[Timestamp, Any]) -> None:
        ts, value = item
        self.items.append((ts.micros, self.n, value))
        self.n += 1
        self.items.sort(key=lambda x: (x[0], x[1]))

    def read(self) -> list[tuple[Timestamp, Any]]:
        return [(Timestamp(micros=m), v) for m, _, v in self.items]

    def clear_range(self, lo: Timestamp, hi: Timestamp) -> None:
        self.items = [x for x in self.items if not lo.micros <= x[0] < hi.micros]


class FakeBag:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, v: Any) -> None:
        self.items.append(v)

    def read(self) -> list[Any]:
        return list(self.items)

    def clear(self) -> None:
        self.items = []


@pytest.mark.parametrize("kind", ["ordered", "bag"])
def test_state_views_against_the_reference_backend(kind: str) -> None:
    query = {"windows": [sliding(300, 100), over(150), count_window(4, 2)],
             "aggregations": {"s": {"fn": "sum", "field": "v"},
                              "ids": {"fn": "collect", "field": "id"}},
             "allowed_lateness": 50}
    rng = random.Random(7)
    cells: dict[str, tuple[FakeValue, Any]] = defaultdict(
        lambda: (FakeValue(), FakeOrderedList() if kind == "ordered" else FakeBag()))
    view_cls = OrderedLogState if kind == "ordered" else BagLogState
    beam_driver, ref_driver = WindowDriver(query), WindowDriver(query)
    ref = MemoryStateBackend()
    got: list[Any] = []
    want: list[Any] = []
    w = 0
    for step in range(300):
        key = rng.choice("ab")
        if rng.random() < 0.7:
            t = w + rng.randint(-120, 200)
            ev = ((t, {"v": rng.randint(0, 9), "id": step}),)
            out_b = beam_driver.process(key, ev, view_cls(*cells[key]))
            out_r = ref_driver.process(key, ev, ref.key_state(key))
        else:
            w += rng.randint(0, 150)
            out_b = beam_driver.advance_watermark(key, w, view_cls(*cells[key]))
            out_r = ref_driver.advance_watermark(key, w, ref.key_state(key))
        got += out_b.rows
        want += out_r.rows
        assert out_b.timers == out_r.timers and out_b.late == out_r.late
        if step % 50 == 49:
            beam_driver.drop_cache()  # the next calls rebuild from the Beam-state views
    for key in "ab":
        got += beam_driver.advance_watermark(key, "end", view_cls(*cells[key])).rows
        want += ref_driver.advance_watermark(key, "end", ref.key_state(key)).rows
        # everything was released and trimmed: the log holds no more events than needed
        assert len(list(view_cls(*cells[key]).read_events())) == len(ref.key_state(key))
    assert got == want and len(got) > 100


# ----------------------------------------------------------------------------- batch
class Concat(beam.CombineFn):  # type: ignore[misc]
    """A non-commutative CombineFn: strings in window order."""

    def create_accumulator(self) -> str:
        return ""

    def add_input(self, acc: str, x: str) -> str:
        return acc + x

    def merge_accumulators(self, accs: Any) -> str:
        return "".join(accs)

    def extract_output(self, acc: str) -> str:
        return acc


def brute(events: list[tuple[str, int, dict[str, Any]]], r: int, s: int
          ) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Events per (key, window start), in time then arrival order."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for key, t, v in sorted(events, key=lambda e: e[1]):
        start = (t - r) // s * s + s
        while start <= t:
            out[(key, start)].append(v)
            start += s
    return out


def test_batch_pipeline_windows_combinefns_and_timestamps() -> None:
    rng = random.Random(3)
    events = [(rng.choice(["x", "y"]), rng.randint(0, 2000), {}) for _ in range(300)]
    for i, (_, _, v) in enumerate(events):
        v.update(v=rng.randint(-5, 20), c="abcdefghij"[i % 10])
    transform = SlidingAggregate(
        windows=[sliding(400, 100), over(250)],
        aggregations={"mean": ("v", beam.combiners.MeanCombineFn()),
                      "letters": ("c", Concat()),
                      "n": {"fn": "count"}},
        with_late_output=True)
    rows, late, result = run_batch([tv(k, t, v) for k, t, v in events], transform)
    assert late == []
    assert rows[0][0].__class__ is beam.Row and list(rows[0][0].as_dict()) == [
        "window", "key", "window_start", "window_end", "time", "event", "mean", "letters", "n"]
    windows = {(r.key, r.window_start): (r, us) for r, us in rows if r.window == 0}
    expected = brute(events, 400, 100)
    assert set(windows) == set(expected)
    for (key, start), vals in expected.items():
        row, micros = windows[(key, start)]
        assert row.window_end == start + 400 and row.n == len(vals)
        assert row.time is None and row.event is None
        assert row.mean == pytest.approx(sum(v["v"] for v in vals) / len(vals))
        assert row.letters == "".join(v["c"] for v in vals)
        assert micros == (start + 400) * 1000 - 1  # IntervalWindow.max_timestamp()
    per_event = [(r, us) for r, us in rows if r.window == 1]
    assert len(per_event) == len(events)
    assert (sorted((r.key, r.time, r.event["v"], r.event["c"]) for r, _ in per_event)
            == sorted((k, t, v["v"], v["c"]) for k, t, v in events))
    for row, micros in per_event:
        assert micros == row.time * 1000 and row.window_start is None
        peers = [v for k, t, v in events if k == row.key and row.time - 250 <= t <= row.time]
        assert row.n == len(peers)
    assert counter(result, "rows") == len(rows)
    assert counter(result, "late_events") == 0


def test_time_extractors_and_windowed_input() -> None:
    base = dt.datetime(2024, 5, 1, 12, 0)
    start = _time.to_ms(base)
    # values must be storable (JSON-like): the time as ms, and as an ISO string
    events = [("k", {"at": start + s * 1000, "iso": (base + dt.timedelta(seconds=s)).isoformat(),
                     "v": s}) for s in (0, 30, 59, 61, 200)]
    # with time=..., element timestamps are ignored: give them something unrelated, and put
    # the input in fixed windows, which the transform replaces by the global window
    elements = [TimestampedValue(e, Timestamp(micros=1_000_000)) for e in events]
    for time in ("at", lambda v: dt.datetime.fromisoformat(v["iso"])):
        rows_run = sink.new_run()
        with beam.Pipeline(runner=FnApiRunner()) as p:
            _ = (p | beam.Create(elements, reshuffle=False)
                 | beam.WindowInto(FixedWindows(10))
                 | SlidingAggregate(window=tumbling(dt.timedelta(minutes=1)),
                                    aggregations={"total": {"fn": "sum", "field": "v"}},
                                    time=time)
                 | beam.ParDo(sink.Collect(rows_run)))
        rows = sorted((r.window_start, r.total) for r, _ in sink.take(rows_run))
        assert rows == [(start, 89), (start + 60_000, 61), (start + 180_000, 200)]


def test_bad_input_fails_the_pipeline_naming_key_and_field() -> None:
    transform = SlidingAggregate(window=tumbling(100), aggregations={"m": {"fn": "max",
                                                                           "field": "v"}})
    with pytest.raises(Exception) as err:
        run_batch([tv("a", 1, {"v": 1}), tv("b", 2, {"w": 1})], transform)
    # the runner re-raises the BadEventError (its message extended with the step name)
    assert error_problem({"class": "BadEventError", "key": "b", "field": "v"}, err.value) is None
    extract = SlidingAggregate(window=tumbling(100), aggregations={"n": {"fn": "count"}},
                               time="ts")
    with pytest.raises(Exception, match="no time field 'ts'"):
        run_batch([tv("a", 1, {"v": 1})], extract)
    with pytest.raises(Exception, match="not a whole number of milliseconds"):
        run_batch([TimestampedValue(("a", {"v": 1}), 0.0015)], transform)


@pytest.mark.parametrize("element", [2.5, ("a", 1, {"v": 1})], ids=["a float", "a triple"])
def test_elements_that_are_not_pairs_get_swags_message(element: Any) -> None:
    transform = SlidingAggregate(window=tumbling(100), aggregations={"n": {"fn": "count"}})
    with pytest.raises(Exception, match=r"takes \(key, value\) pairs, got .*key the "
                                        r"elements first"):
        run_batch([TimestampedValue(element, 0.001)], transform)


def test_construction_errors() -> None:
    with pytest.raises(QuerySpecError, match=r"windows\[0\]\.slide"):
        SlidingAggregate(window={"kind": "sliding", "range": 10, "slide": 20},
                         aggregations={"n": {"fn": "count"}})
    with pytest.raises(QuerySpecError, match=r"aggregations\.m"):
        SlidingAggregate(window=tumbling(10), aggregations={"m": {"fn": "nope"}})
    with pytest.raises(ValueError, match="exactly one"):
        SlidingAggregate(window=tumbling(10), windows=[tumbling(10)],
                         aggregations={"n": {"fn": "count"}})
    with pytest.raises(ValueError, match="state"):
        SlidingAggregate(window=tumbling(10), aggregations={"n": {"fn": "count"}},
                         state="map")
    with pytest.raises(TypeError, match=r"aggregations must be a mapping .* got a list"):
        SlidingAggregate(window=tumbling(10), aggregations=[{"fn": "count"}])


def test_bag_state_and_default_direct_runner_agree() -> None:
    rng = random.Random(11)
    elements = [tv(rng.choice("pq"), rng.randint(-500, 500), {"v": rng.randint(0, 9)})
                for _ in range(200)]
    results = []
    for state, runner in (("ordered_list", None), ("bag", None), ("auto", "DirectRunner")):
        transform = SlidingAggregate(window=sliding(200, 50), aggregations={
            "s": {"fn": "sum", "field": "v"}, "ids": {"fn": "collect", "field": "v"}},
            state=state)
        rows, _, _ = run_batch(elements, transform, runner)
        results.append(sorted((r.key, r.window_start, r.s, tuple(r.ids)) for r, _ in rows))
    assert results[0] == results[1] == results[2] and len(results[0]) > 20


# ----------------------------------------------------------------------------- streaming
def run_stream(stream: BeamTestStream, transform: SlidingAggregate
               ) -> tuple[list[tuple[dict[str, Any], int]], list[Any], Any]:
    rows, late = sink.new_run(), sink.new_run()
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    p = beam.Pipeline(runner=BundleBasedDirectRunner(), options=options)
    out = p | stream | transform
    _ = out.rows | "Rows" >> beam.ParDo(sink.Collect(rows))
    _ = out.late | "Late" >> beam.ParDo(sink.Collect(late))
    result = p.run()
    result.wait_until_finish()
    return sink.take(rows), sink.take(late), result


def test_streaming_late_events_side_output_counter_and_emission_timestamps() -> None:
    stream = (BeamTestStream()
              .add_elements([tv("a", 100, {"v": 1}), tv("a", 150, {"v": 2})])
              .advance_watermark_to(Timestamp(micros=1_000_000))   # [0, 200) is emitted
              .add_elements([tv("a", 1_500, {"v": 4})])
              .advance_watermark_to(Timestamp(micros=2_000_000))   # [1400, 1600) is emitted
              .add_elements([tv("a", 50, {"v": 8}), tv("a", 2_100, {"v": 16})])
              .advance_watermark_to_infinity())
    transform = SlidingAggregate(window=tumbling(200), aggregations={
        "s": {"fn": "sum", "field": "v"}}, timestamps="emission", with_late_output=True)
    rows, late, _ = run_stream(stream, transform)
    assert sorted((r.window_start, r.s) for r, _ in rows) == [(0, 3), (1400, 4), (2000, 16)]
    # the event at 50 arrived after key a's timer for [0, 200) had fired: late, with its
    # original timestamp, never aggregated
    assert late == [(("a", {"v": 8}), 50_000)]
    # (the BundleBasedDirectRunner loses user metrics of bundles with timer callbacks: the
    # counters are checked in test_dofn_timers_and_counters)
    stamps = {r.window_start: us for r, us in rows}
    assert stamps[0] == 199_999      # end - 1 us: the wake timer (at 199 ms) is not later
    assert stamps[1400] == 1_599_999
    # emitted at the end of input, by the wake timer (199... us) or the end timer
    assert stamps[2000] in (2_199_999, _time.GLOBAL_MAX_MICROS)


# ----------------------------------------------------------------------------- the DoFn
class FakeTimer:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def set(self, ts: Timestamp) -> None:
        self.calls.append(ts.micros)

    def clear(self) -> None:
        self.calls.append("clear")


class FakeCounter:
    def __init__(self) -> None:
        self.n = 0

    def inc(self, n: int = 1) -> None:
        self.n += n


def test_dofn_timers_and_counters() -> None:
    """The DoFn's translation, called directly: one wake timer per key, rewritten only when
    the driver's next timer changes, the end timer once per key, late events to the side
    output and the counter."""
    from apache_beam.pvalue import TaggedOutput

    from beam_adapter import dofn_class

    transform = SlidingAggregate(window=tumbling(200), aggregations={"n": {"fn": "count"}})
    dofn = dofn_class("ordered_list", "test")(transform.query, algorithm=None,
                                              max_cached_keys=None, time=None,
                                              wake_timers=True, timestamps="window",
                                              schema=pairs_schema(transform.query))
    dofn.setup()
    dofn._late_counter, dofn._rows_counter = FakeCounter(), FakeCounter()
    meta, log, wake, end = FakeValue(), FakeOrderedList(), FakeTimer(), FakeTimer()

    def element(t: int) -> list[Any]:
        return list(dofn._on_element(("a", {"v": 1}), Timestamp(micros=t * 1000), meta, log,
                                     wake, end))

    assert element(10) == [] and element(20) == []
    assert wake.calls == [199_000]            # N = 200, set once (memo)
    assert end.calls == [_time.GLOBAL_MAX_MICROS]  # once per key
    assert element(250) == [] and wake.calls == [199_000]
    rows = list(dofn._on_wake("a", Timestamp(micros=199_000), meta, log, wake))
    assert [(r.value.window_start, r.value.n, r.timestamp.micros) for r in rows] == [
        (0, 2, 199_999)]
    assert wake.calls == [199_000, 399_000]   # the fired timer is replaced by the next
    out = element(150)                        # 150 < W = 200: late
    assert len(out) == 1 and isinstance(out[0], TaggedOutput) and out[0].tag == "late"
    assert out[0].value == ("a", {"v": 1}) and dofn._late_counter.n == 1
    rows = list(dofn._on_end("a", Timestamp(micros=_time.GLOBAL_MAX_MICROS), meta, log, wake))
    assert [(r.value.window_start, r.value.n) for r in rows] == [(200, 1)]
    assert wake.calls[-1] == "clear" and dofn._rows_counter.n == 2
    # a state the memo did not write (restored, or written by another worker): the timer
    # is set again even though the driver's next timer is the same
    meta2, log2, wake2 = FakeValue(), FakeOrderedList(), FakeTimer()
    list(dofn._on_element(("b", {}), Timestamp(micros=5_000), meta2, log2, wake2, end))
    dofn._armed["b"] = (b"stale", 199_000)
    list(dofn._on_element(("b", {}), Timestamp(micros=6_000), meta2, log2, wake2, end))
    assert wake2.calls == [199_000, 199_000]


def test_nulls_mode_skips_by_default_and_is_validated() -> None:
    values = [tv("a", 1, {"v": None}), tv("a", 2, {"v": float("nan")}), tv("a", 3, {"v": 4})]
    skip = SlidingAggregate(window=tumbling(100), aggregations={
        "m": {"fn": "max", "field": "v"}, "n": {"fn": "count", "field": "v"}})
    rows = run_batch(values, skip)[0]
    assert [(r.m, r.n) for r, _ in rows] == [(4, 1)]
    strict = SlidingAggregate(window=tumbling(100), nulls="error",
                              aggregations={"m": {"fn": "max", "field": "v"}})
    with pytest.raises(Exception) as err:
        run_batch(values, strict)
    assert error_problem({"class": "BadEventError", "key": "a", "field": "v"}, err.value) is None
    with pytest.raises(QuerySpecError, match="nulls"):
        SlidingAggregate(window=tumbling(100), nulls="ignore",
                         aggregations={"m": {"fn": "max", "field": "v"}})
