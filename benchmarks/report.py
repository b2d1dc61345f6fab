"""Render docs/benchmarks.md from the stored results of every suite.

Each suite module offers ``markdown(payload) -> str`` (and draws its own plots into
docs/img); this module only stitches them together under one header."""

from __future__ import annotations

import importlib
from pathlib import Path

from benchmarks.common import DOCS, load

ORDER = ["core_rounds", "core_bulk", "driver", "driver_over", "spark_windows", "spark_over",
         "spark_flights", "spark_matrix",
         "spark_event_path", "spark_streaming", "beam_windows", "flink_windows", "kvs_layout",
         "spark_kvs"]

HEADER = """# Benchmarks

Produced by `make bench` (`python -m benchmarks`; engine suites run in their own
environments, see each section). Raw results: `benchmarks/results/*.json`. Numbers are
medians; each section names the machine and versions it ran on and the command that
reproduces it. Goals are the project's targets; each is evaluated from the stored numbers by
the suite's report code, not written by hand. History and superseded runs: `CHANGELOG.md`.
"""


def machine_line(payload: dict) -> str:
    m = payload.get("machine", {})
    return (f"_Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; "
            f"{m.get('implementation', 'Python')} {m.get('python', '?')}; "
            f"{m.get('os', '?')}; {m.get('date', '?')}; "
            f"load average {m.get('load_average_1min', '?')}; clock: {m.get('clock', 'wall')}._\n")


def render() -> Path:
    parts = [HEADER]
    for name in ORDER:
        payload = load(name)
        if payload is None:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        parts.append(module.markdown(payload))
    from benchmarks import path_ab

    parts.append(path_ab.markdown())
    path = DOCS / "benchmarks.md"
    DOCS.mkdir(exist_ok=True)
    path.write_text("\n".join(parts))
    return path


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def goal(text: str, reached: bool, detail: str) -> str:
    return f"- {'**reached**' if reached else '**missed**'}: {text} ({detail})"
