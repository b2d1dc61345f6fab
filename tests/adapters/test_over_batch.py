"""The cross-key OVER runtime (``adapters/crosskey/over_batch.py``) changes nothing
observable: the scenarios of ``test_batch_runtime`` (batches with watermarks that advance,
stand still, regress or end; late events; ``advance_keys``; restarts from snapshots;
``drop_cache``; per-key calls; irregular batches; bounded key caches) with one OVER window,
driven in lockstep through ``WindowDriver(q)`` and the per-key path, same rows bit for bit,
same late events, timers, errors and ``info``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import WindowDriver
from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.over_batch import OverBatchRuntime
from tests.adapters.test_batch_runtime import (
    BATCH_OPS,
    FIELD,
    FNS,
    KEYS,
    MIXED_OPS,
    Scenario,
    _bounded,
    _check,
    _lockstep,
)

np = pytest.importorskip("numpy")


@pytest.fixture(autouse=True)
def over_calls(monkeypatch: pytest.MonkeyPatch) -> Iterable[list[int]]:
    """Counts the calls the OVER runtime handled: every test must have made some."""
    calls = [0]
    apply = BatchRuntime._apply

    def counted(self: BatchRuntime, *args: Any) -> None:
        if isinstance(self, OverBatchRuntime):
            calls[0] += 1
        apply(self, *args)

    monkeypatch.setattr(BatchRuntime, "_apply", counted)
    yield calls
    assert calls[0] > 0, "the OVER runtime handled no call: nothing was compared"


@st.composite
def over_scenarios(draw: Any, fn: str, kinds: list[str], max_ops: int) -> Scenario:
    r = draw(st.sampled_from([0, 1, 7, 40, 300]))
    query = {"windows": [{"kind": "over", "range": r}],
             "aggregations": {draw(st.sampled_from(["out", FIELD])): {"fn": fn,
                                                                     "field": FIELD}},
             "allowed_lateness": draw(st.sampled_from([0, 0, 1, 9, 40]))}
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique_by=repr))
    seeds = st.integers(0, 2**32 - 1)
    ops = draw(st.lists(st.tuples(st.sampled_from(kinds), seeds), max_size=max_ops))
    ops.insert(draw(st.integers(0, len(ops))), ("batch", draw(seeds)))
    values = draw(st.sampled_from(["wide", "ties"] if fn in ("max", "min") else
                                  ["exact", "small", "cancel", "wide"]))
    return Scenario(query, keys, ops, values, draw(st.sampled_from([-30, 0, 40])),
                    draw(st.sampled_from([0, 1_700_000_000_000])))


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_over_batches_match_the_per_key_path(fn: str, data: Any) -> None:
    _check(data.draw(over_scenarios(fn, BATCH_OPS, max_ops=7), label="scenario"))


@pytest.mark.parametrize("fn", FNS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_over_interleaved_calls_restarts_and_bad_batches_match(fn: str, data: Any) -> None:
    _check(data.draw(over_scenarios(fn, MIXED_OPS, max_ops=10), label="scenario"))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_over_with_drop_cache_or_a_bounded_cache(data: Any) -> None:
    fn = data.draw(st.sampled_from(FNS), label="fn")
    sc = data.draw(over_scenarios(fn, BATCH_OPS, max_ops=6), label="scenario")
    if data.draw(st.booleans()):
        _check(sc, drop_after_each_call=True)
    else:
        fast, reference, within_bound = _bounded(data.draw(st.integers(1, 3)))
        _check(sc, fast=fast, reference=reference, after_each_call=within_bound)


def test_which_queries_take_the_over_runtime() -> None:
    def covered(windows: Any, aggs: dict[str, Any], **kw: Any) -> bool:
        d = WindowDriver({"windows": windows, "aggregations": aggs}, **kw)
        return isinstance(d._batch, OverBatchRuntime)

    mx = {"m": {"fn": "max", "field": "x"}}
    over = [{"kind": "over", "range": 5}]
    assert covered(over, mx)
    assert not covered(over, mx, columnar=False)
    assert not covered(over, mx, algorithm="two_stacks")
    assert not covered(over, {**mx, "n": {"fn": "count"}})
    assert not covered(over, {"v": {"fn": "variance", "field": "x"}})
    assert not covered([*over, {"kind": "over", "range": 9}], mx)
    # a batch it takes, then the end of input: one row per event, the frame's max
    d = WindowDriver({"windows": over, "aggregations": mx})
    events = [("k", t, {"x": float(t % 7)}) for t in range(64)]
    assert not d.process_batch(events).rows
    rows = d.advance_keys(["k"], "end").rows
    assert [r["m"] for r in rows] == [max(float(u % 7) for u in range(max(0, t - 5), t + 1))
                                      for t in range(64)]


@pytest.mark.parametrize("fn", FNS)
def test_missing_and_infinite_values_pending_in_the_per_key_path(fn: str) -> None:
    """A key whose per-key runtime holds a NaN (a missing value, skipped) or an infinity is
    taken over (or left to the per-key path) with the same rows."""
    query = {"windows": [{"kind": "over", "range": 10}],
             "aggregations": {"out": {"fn": fn, "field": FIELD}}, "allowed_lateness": 0}
    for odd in (float("nan"), float("inf"), -float("inf")):
        pairs = [(5, {FIELD: odd}), (6, {FIELD: 2.0}), (6, {FIELD: -0.0})]
        batch = [("a", t, {FIELD: float(t % 5)}) for t in range(7, 80)]
        _lockstep(query, [("process", "a", pairs, None), ("batch", batch, None, "list"),
                          ("advance", ["a"], 40, "list"), ("advance", ["a"], "end", "list")])


def test_a_batch_of_one_tuple_key() -> None:
    query = {"windows": [{"kind": "over", "range": 5}],
             "aggregations": {"out": {"fn": "max", "field": FIELD}}, "allowed_lateness": 0}
    batch = [(("t", 1), t, {FIELD: float(t % 3)}) for t in range(70)]
    _lockstep(query, [("batch", batch, None, "list"), ("advance", [("t", 1)], "end", "list")])
