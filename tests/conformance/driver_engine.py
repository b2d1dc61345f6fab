"""The adapters driver (``adapters.driver.window_driver.WindowDriver``) as a conformance engine.

The documented entry point is the driver engineer's harness ``adapters.run_scenario``
(events of a step go to ``process_batch`` with the current watermark; on a watermark step only
keys whose timer is due are woken; it also refuses a timer that is not after the watermark).
This module adds replays written independently of that harness, so that a harness bug cannot
hide a driver bug, and so that the other ways engines call the driver are covered too:

* ``harness`` (default): ``adapters.run_scenario(scenario)``;
* ``harness-restart``: ``run_scenario(..., restart_after=every step)``: after every step the
  state is snapshotted and restored into a new backend and a new driver (empty cache), as
  after an engine failure;
* ``timers``: one ``process_batch`` per events step, due timers woken (own replay);
* ``all-keys``: every key seen is advanced on every watermark, due or not;
* ``per-event``: one ``process_event`` call per event (Flink ``processElement`` style).

Use: ``python -m tests.conformance.runner --engine tests.conformance.driver_engine:DriverEngine``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

MODES = ("harness", "harness-restart", "timers", "all-keys", "per-event")


class DriverEngine:
    """``engine(scenario) -> {"rows": [...], "late": {...}}`` on ``adapters.WindowDriver``."""

    def __init__(self, mode: str = "harness", algorithm: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.algorithm = algorithm

    def __repr__(self) -> str:
        return f"DriverEngine({self.mode!r}, algorithm={self.algorithm!r})"

    def __call__(self, scenario: dict[str, Any]) -> dict[str, Any]:
        if self.mode.startswith("harness"):
            from adapters import run_scenario

            restart = range(len(scenario["steps"])) if self.mode == "harness-restart" else ()
            result = run_scenario(scenario, algorithm=self.algorithm, restart_after=restart)
            return {"rows": result.rows, "late": result.late}
        return self._replay(scenario)

    def _replay(self, scenario: dict[str, Any]) -> dict[str, Any]:
        from adapters.driver.window_driver import END_OF_INPUT, WindowDriver
        from adapters.state.backend import MemoryStateBackend

        backend = MemoryStateBackend()
        query = scenario["query"]

        def new_driver() -> WindowDriver:
            return WindowDriver(query, algorithm=self.algorithm, backend=backend)

        driver = new_driver()
        rows: list[dict[str, Any]] = []
        late: Counter[Any] = Counter()
        timers: dict[Any, int | None] = {}
        keys: list[Any] = []  # every key seen, first-seen order
        seen: set[Any] = set()
        watermark: Any = None  # the engine's current (largest) watermark

        def collect(out: Any) -> None:
            rows.extend(out.rows)
            for ev in out.late:
                late[ev.key] += 1
            timers.update(out.timers)

        for step in scenario["steps"]:
            if "events" in step:
                events = step["events"]
                for key, _t, _v in events:
                    if key not in seen:
                        seen.add(key)
                        keys.append(key)
                if self.mode == "per-event":
                    for key, t, value in events:
                        collect(driver.process_event(key, t, value, watermark=watermark))
                else:
                    collect(driver.process_batch(events, watermark=watermark))
            else:
                w = step["watermark"]
                w = END_OF_INPUT if w == "end" else w
                if watermark is None or w > watermark:
                    watermark = w
                if self.mode == "all-keys":
                    due = list(keys)
                else:
                    due = [k for k in keys if (t := timers.get(k)) is not None and t <= w]
                for key in due:
                    collect(driver.advance_watermark(key, w))
        return {"rows": rows, "late": dict(late)}
