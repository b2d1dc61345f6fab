"""The oracle on hand-computed cases, the corpus's schema and coverage, the generators."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import corpus, make_scenarios
from .oracle import BloomExpected, OracleInputError, aggregate, expected, window_starts

END = "end"


def scenario(windows: list[dict[str, Any]], aggs: dict[str, dict[str, Any]],
             steps: list[Any], lateness: int = 0) -> dict[str, Any]:
    return {"name": "t", "description": "test", "tags": ["single-key"],
            "query": {"windows": windows, "aggregations": aggs, "allowed_lateness": lateness},
            "steps": steps, "expect_error": None}


def ev(key: Any, t: Any, **value: Any) -> list[Any]:
    return [key, t, value]


COUNT = {"n": {"fn": "count"}}
IDS = {"ids": {"fn": "collect", "field": "id"}}


# --------------------------------------------------------------------------- windows
def test_window_starts_hand_computed() -> None:
    # R=1000, S=300: t=650 lies in [0,1000), [300,1300), [600,1600) (and [-300,700)).
    assert list(window_starts(650, 1000, 300, 0)) == [-300, 0, 300, 600]
    # Boundaries: t == start is inside, t == start + R is not.
    assert list(window_starts(600, 300, 300, 0)) == [600]
    assert list(window_starts(599, 300, 300, 0)) == [300]
    # Offset 50, slide 200, range 600: starts ..., -550, -350, -150, 50, 250, ...;
    # [-550, 50) holds 49 but not 50.
    assert list(window_starts(49, 600, 200, 50)) == [-550, -350, -150]
    assert list(window_starts(50, 600, 200, 50)) == [-350, -150, 50]
    # Negative time and negative offset.
    assert list(window_starts(-1, 400, 400, -150)) == [-150]
    assert list(window_starts(-151, 400, 400, -150)) == [-550]


@settings(max_examples=300)
@given(t=st.integers(-5000, 5000), slide=st.integers(1, 300), extra=st.integers(0, 700),
       offset=st.integers(-1000, 1000))
def test_window_starts_match_enumeration(t: int, slide: int, extra: int, offset: int) -> None:
    range_ = slide + extra
    # Every integer s near t that is a window start (s = offset + j*slide) and holds t.
    brute = [s for s in range(t - range_ - slide, t + slide + 1)
             if (s - offset) % slide == 0 and s <= t < s + range_]
    assert list(window_starts(t, range_, slide, offset)) == brute


# A second, slower formulation: scan every window start in a wide range and filter every
# event, for random small scenarios; the oracle must agree with it exactly.
def _naive_sliding(events: list[tuple[int, int, int]], range_: int, slide: int, offset: int,
                   final: float) -> list[tuple[int, int, list[int]]]:
    rows = []
    times = [t for t, _i, _v in events]
    for start in range(min(times, default=0) - range_ - slide, max(times, default=0) + slide):
        if (start - offset) % slide:
            continue  # not a window start
        members = [i for (t, i, _v) in sorted(events) if start <= t < start + range_]
        if members and final >= start + range_:
            rows.append((start, start + range_, members))
    return rows


@settings(max_examples=150)
@given(times=st.lists(st.integers(-300, 800), max_size=12), slide=st.integers(1, 150),
       extra=st.integers(0, 200), offset=st.integers(-200, 200),
       final=st.one_of(st.just(END), st.integers(-400, 1200)))
def test_sliding_matches_naive(times: list[int], slide: int, extra: int, offset: int,
                               final: Any) -> None:
    range_ = slide + extra
    sc = scenario([{"kind": "sliding", "range": range_, "slide": slide, "offset": offset}],
                  IDS, [{"events": [ev("a", t, id=i) for i, t in enumerate(times)]},
                        {"watermark": final}])
    got = [(r["start"], r["end"], r["ids"]) for r in expected(sc)["rows"]]
    events = [(t, i, 0) for i, t in enumerate(times)]
    assert got == _naive_sliding(events, range_, slide, offset,
                                 math.inf if final == END else final)


@settings(max_examples=150)
@given(times=st.lists(st.integers(0, 60), max_size=12), range_=st.integers(0, 30),
       final=st.one_of(st.just(END), st.integers(0, 70)))
def test_over_matches_naive(times: list[int], range_: int, final: Any) -> None:
    sc = scenario([{"kind": "over", "range": range_}], IDS,
                  [{"events": [ev("a", t, id=i) for i, t in enumerate(times)]},
                   {"watermark": final}])
    fin = math.inf if final == END else final
    order = sorted(range(len(times)), key=lambda i: (times[i], i))
    want = [(times[i], [j for j in order if times[i] - range_ <= times[j] <= times[i]])
            for i in order if fin > times[i]]
    assert [(r["time"], r["ids"]) for r in expected(sc)["rows"]] == want


# --------------------------------------------------------------------------- hand cases
def test_tumbling_sum_hand_computed() -> None:
    sc = scenario([{"kind": "tumbling", "size": 10}], {"s": {"fn": "sum", "field": "v"}},
                  [{"events": [ev("a", 0, v=1), ev("a", 9, v=2), ev("a", 10, v=4),
                               ev("b", 25, v=8)]}, {"watermark": END}])
    assert expected(sc) == {"rows": [
        {"window": 0, "key": "a", "start": 0, "end": 10, "s": 3},
        {"window": 0, "key": "a", "start": 10, "end": 20, "s": 4},
        {"window": 0, "key": "b", "start": 20, "end": 30, "s": 8}], "late": {}}


def test_late_classification_and_boundaries() -> None:
    # L = 0, W = 100: 99 late, 100 on time. L = 20, W = 100: 79 late, 80 on time.
    steps = [{"watermark": 100},
             {"events": [ev("a", 99, id=1), ev("a", 100, id=2), ev("a", 79, id=3),
                         ev("a", 80, id=4)]}, {"watermark": END}]
    strict = expected(scenario([{"kind": "tumbling", "size": 1000}], IDS, steps))
    assert strict == {"rows": [{"window": 0, "key": "a", "start": 0, "end": 1000,
                                "ids": [2]}], "late": {"a": 3}}
    lenient = expected(scenario([{"kind": "tumbling", "size": 1000}], IDS, steps, lateness=20))
    assert lenient["late"] == {"a": 1}
    assert lenient["rows"][0]["ids"] == [4, 1, 2]


def test_watermark_regression_is_ignored() -> None:
    steps = [{"watermark": 50}, {"watermark": 10},
             {"events": [ev("a", 20, id=1), ev("a", 50, id=2)]}, {"watermark": 60}]
    res = expected(scenario([{"kind": "tumbling", "size": 10}], IDS, steps))
    # 20 is late (W stayed 50); [50, 60) is emitted at W = 60.
    assert res == {"rows": [{"window": 0, "key": "a", "start": 50, "end": 60, "ids": [2]}],
                   "late": {"a": 1}}


def test_emission_needs_the_watermark() -> None:
    steps = [{"events": [ev("a", 5, id=1), ev("a", 15, id=2)]}, {"watermark": 19}]
    assert expected(scenario([{"kind": "tumbling", "size": 10}], IDS, steps))["rows"] == [
        {"window": 0, "key": "a", "start": 0, "end": 10, "ids": [1]}]
    # With lateness 5, W - L = 14 >= 10 still emits [0, 10); W = 14 would not.
    steps[-1] = {"watermark": 14}
    res = expected(scenario([{"kind": "tumbling", "size": 10}], IDS, steps, lateness=5))
    assert res["rows"] == []
    # No watermark at all: nothing emitted, nothing late.
    assert expected(scenario([{"kind": "tumbling", "size": 10}], IDS, steps[:1])) == {
        "rows": [], "late": {}}


def test_over_peers_and_emission() -> None:
    steps = [{"events": [ev("a", 10, id="x"), ev("a", 5, id="p"), ev("a", 10, id="y"),
                         ev("a", 20, id="z")]}, {"watermark": 20}]
    rows = expected(scenario([{"kind": "over", "range": 5}], IDS, steps))["rows"]
    # W = 20 > t for 5 and 10 only; the peers at 10 each see both peers and 5 (= 10 - 5).
    assert rows == [
        {"window": 0, "key": "a", "time": 5, "event": {"id": "p"}, "ids": ["p"]},
        {"window": 0, "key": "a", "time": 10, "event": {"id": "x"}, "ids": ["p", "x", "y"]},
        {"window": 0, "key": "a", "time": 10, "event": {"id": "y"}, "ids": ["p", "x", "y"]},
    ]


def test_count_windows_hand_computed() -> None:
    steps = [{"events": [ev("a", t, id=t) for t in (30, 10, 20, 50, 40)]},
             {"watermark": 45}]
    rows = expected(scenario([{"kind": "count", "size": 3, "every": 2}], IDS, steps))["rows"]
    # Time order 10, 20, 30, 40, 50; k = 2 -> [10, 20]; k = 4 -> [20, 30, 40]; W = 45 > 40.
    assert rows == [
        {"window": 0, "key": "a", "start": 10, "end": 21, "ids": [10, 20]},
        {"window": 0, "key": "a", "start": 20, "end": 41, "ids": [20, 30, 40]},
    ]
    steps[-1] = {"watermark": 40}  # W must pass the k-th event's time
    rows = expected(scenario([{"kind": "count", "size": 3, "every": 2}], IDS, steps))["rows"]
    assert [r["ids"] for r in rows] == [[10, 20]]


def test_policy_windows_hand_computed() -> None:
    steps = [{"events": [ev("a", t, id=t, w=w) for t, w in
                         ((0, 4), (10, 5), (20, 2), (30, 11), (40, 0), (130, 1))]},
             {"watermark": END}]
    def ids(spec: dict[str, Any]) -> list[list[int]]:
        rows = expected(scenario([spec], IDS, steps))["rows"]
        return [r["ids"] for r in rows]
    # sum of w <= 10: [0], [0,10] (9), [10,20] (4+5+2 = 11 > 10), [30] alone (11 > 10),
    # [30, 40] (11 > 10, so [40]), [40, 130].
    assert ids({"kind": "policy", "measure": "sum", "limit": 10, "field": "w"}) == [
        [0], [0, 10], [10, 20], [30], [40], [40, 130]]
    # span <= 20: newest - oldest time.
    assert ids({"kind": "policy", "measure": "span", "limit": 20}) == [
        [0], [0, 10], [0, 10, 20], [10, 20, 30], [20, 30, 40], [130]]
    # count <= 2, every 3.
    assert ids({"kind": "policy", "measure": "count", "limit": 2, "every": 3}) == [
        [10, 20], [40, 130]]
    row = expected(scenario([{"kind": "policy", "measure": "count", "limit": 2}], IDS,
                            steps))["rows"][1]
    assert (row["start"], row["end"]) == (0, 11)
    # The MTA paper's running example: keep the newest updates whose sum is <= 10; after
    # 2, 2, 3, 3, 4 the window is [3, 3, 4].
    paper = [{"events": [ev("a", t, id=w, w=w) for t, w in enumerate([2, 2, 3, 3, 4])]},
             {"watermark": END}]
    rows = expected(scenario([{"kind": "policy", "measure": "sum", "limit": 10,
                               "field": "w"}], IDS, paper))["rows"]
    assert rows[-1]["ids"] == [3, 3, 4]


def test_empty_windows_emit_nothing() -> None:
    steps = [{"events": [ev("a", 0, id=1), ev("a", 1000, id=2)]}, {"watermark": END}]
    rows = expected(scenario([{"kind": "sliding", "range": 20, "slide": 10}], IDS, steps))
    assert [(r["start"], r["ids"]) for r in rows["rows"]] == [
        (-10, [1]), (0, [1]), (990, [2]), (1000, [2])]


# --------------------------------------------------------------------------- aggregates
def vals(xs: list[Any], **extra: list[Any]) -> list[dict[str, Any]]:
    return [{"v": x, **{k: col[i] for k, col in extra.items()}} for i, x in enumerate(xs)]


@pytest.mark.parametrize(("spec", "xs", "want"), [
    ({"fn": "count"}, [5, 5], 2),
    ({"fn": "count", "field": "v"}, [5, None, 0], 2),
    ({"fn": "sum", "field": "v"}, [1, 2, 3], 6),
    ({"fn": "sum", "field": "v"}, [0.1, 0.2, 0.3], 0.6),
    ({"fn": "mean", "field": "v"}, [1, 2], 1.5),
    ({"fn": "min", "field": "v"}, [3, -1, 2], -1),
    ({"fn": "max", "field": "v"}, [3, -1, 2], 3),
    ({"fn": "mincount", "field": "v"}, [2, 1, 3, 1], [1, 2]),
    ({"fn": "maxcount", "field": "v"}, [3, 1, 3, 3], [3, 3]),
    ({"fn": "variance", "field": "v"}, [1, 2, 3, 4], 5 / 3),
    ({"fn": "variance", "field": "v", "ddof": 0}, [1, 2, 3, 4], 1.25),
    ({"fn": "variance", "field": "v"}, [7], None),
    ({"fn": "variance", "field": "v", "ddof": 0}, [7], 0.0),
    ({"fn": "stddev", "field": "v", "ddof": 0}, [2, 4, 4, 4, 5, 5, 7, 9], 2.0),
    ({"fn": "geomean", "field": "v"}, [2, 8], 4.0),
    ({"fn": "first", "field": "v"}, ["a", "b"], "a"),
    ({"fn": "last", "field": "v"}, ["a", "b"], "b"),
    ({"fn": "collect", "field": "v"}, ["b", "a", "b"], ["b", "a", "b"]),
])
def test_aggregate_definitions(spec: dict[str, Any], xs: list[Any], want: Any) -> None:
    got = aggregate(spec, vals(xs))
    if isinstance(want, float):
        assert math.isclose(got, want, rel_tol=1e-12)
    else:
        assert got == want


def test_argmax_argmin_ties_go_to_the_oldest() -> None:
    values = vals([5, 9, 1, 9, 1], id=["a", "b", "c", "d", "e"])
    assert aggregate({"fn": "argmax", "field": "v", "result": "id"}, values) == "b"
    assert aggregate({"fn": "argmin", "field": "v", "result": "id"}, values) == "c"


def test_argmax_without_result_returns_the_event() -> None:
    values = vals([1, 3, 3], id=["a", "b", "c"])
    assert aggregate({"fn": "argmax", "field": "v"}, values) == {"v": 3, "id": "b"}


def test_count_with_a_field_ignores_missing_fields() -> None:
    sc = scenario([{"kind": "tumbling", "size": 10}], {"n": {"fn": "count", "field": "v"}},
                  [{"events": [ev("a", 1, v=1), ev("a", 2, w=1)]}, {"watermark": END}])
    assert expected(sc)["rows"][0]["n"] == 1


def test_window_order_is_time_then_arrival() -> None:
    steps = [{"events": [ev("a", 2, v=1, id="late-arrival"), ev("a", 1, v=1, id="t1"),
                         ev("a", 2, v=1, id="second")]}, {"watermark": END}]
    aggs = {"f": {"fn": "first", "field": "id"}, "l": {"fn": "last", "field": "id"},
            "am": {"fn": "argmax", "field": "v", "result": "id"}, **IDS}
    (row,) = expected(scenario([{"kind": "tumbling", "size": 10}], aggs, steps))["rows"]
    assert row["ids"] == ["t1", "late-arrival", "second"]
    assert (row["f"], row["l"], row["am"]) == ("t1", "second", "t1")


def test_bloom_expected_is_the_or_of_single_item_filters() -> None:
    from swag_core.aggregations import BloomFilter

    spec = {"fn": "bloom", "field": "v", "bits": 64, "hashes": 3}
    got = aggregate(spec, vals(["x", "y", "x"]))
    assert isinstance(got, BloomExpected)
    lift = BloomFilter(64, 3).lift_fn
    assert got.mask == lift("x") | lift("y")
    assert got.items == ("x", "y", "x") and got.bits == 64 and got.hashes == 3


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("aggs", "event", "kind", "field"), [
    (COUNT, ev("a", None), "time", None),
    (COUNT, ev("a", "ten"), "time", None),
    (COUNT, ev("a", "1e3"), "time", None),
    (COUNT, ev("a", "+-5"), "time", None),
    (COUNT, ev("a", 1.5), "time", None),
    (COUNT, ev("a", True), "time", None),
    ({"s": {"fn": "sum", "field": "v"}}, ev("a", 1, w=1), "value", "v"),
    ({"s": {"fn": "sum", "field": "v"}}, ev("a", 1, v=None), "value", "v"),
    ({"m": {"fn": "max", "field": "v"}}, ev("a", 1, v=math.nan), "value", "v"),
    ({"g": {"fn": "geomean", "field": "v"}}, ev("a", 1, v=0), "value", "v"),
    ({"a": {"fn": "argmax", "field": "v", "result": "r"}}, ev("a", 1, v=1),
     "value", "r"),
    (COUNT, ev("a", 1, v=1), "value", "w"),  # policy weight missing (see windows below)
    (COUNT, ev("a", 1, w=-0.5), "value", "w"),
])
def test_bad_input_raises(aggs: dict[str, Any], event: list[Any], kind: str,
                          field: str | None) -> None:
    windows: list[dict[str, Any]] = [{"kind": "tumbling", "size": 10}]
    if "w" in (field or "") and aggs is COUNT:
        windows.append({"kind": "policy", "measure": "sum", "limit": 5, "field": "w"})
    sc = scenario(windows, aggs,
                  [{"events": [ev("k", 0, v=1, r=0, w=0), event]}, {"watermark": END}])
    sc["query"]["nulls"] = "error"  # null and NaN values are bad input too
    with pytest.raises(OracleInputError) as info:
        expected(sc)
    assert (info.value.kind, info.value.field, info.value.key) == (kind, field, "a")


def test_integral_float_and_decimal_string_times_are_accepted() -> None:
    sc = scenario([{"kind": "tumbling", "size": 10}], IDS,
                  [{"events": [ev("a", "12", id=1), ev("a", 13.0, id=2), ev("a", " -3 ", id=3)]},
                   {"watermark": END}])
    assert [(r["start"], r["ids"]) for r in expected(sc)["rows"]] == [(-10, [3]), (10, [1, 2])]


def test_late_events_values_are_not_checked() -> None:
    # A late event is never aggregated, so its value is not validated (documented).
    sc = scenario([{"kind": "tumbling", "size": 10}], {"s": {"fn": "sum", "field": "v"}},
                  [{"watermark": 100}, {"events": [ev("a", 5, v=None)]}, {"watermark": END}])
    assert expected(sc) == {"rows": [], "late": {"a": 1}}


def test_null_is_a_value_for_collect_with_nulls_error() -> None:
    sc = scenario([{"kind": "tumbling", "size": 10}], {"c": {"fn": "collect", "field": "v"}},
                  [{"events": [ev("a", 5, v=None), ev("a", 6, v=1)]}, {"watermark": END}])
    sc["query"]["nulls"] = "error"
    assert expected(sc)["rows"][0]["c"] == [None, 1]


NULLS_BY_HAND = [
    # (spec, values of v in window order, expected): SQL semantics, worked out by hand
    ({"fn": "collect", "field": "v"}, [None, 1, math.nan, 2], [1, 2]),
    ({"fn": "sum", "field": "v"}, [None, 1, math.nan, 2], 3),
    ({"fn": "sum", "field": "v"}, [None, math.nan], None),
    ({"fn": "mean", "field": "v"}, [4, None, 2], 3.0),
    ({"fn": "max", "field": "v"}, [math.nan, -1.5, None], -1.5),
    ({"fn": "min", "field": "v"}, [None, None], None),
    ({"fn": "count", "field": "v"}, [None, 3, math.nan], 1),
    ({"fn": "count", "field": "v"}, [None, math.nan], 0),
    ({"fn": "count"}, [None, math.nan], 2),
    ({"fn": "first", "field": "v"}, [None, math.nan, 7, 8], 7),
    ({"fn": "last", "field": "v"}, [7, 8, None], 8),
    ({"fn": "variance", "field": "v", "ddof": 0}, [1, None, 3], 1.0),
    ({"fn": "maxcount", "field": "v"}, [2, None, 2, math.nan], [2, 2]),
]


@pytest.mark.parametrize(("spec", "xs", "want"), NULLS_BY_HAND)
def test_nulls_skip_by_hand(spec: dict[str, Any], xs: list[Any], want: Any) -> None:
    sc = scenario([{"kind": "tumbling", "size": 100}], {"o": spec},
                  [{"events": [ev("a", i, v=x) for i, x in enumerate(xs)]},
                   {"watermark": END}])
    assert expected(sc)["rows"][0]["o"] == want


def test_argmax_skips_events_whose_compared_field_is_missing() -> None:
    sc = scenario([{"kind": "tumbling", "size": 100}],
                  {"a": {"fn": "argmax", "field": "v", "result": "r"}},
                  [{"events": [ev("a", 1, v=None, r=1), ev("a", 2, v=math.nan, r=2),
                               ev("a", 3, v=-4, r=3), ev("a", 4, v=None, r=4)]},
                   {"watermark": END}])
    assert expected(sc)["rows"][0]["a"] == 3


# --------------------------------------------------------------------------- the corpus
PATHS = corpus.scenario_paths()


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_scenario_file_is_valid(path: Any) -> None:
    assert corpus.validate_scenario(corpus.load_raw(path), path.stem) == []


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_oracle_agrees_with_expect_error(path: Any) -> None:
    sc = corpus.load(path)
    expect = sc["expect_error"]
    if expect is None:
        res = expected(sc)
        assert set(res) == {"rows", "late"}
        return
    with pytest.raises(OracleInputError) as info:
        expected(sc)
    assert info.value.cls == expect["class"]
    assert info.value.field == expect.get("field")
    assert info.value.key == expect.get("key")


def test_corpus_is_large_and_covers_everything() -> None:
    raws = [corpus.load_raw(p) for p in PATHS]
    assert len(raws) >= 45
    fns = {a["fn"] for r in raws for a in r["query"]["aggregations"].values()}
    assert fns == set(corpus.AGGREGATIONS)
    kinds = {w["kind"] for r in raws for w in r["query"]["windows"]}
    assert kinds == set(corpus.WINDOW_KINDS)
    tags = {t for r in raws for t in r["tags"]}
    assert tags == corpus.TAGS
    errors = {r["expect_error"]["class"] for r in raws if r["expect_error"]}
    assert errors == set(corpus.ERROR_CLASSES)


def test_scenario_files_are_up_to_date() -> None:
    assert make_scenarios.main(["--check"]) == 0


def test_validation_catches_problems() -> None:
    good = corpus.load_raw(PATHS[0])
    assert corpus.validate_scenario(good, PATHS[0].stem) == []
    bad = corpus.expand(good)
    bad["query"]["windows"].append({"kind": "sliding", "range": 5, "slide": 10})
    bad["query"]["aggregations"]["key"] = {"fn": "median", "field": "v"}
    bad["steps"].append({"watermark": "later"})
    bad["steps"].append({"events": [["a", None, {"v": 1}]]})
    bad["tags"].append("unknown-tag")
    problems = "\n".join(corpus.validate_scenario(bad))
    for needle in ("range >= slide", "'key'", "median", "watermark must be", "time must be",
                   "unknown tags"):
        assert needle in problems
    lying = corpus.load_raw(corpus.SCENARIO_DIR / "burst_single_key.json")
    lying["tags"].append("many-keys")
    assert corpus.validate_scenario(lying) == [
        "tag 'many-keys' does not hold for this scenario"]


# --------------------------------------------------------------------------- generators
def test_splitmix64_reference_vector() -> None:
    rng = corpus.SplitMix64(1234567)
    assert [rng.next() for _ in range(3)] == [
        6457827717110365317, 3203168211198807973, 9817491932198370423]


def test_generators_are_deterministic_and_shaped() -> None:
    spec = {"kind": "stream", "seed": 3, "keys": ["a", "b"], "start": 100, "count": 200,
            "step": [0, 5], "disorder": 40,
            "fields": {"v": {"int": [-2, 2]}, "x": {"eighths": [0, 1]}, "id": {"seq": 7},
                       "c": {"choice": ["p", "q"]}, "k": {"const": 1}}}
    events = corpus.generate(spec)
    assert events == corpus.generate(dict(spec))
    assert len(events) == 200 and {e[0] for e in events} == {"a", "b"}
    assert [e[2]["id"] for e in events] == list(range(7, 207))
    assert all(-2 <= e[2]["v"] <= 2 and e[2]["x"] * 8 == int(e[2]["x"] * 8) and
               e[2]["c"] in "pq" and e[2]["k"] == 1 for e in events)
    base_min = 100 - 40
    assert all(e[1] >= base_min for e in events)
    assert any(a[1] > b[1] for a, b in itertools.pairwise(events))  # disorder happened
    burst = corpus.generate({"kind": "burst", "seed": 1, "keys": ["a", "b", "c"], "time": 9,
                             "count": 7})
    assert [e[0] for e in burst] == list("abcabca") and {e[1] for e in burst} == {9}


def test_oracle_is_independent_of_the_code_under_test() -> None:
    """Computing the whole corpus loads no adapters module and no swag_core structure (only
    swag_core.aggregations, for the stated bloom exception)."""
    code = ("import sys\n"
            "from tests.conformance import corpus, oracle\n"
            "for s in corpus.load_all():\n"
            "    if s['expect_error'] is None:\n"
            "        oracle.expected(s)\n"
            "print(' '.join(sorted(m for m in sys.modules\n"
            "                      if m.split('.')[0] in ('adapters', 'swag_core'))))\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    assert "swag_core.aggregations" in out
    assert [m for m in out if m.startswith(("adapters", "swag_core.algorithms."))] == []
