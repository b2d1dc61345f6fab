"""``beam_adapter.explain``: the plan of ``SlidingAggregate``'s query on Beam (one key per
call, no pair map, no pre-slicing), the same driver structures the DoFn's driver holds."""

from __future__ import annotations

from adapters import WindowDriver, parse_query
from beam_adapter import SlidingAggregate, explain, over, sliding


def test_explain_names_the_per_key_path_and_the_dofns_structures() -> None:
    args = {"window": sliding(3_600_000, 60_000),
            "aggregations": {"worst": {"fn": "max", "field": "delay"}}}
    plan = explain(**args)
    transform = SlidingAggregate(**args)
    assert plan.structures == tuple(WindowDriver(parse_query(transform.query)).structures)
    assert plan.runtime == "per-key" and plan.presliced is None and not plan.pair_map
    assert plan.kernels and str(plan).startswith("beam streaming")
    assert str(explain(bounded=True, **args)).startswith("beam batch")


def test_explain_of_an_over_window_keeps_it_in_memory() -> None:
    plan = explain(over(600_000), {"avg": {"fn": "mean", "field": "delay"}})
    assert plan.over_kernel is None and not plan.pair_map
    assert "no pair map on beam" in plan.reasons["kvs layout"]
