"""Per-event OVER windows ``[t - 1 h, t]`` through ``WindowDriver`` (the cross-key OVER runtime of
``process_batch`` / ``advance_keys``, ``adapters/crosskey/over_batch.py``) against pandas
``groupby("key").rolling("1h", on="time", closed="both")`` and against the driver's per-key
path (``columnar=False``: what ran before), on the stream of :mod:`benchmarks.driver`
(10^6 events, 100 keys, micro-batches of 10^4 with watermarks). Rounds alternate the three;
medians; every round's rows are compared with pandas' (within 1e-9) and the two driver paths'
with each other (exactly).

Run: ``python -m benchmarks driver_over`` (``--quick``: the small stream). Stores
``benchmarks/results/driver_over.json``.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks import driver as d
from benchmarks.common import save

ROUNDS = 3


def _per_key(w: d.Workload, query: dict[str, Any], sink: d.Sink) -> dict[str, Any]:
    return d.run_swag(w, query, sink, columnar=False)


def _rows(rows: list[dict[str, Any]], name: str) -> list[tuple[Any, ...]]:
    return [(r["key"], r["time"], repr(r[name])) for r in rows]


def measure(w: d.Workload, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """One entry per aggregation: median seconds of each side, ratios, row checks."""
    accepted = w.accepted()
    out = []
    for label, (name, fn) in d.AGGREGATIONS.items():
        query = d.over_query(fn, name)
        t: dict[str, list[float]] = {"swag": [], "swag_cpu": [], "per_key": [],
                                     "pandas_build": [], "pandas_compute": []}
        equal, same_paths, info = True, True, {}
        for _ in range(rounds):
            s, cpu, rows, info = d.timed(d.run_swag, w, query)
            t["swag"].append(s)
            t["swag_cpu"].append(cpu)
            want, build, compute = d.pandas_over(accepted, fn)
            t["pandas_build"].append(build)
            t["pandas_compute"].append(compute)
            equal = equal and d.compare_over(rows, want, name)["equal"]
            del want
            s2, _, rows2, _ = d.timed(_per_key, w, query)
            t["per_key"].append(s2)
            same_paths = same_paths and _rows(rows, name) == _rows(rows2, name)
            del rows, rows2
        med = {k: statistics.median(v) for k, v in t.items()}
        pandas_s = med["pandas_build"] + med["pandas_compute"]
        e = {"aggregation": label, "events": w.events, "accepted": len(accepted),
             "batch_runtime": info.get("batch_runtime"), "rounds": rounds,
             **{f"round_{k}_s": v for k, v in t.items()},
             "swag_s": med["swag"], "swag_cpu_s": med["swag_cpu"],
             "per_key_s": med["per_key"], "pandas_s": pandas_s,
             "swag_eps": w.events / med["swag"], "per_key_eps": w.events / med["per_key"],
             "pandas_eps": len(accepted) / pandas_s,
             "round_ratios": [(b + c) / s for s, b, c in zip(
                 t["swag"], t["pandas_build"], t["pandas_compute"])],
             "rows_equal_pandas": equal, "rows_equal_per_key": same_paths}
        e["ratio"] = statistics.median(e["round_ratios"])
        print(f"  over {label}: driver {e['swag_eps']:,.0f} ev/s, per-key "
              f"{e['per_key_eps']:,.0f}, pandas {e['pandas_eps']:,.0f}; driver / pandas "
              f"{e['ratio']:.2f}; rows equal {equal} / {same_paths}", flush=True)
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
        "### Per-event OVER windows through the cross-key runtime vs pandas (issue 14)\n",
        machine_line(payload) + f"_Load average {payload['load_before']} before and "
        f"{payload['load_after']} after the run: a shared machine._\n",
        "The stream above (late events dropped), `{\"kind\": \"over\", \"range\": 3600000}`, "
        "through `WindowDriver.process_batch` / `advance_keys`: the "
        "cross-key OVER runtime (`adapters/crosskey/over_batch.py`: frames by binary search, "
        "max by a sparse table, exact prefix sums for the mean; one row dict per event). "
        "Driver-only numbers: no engine adapter reaches this runtime today (Spark streaming's "
        "key buckets ship the whole input row for over windows, and the runtime takes values "
        "of its one field only; Beam and Flink call the per-key path); Spark batch runs the "
        "same kernel directly (`spark_adapter/_over.py`, the Spark batch OVER section). "
        "Next to it the driver's per-key path (`columnar=False`, what ran before) and pandas "
        "(build + `groupby(\"key\").rolling(\"1h\", on=\"time\", closed=\"both\")`, whole "
        "data at once, no watermarks, state or row dicts). Rounds alternate the three, "
        "medians; the ratio is the median of the rounds' own ratios (wall time). Rows: the "
        "driver's equal pandas' (within 1e-9) and the per-key path's (exactly) in every "
        "round. Run: `python -m benchmarks driver_over`.\n",
        table(["aggregation", "driver ev/s", "driver CPU s", "per-key path ev/s",
               "pandas ev/s (build + compute)", "driver / pandas (rounds)", "rows equal"],
              [[e["aggregation"], d._eps(e["swag_eps"]), f"{e['swag_cpu_s']:.2f}",
                d._eps(e["per_key_eps"]), d._eps(e["pandas_eps"]),
                f"{e['ratio']:.2f} ({', '.join(f'{x:.2f}' for x in e['round_ratios'])})",
                "yes" if e["rows_equal_pandas"] and e["rows_equal_per_key"] else "NO"]
               for e in over]),
    ]
    for e in over:
        lines.append(goal(f"OVER {e['aggregation']}: the driver at least as fast as pandas "
                          f"(build + compute)", e["ratio"] >= 1, f"{e['ratio']:.2f}x"))
    return "\n".join(lines) + "\n"
