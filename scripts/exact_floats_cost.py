"""What exact float sums cost: ns per event of ``lift`` + ``combine`` (Sum, Mean, Variance)
over random doubles, ns per ``lower``, and the driver benchmark's quick Mean / Max cells
(``benchmarks.driver.measure``, not saved). Run from a checkout's root, e.g.
``PYTHONPATH=. python scripts/exact_floats_cost.py``, on this code and on an older checkout
to compare (docs/aggregations.md, "Deterministic floats")."""

from __future__ import annotations

import random
import timeit
from typing import Any

from swag_core.aggregations import Mean, Sum, Variance

EVENTS = 20_000


def core() -> None:
    rnd = random.Random(1)
    xs = [rnd.uniform(-1e3, 1e3) for _ in range(EVENTS)]
    for agg in (Sum(), Mean(), Variance()):
        lift, combine, lower = agg.lift_fn, agg.combine, agg.lower_fn

        def fold(lift: Any = lift, combine: Any = combine, identity: Any = agg.identity) -> Any:
            acc = identity
            for x in xs:
                acc = combine(acc, lift(x))
            return acc

        per_event = min(timeit.repeat(fold, number=1, repeat=5)) / EVENTS * 1e9
        acc = fold()
        per_lower = min(timeit.repeat(lambda lower=lower, acc=acc: lower(acc), number=1000,
                                      repeat=5)) / 1000 * 1e9
        print(f"{agg.name}: lift + combine {per_event:.0f} ns/event, lower {per_lower:.0f} ns")


def driver() -> None:
    from benchmarks.driver import measure

    payload = measure(EVENTS, keys=10, hours=2, batch=1_000, key_share={60: 0.2},
                      slides={1: 3_600_000, 60: 60_000}, pandas=False, repeats=1)
    for cell in payload.get("sliding", []):
        print({k: cell[k] for k in cell if not isinstance(cell[k], (list, dict))})


if __name__ == "__main__":
    core()
    driver()
