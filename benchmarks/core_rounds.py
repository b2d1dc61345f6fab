"""ns per round (evict + insert + query) for every algorithm, four
aggregations of rising cost, windows of 2^4 .. 2^20 entries; round latency percentiles at
2^14 (the DABA paper's Figure 18 at Python scale)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from benchmarks.common import CLOCK, median_ns_per_op, percentiles, save
from swag_core import ALGORITHMS, Aggregation, make_window
from swag_core.aggregations import BloomFilter, GeometricMean, Max, Sum

AGGREGATIONS: dict[str, Callable[[], Aggregation]] = {
    "Sum": Sum, "Max": Max, "GeometricMean": GeometricMean, "BloomFilter": BloomFilter,
}
SIZES = [2**4, 2**10, 2**14, 2**20]
LATENCY_SIZE = 2**14
VALUES = [(i * 7919) % 1000 + 1 for i in range(4096)]  # positive, for GeometricMean
MASK = len(VALUES) - 1


def fits(algorithm: str, agg: Aggregation) -> bool:
    return ALGORITHMS[algorithm].mismatch(agg) is None


def filled(algorithm: str, agg: Aggregation, n: int, **options: Any) -> Any:
    """A window of ``algorithm`` holding ``n`` entries at times 0 .. n-1."""
    w = make_window(algorithm, agg, **options)
    w.bulk_insert((t, VALUES[t & MASK]) for t in range(n))
    return w


def rounds_ns(w: Any, count: int) -> float:
    """Median ns per round of evict + insert + query on a filled window."""
    def run() -> int:
        evict, insert, query = w.evict, w.insert, w.query
        t = w.youngest() + 1
        for i in range(count):
            evict()
            insert(t + i, VALUES[i & MASK])
            query()
        return count
    run()  # warm up (and let amortized structures reach their steady state)
    return median_ns_per_op(run)


def round_latencies(w: Any, count: int) -> dict[str, float]:
    """Percentiles of single-round latency (ns), garbage collector paused."""
    evict, insert, query = w.evict, w.insert, w.query
    clock = CLOCK
    samples = [0] * count
    t = w.youngest() + 1
    gc.collect()
    gc.disable()
    try:
        for i in range(count):
            start = clock()
            evict()
            insert(t + i, VALUES[i & MASK])
            query()
            samples[i] = clock() - start
    finally:
        gc.enable()
    return percentiles(samples)


def run(quick: bool = False) -> dict[str, Any]:
    sizes = SIZES[:3] if quick else SIZES
    throughput: list[dict[str, Any]] = []
    for agg_name, make_agg in AGGREGATIONS.items():
        for algorithm in ALGORITHMS:
            if not fits(algorithm, make_agg()):
                continue
            for n in sizes:
                if algorithm == "recalc" and n > 2**10:
                    continue
                w = filled(algorithm, make_agg(), n)
                count = 200 if algorithm == "recalc" else (2000 if quick else 20000)
                ns = rounds_ns(w, count)
                throughput.append({"algorithm": algorithm, "aggregation": agg_name, "n": n,
                                   "ns_per_round": ns})
                print(f"  rounds {agg_name:13} {algorithm:16} n=2^{n.bit_length() - 1:<2} "
                      f"{ns:10.0f} ns", flush=True)
                del w
                gc.collect()
    latency: list[dict[str, Any]] = []
    for algorithm in ALGORITHMS:
        if algorithm == "recalc" or not fits(algorithm, Sum()):
            continue
        w = filled(algorithm, Sum(), LATENCY_SIZE)
        round_latencies(w, LATENCY_SIZE)  # warm up
        stats = round_latencies(w, 2**15 if quick else 2**17)
        latency.append({"algorithm": algorithm, "aggregation": "Sum", "n": LATENCY_SIZE,
                        **stats})
        print(f"  latency {algorithm:16} p50={stats['p50']:.0f} max={stats['max']:.0f} ns",
              flush=True)
    payload = {"throughput": throughput, "latency": latency}
    save("core_rounds", payload)
    return payload


# --------------------------------------------------------------------------- report
def _fmt(ns: float) -> str:
    return f"{ns / 1000:.2f}" if ns < 10**6 else f"{ns / 1000:.0f}"


def markdown(payload: dict[str, Any]) -> str:
    from benchmarks.common import IMAGES
    from benchmarks.report import goal, machine_line, table

    rows = payload["throughput"]
    sizes = sorted({r["n"] for r in rows})
    out = ["## In-order algorithms: microseconds per round (evict + insert + query)\n",
           machine_line(payload),
           "Window filled to n entries, then rounds of evict + insert + query; median of 5 "
           "runs of 20,000 rounds (200 for `recalc`) in thread CPU time, garbage collector "
           "paused while timing.\n"]
    by = {(r["aggregation"], r["algorithm"], r["n"]): r["ns_per_round"] for r in rows}
    for agg_name in AGGREGATIONS:
        algos = [a for a in ALGORITHMS if any(k[0] == agg_name and k[1] == a for k in by)]
        body = [[f"`{a}`"] + [_fmt(by[(agg_name, a, n)]) if (agg_name, a, n) in by else "-"
                              for n in sizes] for a in algos]
        out.append(f"### {agg_name}\n")
        out.append(table(["algorithm"] + [f"n=2^{n.bit_length() - 1}" for n in sizes], body))
    _plot(rows, IMAGES / "core_rounds.png")
    out.append("![ns per round, Sum](img/core_rounds.png)\n")
    lat = payload["latency"]
    out.append("### Round latency at n = 2^14 (Sum), nanoseconds\n")
    out.append("Each round timed alone in thread CPU time (`thread_time_ns`, a system call of "
               "about 0.3 us that is included in every sample), 2^17 rounds, garbage "
               "collector paused. CPU time leaves out preemption by other processes, so the "
               "maximum shows the structure's own worst case (e.g. a Two-Stacks flip).\n")
    out.append(table(["algorithm", "p50", "p99", "p99.9", "max"],
                     [[f"`{r['algorithm']}`", f"{r['p50']:.0f}", f"{r['p99']:.0f}",
                       f"{r['p99.9']:.0f}", f"{r['max']:.0f}"] for r in lat]))
    out.append("### Goals\n")
    big = max(sizes)
    tsl_all = [by[("Sum", "two_stacks_lite", n)] for n in sizes
               if ("Sum", "two_stacks_lite", n) in by]
    if tsl_all:
        out.append(goal("`two_stacks_lite` with Sum at most 0.8 us per round, every size",
                        max(tsl_all) <= 800, "worst " + _fmt(max(tsl_all)) + " us"))
    ratios = [by[("Sum", "daba", n)] / by[("Sum", "two_stacks_lite", n)] for n in sizes
              if ("Sum", "daba", n) in by and ("Sum", "two_stacks_lite", n) in by]
    if ratios:
        out.append(goal("`daba` at most 3x `two_stacks_lite` (Sum), every size",
                        max(ratios) <= 3, f"worst {max(ratios):.2f}x"))
    flat_algos = ["soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite", "flatfit",
                  "slickdeque", "amta"]
    worst = []
    for a in flat_algos:
        lo, hi = by.get(("Sum", a, 2**10)), by.get(("Sum", a, big))
        if lo and hi:
            worst.append((hi / lo, a))
    if worst:
        ratio, algo = max(worst)
        out.append(goal(f"every O(1) algorithm flat within 1.5x from 2^10 to "
                        f"2^{big.bit_length() - 1}", ratio <= 1.5,
                        f"worst {algo} {ratio:.2f}x; " + ", ".join(
                            f"{a} {r:.2f}x" for r, a in sorted(worst))))
    lat_by = {r["algorithm"]: r for r in lat}
    if "daba" in lat_by and "two_stacks" in lat_by:
        d, t = lat_by["daba"]["max"], lat_by["two_stacks"]["max"]
        out.append(goal("`daba` max latency at 2^14 at most 1/10 of `two_stacks`'s",
                        d * 10 <= t, f"{d:.0f} ns vs {t:.0f} ns"))
    out.append("")
    return "\n".join(out)


def _plot(rows: list[dict[str, Any]], path: Any) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, agg_name in zip(axes, ("Sum", "BloomFilter")):
        for i, algo in enumerate(ALGORITHMS):  # 13 algorithms: 20 distinct colours
            pts = sorted((r["n"], r["ns_per_round"]) for r in rows
                         if r["algorithm"] == algo and r["aggregation"] == agg_name)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] / 1000 for p in pts], label=algo,
                        color=plt.get_cmap("tab20")(i), marker="osD^v<>ph*XP8"[i],
                        linestyle="-" if i % 2 == 0 else "--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("window size n")
        ax.set_ylabel("us per round")
        ax.set_title(f"{agg_name}: evict + insert + query")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
