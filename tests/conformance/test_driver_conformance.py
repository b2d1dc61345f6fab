"""Every conformance scenario through the engine-free driver (``adapters.driver.window_driver``).

Through the driver's own harness ``adapters.run_scenario`` (the documented entry point), with
and without a crash-restart after every step, and through independent replays (timers
honoured, every key advanced on every watermark, one call per event; see
:mod:`.driver_engine`). Each must produce exactly the oracle's rows and late counts.
"""

from __future__ import annotations

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
