"""``flink_adapter.explain``: the plan of ``sliding_aggregate``'s query on Flink (one key per
call; each key's state offers the pair map, which the process function declares exactly when
the plan says so)."""

from __future__ import annotations

from flink_adapter import explain, over, sliding
from flink_adapter.function import FACTS


def test_explain_names_the_per_key_path() -> None:
    plan = explain(window=sliding("1 hour", "10 minutes"),
                   aggregations={"worst": {"fn": "max", "field": "delay"}})
    assert plan.runtime == "per-key" and plan.presliced is None and plan.kernels
    assert not plan.pair_map and plan.facts is FACTS
    assert str(plan).startswith("flink streaming")


def test_explain_of_an_over_window_offers_the_pair_map_per_layout() -> None:
    for layout, where in (("memory", "worker memory"), ("kvs", "pair map from its next load"),
                          ("auto", "moved to the pair map")):
        plan = explain(None, key="origin", window=over("10 minutes"), layout=layout,
                       aggregations={"avg": {"fn": "mean", "field": "delay"}})
        assert plan.pair_map and where in plan.reasons["kvs layout"]
