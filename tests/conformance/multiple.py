"""Three queries over one stream of events, for the engine tests that apply several
transforms to one input (``tests/beam`` and ``tests/spark``, ``test_multiple_transforms.py``).
Query :data:`DOUBLED` reads the values doubled (a ``Map`` or column change before its branch
in the engine); :func:`scenario` gives each query's oracle scenario."""

from __future__ import annotations

import random
from typing import Any

QUERIES: list[dict[str, Any]] = [
    {"windows": [{"kind": "sliding", "range": 200, "slide": 50}],
     "aggregations": {"s": {"fn": "sum", "field": "v"}, "n": {"fn": "count"}}},
    {"windows": [{"kind": "tumbling", "size": 100}, {"kind": "over", "range": 150}],
     "aggregations": {"m": {"fn": "max", "field": "v"}}},
    {"windows": [{"kind": "sliding", "range": 300, "slide": 100}],
     "aggregations": {"mean": {"fn": "mean", "field": "v"},
                      "vs": {"fn": "collect", "field": "v"}}},
]
#: The query whose branch reads :func:`double` of each value.
DOUBLED = 2


def double(value: dict[str, Any]) -> dict[str, Any]:
    """The value query :data:`DOUBLED` sees."""
    return {"v": 2 * value["v"]}


def steps(seed: int, batches: int, per_batch: int) -> list[dict[str, Any]]:
    """``batches`` batches of ``per_batch`` events (keys a, b, c), each at or after the
    watermark before it (none is late), the watermark advancing by 300 ms after each batch,
    then the end of input."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for w in range(0, 300 * batches, 300):
        out.append({"events": [[rng.choice("abc"), rng.randint(w, w + 399),
                                {"v": rng.randint(-5, 20)}] for _ in range(per_batch)]})
        out.append({"watermark": w + 300})
    return [*out, {"watermark": "end"}]


def scenario(i: int, all_steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Query ``i`` over the steps, as the oracle's scenario."""
    if i == DOUBLED:
        all_steps = [{"events": [[k, t, double(v)] for k, t, v in step["events"]]}
                     if "events" in step else step for step in all_steps]
    return {"name": f"query{i}", "query": QUERIES[i], "steps": all_steps}
