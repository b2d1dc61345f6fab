"""Per-event OVER windows ``[t - 1 h, t]`` through ``WindowDriver`` (``process_batch`` /
``advance_keys``, which run OVER windows on the per-key path) against pandas
``groupby("key").rolling("1h", on="time", closed="both")``, on the stream of
:mod:`benchmarks.driver` (10^6 events, 100 keys, micro-batches of 10^4 with watermarks).
Rounds alternate the two; medians; every round's rows are compared with pandas' (within
1e-9).

Run: ``python -m benchmarks driver_over`` (``--quick``: the small stream). Stores
``benchmarks/results/driver_over.json``.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks import driver as d
from benchmarks.common import save

ROUNDS = 3


def measure(w: d.Workload, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """One entry per aggregation: median seconds of each side, ratios, row checks."""
    accepted = w.accepted()
    out = []
    for label, (name, fn) in d.AGGREGATIONS.items():
        query = d.over_query(fn, name)
        t: dict[str, list[float]] = {"swag": [], "swag_cpu": [], "pandas_build": [],
                                     "pandas_compute": []}
        equal, info = True, {}
        for _ in range(rounds):
            s, cpu, rows, info = d.timed(d.run_swag, w, query)
            t["swag"].append(s)
            t["swag_cpu"].append(cpu)
            want, build, compute = d.pandas_over(accepted, fn)
            t["pandas_build"].append(build)
            t["pandas_compute"].append(compute)
            equal = equal and d.compare_over(rows, want, name)["equal"]
            del want, rows
        med = {k: statistics.median(v) for k, v in t.items()}
        pandas_s = med["pandas_build"] + med["pandas_compute"]
        e = {"aggregation": label, "events": w.events, "accepted": len(accepted),
             "batch_runtime": info.get("batch_runtime"), "rounds": rounds,
             **{f"round_{k}_s": v for k, v in t.items()},
             "swag_s": med["swag"], "swag_cpu_s": med["swag_cpu"],
             "pandas_s": pandas_s, "swag_eps": w.events / med["swag"],
             "pandas_eps": len(accepted) / pandas_s,
             "round_ratios": [(b + c) / s for s, b, c in zip(
                 t["swag"], t["pandas_build"], t["pandas_compute"])],
             "rows_equal_pandas": equal}
        e["ratio"] = statistics.median(e["round_ratios"])
        print(f"  over {label}: driver {e['swag_eps']:,.0f} ev/s, pandas "
              f"{e['pandas_eps']:,.0f}; driver / pandas {e['ratio']:.2f}; rows equal {equal}",
              flush=True)
        out.append(e)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point of ``python -m benchmarks driver_over``."""
    if quick:
        w = d.workload(d.QUICK_EVENTS, keys=d.QUICK_KEYS, hours=d.QUICK_HOURS,
                       batch=d.QUICK_BATCH)
    else:
        w = d.workload()
    load = d._load()
    payload = {"over": measure(w, 1 if quick else ROUNDS), "quick": quick,
               "load_before": load, "load_after": d._load()}
    save("driver_over", payload, clock=d.CLOCK)
    return payload


def markdown(payload: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section (called by ``benchmarks/report.py``)."""
    from benchmarks.report import goal, machine_line, table

    over = payload["over"]
    lines = [
        "### Per-event OVER windows through the driver vs pandas\n",
        machine_line(payload) + f"_Load average {payload['load_before']} before and "
        f"{payload['load_after']} after the run: a shared machine._\n",
        "The stream above (late events dropped), `{\"kind\": \"over\", \"range\": 3600000}`, "
        "through `WindowDriver.process_batch` / `advance_keys` (OVER windows run on the "
        "driver's per-key path; Spark batch runs the vectorized OVER kernel directly, "
        "`adapters/crosskey/over_runtime.py`, see the Spark batch OVER section), next to "
        "pandas (build + `groupby(\"key\").rolling(\"1h\", on=\"time\", "
        "closed=\"both\")`, whole data at once, no watermarks, state or row dicts). Rounds "
        "alternate the two, medians; the ratio is the median of the rounds' own ratios (wall "
        "time). Rows: the driver's equal pandas' (within 1e-9) in every round. Run: "
        "`python -m benchmarks driver_over`.\n",
        table(["aggregation", "driver ev/s", "driver CPU s", "pandas ev/s (build + compute)",
               "driver / pandas (rounds)", "rows equal"],
              [[e["aggregation"], d._eps(e["swag_eps"]), f"{e['swag_cpu_s']:.2f}",
                d._eps(e["pandas_eps"]),
                f"{e['ratio']:.2f} ({', '.join(f'{x:.2f}' for x in e['round_ratios'])})",
                "yes" if e["rows_equal_pandas"] else "NO"]
               for e in over]),
    ]
    for e in over:
        lines.append(goal(f"OVER {e['aggregation']}: the driver at least as fast as pandas "
                          f"(build + compute)", e["ratio"] >= 1, f"{e['ratio']:.2f}x"))
    return "\n".join(lines) + "\n"
