"""Timing, machine description and result storage shared by every benchmark suite."""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
IMAGES = DOCS / "img"

#: The clock of every core benchmark: CPU time of this thread. The machines these numbers
#: come from are shared, and CPU time is not inflated by other processes (wall time under a
#: load of 6 on 2 cores is about 3x longer); memory-bound work still feels the sharing.
CLOCK = time.thread_time_ns
CLOCK_NAME = "thread CPU time (time.thread_time_ns)"


def machine() -> dict[str, Any]:
    """Where and with what the numbers were taken."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = -1.0
    return {
        "cpu": cpu, "load_average_1min": round(load, 2), "clock": CLOCK_NAME,
        "cores": os.cpu_count(), "python": sys.version.split()[0],
        "implementation": platform.python_implementation(), "os": platform.platform(),
        "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def median_ns_per_op(run: Callable[[], int], repeats: int = 5) -> float:
    """Median over ``repeats`` of (CPU ns / operations) where ``run()`` returns its
    operation count. The garbage collector is paused while timing."""
    samples = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = CLOCK()
            ops = run()
            elapsed = CLOCK() - start
        finally:
            gc.enable()
        samples.append(elapsed / max(ops, 1))
    return statistics.median(samples)


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    """p50, p99, p99.9 and max of per-operation latencies, in ns."""
    s = sorted(samples_ns)
    n = len(s)

    def at(q: float) -> float:
        return float(s[min(n - 1, int(q * n))])

    return {"p50": at(0.50), "p99": at(0.99), "p99.9": at(0.999), "max": float(s[-1])}


def save(name: str, payload: dict[str, Any], clock: str | None = None) -> Path:
    """Store one suite's results with the machine description; ``clock`` names how the
    suite timed itself when it is not :data:`CLOCK_NAME` (e.g. wall time of an engine)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    desc = machine()
    if clock is not None:
        desc["clock"] = clock
    path.write_text(json.dumps({"machine": desc, **payload}, indent=1, sort_keys=True))
    return path


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def process_table(reaped: bool = False) -> tuple[dict[int, list[int]], dict[int, float]] | None:
    """Every live process's children and CPU seconds (user + system; with ``reaped`` also
    those of its children it already waited for, ``cutime``/``cstime``) from ``/proc``, or
    ``None`` where there is no ``/proc``. CPU time, unlike wall time, does not grow when
    other jobs share the machine."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    last = 15 if reaped else 13
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) "
        children.setdefault(int(fields[1]), []).append(pid)
        used[pid] = sum(int(x) for x in fields[11:last]) / tick
    return children, used


def descendants(root: int, children: dict[int, list[int]]) -> list[int]:
    """``root`` and every process below it in ``children``."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out
