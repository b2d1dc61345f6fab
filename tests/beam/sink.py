"""A process-local sink for test pipelines: DoFns are pickled, so results are collected in
this importable module's registry (the in-process runners share it), keyed by a run id."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import apache_beam as beam

_LOCK = threading.Lock()
_RUNS: dict[int, list[Any]] = {}
_IDS = itertools.count()


def new_run() -> int:
    """A fresh run id."""
    with _LOCK:
        run = next(_IDS)
        _RUNS[run] = []
        return run


def take(run: int) -> list[Any]:
    """What the run collected (and forget it)."""
    with _LOCK:
        return _RUNS.pop(run)


class Collect(beam.DoFn):  # type: ignore[misc]
    """Appends ``(element, timestamp in micros)`` to the run's list."""

    def __init__(self, run: int) -> None:
        super().__init__()
        self.run = run

    def process(self, element: Any, ts: Any = beam.DoFn.TimestampParam) -> None:
        with _LOCK:
            _RUNS[self.run].append((element, ts.micros))


def discard(*runs: int) -> None:
    """Forget runs (after a failure)."""
    with _LOCK:
        for run in runs:
            _RUNS.pop(run, None)
