"""Property tests: random streams and random watermark schedules give the brute-force rows,
at the right step, for every window kind; restarts from snapshots change nothing; late events
are counted exactly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import WindowDriver, run_steps
from swag_core import ALGORITHMS

from .brute import brute_force
from .util import assert_same_rows

AGGS = {
    "n": {"fn": "count"},
    "s": {"fn": "sum", "field": "v"},
    "mx": {"fn": "max", "field": "v"},
    "amx": {"fn": "argmax", "field": "v", "result": "id"},
    "ids": {"fn": "collect", "field": "id"},   # non-commutative: order is checked
    "l": {"fn": "last", "field": "id"},
    "mean": {"fn": "mean", "field": "v"},
}

sliding = st.integers(1, 40).flatmap(lambda r: st.fixed_dictionaries({
    "kind": st.just("sliding"), "range": st.just(r), "slide": st.integers(1, r),
    "offset": st.integers(-15, 15)}))
tumbling = st.fixed_dictionaries({"kind": st.just("tumbling"), "size": st.integers(1, 30)},
                                 optional={"offset": st.integers(-10, 10)})
over = st.fixed_dictionaries({"kind": st.just("over"), "range": st.integers(0, 30)})
count = st.fixed_dictionaries({"kind": st.just("count"), "size": st.integers(1, 6)},
                              optional={"every": st.integers(1, 3)})
policy = st.one_of(
    st.fixed_dictionaries({"kind": st.just("policy"), "measure": st.just("count"),
                           "limit": st.integers(0, 5)}, optional={"every": st.integers(1, 3)}),
    st.fixed_dictionaries({"kind": st.just("policy"), "measure": st.just("span"),
                           "limit": st.integers(0, 25)}),
    st.fixed_dictionaries({"kind": st.just("policy"), "measure": st.just("sum"),
                           "field": st.just("w"), "limit": st.integers(0, 12)}),
)
window = st.one_of(sliding, tumbling, over, count, policy)
keys = st.sampled_from(["a", "b", 7])


@st.composite
def scenarios(draw: Any, windows: Any = window, max_windows: int = 3) -> dict[str, Any]:
    specs = draw(st.lists(windows, min_size=1, max_size=max_windows))
    lateness = draw(st.sampled_from([0, 0, 3, 10, 25]))
    steps: list[dict[str, Any]] = []
    wm = draw(st.integers(-20, 20))
    next_id = 0
    for _ in range(draw(st.integers(2, 16))):
        if draw(st.integers(0, 9)) < 6:
            events = []
            for _ in range(draw(st.integers(1, 6))):
                t = wm + draw(st.integers(-35, 40))
                events.append([draw(keys), t, {"id": next_id, "v": draw(st.integers(-5, 5)),
                                               "w": draw(st.integers(0, 5))}])
                next_id += 1
            steps.append({"events": events})
        else:
            wm += draw(st.integers(-10, 45))  # negative: a regression, ignored
            steps.append({"watermark": wm})
    if draw(st.integers(0, 4)):
        steps.append({"watermark": "end"})
    return {"query": {"windows": specs, "aggregations": AGGS, "allowed_lateness": lateness},
            "steps": steps}


def check(scenario: dict[str, Any], **options: Any) -> None:
    query, steps = scenario["query"], scenario["steps"]
    want_steps, want_late = brute_force(query, steps)
    result = run_steps(query, steps, **options)
    for i, (got, want) in enumerate(zip(result.step_rows, want_steps)):
        assert_same_rows(got, want, f"step {i} ({steps[i]})")
    assert result.late == want_late
    assert sum(result.late.values()) == len(result.late_events)


@settings(max_examples=300)
@given(scenarios())
def test_matches_brute_force(scenario: dict[str, Any]) -> None:
    check(scenario)


@settings(max_examples=150)
@given(scenarios(), st.sets(st.integers(0, 15), max_size=6))
def test_restart_from_snapshots_changes_nothing(scenario: dict[str, Any],
                                                restarts: set[int]) -> None:
    check(scenario, restart_after=restarts)


@settings(max_examples=60)
@given(scenarios(max_windows=2))
def test_tiny_cache_changes_nothing(scenario: dict[str, Any]) -> None:
    # one cached key for three keys: constant rebuilds from state
    check(scenario, max_cached_keys=1)


FIFO = [n for n in ("two_stacks_lite", "daba", "daba_lite", "two_stacks", "amta", "log_mta",
                    "flatfit", "recalc") if n in ALGORITHMS]
RANGE = [n for n in ALGORITHMS if n not in ("soe",) and ALGORITHMS[n].range_queries]


@pytest.mark.parametrize("algorithm", sorted(set(FIFO) | set(RANGE)))
@settings(max_examples=40)
@given(scenario=scenarios())
def test_forced_algorithms(algorithm: str, scenario: dict[str, Any]) -> None:
    if algorithm == "slickdeque":  # needs a selective (or invertible) aggregation
        scenario["query"]["aggregations"] = {"mx": {"fn": "max", "field": "v"}}
    check(scenario, algorithm=algorithm)


@settings(max_examples=40)
@given(scenarios(windows=st.one_of(sliding, tumbling, over, count), max_windows=2))
def test_selective_aggregation_alone(scenario: dict[str, Any]) -> None:
    # a single selective aggregation keeps its flag: slickdeque is chosen
    scenario["query"]["aggregations"] = {"mx": {"fn": "max", "field": "v"}}
    check(scenario)


def test_selective_chooses_slickdeque_when_available() -> None:
    driver = WindowDriver({"windows": [{"kind": "sliding", "range": 10, "slide": 2}],
                           "aggregations": {"mx": {"fn": "max", "field": "v"}}})
    if "slickdeque" in ALGORITHMS:
        assert driver.structures == [("time", (0,), "slickdeque")]
