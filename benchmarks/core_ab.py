"""A/B of the core round cost between source trees: ns per round (evict + insert + query, as
in ``core_rounds``) for chosen algorithms, each tree's ``swag_core`` timed in its own
interpreter, rounds alternating between the trees (on a shared machine the order of single
runs moves their results).

    python -m benchmarks.core_ab base=/path/to/old/checkout new=. [flag=/path ...]
        [--algorithms daba,two_stacks,fiba,amta] [--n 1024] [--aggregation Sum]
        [--rounds 3] [--save core_ab]

Each ``LABEL=DIR`` names the root of a checkout (e.g. a ``git worktree`` of another commit)
whose ``swag_core`` is imported instead of this one's; the timing code is always this
tree's. Results go to ``benchmarks/results/<save>.json``: per tree and algorithm, every
round's ns per round and their median. Not part of ``python -m benchmarks``: it compares
checkouts, so its numbers belong to the change they measured (``docs/algorithms.md``,
"Errors and exception safety", cites them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.common import ROOT, save

DEFAULT_ALGORITHMS = "daba,two_stacks,fiba,amta"


def _child(tree: str, algorithms: list[str], n: int, aggregation: str, count: int) -> None:
    """Time every algorithm with ``tree``'s swag_core; print {algorithm: ns per round}."""
    sys.path.insert(0, os.path.abspath(tree))
    import swag_core
    from benchmarks.core_rounds import AGGREGATIONS, filled, rounds_ns
    here = os.path.dirname(os.path.abspath(swag_core.__file__))
    if not here.startswith(os.path.abspath(tree) + os.sep):
        raise SystemExit(f"imported {here}, not the swag_core of {tree}")
    out = {a: rounds_ns(filled(a, AGGREGATIONS[aggregation](), n), count) for a in algorithms}
    print(json.dumps(out))


def measure(trees: dict[str, str], algorithms: list[str], n: int = 1024,
            aggregation: str = "Sum", rounds: int = 3, count: int = 20000) -> dict[str, Any]:
    """``rounds`` alternating runs of every tree; returns per-tree, per-algorithm samples
    and medians (ns per round)."""
    samples: dict[str, dict[str, list[float]]] = {
        label: {a: [] for a in algorithms} for label in trees}
    for r in range(rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for label in order:
            cmd = [sys.executable, "-m", "benchmarks.core_ab", "--child", trees[label],
                   "--algorithms", ",".join(algorithms), "--n", str(n),
                   "--aggregation", aggregation, "--count", str(count)]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                                    check=True)
            for algorithm, ns in json.loads(result.stdout).items():
                samples[label][algorithm].append(ns)
            print(f"  round {r + 1} {label}: " + ", ".join(
                f"{a} {samples[label][a][-1]:.0f}" for a in algorithms), flush=True)
    medians = {label: {a: statistics.median(v) for a, v in per.items()}
               for label, per in samples.items()}
    return {"trees": trees, "n": n, "aggregation": aggregation, "rounds": rounds,
            "rounds_per_run": count, "samples_ns": samples, "median_ns": medians}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.core_ab")
    parser.add_argument("trees", nargs="*", help="LABEL=DIR, the root of a checkout")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--algorithms", default=DEFAULT_ALGORITHMS)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--aggregation", default="Sum")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20000, help="rounds per timed run")
    parser.add_argument("--save", default="core_ab")
    args = parser.parse_args()
    algorithms = args.algorithms.split(",")
    if args.child:
        _child(args.child, algorithms, args.n, args.aggregation, args.count)
        return
    trees = dict(t.split("=", 1) for t in args.trees)
    if len(trees) < 2:
        parser.error("give at least two LABEL=DIR trees")
    payload = measure(trees, algorithms, args.n, args.aggregation, args.rounds, args.count)
    print(f"wrote {save(args.save, payload)}")


if __name__ == "__main__":
    main()
