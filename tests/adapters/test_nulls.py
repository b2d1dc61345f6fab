"""Missing values (``None``, NaN): SQL semantics by default (``nulls="skip"``), the strict
behaviour with ``nulls="error"``; every path of the driver (column kernels, the NumPy batch
runtime, per-event lifts) against the conformance oracle's independent definition."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import END_OF_INPUT, BadEventError, QuerySpecError, WindowDriver, parse_query
from adapters.driver.kernels import kernel_for
from adapters.query.specs import is_missing, parse_aggregation
from swag_core import Aggregation
from tests.conformance.driver_engine import MODES, DriverEngine
from tests.conformance.runner import check

FNS = ["count", "sum", "mean", "min", "max", "argmax", "argmin", "maxcount", "variance",
       "geomean", "first", "last", "collect"]
KERNEL_FNS = ["sum", "mean", "min", "max"]
WINDOWS = [{"kind": "tumbling", "size": 20}, {"kind": "sliding", "range": 40, "slide": 10},
           {"kind": "over", "range": 15}, {"kind": "count", "size": 3}]


@st.composite
def null_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A random query over a field with nulls and NaN (ints or floats, positive for
    geomean), events in one or two batches (large ones take the batch paths)."""
    floats = draw(st.booleans())
    present = st.integers(1, 9).map(lambda i: i / 4 if floats else i)
    x = st.one_of(present, st.just(None), st.just(math.nan)) if floats else \
        st.one_of(present, st.just(None))
    n = draw(st.sampled_from([5, 30, 150]))
    events = [[draw(st.sampled_from(["a", "b"])), draw(st.integers(0, 100)),
               {"v": draw(x), "id": i}] for i in range(n)]
    kernels = draw(st.booleans())  # only fns and windows of the column kernels' mode
    fns = draw(st.lists(st.sampled_from(KERNEL_FNS if kernels else FNS), min_size=1,
                        max_size=3, unique=True))
    aggs = {f"o{j}": {"fn": fn, "field": "v", **({"result": "id"} if fn.startswith("arg")
                                                   else {})}
            for j, fn in enumerate(fns)}
    if draw(st.booleans()):
        aggs["n"] = {"fn": "count"}
    cut = draw(st.integers(0, n))
    return {"name": "nulls", "description": "random nulls", "tags": ["nulls"],
            "query": {"windows": [draw(st.sampled_from(WINDOWS[:2] if kernels else WINDOWS))],
                      "aggregations": aggs,
                      "allowed_lateness": 0},
            "steps": [{"events": events[:cut]}, {"watermark": 50},
                      {"events": events[cut:]}, {"watermark": "end"}],
            "expect_error": None}


@settings(max_examples=60, deadline=None)
@given(null_scenarios(), st.sampled_from(MODES))
def test_driver_equals_the_oracle_with_nulls(scenario: dict[str, Any], mode: str) -> None:
    outcome = check(DriverEngine(mode), scenario)
    assert outcome.ok, outcome.message


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-4, 4, allow_nan=False), st.none(), st.just(math.nan)),
                min_size=64, max_size=300),
       st.sampled_from(["max", "min", "sum", "mean"]))
def test_batch_runtime_and_per_key_path_agree(xs: list[Any], fn: str) -> None:
    """A batch the columnar intake declines (a missing value) gives what the per-key path
    gives, before and after batches that the batch runtime takes."""
    query = {"windows": [{"kind": "sliding", "range": 40, "slide": 10}],
             "aggregations": {"o": {"fn": fn, "field": "v"}}}
    clean = [(k, t, {"v": float(t % 7)}) for t in range(0, 80) for k in ("a", "b")]
    dirty = [("ab"[i % 2], 80 + i % 50, {"v": x}) for i, x in enumerate(xs)]
    later = [(k, t, {"v": float(t % 5)}) for t in range(130, 200) for k in ("a", "b")]
    runs = []
    for columnar in (True, False):
        driver = WindowDriver(query, columnar=columnar)
        rows = []
        for batch, wm in ((clean, 60), (dirty, 120), (later, END_OF_INPUT)):
            rows += driver.process_batch(batch, watermark=wm).rows
        runs.append([repr(sorted(r.items())) for r in rows])
    assert runs[0] == runs[1]


