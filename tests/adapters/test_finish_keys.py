"""``WindowDriver.finish_keys`` (many finished keys in one call) gives every key's rows of
``finish`` (one key per call), which the planning tests hold to brute force: through the
cross-key runtime (a sliding mean of floats over at least ``MIN_BATCH`` events) and through
the per-key lanes (a non-commutative ``collect``, an argmax, over and count windows); the
caches hold none of the keys after."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import WindowDriver
from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.crosskey.columnar import MIN_BATCH, ArrowEvents

from .util import assert_same_rows

WINDOWS = st.sampled_from([
    {"kind": "sliding", "range": 6, "slide": 2},
    {"kind": "tumbling", "size": 5},
    {"kind": "over", "range": 4},
    {"kind": "count", "size": 3},
])
PER_KEY_AGGS = {"n": {"fn": "count"}, "ids": {"fn": "collect", "field": "id"},
                "amx": {"fn": "argmax", "field": "v", "result": "id"}}


@st.composite
def events(draw: Any, floats: bool, least: int = 1) -> list[tuple[Any, int, dict[str, Any]]]:
    n = draw(st.integers(least, least + 60))
    value = st.floats(-1e6, 1e6) if floats else st.integers(-50, 50)
    return [(draw(st.sampled_from(["a", "b", 7, ("x", 1)])), draw(st.integers(-10, 40)),
             {"v": draw(value | st.none()) if not floats else draw(value), "id": i})
            for i in range(n)]


def _per_key(driver: WindowDriver, evs: list[tuple[Any, int, dict[str, Any]]]
             ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for key in dict.fromkeys(k for k, _, _ in evs):
        rows += driver.finish(key, [(t, v) for k, t, v in evs if k == key]).rows
    return rows


@settings(max_examples=40, deadline=None)
@given(WINDOWS, events(floats=False))
def test_per_key_lanes_give_finish_rows(window: dict[str, Any],
                                        evs: list[tuple[Any, int, dict[str, Any]]]) -> None:
    driver = WindowDriver({"windows": [window], "aggregations": PER_KEY_AGGS})
    assert_same_rows(driver.finish_keys(evs).rows, _per_key(driver, evs), str(window))


@settings(max_examples=30, deadline=None)
@given(events(floats=True, least=MIN_BATCH))
def test_cross_key_runtime_gives_finish_rows(evs: list[tuple[Any, int, dict[str, Any]]],
                                             ) -> None:
    query = {"windows": [{"kind": "sliding", "range": 6, "slide": 2}],
             "aggregations": {"m": {"fn": "mean", "field": "v"}, "n": {"fn": "count"}}}
    driver = WindowDriver(query)
    assert driver.batch_runtime
    got = driver.finish_keys(evs).rows
    assert not driver.key_store.cached("a") and not driver._batch._keys  # type: ignore[union-attr]
    per_key = WindowDriver(query)
    per_key._batch = None  # type: ignore[assignment]  # the per-key lanes only
    assert_same_rows(got, _per_key(per_key, evs))


def test_the_cross_key_runtime_takes_a_call_of_small_keys(monkeypatch: Any) -> None:
    """Keys of 2 events each, MIN_BATCH of them: one cross-key call for all."""
    calls: list[bool] = []
    real = BatchRuntime.process
    monkeypatch.setattr(BatchRuntime, "process",
                        lambda self, *a: calls.append(real(self, *a)) or calls[-1])
    driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 5}],
                           "aggregations": {"m": {"fn": "max", "field": "v"}}})
    evs = [(k, t, {"v": float(k * t)}) for k in range(MIN_BATCH) for t in (1, 7)]
    rows = driver.finish_keys(evs).rows
    assert calls == [True] and len(rows) == 2 * MIN_BATCH


@settings(max_examples=30, deadline=None)
@given(events(floats=True, least=MIN_BATCH))
def test_columns_in_give_the_rows_of_tuples_without_making_them(
        evs: list[tuple[Any, int, dict[str, Any]]]) -> None:
    """Finished keys handed over as columns (:class:`ArrowEvents`, the Spark batch path's
    numeric events) give the rows of the same events as tuples, and the cross-key runtime
    reads the columns: the tuples are never made."""
    import numpy as np

    query = {"windows": [{"kind": "sliding", "range": 6, "slide": 2}],
             "aggregations": {"m": {"fn": "mean", "field": "v"}, "n": {"fn": "count"}}}
    ordered = sorted(evs, key=lambda e: str(e[0]))  # each key's events together, in order
    keys = list(dict.fromkeys(k for k, _, _ in ordered))
    made: list[bool] = []

    def rows() -> list[tuple[Any, int, dict[str, Any]]]:
        made.append(True)
        return [(k, t, {"v": v["v"]}) for k, t, v in ordered]

    columns = ArrowEvents(keys, np.array([keys.index(k) for k, _, _ in ordered], np.int16),
                          np.array([t for _, t, _ in ordered], np.int64), ("v",),
                          [np.array([v["v"] for _, _, v in ordered], np.float64)], (False,),
                          rows)
    got = WindowDriver(query).finish_keys(columns).rows
    assert not made
    assert_same_rows(got, WindowDriver(query).finish_keys(rows()).rows)
