"""The docs/benchmarks.md section of the path A/Bs: each execution path through an engine
against the same code with that path off (``--without PATH`` of ``benchmarks.spark_event_path``,
``benchmarks.spark_streaming`` and ``benchmarks.beam_windows``; stored as
``benchmarks/results/<suite>_without_<path>.json``, each with the command that wrote it)."""

from __future__ import annotations

from typing import Any

from benchmarks.common import load

#: results name -> (path, engine and mode)
RUNS = {
    "spark_event_path_without_kernels": ("kernel mode", "Spark batch"),
    "beam_windows_without_kernels": ("kernel mode", "Beam (FnApiRunner, batch)"),
    "spark_streaming_without_kernels": ("kernel mode", "Spark streaming, key buckets"),
    "spark_event_path_without_over_kernel": ("stateless OVER kernel", "Spark batch"),
    "spark_event_path_without_presliced": ("batch pre-slicing", "Spark batch"),
}


def _shape(r: dict[str, Any]) -> str:
    """The query shape of one result row, in a few words."""
    if "query" in r:
        return f"`{r['query']}`, {r['events']:,} events, {r['keys']:,} keys"
    if "slide" in r:
        return f"workload {r['workload']}, slide {r['slide']}, {r['events']:,} events, " \
               f"{r['keys']:,} keys"
    return f"k = {r['k']}, {r['events']:,} events"


def _cpu(r: dict[str, Any]) -> str:
    if "with_cpu_s" not in r or "without_cpu_s" not in r:
        return "-"
    return f"{r['with_cpu_s']} / {r['without_cpu_s']}"


def markdown() -> str:
    """The section, or ``""`` when no path A/B is stored."""
    from benchmarks.report import table

    rows = []
    commands = []
    for name, (path, engine) in RUNS.items():
        payload = load(name)
        if payload is None:
            continue
        load_avg = f"{payload['load_average_at_start']}, {payload['load_average_at_end']}"
        for r in payload["results"]:
            rows.append([path, engine, _shape(r), f"{r['with_eps']:,}", f"{r['without_eps']:,}",
                         f"{r['ratio']}x", _cpu(r), load_avg,
                         "yes" if r["same"] else "NO", f"`{name}.json`"])
        commands.append(f"- `{name}.json`: `{payload['command']}`")
    if not rows:
        return ""
    return "\n".join([
        "## Each path against the same code with it off\n",
        "Every path beside the per-key lanes, through an engine, against this checkout with "
        "that path switched off (`adapters.planning.BENCHMARK_WITHOUT`, for benchmarks only; "
        "`presliced=False` for pre-slicing): the same data, alternating runs, medians of "
        "wall time (events/s) and of JVM + Python-worker CPU seconds where the engine runs "
        "in processes of its own. The machine is shared: the load average at start and end "
        "of each run is given; the CPU seconds move less with it than the wall time. Rows of "
        "the two sides compared.\n",
        table(["path", "engine", "query", "with (events/s)", "without (events/s)", "ratio",
               "CPU s with / without", "load (start, end)", "same rows",
               "results"], rows),
        "Commands (from the checkout, `PYTHONPATH=.`):\n",
        *commands, "", ""])


__all__ = ["RUNS", "markdown"]
