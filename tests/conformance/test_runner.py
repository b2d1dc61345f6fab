"""The runner: exact comparison and multiset order, diffs, error expectations."""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import pytest

from . import corpus
from .oracle import BloomExpected, OracleInputError, expected
from .runner import (
    Outcome,
    assert_conforms,
    check,
    compare,
    error_problem,
    main,
    run,
    scenario_names,
    value_problem,
)


class BadEventError(ValueError):
    """Stands in for adapters.errors.BadEventError (same name, key and field attributes)."""

    def __init__(self, message: str, key: Any = None, field: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.field = field


def perfect_engine(scenario: dict[str, Any]) -> dict[str, Any]:
    """A perfect engine for the runner's own tests: the oracle, with bloom results rendered
    the way swag_core's BloomFilter lowers them and bad input raised as BadEventError."""
    from swag_core.aggregations import BloomFilterValue

    try:
        res = expected(scenario)
    except OracleInputError as exc:
        raise BadEventError(f"bad event for key {exc.key!r}", key=exc.key,
                            field=exc.field) from None
    for row in res["rows"]:
        for col, v in row.items():
            if isinstance(v, BloomExpected):
                row[col] = BloomFilterValue(v.bits, v.hashes, v.mask)
    return res


def small_result() -> dict[str, Any]:
    return expected(corpus.load("all_aggregations_one_query"))


# --------------------------------------------------------------------------- values
@pytest.mark.parametrize(("exp", "actual", "ok"), [
    (1.0, 1.0, True),
    (1.0, 1.0 + 2**-52, False),  # one ulp: floats compare bit for bit
    (0.1 + 0.2, 0.3, False),
    (0.0, 5e-324, False),
    (0.0, -0.0, True),
    (3, 3.0, True),
    (3, 4, False),
    (None, None, True),
    (None, 0, False),
    (0.0, None, False),
    (math.nan, math.nan, True),
    (math.nan, 1.0, False),
    ([1, 2], (1, 2), True),
    ([1, 2], [2, 1], False),
    ([1, 2], [1, 2, 3], False),
    ({"a": 1.0}, {"a": 1.0}, True),
    ({"a": 1}, {"b": 1}, False),
    ("x", "x", True),
    ("1", 1, False),
    (True, 1, False),
])
def test_value_problem(exp: Any, actual: Any, ok: bool) -> None:
    assert (value_problem(exp, actual) is None) is ok


def test_bloom_comparison_is_structural() -> None:
    from swag_core.aggregations import BloomFilter

    res = expected(corpus.load("bloom_filter"))
    row = res["rows"][1]
    exp = row["seen"]
    agg = BloomFilter(exp.bits, exp.hashes)
    real = agg.fold(exp.items)  # swag_core's own fold: what an engine would return
    assert value_problem(exp, real) is None
    assert value_problem(exp, real.to_bytes()) is None
    assert value_problem(exp, real.mask) is None
    missing_one = agg.fold([x for x in exp.items if x != exp.items[0]])
    assert "not contained" in (value_problem(exp, missing_one) or "")
    extra = agg.fold([*exp.items, "zzz-not-inserted"])
    assert "bits set" in (value_problem(exp, extra) or "")
    assert "bits" in (value_problem(exp, BloomFilter(exp.bits * 2, exp.hashes).fold(
        exp.items)) or "")
    assert value_problem(exp, "not a filter") is not None


# --------------------------------------------------------------------------- rows
def test_identical_and_permuted_results_match() -> None:
    exp = small_result()
    actual = copy.deepcopy(exp)
    random.Random(0).shuffle(actual["rows"])
    for row in actual["rows"]:
        if isinstance(row.get("mincount"), list):
            row["mincount"] = tuple(row["mincount"])  # tuples are lists
    assert compare(exp, actual) is None
    actual["late"] = {"zero": 0}  # zero counts are the same as absent keys
    assert compare(exp, actual) is None


def test_diff_reports_differing_missing_extra_and_late() -> None:
    exp = small_result()
    actual = copy.deepcopy(exp)
    actual["rows"][0]["sum"] += 1
    actual["rows"][1]["mean"] = math.nextafter(actual["rows"][1]["mean"], math.inf)  # 1 ulp
    dropped = actual["rows"].pop(2)
    bogus = dict(actual["rows"][3], start=-999999, end=-999998)
    actual["rows"].append(bogus)
    actual["late"] = {"p": 2}
    diff = compare(exp, actual)
    assert diff is not None
    assert "late counts differ: 'p': 2 (expected 0)" in diff
    assert "2 differing, 1 missing, 1 extra" in diff
    differs = diff.split("  missing ")[0]
    assert "      sum: " in differs and "      mean: " in differs
    assert f"[{dropped['start']}, {dropped['end']})" in diff
    assert "[-999999, -999998)" in diff


def test_diff_reports_column_problems_and_bad_shapes() -> None:
    exp = small_result()
    actual = copy.deepcopy(exp)
    del actual["rows"][0]["collect"]
    actual["rows"][0]["bonus"] = 1
    diff = compare(exp, actual) or ""
    assert "collect: missing column" in diff and "bonus: unexpected column" in diff
    assert "must be" in (compare(exp, {"rows": []}) or "")
    assert "must be" in (compare(exp, [1, 2]) or "")
    assert "every row must be a dict" in (compare(exp, {"rows": [1], "late": {}}) or "")


def test_peer_rows_match_as_a_multiset() -> None:
    exp = expected(corpus.load("over_peers_equal_times"))
    actual = copy.deepcopy(exp)
    actual["rows"].reverse()
    assert compare(exp, actual) is None
    # Two peers swapping their "event" columns is still the same multiset; changing one is not.
    actual["rows"][0]["event"] = {"id": "nobody"}
    assert "event" in (compare(exp, actual) or "")


def test_diff_is_bounded() -> None:
    exp = expected(corpus.load("over_burst"))
    diff = compare(exp, {"rows": [], "late": {}}) or ""
    assert "1002 missing" in diff and "... and" in diff
    assert len(diff.splitlines()) < 20


# --------------------------------------------------------------------------- errors
def test_error_problem() -> None:
    expect = {"class": "BadEventError", "field": "v", "key": "b"}
    assert error_problem(expect, BadEventError("x", key="b", field="v")) is None
    assert "field" in (error_problem(expect, BadEventError("x", key="b", field="w")) or "")
    assert "key" in (error_problem(expect, BadEventError("x", key="a", field="v")) or "")
    assert "expected BadEventError" in (error_problem(expect, ValueError("v b")) or "")
    # Engines that re-raise worker errors as text: class name, field and key in the message.
    wrapped = RuntimeError("PythonException: BadEventError: field 'v' of key 'b' is null")
    assert error_problem(expect, wrapped) is None
    try:
        try:
            raise BadEventError("inner", key="b", field="v")
        except BadEventError as inner:
            raise RuntimeError("job failed") from inner
    except RuntimeError as outer:
        assert error_problem(expect, outer) is None
    assert "does not name the key" in (error_problem(
        expect, RuntimeError("BadEventError: field v")) or "")


# --------------------------------------------------------------------------- running
def test_perfect_engine_conforms_on_the_whole_corpus() -> None:
    outcomes = run(perfect_engine)
    assert len(outcomes) == len(scenario_names()) >= 45
    assert [o for o in outcomes if not o.ok] == []


def test_broken_engines_fail_with_a_diff() -> None:
    def drops_late(scenario: dict[str, Any]) -> dict[str, Any]:
        res = perfect_engine(scenario)
        return {"rows": res["rows"], "late": {}}

    def emits_extra(scenario: dict[str, Any]) -> dict[str, Any]:
        res = perfect_engine(scenario)
        return {"rows": res["rows"] + res["rows"][:1], "late": res["late"]}

    outcome = check(drops_late, corpus.load("late_no_lateness"))
    assert not outcome.ok and "late counts differ" in outcome.message
    outcome = check(emits_extra, corpus.load("inorder_sliding_max"))
    assert not outcome.ok and "1 extra" in outcome.message
    with pytest.raises(AssertionError, match="inorder_sliding_max"):
        assert_conforms(emits_extra, corpus.load("inorder_sliding_max"))


def test_error_scenarios_need_an_error() -> None:
    sc = corpus.load("bad_missing_field")

    def ignores(scenario: dict[str, Any]) -> dict[str, Any]:
        return {"rows": [], "late": {}}

    def crashes(scenario: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("v")

    assert check(perfect_engine, sc).ok
    outcome = check(ignores, sc)
    assert not outcome.ok and "expected BadEventError" in outcome.message
    assert not check(crashes, sc).ok
    outcome = check(crashes, corpus.load("inorder_sliding_max"))
    assert not outcome.ok and "engine raised KeyError" in outcome.message


def test_engine_gets_a_private_expanded_copy() -> None:
    seen: list[dict[str, Any]] = []

    def mutating(scenario: dict[str, Any]) -> dict[str, Any]:
        seen.append(scenario)
        res = perfect_engine(scenario)
        scenario["steps"].clear()
        return res

    raw = corpus.load_raw(corpus.SCENARIO_DIR / "burst_single_key.json")
    assert check(mutating, raw).ok
    assert not any("generate" in s for s in seen[0]["steps"]) or seen[0]["steps"] == []
    assert raw["steps"]  # the caller's scenario is untouched


def test_tags_select_scenarios_and_cli(capsys: pytest.CaptureFixture[str]) -> None:
    names = scenario_names(["bad-input"])
    assert names and all(n.startswith("bad_") for n in names)
    assert main(["--oracle", "--scenario", "count_window_basic"]) == 0
    out = capsys.readouterr().out
    assert "count_window_basic: 6 rows" in out
    assert main(["--engine", f"{__name__}:perfect_engine", "--tag", "over"]) == 0
    assert "scenarios conform" in capsys.readouterr().out
    assert isinstance(Outcome("x", True, "", 0.0), Outcome)