def _rows(query: dict[str, Any], events: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Rows of one key's events, all released at the end."""
    driver = WindowDriver(query)
    rows = driver.process("k", events).rows
    return rows + driver.advance_watermark("k", END_OF_INPUT).rows


def test_count_field_sum_and_types() -> None:
    q = {"windows": [{"kind": "tumbling", "size": 10}],
         "aggregations": {"n": {"fn": "count"}, "nv": {"fn": "count", "field": "v"},
                          "s": {"fn": "sum", "field": "v"}, "m": {"fn": "max", "field": "v"}}}
    rows = _rows(q, [(1, {"v": 2}), (2, {"v": None}), (3, {"v": 5}), (12, {"v": None})])
    assert rows == [
        {"window": 0, "key": "k", "start": 0, "end": 10, "n": 3, "nv": 2, "s": 7, "m": 5},
        {"window": 0, "key": "k", "start": 10, "end": 20, "n": 1, "nv": 0, "s": None,
         "m": None}]
    assert type(rows[0]["s"]) is int  # ints with a null stay ints


def test_kernel_mode_per_event_path_skips_nan() -> None:
    """A batch with an irregular time takes the per-event intake, which must hold NaN as
    missing for the kernels too."""
    q = {"windows": [{"kind": "tumbling", "size": 10}],
         "aggregations": {"a": {"fn": "mean", "field": "v"}, "m": {"fn": "max", "field": "v"}}}
    assert WindowDriver(q)._intake.kernels is not None
    rows = _rows(q, [(1, {"v": math.nan}), ("2", {"v": 4.0}), (3, {"v": None}),
                     (4, {"v": 2.0}), (15, {"v": math.nan})])
    assert [(r["a"], r["m"]) for r in rows] == [(3.0, 4.0), (None, None)]


def test_nulls_error_names_key_and_field_and_count_field_counts_nan() -> None:
    q = {"windows": [{"kind": "tumbling", "size": 10}], "nulls": "error",
         "aggregations": {"m": {"fn": "max", "field": "v"}}}
    with pytest.raises(BadEventError, match=r"key 'k'.*'v'") as info:
        WindowDriver(q).process("k", [(1, {"v": 2}), (2, {"v": None})])
    assert (info.value.key, info.value.field) == ("k", "v")
    strict = {"windows": [{"kind": "tumbling", "size": 10}], "nulls": "error",
              "aggregations": {"nv": {"fn": "count", "field": "v"}}}
    events = [(1, {"v": math.nan}), (2, {"v": None})]
    assert _rows(strict, events)[0]["nv"] == 1
    skip = {**strict, "nulls": "skip"}
    assert _rows(skip, events)[0]["nv"] == 0


@pytest.mark.parametrize("bad", ["ignore", None, True])
def test_nulls_mode_is_validated(bad: Any) -> None:
    with pytest.raises(QuerySpecError, match="nulls"):
        parse_query({"windows": [{"kind": "tumbling", "size": 10}], "nulls": bad,
                     "aggregations": {"m": {"fn": "max", "field": "v"}}})


def test_custom_aggregations_get_values_as_they_are() -> None:
    seen = Aggregation(combine=lambda a, b: a + b, identity=(), lift=lambda x: (x,),
                       name="seen")
    q = {"windows": [{"kind": "tumbling", "size": 10}],
         "aggregations": {"c": ("v", seen), "l": {"fn": "collect", "field": "v"}}}
    row = _rows(q, [(1, {"v": None}), (2, {"v": 1})])[0]
    assert row["c"] == (None, 1) and row["l"] == [1]


def test_skipping_outputs_keep_their_kernels() -> None:
    for fn in ("max", "min", "sum", "mean"):
        spec = parse_aggregation("o", {"fn": fn, "field": "v"})
        assert spec.skips_missing and kernel_for(spec) is not None, fn


def test_skipping_sum_stays_invertible() -> None:
    """A skipping sum keeps subtract (its exact partial counts its values, so it knows when
    none is left): ``soe`` runs it, and evicting the last value gives null again."""
    q = {"windows": [{"kind": "count", "size": 2}],
         "aggregations": {"s": {"fn": "sum", "field": "v"}}}
    driver = WindowDriver(q, algorithm="soe")
    events = [(t, {"v": v}) for t, v in enumerate([1.5, None, None, 2, None])]
    rows = driver.process("k", events).rows + driver.advance_watermark("k", END_OF_INPUT).rows
    assert [r["s"] for r in sorted(rows, key=lambda r: r["end"])] == [1.5, 1.5, None, 2, 2]
    spec = parse_aggregation("s", {"fn": "sum", "field": "v"})
    assert spec.aggregation.invertible


def test_is_missing() -> None:
    from decimal import Decimal

    import numpy as np

    assert all(map(is_missing, [None, math.nan, np.float32("nan"), Decimal("NaN"),
                                Decimal("sNaN")]))
    assert not any(map(is_missing, [0, 0.0, "", "nan", [], np.array([math.nan]), math.inf]))
