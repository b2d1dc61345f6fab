"""Every conformance scenario through the engine-free driver (``adapters.driver.window_driver``).

Through the driver's own harness ``adapters.run_scenario`` (the documented entry point), with
and without a crash-restart after every step, and through independent replays (timers
honoured, every key advanced on every watermark, one call per event; see
:mod:`.driver_engine`). Each must produce exactly the oracle's rows and late counts.
"""

from __future__ import annotations

from typing import Any

import pytest

from swag_core import ALGORITHMS

from . import corpus
from .driver_engine import MODES, DriverEngine
from .runner import assert_conforms, check, scenario_names

pytest.importorskip("adapters.conformance.runner")

NAMES = scenario_names()


@pytest.mark.parametrize("name", NAMES)
def test_driver_conforms(name: str) -> None:
    assert_conforms(DriverEngine("harness"), corpus.load(name))


@pytest.mark.parametrize("mode", [m for m in MODES if m != "harness"])
@pytest.mark.parametrize("name", NAMES)
def test_driver_conforms_in_every_calling_mode(name: str, mode: str) -> None:
    assert_conforms(DriverEngine(mode), corpus.load(name))


SMALL = [n for n in NAMES if "generated" not in corpus.load_raw(
    corpus.SCENARIO_DIR / f"{n}.json")["tags"]]


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_driver_conforms_with_every_algorithm(algorithm: str) -> None:
    """The hand-written scenarios with each swag_core structure forced (where it can serve
    the query: e.g. ``soe`` needs invertible aggregations, so it skips most)."""
    from adapters import WindowDriver
    from swag_core.errors import AlgorithmMismatchError

    failures, ran = [], 0
    for name in SMALL:
        scenario = corpus.load(name)
        try:
            WindowDriver(scenario["query"], algorithm=algorithm)
        except AlgorithmMismatchError:
            continue  # the structure cannot serve this query: nothing to check
        ran += 1
        outcome = check(DriverEngine("harness", algorithm=algorithm), scenario)
        if not outcome.ok:
            failures.append(f"{name}: {outcome.message}")
    assert not failures, f"{algorithm}: {len(failures)} of {ran} scenarios differ:\n" + \
        "\n".join(failures)
    assert ran > 0


def _with_layout(scenario: dict, layout: str) -> dict:
    return {**scenario, "query": {**scenario["query"], "layout": layout}}


@pytest.mark.parametrize("name", NAMES)
def test_driver_conforms_with_kvs_layout(name: str) -> None:
    """Every scenario with the per-event structures forced into the KVS layout (the key's
    pair map), three ways: plain, with a crash-restart after every step (a snapshot of the
    state, maps included), and with a cache of one key (a reopen on every key change).
    Same rows as the oracle; where the query has an OVER window, the maps or the metadata
    (local parts) hold its pairs."""
    from adapters import run_scenario

    scenario = _with_layout(corpus.load(name), "kvs")
    steps = range(len(scenario["steps"]))
    runs: list[Any] = []

    def engine(s: dict, options: dict) -> dict:
        result = run_scenario(s, **options)
        runs.append(result)
        return {"rows": result.rows, "late": result.late}

    for options in ({}, {"restart_after": steps}, {"max_cached_keys": 1}):
        outcome = check(lambda s, o=options: engine(s, o), scenario)
        assert outcome.ok, (options, outcome.message)
    for result in runs:
        if result.driver.key_store.kvs.eligible:
            # a small window may live in its local part alone (tails, heads and the write
            # buffer, in the metadata's extension; pair format version 3)
            states = [result.backend.key_state(k)
                      for k in result.backend.keys()]  # noqa: SIM118 (a method)
            assert any(s.pair_map().data or b"\x13" in (s.get_meta() or b"")
                       for s in states), "an OVER query with layout='kvs' must use the KVS layout"
