"""The FiBA paper's experiments at Python scale: bulk eviction and
out-of-order bulk insertion on a 2^20-entry window, in-order rounds of the tree structures
next to ``two_stacks_lite``, and bytes per entry of every structure."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from benchmarks.common import CLOCK, save
from benchmarks.core_rounds import MASK, VALUES, rounds_ns
from swag_core import ALGORITHMS, make_window
from swag_core.aggregations import Sum

N = 2**20
BULK_EVICT_SIZES = [1, 2**10, 2**16]
BULK_INSERT_M = 2**10
DISTANCES = [0, 2**10, 2**16]
# (label, algorithm, options)
TREES = [("fiba(4)", "fiba", {"arity": 4}), ("fiba(8)", "fiba", {"arity": 8}),
         ("amta", "amta", {}), ("log_mta", "log_mta", {}), ("reactive", "reactive", {})]


def _even_window(algorithm: str, n: int, **options: Any) -> Any:
    """n entries at even times 0, 2, ..., 2(n-1), so odd times never collide."""
    w = make_window(algorithm, Sum(), **options)
    w.bulk_insert((2 * i, VALUES[i & MASK]) for i in range(n))
    return w


def bulk_evict_ns(label: str, algorithm: str, options: dict[str, Any], n: int,
                  m: int, one_by_one: bool) -> float:
    """Median ns of removing the m oldest of n entries (refilled between samples)."""
    w = _even_window(algorithm, n, **options)
    repeats = 5 if m >= 2**16 else 21
    samples = []
    for _ in range(repeats):
        cut = w.oldest() + 2 * (m - 1)
        # No gc.collect() here: walking 2^20 objects right before a sample flushes the
        # caches and would be charged to a one-entry eviction (tens of microseconds).
        gc.disable()
        start = CLOCK()
        if one_by_one:
            evict = w.evict
            for _ in range(m):
                evict()
        else:
            removed = w.bulk_evict(cut)
            assert removed == m, (label, removed, m)
        samples.append(CLOCK() - start)
        gc.enable()
        young = w.youngest()
        w.bulk_insert((young + 2 * (i + 1), VALUES[i & MASK]) for i in range(m))
    samples.sort()
    return float(samples[len(samples) // 2])


def bulk_insert_ns_per_item(algorithm: str, options: dict[str, Any], n: int, m: int,
                            d: int) -> float:
    """Median ns per item of inserting m items whose times start d entries before the
    youngest end (d = 0: after it), evicting them again between samples."""
    w = _even_window(algorithm, n, **options)
    samples = []
    for _ in range(11):
        young = w.youngest()
        start_time = young - 2 * d + 1  # odd: never collides with the even entries
        batch = [(start_time + 2 * i, VALUES[i & MASK]) for i in range(m)]
        gc.disable()
        start = CLOCK()
        w.bulk_insert(batch)
        samples.append((CLOCK() - start) / m)
        gc.enable()
        # restore n entries: drop the m oldest and shift nothing else
        w.bulk_evict(w.oldest() + 2 * (m - 1))
    samples.sort()
    return samples[len(samples) // 2]


def bytes_per_entry(algorithm: str, n: int, **options: Any) -> float:
    """Structure bytes per entry (values pre-allocated, so only the structure counts)."""
    values = [1000 + (i & MASK) for i in range(4096)]
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    w = make_window(algorithm, Sum(), **options)
    w.bulk_insert((t, values[t & 4095]) for t in range(n))
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del w
    return used / n  # includes the time int objects (> 256) that each entry holds


def run(quick: bool = False) -> dict[str, Any]:
    n = 2**16 if quick else N
    evicts = []
    for m in BULK_EVICT_SIZES:
        if m > n // 4:
            continue
        for label, algorithm, options in [*TREES, ("two_stacks_lite one-by-one",
                                                   "two_stacks_lite", {})]:
            ns = bulk_evict_ns(label, algorithm, options, n, m,
                               one_by_one=algorithm == "two_stacks_lite")
            evicts.append({"structure": label, "n": n, "m": m, "ns": ns})
            print(f"  bulk_evict {label:28} m={m:<6} {ns / 1000:12.1f} us", flush=True)
    inserts = []
    for d in DISTANCES:
        for label, algorithm, options in TREES:
            if ALGORITHMS[algorithm].in_order and d > 0:
                continue
            ns = bulk_insert_ns_per_item(algorithm, options, n, BULK_INSERT_M, d)
            inserts.append({"structure": label, "n": n, "m": BULK_INSERT_M, "d": d,
                            "ns_per_item": ns})
            print(f"  bulk_insert {label:12} d={d:<6} {ns:10.0f} ns/item", flush=True)
    rounds = []
    for size in (2**10, 2**14, n):
        for label, algorithm, options in [*TREES, ("two_stacks_lite", "two_stacks_lite", {})]:
            w = make_window(algorithm, Sum(), **options)
            w.bulk_insert((t, VALUES[t & MASK]) for t in range(size))
            ns = rounds_ns(w, 2000 if quick else 20000)
            rounds.append({"structure": label, "n": size, "ns_per_round": ns})
            print(f"  rounds {label:16} n={size:<8} {ns:8.0f} ns", flush=True)
            del w
    memory = []
    for algorithm in ALGORITHMS:
        if ALGORITHMS[algorithm].mismatch(Sum()) is not None:
            continue
        b = bytes_per_entry(algorithm, n)
        memory.append({"algorithm": algorithm, "n": n, "bytes_per_entry": b})
        print(f"  memory {algorithm:16} {b:8.1f} B/entry", flush=True)
    payload = {"bulk_evict": evicts, "bulk_insert": inserts, "rounds": rounds,
               "memory": memory}
    save("core_bulk", payload)
    return payload



# --------------------------------------------------------------------------- report
def markdown(payload: dict[str, Any]) -> str:
    from benchmarks.common import IMAGES
    from benchmarks.report import goal, machine_line, table

    out = ["## Bulk eviction, out-of-order bulk insertion, tree structures\n",
           machine_line(payload)]
    ev = payload["bulk_evict"]
    n = ev[0]["n"] if ev else N
    ms = sorted({r["m"] for r in ev})
    structures = list(dict.fromkeys(r["structure"] for r in ev))
    by = {(r["structure"], r["m"]): r["ns"] for r in ev}
    out.append(f"### Removing the m oldest of n = 2^{n.bit_length() - 1} entries (Sum), "
               "microseconds per call\n")
    out.append("`two_stacks_lite` has no bulk eviction: it evicts one by one (m calls).\n")
    out.append(table(["structure"] + [f"m={m}" for m in ms],
                     [[s] + [f"{by[(s, m)] / 1000:.1f}" if (s, m) in by else "-" for m in ms]
                      for s in structures]))
    ins = payload["bulk_insert"]
    ds = sorted({r["d"] for r in ins})
    iby = {(r["structure"], r["d"]): r["ns_per_item"] for r in ins}
    out.append(f"### Bulk insert of m = {BULK_INSERT_M} items at out-of-order distance d, "
               "nanoseconds per item\n")
    out.append(table(["structure"] + [f"d={d}" for d in ds],
                     [[s] + [f"{iby[(s, d)]:.0f}" if (s, d) in iby else "-" for d in ds]
                      for s in dict.fromkeys(r["structure"] for r in ins)]))
    rounds = payload["rounds"]
    sizes = sorted({r["n"] for r in rounds})
    rby = {(r["structure"], r["n"]): r["ns_per_round"] for r in rounds}
    out.append("### In-order rounds (evict + insert + query), microseconds\n")
    out.append(table(["structure"] + [f"n=2^{s.bit_length() - 1}" for s in sizes],
                     [[s] + [f"{rby[(s, k)] / 1000:.2f}" for k in sizes]
                      for s in dict.fromkeys(r["structure"] for r in rounds)]))
    mem = payload["memory"]
    out.append(f"### Bytes per entry at n = 2^{n.bit_length() - 1} (Sum; includes the "
               "entry's time int object, 28-32 bytes)\n")
    out.append(table(["algorithm", "bytes/entry"],
                     [[f"`{r['algorithm']}`", f"{r['bytes_per_entry']:.0f}"] for r in mem]))
    _plot(payload, IMAGES / "core_bulk.png")
    out.append("![bulk evict and bulk insert](img/core_bulk.png)\n")
    out.append("### Goals\n")
    big_m = max(ms) if ms else 0
    base = by.get(("two_stacks_lite one-by-one", big_m))
    for s in ("fiba(4)", "amta"):
        if base and (s, big_m) in by:
            speedup = base / by[(s, big_m)]
            out.append(goal(f"`{s}` bulk_evict of m={big_m} at least 100x faster than "
                            "one-by-one `two_stacks_lite`", speedup >= 100, f"{speedup:.0f}x"))
    ratios = [rby[("fiba(4)", k)] / rby[("two_stacks_lite", k)] for k in sizes
              if ("fiba(4)", k) in rby and ("two_stacks_lite", k) in rby]
    if ratios:
        out.append(goal("`fiba` in-order rounds at most 6x `two_stacks_lite`",
                        max(ratios) <= 6, f"worst {max(ratios):.2f}x"))
    mby = {r["algorithm"]: r["bytes_per_entry"] for r in mem}
    if "fiba" in mby and "two_stacks_lite" in mby:
        r = mby["fiba"] / mby["two_stacks_lite"]
        out.append(goal("`fiba` bytes per entry at most 2x `two_stacks_lite`'s", r <= 2,
                        f"{mby['fiba']:.0f} vs {mby['two_stacks_lite']:.0f} B = {r:.2f}x"))
    out.append("")
    return "\n".join(out)


def _plot(payload: dict[str, Any], path: Any) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    ev = payload["bulk_evict"]
    for s in dict.fromkeys(r["structure"] for r in ev):
        pts = sorted((r["m"], r["ns"]) for r in ev if r["structure"] == s)
        left.plot([p[0] for p in pts], [p[1] / 1000 for p in pts], marker="o", label=s)
    left.set(xscale="log", yscale="log", xlabel="m evicted", ylabel="us per bulk eviction",
             title="bulk_evict from a 2^20 window")
    left.legend(fontsize=8)
    ins = payload["bulk_insert"]
    for s in dict.fromkeys(r["structure"] for r in ins):
        pts = sorted((r["d"], r["ns_per_item"]) for r in ins if r["structure"] == s)
        if len(pts) > 1:
            right.plot([max(p[0], 1) for p in pts], [p[1] for p in pts], marker="o", label=s)
    right.set(xscale="log", xlabel="out-of-order distance d (d=0 drawn at 1)",
              ylabel="ns per item", title="bulk_insert of 1024 items")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
