"""``flink_adapter.sliding_aggregate`` on real PyFlink jobs: Flink's own watermarks and timers,
declared output types, the late side output, bad input."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from typing import Any

import pytest
from pyflink.common import Row, Types
from pyflink.datastream.functions import AggregateFunction

import flink_adapter as fa
from swag_core.aggregations import Max
from tests.conformance.oracle import expected
from tests.conformance.runner import compare
from tests.flink.rows import driver_row

INPUT = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.DOUBLE()])


class MeanFunction(AggregateFunction):
    """A PyFlink ``AggregateFunction``: the mean, accumulator ``[sum, count]``."""

    def create_accumulator(self) -> list[float]:
        return [0.0, 0]

    def add(self, value: float, accumulator: list[float]) -> list[float]:
        accumulator[0] += value
        accumulator[1] += 1
        return accumulator

    def merge(self, acc_a: list[float], acc_b: list[float]) -> list[float]:
        acc_a[0] += acc_b[0]
        acc_a[1] += acc_b[1]
        return acc_a

    def get_result(self, accumulator: list[float]) -> float:
        return accumulator[0] / accumulator[1]


def test_real_watermarks_timers_and_types(flink_env: Any) -> None:
    """Streaming with Flink's own watermarks (``watermark=0``: bounded out-of-orderness 0,
    timestamps from the ``t`` field) and event-time timers: every row equals the oracle's.
    The events come in time order, so no event is late whenever Flink's periodic
    watermark happens to advance (measured: with ``from_collection`` it stays at
    ``Long.MIN_VALUE`` until the end of input, even across a 3 s pause upstream)."""
    events = [("a", t, float(t % 7)) for t in range(0, 10_000, 500)] + [("b", 4_000, 9.0)]
    events += [("a", t, float(t % 5)) for t in range(10_000, 14_000, 700)]
    env = flink_env(streaming=True)
    stream = env.from_collection([Row(*e) for e in events], INPUT)
    aggs = {"mx": {"fn": "max", "field": "v"}, "n": {"fn": "count"},
            "mc": {"fn": "maxcount", "field": "v"}, "total": {"fn": "sum", "field": "v"}}
    # A PyFlink AggregateFunction and a swag_core.Aggregation, against their built-in twins.
    custom = {"flink_mean": ("v", MeanFunction()), "core_max": ("v", Max())}
    twins = {"flink_mean": {"fn": "mean", "field": "v"}, "core_max": {"fn": "max", "field": "v"}}
    out = fa.sliding_aggregate(stream, key="k", time="t", watermark=0,
                               windows=[fa.sliding(2_000, 1_000), fa.over(1_500)],
                               aggregations={**aggs, **custom}, with_late_output=True)
    row_type = out.rows.get_type()
    outputs = [*aggs, *custom]
    assert row_type.get_field_names() == ["window", "k", "window_start", "window_end", "t",
                                          "v", *outputs]
    types = dict(zip(row_type.get_field_names(), row_type.get_field_types()))
    assert types["n"] == Types.LONG() and types["total"] == Types.DOUBLE()
    assert types["k"] == Types.STRING() and types["window"] == Types.INT()
    # One job for both outputs (each execute_and_collect runs the whole job again).
    both = out.rows.map(lambda r: ("row", r.as_dict()), Types.PICKLED_BYTE_ARRAY()).union(
        out.late.map(lambda r: ("late", tuple(r)), Types.PICKLED_BYTE_ARRAY()))
    results = list(both.execute_and_collect())
    late_rows = [item for kind, item in results if kind == "late"]
    got = []
    for kind, d in results:
        if kind != "row":
            continue
        d["mc"] = [d["mc"][0], d["mc"][1]]
        got.append(driver_row(d, key="k", time="t", fields=["k", "t", "v"],
                              aggregations=outputs))
    as_events = [[k, t, {"k": k, "t": t, "v": v}] for k, t, v in events]
    scenario = {"query": {"windows": [{"kind": "sliding", "range": 2_000, "slide": 1_000},
                                      {"kind": "over", "range": 1_500}],
                          "aggregations": {**aggs, **twins}, "allowed_lateness": 0},
                "steps": [{"events": as_events}, {"watermark": "end"}]}
    diff = compare(expected(scenario), {"rows": got, "late": {"a": len(late_rows)}})
    assert diff is None, diff


def test_kvs_layout_in_the_pairs_map_state(flink_env: Any) -> None:
    """A per-event window in the KVS layout (``swag_pairs`` ``MapState``, pages of pairs) on
    a real job, two keys alternating through a structure cache of one key, so each key's
    structure is reopened from Flink's map state again and again: the rows equal the
    oracle's."""
    events = [(k, t, float((t * 7919) % 10_007)) for t in range(0, 3_000, 3)
              for k in ("a", "b")]
    env = flink_env(streaming=True)
    stream = env.from_collection([Row(*e) for e in events], INPUT)
    aggs = {"mx": {"fn": "max", "field": "v"}}
    out = fa.sliding_aggregate(stream, key="k", time="t", watermark=0, window=fa.over(1_500),
                               aggregations=aggs, layout="kvs", max_cached_keys=1)
    assert out.get_type().get_field_names() == ["k", "t", "v", "mx"]
    got = [driver_row(dict(zip(["k", "t", "v", "mx"], r)), key="k", time="t",
                      fields=["k", "t", "v"], aggregations=["mx"])
           for r in out.execute_and_collect()]
    as_events = [[k, t, {"k": k, "t": t, "v": v}] for k, t, v in events]
    scenario = {"query": {"windows": [{"kind": "over", "range": 1_500}],
                          "aggregations": aggs, "allowed_lateness": 0},
                "steps": [{"events": as_events}, {"watermark": "end"}]}
    assert len(got) == len(events)
    diff = compare(expected(scenario), {"rows": got, "late": {}})
    assert diff is None, diff


