"""The planner (``adapters.planning`` through ``WindowDriver.plan``) against what runs: the plan
says cross-key exactly when ``finish`` runs the cross-key runtime, OVER kernel exactly when
``finish_columns`` answers, kernels exactly when the lanes fold runs, pre-sliced exactly when the
rewritten query exists; and ``finish`` / ``finish_columns`` give the brute-force rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import EngineFacts, QueryPlan, WindowDriver
from adapters.crosskey.batch_runtime import BatchRuntime
from adapters.engine.over_kernel import KernelColumn
from adapters.engine.presliced import FLOAT, INT, LONG

from .brute import brute_force

FINISHED = EngineFacts.FINISHED
SHAPES: dict[str, dict[str, Any]] = {
    "sliding max": {"windows": [{"kind": "sliding", "range": 60, "slide": 10}],
                    "aggregations": {"m": {"fn": "max", "field": "v"}}},
    "tumbling mean+count": {"windows": [{"kind": "tumbling", "size": 30}],
                            "aggregations": {"a": {"fn": "mean", "field": "v"},
                                             "n": {"fn": "count"}}},
    "over sum": {"windows": [{"kind": "over", "range": 25}],
                 "aggregations": {"s": {"fn": "sum", "field": "v"}}},
    "count window": {"windows": [{"kind": "count", "size": 3}],
                     "aggregations": {"m": {"fn": "max", "field": "v"}}},
    "sliding last": {"windows": [{"kind": "sliding", "range": 40, "slide": 20}],
                       "aggregations": {"q": {"fn": "last", "field": "v"}}},
    "1 ms grid": {"windows": [{"kind": "sliding", "range": 7, "slide": 3}],
                  "aggregations": {"m": {"fn": "min", "field": "v"}}},
}


def plan_of(shape: str, **facts: Any) -> tuple[WindowDriver, QueryPlan]:
    driver = WindowDriver(SHAPES[shape])
    defaults: dict[str, Any] = {"engine": "test", "streaming": False, "calls": FINISHED}
    return driver, driver.plan(EngineFacts(**{**defaults, **facts}))


def ran_cross_key(driver: WindowDriver, events: list[tuple[int, Any]],
                  monkeypatch: pytest.MonkeyPatch) -> tuple[bool, list[dict[str, Any]]]:
    calls: list[bool] = []
    real = BatchRuntime.process

    def spy(self: BatchRuntime, *a: Any) -> bool:
        calls.append(real(self, *a))
        return calls[-1]

    with monkeypatch.context() as m:
        m.setattr(BatchRuntime, "process", spy)
        rows = driver.finish("k", events).rows
    return any(calls), rows


def brute_rows(shape: str, events: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    steps = [{"events": [("k", t, v) for t, v in events]}, {"watermark": "end"}]
    return brute_force(SHAPES[shape], steps)[0][1]


def canon(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in rows)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_plan_names_the_runtime_finish_runs(shape: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    driver, plan = plan_of(shape)
    big = [(t * 3 % 200, {"v": float(t % 17)}) for t in range(100)]
    small = big[:5]
    used, rows = ran_cross_key(driver, big, monkeypatch)
    assert used == (plan.runtime == "cross-key"), str(plan)
    assert canon(rows) == canon(brute_rows(shape, big))
    used, rows = ran_cross_key(driver, small, monkeypatch)
    assert not used  # below MIN_BATCH: per-key lanes, as the plan's text says
    assert canon(rows) == canon(brute_rows(shape, small))
    assert ("at least 64 events" in plan.reasons["runtime"]) == (plan.runtime == "cross-key")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_plan_names_the_kernels_and_structures_the_driver_holds(shape: str) -> None:
    driver, plan = plan_of(shape)
    assert plan.structures == tuple(driver.structures)
    folds = [getattr(lane, "kernels", None) is not None for lane in driver._lanes]
    assert plan.kernels == all(folds), str(plan)
    assert plan.kernels == (shape in ("sliding max", "tumbling mean+count")), str(plan)
    assert plan.reasons["structures"].startswith("kernels" if plan.kernels else "one lift")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 80), st.floats(-1e6, 1e6) | st.none()),
                min_size=1, max_size=40),
       st.booleans())
def test_the_over_kernel_answers_exactly_when_planned(events: list[tuple[int, Any]],
                                                      with_columns: bool) -> None:
    columns = frozenset({"v"}) if with_columns else None
    driver, plan = plan_of("over sum", column_fields=columns)
    assert (plan.over_kernel is not None) == with_columns
    times = np.array([t for t, _ in events], np.int64)
    data = np.array([0.0 if v is None else v for _, v in events], np.float64)
    missing = np.array([v is None for _, v in events])
    found = driver.finish_columns(times, {"v": KernelColumn(data, missing)})
    assert found is not None  # the driver has the kernel; the plan says whether to ask it
    want = driver.finish("k", [(t, {"v": v}) for t, v in events]).rows
    assert found.times.tolist() == [r["time"] for r in want]
    assert found.values["s"].tolist() == [r["s"] for r in want]


def test_a_query_without_a_kernel_gets_no_column_answer() -> None:
    driver, plan = plan_of("sliding max", column_fields=frozenset({"v"}))
    assert plan.over_kernel is None
    assert driver.finish_columns(np.zeros(1, np.int64),
                                 {"v": KernelColumn(np.zeros(1), None)}) is None


@pytest.mark.parametrize("shape, kinds, sliced", [
    ("sliding max", {"v": FLOAT}, True),
    ("tumbling mean+count", {"v": LONG}, True),
    ("tumbling mean+count", {"v": FLOAT}, True),      # batch: floating sums exactly by scale
    ("tumbling mean+count", {"v": "string"}, False),  # not numeric
    ("over sum", {"v": INT}, False),
    ("sliding last", {"v": INT}, False),
    ("1 ms grid", {"v": INT}, False),
])
def test_the_plan_presliced_follows_the_slice_layout(shape: str, kinds: dict[str, str],
                                                     sliced: bool) -> None:
    _, plan = plan_of(shape, slice_kinds=kinds)
    assert (plan.presliced is not None) == sliced, plan.reasons["presliced"]
    assert plan.reasons["presliced"].startswith("yes" if sliced else "no")
    if sliced:
        assert plan.driver_query is plan.presliced.query  # the driver runs the sliced query
        width = plan.presliced.width
        slide = SHAPES[shape]["windows"][0].get("slide", SHAPES[shape]["windows"][0].get("size"))
        assert f"slice rows per key and window slide: at most {slide // width};" in str(plan)
    else:
        with pytest.raises(ValueError, match="cannot be pre-sliced"):
            plan_of(shape, slice_kinds=kinds, presliced=True)


def test_streaming_presliced_only_when_asked_and_never_a_floating_sum() -> None:
    _, plan = plan_of("sliding max", streaming=True, calls=EngineFacts.MANY_KEYS,
                      slice_kinds={"v": FLOAT})
    assert plan.presliced is None and "only when asked" in plan.reasons["presliced"]
    _, plan = plan_of("sliding max", streaming=True, calls=EngineFacts.MANY_KEYS,
                      slice_kinds={"v": FLOAT}, presliced=True)
    assert plan.presliced is not None
    with pytest.raises(ValueError, match="floating"):
        plan_of("tumbling mean+count", streaming=True, calls=EngineFacts.MANY_KEYS,
                slice_kinds={"v": FLOAT}, presliced=True)
    _, plan = plan_of("sliding max", streaming=True, slice_kinds={"v": FLOAT},
                      preslice_block="no watermark")
    assert plan.presliced is None
    lateness = WindowDriver({**SHAPES["sliding max"], "allowed_lateness": 5})
    with pytest.raises(ValueError, match="allowed_lateness > 0"):
        lateness.plan(EngineFacts("test", True, EngineFacts.MANY_KEYS, presliced=True,
                                  slice_kinds={"v": FLOAT}))
    assert lateness.plan(EngineFacts("test", False, FINISHED, presliced=True,
                                     slice_kinds={"v": FLOAT})).presliced is not None


def test_pair_map_and_runtime_follow_the_engine_calls() -> None:
    _, plan = plan_of("over sum", streaming=True, calls=EngineFacts.PER_KEY, pair_maps=True)
    assert plan.pair_map and plan.runtime == "per-key" and plan.over_kernel is None
    assert "KVS layout" in plan.path  # layout "auto" (the query default)
    _, plan = plan_of("over sum", streaming=True, calls=EngineFacts.MANY_KEYS)
    assert not plan.pair_map
    _, plan = plan_of("sliding max", streaming=True, calls=EngineFacts.PER_KEY, pair_maps=True)
    assert not plan.pair_map  # no over window: no pair map
    _, plan = plan_of("sliding max", streaming=True, calls=EngineFacts.MANY_KEYS)
    assert plan.runtime == "cross-key"
    with pytest.raises(ValueError, match="calls"):
        plan_of("sliding max", calls="sometimes")


def test_the_plan_prints_one_line_per_decision() -> None:
    _, plan = plan_of("tumbling mean+count", slice_kinds={"v": LONG}, state="none")
    text = str(plan)
    assert text.splitlines()[0] == "test batch, state: none"
    # a mean's slice partials are Mean's exact partials: no kernel, so no cross-key runtime
    assert text.splitlines()[1] == "  path: pre-sliced, per-key runtime, structures"
    _, plan = plan_of("sliding max", slice_kinds={"v": LONG})
    assert plan.path == "pre-sliced, cross-key runtime, kernels"
    for name in ("presliced", "over kernel", "runtime", "structures", "kvs layout"):
        assert f"  {name}: " in text


def test_a_benchmark_switches_a_path_off_with_the_same_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.planning import BENCHMARK_WITHOUT

    events = [(t, {"v": float((t * 7) % 11)}) for t in range(0, 400, 3)]
    on, on_plan = plan_of("sliding max", column_fields=frozenset({"v"}))
    _, over_on = plan_of("over sum", column_fields=frozenset({"v"}))
    assert on_plan.kernels and over_on.over_kernel is not None
    monkeypatch.setenv(BENCHMARK_WITHOUT, "kernels,over kernel")
    off, off_plan = plan_of("sliding max", column_fields=frozenset({"v"}))
    _, over_off = plan_of("over sum", column_fields=frozenset({"v"}))
    assert not off_plan.kernels and off_plan.runtime == "per-key"
    assert over_off.over_kernel is None and BENCHMARK_WITHOUT in over_off.reasons["over kernel"]
    assert canon(off.finish("k", events).rows) == canon(on.finish("k", events).rows) \
        == canon(brute_rows("sliding max", events))


OWN = {"own_plan": "engine's groupBy", "own_over_plan": "engine's frame"}


def engine_choice(windows: list[dict[str, Any]], aggregations: dict[str, Any],
                  kinds: dict[str, str], **facts: Any) -> QueryPlan:
    driver = WindowDriver({"windows": windows, "aggregations": aggregations,
                           **facts.pop("query", {})})
    return driver.plan(EngineFacts(**{"engine": "test", "streaming": False,
                                      "calls": FINISHED, "slice_kinds": kinds,
                                      **OWN, **facts}))


@pytest.mark.parametrize("slide, chosen", [(60, True), (5, True), (4, False), (1, False)])
def test_the_engine_plan_up_to_the_measured_windows_per_event(slide: int, chosen: bool) -> None:
    from adapters.planning import ENGINE_PLAN_MAX_K, windows_per_event
    from adapters.query.specs import SlidingWindow

    assert windows_per_event(SlidingWindow(60, slide)) == -(-60 // slide)
    plan = engine_choice([{"kind": "sliding", "range": 60, "slide": slide}],
                         {"n": {"fn": "count"}, "m": {"fn": "max", "field": "v"}},
                         {"v": LONG})
    assert (plan.engine_plan == "engine's groupBy") == chosen == (-(-60 // slide)
                                                                   <= ENGINE_PLAN_MAX_K)
    assert plan.path.startswith("the engine's own plan") == chosen
    assert plan.reasons["engine plan"].startswith("yes" if chosen else "no")


@pytest.mark.parametrize("fn, kind, exact", [
    ("count", INT, True), ("max", INT, True), ("min", LONG, True), ("sum", LONG, True),
    ("count", FLOAT, False), ("max", FLOAT, False), ("sum", FLOAT, False),
    ("mean", INT, False), ("first", INT, False), ("max", "", False),
])
def test_the_engine_plan_only_for_outputs_exact_in_the_engine(fn: str, kind: str,
                                                              exact: bool) -> None:
    from adapters.query.builtins import BUILTINS

    kinds = {"v": kind} if kind else {}
    for window in ({"kind": "tumbling", "size": 30}, {"kind": "over", "range": 30}):
        plan = engine_choice([window], {"a": {"fn": fn, "field": "v"}, "n": {"fn": "count"}},
                             kinds)
        assert (plan.engine_plan is not None) == exact == (kind in BUILTINS[fn].engine_exact)
        if not exact:
            assert "not exact" in plan.reasons["engine plan"]


def test_the_declared_exact_kinds_are_the_engines_column_kinds() -> None:
    from adapters.query.builtins import BUILTINS, INTEGRAL_KINDS, NO_FIELD

    assert {INT, LONG} == INTEGRAL_KINDS
    assert {k for b in BUILTINS.values() for k in b.engine_exact} == {INT, LONG, NO_FIELD}
    assert FLOAT not in BUILTINS["max"].engine_exact and not BUILTINS["mean"].engine_exact


@pytest.mark.parametrize("facts, why", [
    ({"presliced": False}, "presliced=False asks for swag's own path"),
    ({"presliced": True}, "presliced=True asks"),
    ({"query": {"algorithm": "two_stacks"}}, "algorithm='two_stacks' asks"),
    ({"query": {"nulls": "error"}}, "nulls='error'"),
    ({"streaming": True, "calls": EngineFacts.MANY_KEYS}, "streaming"),
    ({"own_plan": None}, "offers none"),
    ({"own_plan_block": "a reason of the engine"}, "a reason of the engine"),
])
def test_the_engine_plan_leaves_to_swag_what_was_asked_or_blocked(facts: dict[str, Any],
                                                                  why: str) -> None:
    plan = engine_choice([{"kind": "tumbling", "size": 30}], {"n": {"fn": "count"}},
                         {}, **facts)
    assert plan.engine_plan is None and why in plan.reasons["engine plan"]
    # (printed only where the engine offers a plan of its own)
    assert ("engine plan: no" in str(plan)) == (plan.facts.own_plan is not None)


def test_over_takes_the_engine_plan_only_when_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.planning import BENCHMARK_WITHOUT

    over = [{"kind": "over", "range": 30}]
    plan = engine_choice(over, {"n": {"fn": "count"}}, {}, own_over_plan=None,
                         own_over_missing="the frame is slow here")
    assert plan.engine_plan is None and "the frame is slow here" in plan.reasons["engine plan"]
    assert engine_choice(over, {"n": {"fn": "count"}}, {}).engine_plan == "engine's frame"
    several = [{"kind": "tumbling", "size": 30}, {"kind": "sliding", "range": 20,
                                                  "slide": 10}]
    assert engine_choice(several, {"n": {"fn": "count"}}, {}).engine_plan is None
    monkeypatch.setenv(BENCHMARK_WITHOUT, "engine plan")
    plan = engine_choice(over, {"n": {"fn": "count"}}, {})
    assert plan.engine_plan is None and BENCHMARK_WITHOUT in plan.reasons["engine plan"]
