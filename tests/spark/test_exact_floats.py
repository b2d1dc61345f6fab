"""Sums, means and variances of doubles through Spark are exactly rounded: bit for bit the
oracle's (rational arithmetic, one rounding), in batch and in streaming, whatever the
micro-batches and a restart from the checkpoint; the same events split into different
micro-batches give identical rows."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.conformance import corpus
from tests.conformance.oracle import expected
from tests.conformance.runner import assert_conforms, scenario_names
from tests.spark.engine import batch_eligible, batch_engine
from tests.spark.streaming import run_corpus, streaming_run

EXACT = [n for n in scenario_names() if n.startswith("exact_floats")]
VALUES = [1e16, 1.0, -1e16, 0.1, -0.3, 5e-324, 3.3, 2.0**-60, -0.0, 7e15]


def test_the_corpus_has_exact_float_scenarios() -> None:
    assert len(EXACT) >= 3


@pytest.mark.parametrize("name", [n for n in EXACT
                                  if batch_eligible(corpus.expand(corpus.load(n)))])
def test_batch(spark: Any, name: str) -> None:
    assert_conforms(batch_engine, corpus.load(name))


def test_streaming(spark: Any) -> None:
    runs = run_corpus(spark, [corpus.expand(corpus.load(n)) for n in EXACT])
    for name in EXACT:
        assert_conforms(runs[name].replay, corpus.load(name))


def _events() -> list[list[Any]]:
    rnd = random.Random(16)
    events = [[rnd.choice(["a", "b"]), rnd.randrange(400), {"v": rnd.choice(VALUES)}]
              for _ in range(120)]
    return sorted(events, key=lambda e: e[1])


def _scenario(name: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "description": "the same events in other micro-batches",
            "tags": ["floats"], "expect_error": None, "steps": steps,
            "query": {"windows": [{"kind": "sliding", "range": 200, "slide": 100}],
                      "aggregations": {"mean_v": {"fn": "mean", "field": "v"},
                                       "sum_v": {"fn": "sum", "field": "v"},
                                       "var_v": {"fn": "variance", "field": "v"}},
                      "allowed_lateness": 0}}


def _rows(result: dict[str, Any]) -> list[str]:
    """The rows as text, floats by repr (bit for bit), in a fixed order."""
    return sorted(repr(sorted(r.items())) for r in result["rows"])


def test_micro_batch_splits_and_a_restart_give_identical_floats(spark: Any) -> None:
    """One micro-batch, or four (each shuffled, windows released between them) with a
    restart from the checkpoint: the same means, sums and variances, bit for bit, equal to
    the exactly rounded ones."""
    events = _events()
    one = _scenario("exact_one_batch", [{"events": events}, {"watermark": "end"}])
    rnd = random.Random(7)
    steps: list[dict[str, Any]] = []
    for lo in (0, 100, 200, 300):
        chunk = [e for e in events if lo <= e[1] < lo + 100]
        rnd.shuffle(chunk)
        steps += [{"events": chunk}, {"watermark": lo + 100}]
    many = _scenario("exact_four_batches", [*steps[:-1], {"watermark": "end"}])
    want = expected(one)
    assert _rows(expected(many)) == _rows(want)
    got_one = streaming_run(one)
    got_many = streaming_run(many, restart_after=1)
    assert _rows(got_one) == _rows(want)
    assert _rows(got_many) == _rows(want)
    # left-to-right float sums in the two arrival orders differ: the data can tell
    arrival = [e for step in steps for e in step.get("events", [])]
    assert _naive_sums(events) != _naive_sums(arrival)


def _naive_sums(events: list[list[Any]]) -> dict[tuple[str, int], float]:
    """Float sums of each (key, window start) added in the order of ``events``."""
    sums: dict[tuple[str, int], float] = {}
    for key, t, value in events:
        for start in (t - t % 100 - 100, t - t % 100):
            sums[key, start] = sums.get((key, start), 0.0) + value["v"]
    return sums