NULLABLE = Types.ROW_NAMED(["k", "t", "n", "x"],
                           [Types.STRING(), Types.LONG(), Types.LONG(), Types.DOUBLE()])
NULL_AGGS = {"cnt": {"fn": "count"}, "n_n": {"fn": "count", "field": "n"},
             "total_n": {"fn": "sum", "field": "n"}, "max_n": {"fn": "max", "field": "n"},
             "mean_x": {"fn": "mean", "field": "x"}, "min_x": {"fn": "min", "field": "x"},
             "last_x": {"fn": "last", "field": "x"}, "sum_x": {"fn": "sum", "field": "x"}}


def test_nulls_skipped_by_default_with_typed_null_results(flink_env: Any) -> None:
    """Null LONG and DOUBLE fields and NaN reach the driver as missing values (the default
    ``nulls="skip"``): rows equal the oracle's, collected straight from the declared
    ``Row`` type, and a window whose field has no value gives typed nulls (``count`` of the
    field 0)."""
    nan = float("nan")
    events = [("a", 5, 2, None), ("a", 10, 4, 0.5), ("a", 20, None, nan),
              ("b", 30, None, None), ("b", 40, 7, 1.25), ("a", 120, None, nan),
              ("a", 150, None, None)]
    env = flink_env(streaming=True)
    stream = env.from_collection([Row(*e) for e in events], NULLABLE)
    rows = fa.sliding_aggregate(stream, key="k", time="t", watermark=0,
                                window=fa.tumbling(100), aggregations=NULL_AGGS)
    row_type = rows.get_type()
    names = row_type.get_field_names()
    types = dict(zip(names, row_type.get_field_types()))
    assert types["total_n"] == Types.LONG() and types["max_n"] == Types.LONG()
    assert types["mean_x"] == Types.DOUBLE() and types["sum_x"] == Types.DOUBLE()
    records = [dict(zip(names, r)) for r in rows.execute_and_collect()]
    empty = [d for d in records if d["k"] == "a" and d["window_start"] == 100]
    assert empty == [{"k": "a", "window_start": 100, "window_end": 200, "cnt": 2, "n_n": 0,
                      "total_n": None, "max_n": None, "mean_x": None, "min_x": None,
                      "last_x": None, "sum_x": None}], records
    got = [driver_row(d, key="k", time="t", fields=[], aggregations=list(NULL_AGGS))
           for d in records]
    scenario = {"query": {"windows": [{"kind": "tumbling", "size": 100}],
                          "aggregations": NULL_AGGS},
                "steps": [{"events": [[k, t, {"k": k, "t": t, "n": n, "x": x}]
                                      for k, t, n, x in events]}, {"watermark": "end"}]}
    diff = compare(expected(scenario), {"rows": got, "late": {}})
    assert diff is None, diff


def test_nulls_option_is_checked_when_built(flink_env: Any) -> None:
    env = flink_env(streaming=True)
    stream = env.from_collection([Row("a", 1, 1, 1.0)], NULLABLE)
    with pytest.raises(fa.QuerySpecError, match="nulls"):
        fa.sliding_aggregate(stream, key="k", time="t", window=fa.tumbling(100),
                             aggregations=NULL_AGGS, nulls="drop")


