"""Streaming pre-slicing (Spark's stateful aggregation per key and slice, then the driver over
slice rows) against the per-event streaming path and brute force: the same rows where no
event arrives between the previous and the current micro-batch's watermark, Spark's
lateness rule where one does (the difference ``docs/spark.md`` describes), late events
counted, and a restart from the checkpoint."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from spark_adapter import sliding, sliding_aggregate
from tests.spark.streaming import _write_file

T0 = 1_000_000_000_000  # epoch ms (Spark reports watermark 0 as "none yet": stay far above)
R, S = 400, 100
INF = float("inf")
#: micro-batches of (key, time - T0, v, x). b1's a@300 is behind the current watermark (380)
#: but not the previous one (none): late on the event path, aggregated by Spark's rule;
#: b2's a@100 is behind both (late either way). The last batch pushes the watermark past
#: every window of a and b.
BATCHES: list[list[tuple[str, int, Any, Any]]] = [
    [("a", 10, 5, 1.5), ("a", 150, 7, None), ("b", 120, None, -0.0), ("a", 380, 1, 2.5)],
    [("a", 390, 3, float("nan")), ("b", 395, 2, INF), ("a", 300, 11, 9.0), ("a", 620, 4, 0.5)],
    [("a", 100, 13, 7.0), ("b", 700, 6, 2.0), ("a", 650, 2, -1.0)],
    [("end", 10_000, 0, 0.0)],
]
AGGS = {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"},
        "xmax": {"fn": "max", "field": "x"}, "xmin": {"fn": "min", "field": "x"}}


def _write(directory: str, batches: list[list[tuple[str, int, Any, Any]]], first: int = 0
           ) -> None:
    os.makedirs(directory, exist_ok=True)
    for i, batch in enumerate(batches, first):
        _write_file(directory, i, [{"k": k, "t": T0 + t, "v": v, "x": x}
                                   for k, t, v, x in batch])


def _run(spark, src: str, ckpt: str, out: str, **kwargs: Any) -> list[dict[str, Any]]:
    """One query to the end of the files there are; its progress reports."""
    df = (spark.readStream.schema("k string, t long, v long, x double, o long")
          .option("maxFilesPerTrigger", 1).json(src))
    result = sliding_aggregate(df, key="k", time="t", window=sliding(R, S), aggregations=AGGS,
                               watermark="0 seconds", **kwargs)
    query = (result.writeStream.format("parquet").option("path", out)
             .option("checkpointLocation", ckpt).outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return [p for p in query.recentProgress]


def _rows(spark, out: str) -> list[tuple[Any, ...]]:
    return sorted((r.k, r.window_start - T0, r.window_end - T0, r.n, r.mx, repr(r.xmax),
                   repr(r.xmin)) for r in spark.read.parquet(out).collect() if r.k != "end")


def _brute(previous_watermark: bool) -> list[tuple[Any, ...]]:
    """The windows by definition. An event of micro-batch N is late when its time is below
    the watermark of batch N (the event path) or of batch N - 1 (Spark's rule,
    ``previous_watermark``); a batch's watermark is the latest time of the batches before
    it (delay 0; none before the first)."""
    kept = []
    latest: list[int | None] = [None]
    for batch in BATCHES:
        latest.append(max([t for _, t, _, _ in batch] + [latest[-1] or -math.inf]))
    for n, batch in enumerate(BATCHES):
        wm = latest[n - 1] if previous_watermark and n > 0 else latest[n]
        kept += [e for e in batch if (wm is None or e[1] >= wm) and e[0] != "end"]
    rows = []
    for k, s in sorted({(k, t // S * S - j * S) for k, t, _, _ in kept for j in range(R // S)}):
        inside = [e for e in kept if e[0] == k and s <= e[1] < s + R]
        vs = [e[2] for e in inside if e[2] is not None]
        xs = [e[3] for e in inside if e[3] is not None and e[3] == e[3]]
        rows.append((k, s, s + R, len(inside), max(vs, default=None),
                     repr(max(xs, default=None)), repr(min(xs, default=None))))
    return rows


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """Both paths over :data:`BATCHES` (pre-sliced: ``presliced=True``; the default runs
    per event), and the pre-sliced path stopped after two micro-batches and restarted from
    its checkpoint for the rest."""
    tmp = tmp_path_factory.mktemp("presliced_stream")
    src = str(tmp / "in")
    _write(src, BATCHES)
    got = {}
    for name, presliced in (("sliced", True), ("events", None)):
        progress = _run(spark, src, str(tmp / f"{name}_ckpt"), str(tmp / name),
                        presliced=presliced)
        got[name] = (_rows(spark, str(tmp / name)), progress)
    part = str(tmp / "part")
    _write(part, BATCHES[:2])
    _run(spark, part, str(tmp / "restart_ckpt"), str(tmp / "restart"), presliced=True)
    _write(part, BATCHES[2:], first=2)
    _run(spark, part, str(tmp / "restart_ckpt"), str(tmp / "restart"), presliced=True)
    got["restart"] = (_rows(spark, str(tmp / "restart")), [])
    return got


def _operators(progress: list[dict[str, Any]]) -> set[str]:
    return {op["operatorName"] for p in progress for op in p["stateOperators"]}


def test_pre_sliced_rows_follow_sparks_lateness_rule_the_event_path_its_own(runs):
    sliced, progress = runs["sliced"]
    events, event_progress = runs["events"]
    assert "stateStoreSave" in _operators(progress)
    assert "stateStoreSave" not in _operators(event_progress)  # the default: per event
    assert events == _brute(previous_watermark=False)
    assert sliced == _brute(previous_watermark=True)
    # a@300 is the one difference: its windows hold one more event pre-sliced
    differ = {(r[0], r[1]) for r in set(sliced) ^ set(events)}
    assert differ == {("a", s) for s in (0, 100, 200, 300)}


def test_late_events_are_counted_on_both_paths(runs):
    _, progress = runs["sliced"]
    _, event_progress = runs["events"]
    dropped = sum(op.get("numRowsDroppedByWatermark", 0) for p in progress
                  for op in p["stateOperators"] if op["operatorName"] == "stateStoreSave")
    late = sum(int(p["observedMetrics"]["swag"]["late_events"]) for p in event_progress
               if "swag" in (p.get("observedMetrics") or {}))
    assert (dropped, late) == (1, 2)  # a@100 both ways; a@300 on the event path only


def test_restart_from_checkpoint_gives_the_uninterrupted_rows(runs):
    assert runs["restart"][0] == runs["sliced"][0]


@pytest.mark.parametrize("kwargs, reason", [
    ({"allowed_lateness": 100}, "allowed_lateness"),
    ({"late_rows": "return"}, "late_rows"),
    ({"watermark": None}, "no watermark="),
    ({"window": {"kind": "over", "range": 100}}, "not sliding"),
])
def test_presliced_true_says_why_a_stream_cannot(spark, tmp_path, kwargs, reason):
    df = spark.readStream.schema("k string, t long, v long, x double").json(str(tmp_path))
    call = {"key": "k", "time": "t", "window": sliding(R, S), "aggregations": AGGS,
            "watermark": "0 seconds", **kwargs}
    with pytest.raises(ValueError, match=reason):
        sliding_aggregate(df, presliced=True, **call)


def test_a_null_time_fails_the_query_as_on_the_event_path(spark, tmp_path):
    src = str(tmp_path / "in")
    os.makedirs(src)
    _write_file(src, 0, [{"k": "a", "t": T0 + 5, "v": 1, "x": 1.0},
                         {"k": "zz", "t": None, "v": 2, "x": 2.0}])
    with pytest.raises(Exception,
                       match=r"BadEventError: key 'zz': event time None \(field 't'\) is null"):
        _run(spark, src, str(tmp_path / "ckpt"), str(tmp_path / "out"), presliced=True)


def test_order_by_breaks_time_ties_of_zeros_as_the_event_path_does(spark, tmp_path):
    """With ``order_by`` the slice rows carry no order-by column (their partials took the
    order into account: the sign of a slice's oldest zero, by time, then ``order_by``) and
    give the event path's rows."""
    src = str(tmp_path / "in")
    os.makedirs(src)
    _write_file(src, 0, [{"k": "c", "t": T0 + 500, "v": 1, "x": 0.0, "o": 2},
                         {"k": "c", "t": T0 + 500, "v": 2, "x": -0.0, "o": 1},
                         {"k": "d", "t": T0 + 530, "v": 3, "x": 0.0, "o": 0},
                         {"k": "d", "t": T0 + 520, "v": 4, "x": -0.0, "o": 9}])
    _write_file(src, 1, [{"k": "end", "t": T0 + 10_000, "v": 0, "x": 0.0, "o": 0}])
    got = {}
    for name, presliced in (("sliced", True), ("events", None)):
        progress = _run(spark, src, str(tmp_path / f"{name}_ckpt"), str(tmp_path / name),
                        presliced=presliced, order_by="o")
        assert ("stateStoreSave" in _operators(progress)) == (name == "sliced")
        got[name] = _rows(spark, str(tmp_path / name))
    expected = [(k, s, s + R, 2, mx, "-0.0", "-0.0") for k, mx in (("c", 2), ("d", 4))
                for s in range(200, 600, S)]
    assert got["sliced"] == got["events"] == expected
