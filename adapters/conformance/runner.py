"""Run a query over scripted steps the way an engine would: the reference harness used by the
conformance corpus (``tests/conformance``) and by tests.

Steps are the scenario format of ``docs/adapters.md``: ``{"events": [[key, time, value], ...]}``
or ``{"watermark": W}`` (``W`` an int or ``"end"``). The runner behaves like an engine:
events are passed with the current watermark; on a watermark step only keys whose timer is
due are woken (one timer per key, replaced on every call), so a wrong timer shows up as a
missing or late row.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.driver.window_driver import LateEvent, Output, WindowDriver, parse_watermark
from adapters.query.specs import Query
from adapters.state.backend import MemoryStateBackend


@dataclass
class RunResult:
    """What a run produced.

    Attributes:
        rows: every emitted row, in emission order.
        late: late-event count per key, for keys with at least one late event.
        late_events: the late events, in arrival order.
        step_rows: the rows emitted by each step (same length as the steps).
        driver: the driver at the end of the run (a new one after each restart).
        backend: the state backend at the end of the run.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    late: dict[Any, int] = field(default_factory=dict)
    late_events: list[LateEvent] = field(default_factory=list)
    step_rows: list[list[dict[str, Any]]] = field(default_factory=list)
    driver: WindowDriver | None = None
    backend: MemoryStateBackend | None = None


def run_steps(query: Query | Mapping[str, Any], steps: Iterable[Mapping[str, Any]], *,
              algorithm: str | None = None, restart_after: Container[int] = (),
              max_cached_keys: int | None = None) -> RunResult:
    """Drive a :class:`~adapters.driver.window_driver.WindowDriver` through ``steps``.

    Args:
        query: a :class:`~adapters.query.specs.Query` or its dict form.
        steps: scenario steps (see the module docstring).
        algorithm: force a ``swag_core`` algorithm.
        restart_after: step indices after which the run "crashes" and restarts: state is
            snapshotted, a new backend is restored from the snapshot and a new driver (empty
            cache) continues, as after an engine failure.
        max_cached_keys: passed to the driver.

    Raises whatever the driver raises (e.g. :class:`~adapters.errors.BadEventError`).
    """
    def new_driver() -> WindowDriver:
        return WindowDriver(query if isinstance(query, Query) else dict(query),
                            algorithm=algorithm, max_cached_keys=max_cached_keys)

    driver = new_driver()
    backend = MemoryStateBackend()
    result = RunResult()
    timers: dict[Any, int] = {}
    watermark: int | float = -math.inf
    for i, step in enumerate(steps):
        if "events" in step:
            events = []
            for item in step["events"]:
                key, time, value = item
                events.append((key, time, value))
            out = driver.process_batch(events, backend,
                                       watermark=None if watermark == -math.inf else watermark)
        elif "watermark" in step:
            w = parse_watermark(step["watermark"])
            if w > watermark:
                watermark = w
            out = Output()
            for key in [k for k, t in timers.items() if t <= watermark]:
                out.extend(driver.advance_watermark(key, watermark, backend.key_state(key)))
        else:
            raise ValueError(f"step {i}: expected an 'events' or 'watermark' step, got "
                             f"{dict(step)!r:.80}")
        _set_timers(timers, out, watermark)
        _record(result, out)
        if i in restart_after:
            backend = MemoryStateBackend.restore(backend.snapshot())
            driver = new_driver()
    result.driver = driver
    result.backend = backend
    return result


def _set_timers(timers: dict[Any, int], out: Output, watermark: int | float) -> None:
    """The keys' timers after a call's output; a timer not after the watermark is a bug."""
    for key, t in out.timers.items():
        if t is None:
            timers.pop(key, None)
        elif t <= watermark:
            raise RuntimeError(f"driver asked for a timer at {t} for key {key!r}, not "
                               f"after the watermark {watermark}")
        else:
            timers[key] = t


def _record(result: RunResult, out: Output) -> None:
    """A step's rows and late events into ``result``."""
    result.rows.extend(out.rows)
    result.step_rows.append(out.rows)
    result.late_events.extend(out.late)
    for ev in out.late:
        result.late[ev.key] = result.late.get(ev.key, 0) + 1


def run_scenario(scenario: Mapping[str, Any], **options: Any) -> RunResult:
    """:func:`run_steps` on a conformance scenario dict (``{"query": ..., "steps": ...}``)."""
    return run_steps(scenario["query"], scenario["steps"], **options)