def test_bad_input_names_key_and_field(flink_env: Any) -> None:
    """``nulls="error"``: a null value is bad input, named by key and field, raised as
    swag's error by PyFlink's own ``execute_and_collect``."""
    env = flink_env(streaming=True)
    data = [Row("LAX", 10, 1.0), Row("LAX", 20, None)]
    stream = env.from_collection(data, INPUT)
    rows = fa.sliding_aggregate(stream, key="k", time="t", window=fa.tumbling(100),
                                aggregations={"mean_v": {"fn": "mean", "field": "v"}},
                                nulls="error")
    with pytest.raises(fa.BadEventError, match=r"^key 'LAX'.*'v'"):
        list(rows.execute_and_collect())


def test_table_in_table_out_with_timestamps(flink_env: Any) -> None:
    """A table with a ``TIMESTAMP(3)`` column and SQL NULLs in; a table with
    ``TIMESTAMP_LTZ(3)`` window bounds and typed aggregates out, equal to the oracle's rows
    (``LGA``'s later windows hold only a NULL delay: NULL aggregates, ``n_delay`` 0)."""
    import datetime as dt

    from pyflink.table import DataTypes, StreamTableEnvironment
    from pyflink.table.expressions import col

    env = flink_env(streaming=True)
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set_local_timezone("UTC")
    epoch = dt.datetime(2013, 1, 1)
    events = [("JFK", 0, 5), ("JFK", 70, 9), ("LGA", 30, 2), ("JFK", 130, -1),
              ("JFK", 130, 4), ("JFK", 150, None), ("LGA", 200, None)]
    table = t_env.from_elements(
        [(k, epoch + dt.timedelta(minutes=m), d) for k, m, d in events],
        DataTypes.ROW([DataTypes.FIELD("origin", DataTypes.STRING()),
                       DataTypes.FIELD("dep", DataTypes.TIMESTAMP(3)),
                       DataTypes.FIELD("delay", DataTypes.BIGINT())]))
    out = fa.sliding_aggregate_table(
        table, key="origin", time="dep", window=fa.sliding("2 hours", "1 hour"),
        aggregations={"worst": {"fn": "max", "field": "delay"}, "n": {"fn": "count"},
                      "total": {"fn": "sum", "field": "delay"},
                      "n_delay": {"fn": "count", "field": "delay"}})
    schema = str(out.get_resolved_schema())  # Flink's "(`origin` STRING, ...)" text
    names = ["origin", "window_start", "window_end", "worst", "n", "total", "n_delay"]
    assert list(out.get_resolved_schema().get_column_names()) == names, schema
    for column in ("`window_start` TIMESTAMP_LTZ(3)", "`window_end` TIMESTAMP_LTZ(3)",
                   "`worst` BIGINT", "`n` BIGINT", "`total` BIGINT", "`n_delay` BIGINT",
                   "`origin` STRING"):
        assert column in schema, schema
    utc_epoch = epoch.replace(tzinfo=dt.timezone.utc)
    # PyFlink 2.3 cannot collect TIMESTAMP_LTZ values into Python (its pickler fails on
    # Instant): the bounds are cast to TIMESTAMP(3) in the session time zone (UTC) first.
    bounds = ("window_start", "window_end")
    plain = out.select(*[col(n).cast(DataTypes.TIMESTAMP(3)).alias(n) if n in bounds
                         else col(n) for n in names])
    got = []
    with plain.execute().collect() as results:
        for r in results:
            d = dict(zip(names, r))
            for c in bounds:
                v = d[c] if d[c].tzinfo else d[c].replace(tzinfo=dt.timezone.utc)
                d[c] = (v - utc_epoch) // dt.timedelta(milliseconds=1)
            got.append(driver_row(d, key="origin", time="dep", fields=[],
                                  aggregations=names[3:]))
    scenario = {"query": {"windows": [{"kind": "sliding", "range": 7_200_000,
                                       "slide": 3_600_000}],
                          "aggregations": {"worst": {"fn": "max", "field": "delay"},
                                           "n": {"fn": "count"},
                                           "total": {"fn": "sum", "field": "delay"},
                                           "n_delay": {"fn": "count", "field": "delay"}}},
                "steps": [{"events": [[k, m * 60_000, {"delay": d}] for k, m, d in events]},
                          {"watermark": "end"}]}
    assert [d["worst"] for d in got if d["key"] == "LGA" and d["n_delay"] == 0] == [None] * 2
    diff = compare(expected(scenario), {"rows": got, "late": {}})
    assert diff is None, diff


def test_late_events_against_flinks_own_paced_watermarks(flink_env: Any) -> None:
    """A paced source (the ``datagen`` connector, 50 rows/s) whose rowtime watermark
    (``WATERMARK FOR ts AS ts``) Flink advances while the input flows. Events 100, 150 and
    200 are 120 s (120 rows, 2.4 s of input) behind the others. How far Flink's periodic
    watermark lags depends on the machine's load (measured: with a 40-row gap only some of
    them were late; with 120, all three on a quiet machine, two under load), so: only those
    events may be late, at least one must be (the watermark advanced mid-stream and the
    side output works), and the rows must be exactly the oracle's over the accepted events
    (a late event counted as accepted, or the reverse, changes a window's sum and count).
    The metric counter ``swag.late_events``, read from the job's REST API while the job
    runs (100 more rows after the last far-behind one), must equal the side output's
    count."""
    from pyflink.table import StreamTableEnvironment

    port = _free_port()
    env = flink_env(streaming=True, config={
        "rest.port": str(port), "metrics.fetcher.update-interval": "200",
        "python.fn-execution.bundle.time": "100"})
    t_env = StreamTableEnvironment.create(env)
    when = ("CASE WHEN seq % 50 = 0 AND seq BETWEEN 100 AND 200 THEN seq * 1000 - 120000 "
            "ELSE seq * 1000 END")
    t_env.execute_sql(f"""
        CREATE TEMPORARY TABLE paced (
            seq BIGINT,
            k AS 'k' || CAST(seq % 2 AS STRING),
            v AS CAST(seq AS DOUBLE),
            ts AS TO_TIMESTAMP_LTZ({when}, 3),
            WATERMARK FOR ts AS ts
        ) WITH ('connector' = 'datagen', 'rows-per-second' = '50',
                'fields.seq.kind' = 'sequence', 'fields.seq.start' = '1',
                'fields.seq.end' = '300')""")
    stream = t_env.to_data_stream(t_env.sql_query("SELECT k, v, ts, seq FROM paced"))
    aggs = {"total": {"fn": "sum", "field": "v"}, "n": {"fn": "count"}}
    out = fa.sliding_aggregate(stream, key="k", window=fa.sliding(10_000, 5_000),
                               aggregations=aggs, with_late_output=True)
    both = out.rows.map(lambda r: ("row", r.as_dict()), Types.PICKLED_BYTE_ARRAY()).union(
        out.late.map(lambda r: ("late", int(r[3])), Types.PICKLED_BYTE_ARRAY()))
    with _LateMetric(port) as metric:
        results = list(both.execute_and_collect())
    late = sorted(item for kind, item in results if kind == "late")
    assert late and set(late) <= {100, 150, 200}, late
    assert metric.values and max(metric.values) == len(late), (metric.values, late)
    events = []
    for seq in range(1, 301):
        if seq not in late:
            # as `when` above: a far-behind event that was not late counts at its own time
            t = seq * 1000 - 120_000 if seq % 50 == 0 and 100 <= seq <= 200 else seq * 1000
            events.append([f"k{seq % 2}", t, {"v": float(seq)}])
    scenario = {"query": {"windows": [{"kind": "sliding", "range": 10_000, "slide": 5_000}],
                          "aggregations": aggs},
                "steps": [{"events": events}, {"watermark": "end"}]}
    got = [driver_row(item, key="k", time="time", fields=[], aggregations=list(aggs))
           for kind, item in results if kind == "row"]
    diff = compare(expected(scenario), {"rows": got, "late": {}})
    assert diff is None, diff


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _LateMetric:
    """Polls the running job's REST API (every 0.2 s, in a thread) for the operator metric
    ``<subtask>.<operator>.swag.late_events``; ``values``: every value read."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.values: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> _LateMetric:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
            return json.load(r)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            try:
                for job in self._get("/jobs")["jobs"]:
                    base = f"/jobs/{job['id']}/vertices"
                    for vertex in self._get(f"/jobs/{job['id']}")["vertices"]:
                        ids = [m["id"] for m in self._get(f"{base}/{vertex['id']}/metrics")
                               if m["id"].endswith(f"{fa.METRICS_GROUP}.late_events")]
                        if ids:
                            got = self._get(f"{base}/{vertex['id']}/metrics?get={ids[0]}")
                            self.values.append(int(got[0]["value"]))
            except (OSError, ValueError, KeyError, IndexError):
                continue  # not up yet, or the job is finishing
