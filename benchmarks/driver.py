"""Throughput of the engine-free window driver (``adapters.WindowDriver``).

* Sliding windows of 1 hour with slides of 1 h, 10 min, 1 min and 10 s (k = range / slide =
  1, 6, 60, 360 windows per event), Max and Mean, 100 keys: the driver next to a pure-Python
  *per-window-assignment* driver, which is what Spark, Beam and Flink do (each event is added
  to an accumulator of each of the k windows it belongs to; a window is emitted and dropped
  once the watermark passes its end).
* Per-event OVER windows (``[t - 1h, t]``) next to pandas
  ``groupby("key").rolling("1h", on="time", closed="both")``.

Both streaming drivers read the same stream in the same micro-batches with the same
watermarks, so they see the same late events and must emit the same rows; every run checks
this (floats within a relative 1e-9) and stores the outcome.
"""

from __future__ import annotations

import gc
import math
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any

from adapters import END_OF_INPUT, MemoryStateBackend, WindowDriver
from benchmarks import common
from benchmarks.common import save

HOUR = 3_600_000
#: k (windows per event) -> slide in ms, for a range of one hour
SLIDES = {1: HOUR, 6: 600_000, 60: 60_000, 360: 10_000}
#: benchmark label -> (output name, driver fn)
AGGREGATIONS = {"Max": ("max", "max"), "Mean": ("mean", "mean")}
FIELD = "v"
KEYS = 100
EVENTS = 10**6
BATCH = 10_000
SPAN_HOURS = 10          # event times cover 10 hours: 1,000 events per key and hour
MEAN_DELAY = 1_500       # event delay (arrival clock - event time): exponential, ms ...
MAX_DELAY = 10_000       # ... capped at 10 s
WATERMARK_DELAY = 5_000  # watermark after a batch: largest event time seen - 5 s
LATENESS = 0             # allowed lateness of the query
EPOCH = 1_700_000_000_000 - 1_700_000_000_000 % HOUR  # a whole hour, in 2023
#: k -> share of the keys the per-window driver (and, for a like-for-like ratio, the
#: WindowDriver again) is run on, when not all: the events of those keys keep the stream's
#: per-key density, time span and watermarks, so the per-event rates are those of the full
#: stream (at k = 360 the full stream would cost the per-window driver 3.6e8 accumulator
#: updates, many minutes of pure Python)
BASELINE_KEY_SHARE = {360: 0.05}
#: quick mode: the same density (1,000 events per key and hour) and events per key and batch
#: (100) on 10 keys and 2 hours
QUICK_EVENTS, QUICK_KEYS, QUICK_HOURS, QUICK_BATCH = 20_000, 10, 2, 1_000
TOLERANCE = 1e-9
#: rounds per sliding cell (both drivers, alternating); the medians are reported
REPEATS = 3
#: how :func:`timed` measures
CLOCK = "wall (time.perf_counter) and process CPU (time.process_time)"


# =====================================================================================
# workload
# =====================================================================================
@dataclass
class Workload:
    """A deterministic stream cut into micro-batches.

    ``batches[i]`` holds ``(key, time, {"v": float})`` events in arrival order;
    ``watermarks[i]`` is the watermark known after batch ``i`` (largest event time seen so
    far minus the watermark delay), i.e. the watermark under which batch ``i + 1``
    arrives. Event times are distinct within a key (so per-event OVER rows have no peers and
    compare one to one with pandas).
    """

    batches: list[list[tuple[str, int, dict[str, float]]]]
    watermarks: list[int]
    keys: list[str]

    @property
    def events(self) -> int:
        return sum(len(b) for b in self.batches)

    def subset(self, keys: list[str]) -> Workload:
        """The events of ``keys`` only, in the same batches (smaller) with the same
        watermarks."""
        chosen = set(keys)
        return Workload([[e for e in batch if e[0] in chosen] for batch in self.batches],
                        list(self.watermarks), list(keys))

    def accepted(self, lateness: int = LATENESS) -> list[tuple[str, int, dict[str, float]]]:
        """Events that are not late (``time >= watermark - lateness`` at arrival)."""
        out: list[tuple[str, int, dict[str, float]]] = []
        bound: float = -math.inf
        for batch, mark in zip(self.batches, self.watermarks):
            out.extend(e for e in batch if e[1] >= bound)
            bound = mark - lateness
        return out


def workload(n: int = EVENTS, *, keys: int = KEYS, hours: float = SPAN_HOURS,
             batch: int = BATCH, seed: int = 4, mean_delay: int = MEAN_DELAY,
             max_delay: int = MAX_DELAY, watermark_delay: int = WATERMARK_DELAY) -> Workload:
    """``n`` events of ``keys`` keys whose times cover ``hours`` hours, mildly out of order.

    Event ``i`` arrives at clock ``EPOCH + i * span / n``; its time is the clock minus an
    exponential delay (by default mean 1.5 s, at most 10 s), moved forward by a millisecond or
    two if its key already has an event at that time. Its key is uniform; its value a float in
    [0, 1000).
    """
    rng = random.Random(seed)
    span = int(hours * HOUR)
    names = [f"k{i:03d}" for i in range(keys)]
    used: list[set[int]] = [set() for _ in range(keys)]
    expo, randrange, rand = rng.expovariate, rng.randrange, rng.random
    batches: list[list[tuple[str, int, dict[str, float]]]] = []
    marks: list[int] = []
    current: list[tuple[str, int, dict[str, float]]] = []
    newest = -math.inf
    for i in range(n):
        k = randrange(keys)
        t = EPOCH + i * span // n - min(int(expo(1 / mean_delay)), max_delay)
        seen = used[k]
        while t in seen:
            t += 1
        seen.add(t)
        current.append((names[k], t, {FIELD: rand() * 1000}))
        if t > newest:
            newest = t
        if len(current) == batch or i == n - 1:
            batches.append(current)
            marks.append(int(newest) - watermark_delay)
            current = []
    return Workload(batches, marks, names)


def sliding_query(slide: int, fn: str, name: str, range_: int = HOUR) -> dict[str, Any]:
    return {"windows": [{"kind": "sliding", "range": range_, "slide": slide}],
            "aggregations": {name: {"fn": fn, "field": FIELD}}, "allowed_lateness": LATENESS}


def over_query(fn: str, name: str, range_: int = HOUR) -> dict[str, Any]:
    return {"windows": [{"kind": "over", "range": range_}],
            "aggregations": {name: {"fn": fn, "field": FIELD}}, "allowed_lateness": LATENESS}


# =====================================================================================
# the two streaming drivers
# =====================================================================================
Sink = Callable[[list[dict[str, Any]]], Any]


def run_swag(w: Workload, query: dict[str, Any], sink: Sink,
             columnar: bool = True) -> dict[str, Any]:
    """Feed ``w`` to a :class:`~adapters.WindowDriver` the way an engine does: one
    ``process_batch`` per micro-batch (with the current watermark), then the due timers
    (``advance_keys`` for the keys whose timer is ``<=`` the new watermark), and end of
    input at the end. Rows go to ``sink``. Returns the driver's structure layout and the
    number of late events. ``columnar=False``: the per-key path only."""
    driver = WindowDriver(query, columnar=columnar)
    backend = MemoryStateBackend(strict=False)
    process, advance = driver.process_batch, driver.advance_keys
    timers: dict[Any, int | None] = {}
    late = 0
    watermark: int | None = None
    for batch, mark in zip(w.batches, w.watermarks):
        out = process(batch, backend, watermark=watermark)
        sink(out.rows)
        late += len(out.late)
        timers.update(out.timers)
        watermark = mark
        due = [k for k, t in timers.items() if t is not None and t <= mark]
        if due:
            out = advance(due, mark, backend)
            sink(out.rows)
            timers.update(out.timers)
    out = advance(list(timers), END_OF_INPUT, backend)
    sink(out.rows)
    return {"late": late, "structures": [list(s) for s in driver.structures],
            "batch_runtime": driver.batch_runtime}


def run_baseline(w: Workload, slide: int, fn: str, name: str, sink: Sink,
                 range_: int = HOUR, offset: int = 0,
                 lateness: int = LATENESS) -> dict[str, Any]:
    """The per-window-assignment driver (what Spark, Beam and Flink do), in good pure Python.

    State: per key a dict ``window start -> accumulator`` (a running max; a ``[sum, count]``
    pair for the mean), so each event costs one dict lookup and update per window it belongs
    to (``k = range / slide`` of them); plus one timer per (key, window) in a heap ordered by
    window end, the way Flink's timer service orders its event-time timers. Same semantics
    as the driver: an event with ``time < watermark - lateness`` is late (dropped, counted),
    a window ``[start, end)`` is emitted once ``watermark - lateness >= end``, and end of input
    emits everything. The hot loops are specialised per aggregation (no call per update)."""
    if fn not in ("max", "mean"):
        raise ValueError(f"the baseline implements max and mean, not {fn!r}")
    state: dict[str, dict[int, Any]] = {}
    timers: list[tuple[int, str, int]] = []
    push, pop = heappush, heappop
    r, s, o = range_, slide, offset
    late = 0
    bound: float = -math.inf
    is_max = fn == "max"

    def emit(upto: float) -> None:
        rows: list[dict[str, Any]] = []
        add = rows.append
        while timers and timers[0][0] <= upto:
            end, key, start = pop(timers)
            acc = state[key].pop(start)
            add({"window": 0, "key": key, "start": start, "end": end,
                 name: acc if is_max else acc[0] / acc[1]})
        sink(rows)

    for batch, mark in zip(w.batches, w.watermarks):
        if is_max:
            for key, t, value in batch:
                if t < bound:
                    late += 1
                    continue
                v = value[FIELD]
                accs = state.get(key)
                if accs is None:
                    accs = state[key] = {}
                for start in range(t - (t - o) % s, t - r, -s):
                    a = accs.get(start)
                    if a is None:
                        accs[start] = v
                        push(timers, (start + r, key, start))
                    elif v > a:
                        accs[start] = v
        else:
            for key, t, value in batch:
                if t < bound:
                    late += 1
                    continue
                v = value[FIELD]
                accs = state.get(key)
                if accs is None:
                    accs = state[key] = {}
                for start in range(t - (t - o) % s, t - r, -s):
                    a = accs.get(start)
                    if a is None:
                        accs[start] = [v, 1]
                        push(timers, (start + r, key, start))
                    else:
                        a[0] += v
                        a[1] += 1
        bound = mark - lateness
        emit(bound)
    emit(math.inf)
    return {"late": late}


# =====================================================================================
# the floor: reading the events
# =====================================================================================
def reading_costs(w: Workload) -> dict[str, Any]:
    """Seconds (garbage collector paused) to merely *read* the stream, which bounds what any
    Python driver can do per event:

    * ``touch_s``: a bare loop that unpacks each event and reads its value field (what every
      driver does at least once);
    * ``intake_s``: the `WindowDriver`'s columnar reading alone
      (:meth:`adapters.crosskey.columnar.ColumnarIntake.read`: every event validated and turned into
      NumPy columns with a key code each, before any sorting, window work or state write),
      by the compiled reader where it is built (``reader``: ``"compiled"`` or ``"python"``);
    * ``intake_python_s``: the same by the pure-Python reader (``read_python``).
    """
    from adapters.crosskey import columnar

    intake = columnar.ColumnarIntake(FIELD)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for batch in w.batches:
            for _key, _t, value in batch:
                value[FIELD]
        touch = time.perf_counter() - start
        start = time.perf_counter()
        taken = sum(intake.read(batch) is not None for batch in w.batches)
        split = time.perf_counter() - start
        start = time.perf_counter()
        taken_python = sum(intake.read_python(batch) is not None for batch in w.batches)
        split_python = time.perf_counter() - start
    finally:
        gc.enable()
    if taken != len(w.batches) or taken_python != taken:  # None: not covered
        raise RuntimeError(f"the columnar intake took {taken} (Python reader: {taken_python})"
                           f" of {len(w.batches)} batches")
    return {"touch_s": touch, "intake_s": split, "intake_python_s": split_python,
            "reader": "python" if columnar.compiled_reader is None else "compiled"}


def reader_ab(w: Workload, k: int = 60, label: str = "Max",
              repeats: int = REPEATS) -> dict[str, Any] | None:
    """The whole `WindowDriver` run with the compiled reader and with the pure-Python one
    (``adapters.crosskey.columnar.compiled_reader`` set to ``None``), rounds alternating; ``None``
    where the compiled reader is not built."""
    from adapters.crosskey import columnar

    compiled = columnar.compiled_reader
    if compiled is None:
        return None
    name, fn = AGGREGATIONS[label]
    query = sliding_query(SLIDES[k], fn, name)
    times: dict[str, list[float]] = {"compiled_s": [], "python_s": []}
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        for _ in range(repeats):
            for which, reader in (("compiled_s", compiled), ("python_s", None)):
                columnar.compiled_reader = reader
                seconds, _cpu, rows[which], _info = timed(run_swag, w, query)
                times[which].append(seconds)
    finally:
        columnar.compiled_reader = compiled
    equal = compare_windows(rows["compiled_s"], rows["python_s"], name)["equal"]
    return {"k": k, "aggregation": label, "events": w.events, "equal": equal, **times}


# =====================================================================================
# pandas, for OVER windows
# =====================================================================================
def pandas_over(events: list[tuple[str, int, dict[str, float]]], fn: str,
                range_: int = HOUR) -> tuple[dict[tuple[str, int], float], float, float]:
    """Per-event ``[t - range, t]`` aggregates with pandas: ``{(key, time): value}``, the
    seconds spent building the DataFrame from the Python events, and the seconds of sort +
    ``groupby("key").rolling(..., on="time", closed="both")``.

    pandas' rolling includes the rows up to the current one, not later rows at the same
    time (SQL peers); the workload has distinct times per key, where the two agree."""
    import numpy as np
    import pandas as pd

    start = time.perf_counter()
    df = pd.DataFrame({"key": [e[0] for e in events],
                       "time": pd.to_datetime(np.fromiter((e[1] for e in events), np.int64,
                                                          len(events)), unit="ms"),
                       "v": np.fromiter((e[2][FIELD] for e in events), np.float64,
                                        len(events))})
    built = time.perf_counter()
    df = df.sort_values(["key", "time"], kind="stable")
    roll = df.groupby("key", sort=False).rolling(pd.Timedelta(milliseconds=range_), on="time",
                                                 closed="both")["v"]
    result = roll.max() if fn == "max" else roll.mean()
    done = time.perf_counter()
    last = result.index.get_level_values(-1)
    if isinstance(last, pd.DatetimeIndex):  # pandas 3: (key, time)
        keys = result.index.get_level_values(0).to_numpy()
        times = last.to_numpy()
    else:  # older pandas: (key, row label)
        rows = df.loc[last]
        keys, times = rows["key"].to_numpy(), rows["time"].to_numpy()
    ms = times.astype("datetime64[ms]").astype(np.int64).tolist()
    got = dict(zip(zip(keys.tolist(), ms), result.to_numpy().tolist()))
    return got, built - start, done - built


# =====================================================================================
# row comparison
# =====================================================================================
def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(
            a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return bool(a == b)


def compare_windows(got: list[dict[str, Any]], want: list[dict[str, Any]],
                    name: str) -> dict[str, Any]:
    """Compare two lists of window rows as multisets keyed by ``(key, start, end)``."""
    def index(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], Any]:
        out = {}
        for row in rows:
            out[(row["window"], row["key"], row["start"], row["end"])] = row[name]
        return out
    a, b = index(got), index(want)
    bad = [k for k in a.keys() & b.keys() if not _close(a[k], b[k])]
    missing, extra = b.keys() - a.keys(), a.keys() - b.keys()
    equal = (not bad and not missing and not extra and len(a) == len(got)
             and len(b) == len(want))
    result: dict[str, Any] = {"rows": len(want), "equal": equal}
    if not equal:
        result["detail"] = (f"{len(bad)} differ (e.g. {[(k, a[k], b[k]) for k in bad[:2]]}), "
                            f"{len(missing)} missing, {len(extra)} extra, "
                            f"{len(got)} vs {len(want)} rows")
    return result


def compare_over(rows: list[dict[str, Any]], want: dict[tuple[str, int], float],
                 name: str) -> dict[str, Any]:
    """Compare the driver's per-event rows with pandas' ``{(key, time): value}``."""
    got = {(row["key"], row["time"]): row[name] for row in rows}
    bad = [k for k in got.keys() & want.keys() if not _close(got[k], want[k])]
    missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
    equal = not bad and not missing and not extra and len(got) == len(rows)
    result: dict[str, Any] = {"rows": len(want), "equal": equal}
    if not equal:
        result["detail"] = (f"{len(bad)} differ (e.g. "
                            f"{[(k, got[k], want[k]) for k in bad[:2]]}), "
                            f"{len(missing)} missing, {len(extra)} extra")
    return result


# =====================================================================================
# timing
# =====================================================================================
def timed(run: Callable[..., dict[str, Any]], *args: Any
          ) -> tuple[float, float, list[dict[str, Any]], dict[str, Any]]:
    """Wall-clock and CPU seconds of one ``run(*args, sink)`` with the garbage collector paused, the
    rows it emitted and its result. The rows are kept (the sink is ``list.extend``)."""
    rows: list[dict[str, Any]] = []
    gc.collect()
    gc.disable()
    try:
        cpu, start = time.process_time(), time.perf_counter()
        info = run(*args, rows.extend)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        gc.enable()
    return seconds, cpu, rows, info


def _medians(times: list[tuple[float, float]]) -> tuple[float, float]:
    """Median wall and median CPU seconds of several ``(wall, cpu)`` runs."""
    return (statistics.median(t for t, _ in times), statistics.median(c for _, c in times))


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def measure(n: int = EVENTS, *, keys: int = KEYS, hours: float = SPAN_HOURS,
            batch: int = BATCH, key_share: dict[int, float] | None = None,
            slides: dict[int, int] | None = None, pandas: bool = True,
            repeats: int = REPEATS, verbose: bool = False) -> dict[str, Any]:
    """Run every measurement on a stream of ``n`` events and return the payload (not saved).

    ``key_share[k]``: run the per-window driver at ``k`` on that share of the keys only (the
    ``WindowDriver`` then runs on those keys too, for the like-for-like ratio and the row
    check); ``pandas=False`` skips the OVER comparison; ``repeats``: rounds per sliding
    cell (medians are reported)."""
    key_share = BASELINE_KEY_SHARE if key_share is None else key_share
    slides = SLIDES if slides is None else slides
    started = time.perf_counter()
    load_before = _load()
    full = workload(n, keys=keys, hours=hours, batch=batch)
    say = print if verbose else (lambda *a, **k: None)
    reading = reading_costs(full)
    say(f"  reading: touch {reading['touch_s'] / full.events * 1e9:.0f} ns/event, columnar "
        f"intake {reading['intake_s'] / full.events * 1e9:.0f} ns/event ({reading['reader']} "
        f"reader; Python reader {reading['intake_python_s'] / full.events * 1e9:.0f})",
        flush=True)
    sliding: list[dict[str, Any]] = []
    for k, slide in slides.items():
        share = key_share.get(k)
        part = full if share is None else full.subset(
            full.keys[:max(1, round(share * len(full.keys)))])
        for label, (name, fn) in AGGREGATIONS.items():
            query = sliding_query(slide, fn, name)
            # Rounds alternate the drivers (run order moves single runs on this machine: 340
            # MB of event objects); times are medians, the speedup the median of the rounds'
            # own ratios, and every round is stored (the spread in the report).
            swag_t: list[tuple[float, float]] = []
            part_t: list[tuple[float, float]] = []
            base_t: list[tuple[float, float]] = []
            for round_ in range(repeats):
                swag_s, swag_cpu, swag_rows, info = timed(run_swag, full, query)
                swag_t.append((swag_s, swag_cpu))
                full_rows = len(swag_rows)
                if part is not full:  # the driver again on the baseline's keys: same events
                    part_s, part_cpu, swag_rows, _ = timed(run_swag, part, query)
                    part_t.append((part_s, part_cpu))
                base_s, base_cpu, base_rows, base_info = timed(
                    run_baseline, part, slide, fn, name)
                base_t.append((base_s, base_cpu))
                if round_ < repeats - 1:
                    del swag_rows, base_rows
            swag_s, swag_cpu = _medians(swag_t)
            base_s, base_cpu = _medians(base_t)
            part_t = part_t or swag_t
            part_s, part_cpu = _medians(part_t)
            ratios = [b[0] / p[0] for b, p in zip(base_t, part_t)]
            ratios_cpu = [b[1] / p[1] for b, p in zip(base_t, part_t)]
            entry: dict[str, Any] = {
                "k": k, "slide": slide, "aggregation": label, "events": full.events,
                "swag_s": swag_s, "swag_cpu_s": swag_cpu, "swag_eps": full.events / swag_s,
                "rows": full_rows, "late": info["late"], "structures": info["structures"],
                "batch_runtime": info["batch_runtime"],
                "part_keys": len(part.keys), "part_events": part.events, "rounds": repeats,
                "round_part_swag_s": [t for t, _ in part_t],
                "round_baseline_s": [t for t, _ in base_t], "round_speedups": ratios}
            entry.update({
                "part_swag_s": part_s, "part_swag_cpu_s": part_cpu,
                "part_swag_eps": part.events / part_s,
                "baseline_s": base_s, "baseline_cpu_s": base_cpu,
                "baseline_eps": part.events / base_s, "baseline_late": base_info["late"],
                "speedup": statistics.median(ratios),
                "speedup_cpu": statistics.median(ratios_cpu)})
            entry["check"] = compare_windows(swag_rows, base_rows, name)
            del swag_rows, base_rows
            sliding.append(entry)
            say(f"  k={k:<3} {label:4} driver {entry['swag_eps']:8.0f} ev/s ({full.events} ev); "
                f"on {part.events} ev: driver {entry['part_swag_eps']:8.0f}, per-window "
                f"{entry['baseline_eps']:8.0f} ev/s: x{entry['speedup']:.2f} "
                f"(cpu x{entry['speedup_cpu']:.2f}); rows equal: {entry['check']['equal']}",
                flush=True)
    ab = reader_ab(full, repeats=repeats) if 60 in slides else None
    if ab is not None:
        say(f"  reader A/B at k=60 Max: compiled {statistics.median(ab['compiled_s']):.2f} s, "
            f"python {statistics.median(ab['python_s']):.2f} s; rows equal: {ab['equal']}",
            flush=True)
    over: list[dict[str, Any]] = []
    if pandas:
        accepted = full.accepted()
        for label, (name, fn) in AGGREGATIONS.items():
            query = over_query(fn, name)
            swag_s, swag_cpu, swag_rows, info = timed(run_swag, full, query)
            gc.collect()
            want, build_s, compute_s = pandas_over(accepted, fn)
            check = compare_over(swag_rows, want, name)
            del swag_rows, want
            e = {"aggregation": label, "events": full.events, "accepted": len(accepted),
                 "late": info["late"], "structures": info["structures"],
                 "swag_s": swag_s, "swag_cpu_s": swag_cpu, "swag_eps": full.events / swag_s,
                 "pandas_build_s": build_s, "pandas_compute_s": compute_s,
                 "pandas_eps": len(accepted) / (build_s + compute_s),
                 "pandas_compute_eps": len(accepted) / compute_s, "check": check}
            over.append(e)
            say(f"  over {label:4} driver {e['swag_eps']:8.0f} ev/s, pandas {e['pandas_eps']:8.0f}"
                f" ev/s (compute only {e['pandas_compute_eps']:.0f}); rows equal: "
                f"{check['equal']}", flush=True)
    return {"events": full.events, "keys": keys, "batch": batch, "span_hours": hours,
            "mean_delay_ms": MEAN_DELAY, "max_delay_ms": MAX_DELAY,
            "watermark_delay_ms": WATERMARK_DELAY, "allowed_lateness": LATENESS,
            "sliding": sliding, "over": over, "reading": reading, "reader_ab": ab,
            "load_before": load_before,
            "load_after": _load(), "seconds": time.perf_counter() - started}


def run(quick: bool = False) -> dict[str, Any]:
    if quick:
        payload = measure(QUICK_EVENTS, keys=QUICK_KEYS, hours=QUICK_HOURS, batch=QUICK_BATCH,
                          key_share={60: 0.2, 360: 0.1}, repeats=1, verbose=True)
    else:
        payload = measure(verbose=True)
    payload["quick"] = quick
    save("driver", payload, clock=CLOCK)
    return payload


#: several outputs over one sliding window (issue 14): label -> {output: (fn, field)};
#: "Count+Max" is workload (a) of the Spark streaming benchmark, "Count+Mean+Max" the main
#: job's sliding window without its argmax; "Max" is the single-output cell for comparison
MULTI_OUTPUTS: dict[str, dict[str, tuple[str, str | None]]] = {
    "Max": {"max": ("max", FIELD)},
    "Mean": {"mean": ("mean", FIELD)},
    "Count+Max": {"count": ("count", None), "max": ("max", FIELD)},
    "Count+Mean+Max": {"count": ("count", None), "mean": ("mean", FIELD),
                       "max": ("max", FIELD)},
    # the same stream with int values (value * 10**6, truncated): a long column, as the
    # Spark adapter hands workload (a)'s column ``v`` to the driver
    "Count+Max long": {"count": ("count", None), "max": ("max", FIELD)},
}
#: cells over the stream's int version
LONG_CELLS = ("Count+Max long",)


def long_values(w: Workload) -> Workload:
    """``w`` with every value ``int(v * 10**6)`` (same keys, times, batches, watermarks)."""
    return Workload([[(k, t, {FIELD: int(v[FIELD] * 1e6)}) for k, t, v in b]  # type: ignore
                     for b in w.batches], w.watermarks, w.keys)


def multi_query(slide: int, outputs: dict[str, tuple[str, str | None]],
                range_: int = HOUR) -> dict[str, Any]:
    aggs = {name: {"fn": fn} if field is None else {"fn": fn, "field": field}
            for name, (fn, field) in outputs.items()}
    return {"windows": [{"kind": "sliding", "range": range_, "slide": slide}],
            "aggregations": aggs, "allowed_lateness": LATENESS}


def measure_multi(n: int = EVENTS, *, keys: int = KEYS, hours: float = SPAN_HOURS,
                  batch: int = BATCH, ks: tuple[int, ...] = (1, 60), repeats: int = 1,
                  labels: tuple[str, ...] = tuple(MULTI_OUTPUTS), check: bool = False,
                  verbose: bool = True) -> dict[str, Any]:
    """Throughput of :class:`~adapters.WindowDriver` (``process_batch`` / ``advance_keys``,
    as :func:`run_swag` feeds it) for the :data:`MULTI_OUTPUTS` queries at each ``k``: wall
    and CPU seconds (medians of ``repeats`` rounds) and whether the cross-key runtime ran.
    ``check``: also run the per-key path (``columnar=False``) once and compare the rows
    (equal, bit for bit). No per-window baseline here: it implements one output."""
    floats = workload(n, keys=keys, hours=hours, batch=batch)
    longs = long_values(floats) if set(labels) & set(LONG_CELLS) else floats
    say = print if verbose else (lambda *a, **k: None)
    cells: list[dict[str, Any]] = []
    for k in ks:
        for label in labels:
            full = longs if label in LONG_CELLS else floats
            query = multi_query(SLIDES[k], MULTI_OUTPUTS[label])
            times: list[tuple[float, float]] = []
            rows: list[dict[str, Any]] = []
            info: dict[str, Any] = {}
            for _ in range(repeats):
                wall, cpu, rows, info = timed(run_swag, full, query)
                times.append((wall, cpu))
            wall, cpu = _medians(times)
            cell: dict[str, Any] = {
                "k": k, "aggregation": label, "events": full.events, "rows": len(rows),
                "late": info["late"], "batch_runtime": info["batch_runtime"],
                "swag_s": wall, "swag_cpu_s": cpu, "swag_eps": full.events / wall,
                "swag_cpu_eps": full.events / cpu, "rounds": [list(t) for t in times]}
            if check:
                _, _, want, _ = timed(lambda w, q, sink: run_swag(w, q, sink, columnar=False),
                                      full, query)
                cell["per_key_equal"] = _same_rows(rows, want)
                del want
            cells.append(cell)
            say(f"  k={k:<3} {label:15} {cell['swag_eps']:9.0f} ev/s wall, "
                f"{cell['swag_cpu_eps']:9.0f} ev/s CPU ({full.events} ev; cross-key runtime: "
                f"{cell['batch_runtime']}"
                + (f"; rows equal to the per-key path: {cell['per_key_equal']}" if check else "")
                + ")", flush=True)
    return {"events": floats.events, "keys": keys, "batch": batch, "span_hours": hours,
            "cells": cells, "load": _load()}


def _same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """Rows equal bit for bit (floats by ``repr``: ``0.0`` and ``-0.0`` differ), in order."""
    return len(got) == len(want) and all(
        a.keys() == b.keys() and all(repr(a[c]) == repr(b[c]) for c in a)
        for a, b in zip(got, want))


# =====================================================================================
# report
# =====================================================================================
def _eps(x: float) -> str:
    return f"{x / 1000:,.0f}k" if x >= 10_000 else f"{x / 1000:.1f}k"


def _slide_text(ms: int) -> str:
    return {HOUR: "1 h", 600_000: "10 min", 60_000: "1 min", 10_000: "10 s"}.get(ms, f"{ms} ms")


def markdown(payload: dict[str, Any]) -> str:
    from benchmarks.report import goal, machine_line, table

    sliding, over = payload["sliding"], payload["over"]
    n, keys = payload["events"], payload["keys"]
    before, after = payload.get("load_before") or [], payload.get("load_after") or []
    out = ["## Driver throughput: `WindowDriver` vs per-window assignment\n",
           machine_line(payload)]
    if before:
        out.append(f"_Load average (1, 5, 15 min) {', '.join(map(str, before))} when the suite "
                   f"started, {', '.join(map(str, after))} when it ended, on a shared machine; "
                   f"the suite took {payload['seconds'] / 60:.1f} min. {_rounds_text(sliding)} "
                   "Ratios are also given in CPU time, which load disturbs less._\n")
    if payload.get("quick"):
        out.append("_Quick (smoke) run: small sizes, not the issue's workload._\n")
    out.append(
        f"**Stream.** {n:,} events of {keys} uniform keys, float values, event times covering "
        f"{payload['span_hours']:g} hours (about {n / keys / payload['span_hours']:,.0f} "
        f"events per key and hour), mildly out of order (exponential delay, mean "
        f"{payload['mean_delay_ms'] / 1000:g} s, at most {payload['max_delay_ms'] / 1000:g} "
        f"s). Micro-batches of {payload['batch']:,} events; after each, the watermark becomes "
        f"the largest event time seen minus {payload['watermark_delay_ms'] / 1000:g} s "
        f"(allowed lateness {payload['allowed_lateness']}), so a few events are late and "
        "dropped by both drivers.\n")
    out.append(
        "* **`WindowDriver`** is fed one micro-batch of many keys at a time: "
        "`process_batch(batch, backend, watermark=W)` (its multi-key entry; for these queries "
        "the cross-key batch runtime of `adapters/crosskey/batch_runtime.py`, which works on all "
        "keys at once in NumPy; the Spark and Beam adapters call `process` per key instead), then "
        "`advance_keys` for the keys whose returned timer is due, end of input at the end; "
        "state in `MemoryStateBackend(strict=False)`, so every accepted event is encoded "
        "into its key's log and each key's metadata is rewritten on every call.\n"
        "* **per-window assignment** is what Spark, Beam and Flink do, in good pure Python: "
        "each event updates the accumulator of each of the k = range / slide windows it "
        "belongs to (per key a dict from window start to a running max or a `[sum, count]`; "
        "hot loops specialised per aggregation), one timer per window in a heap by window "
        "end. Its state is plain Python objects, never encoded.\n"
        "* **events/s** = events fed / wall time of the whole run, emission of every row "
        "included (rows are built as dicts and collected); garbage collector paused. The "
        "speedup compares the two drivers on the same events, by wall time and by CPU "
        "time.\n"
        "* **rows equal**: both drivers emitted the same rows in those runs (floats within a "
        "relative 1e-9), late events included.\n")
    partial = [e for e in sliding if e["part_events"] < e["events"]]
    if partial:
        ks = sorted({e["k"] for e in partial})
        out.append(
            f"At k = {', '.join(map(str, ks))} the per-window driver runs only on the events "
            f"of some keys (the \"same events\" column): the whole stream would take it many "
            "minutes. Those events have the stream's per-key density, time span and "
            "watermarks, so the per-window driver's work per event is that of the whole "
            f"stream; the `WindowDriver` ran on the whole {n:,} events as well (first column)."
            + _subset_text(partial) + "\n")
    headers = ["k", "slide", "aggregation", f"`WindowDriver` ev/s ({n:,} events)",
               "same events", "`WindowDriver` ev/s", "per-window ev/s", "speedup",
               "speedup (CPU)", "rows (same events)", "rows equal"]
    body = []
    for e in sliding:
        same = ("all" if e["part_events"] == e["events"]
                else f"{e['part_events']:,} ({e['part_keys']} key{'s' * (e['part_keys'] > 1)})")
        body.append([e["k"], _slide_text(e["slide"]), e["aggregation"], _eps(e["swag_eps"]),
                     same, _eps(e["part_swag_eps"]), _eps(e["baseline_eps"]),
                     f"{e['speedup']:.2f}x", f"{e['speedup_cpu']:.2f}x",
                     f"{e['check']['rows']:,}",
                     "yes" if e["check"]["equal"] else "**no**: " + e["check"]["detail"]])
    out.append(table(headers, body))
    by = {(e["k"], e["aggregation"]): e for e in sliding}
    reading = payload.get("reading")
    if reading and any(k == 1 for k, _ in by):
        out.append(_reading_text(reading, n, [by[key] for key in sorted(by) if key[0] == 1]))
    if payload.get("reader_ab"):
        out.append(_reader_text(payload["reader_ab"]))
    structures = sorted({f"`{s[2]}` ({e['aggregation']})" for e in sliding + over
                         for s in e.get("structures", ()) if not e.get("batch_runtime")})
    batched = [f"{e['aggregation']} at k = {e['k']}" for e in sliding if e["batch_runtime"]]
    if batched:
        out.append(f"`process_batch` / `advance_keys` ran the cross-key batch runtime (slices "
                   f"reduced into windows in NumPy) for: {', '.join(batched)}.\n")
    if structures:
        label = "Structures the driver chose" + (
            " (the OVER runs; per-key calls of these queries would use the same)"
            if batched else "")
        out.append(f"{label}: {', '.join(structures)}.\n")
    if sliding:
        _plot(payload, common.IMAGES / "driver.png")
        out.append("![events/s by k](img/driver.png)\n")

    if over:
        out.append("### Per-event OVER windows `[t - 1h, t]` vs pandas\n")
        out.append(
            "Per-event windows take the driver's per-key path. The same stream through "
            "`WindowDriver` with `{\"kind\": \"over\", \"range\": "
            "3600000}` (one row per event), and pandas on the events the driver accepted "
            "(late ones removed): a DataFrame built from the same Python events, sorted by "
            "key and time, then `groupby(\"key\").rolling(\"1h\", on=\"time\", "
            "closed=\"both\")` `.max()` / `.mean()`. pandas computes on the whole data at once "
            "in vectorised C: no watermarks, no state, no row dicts; the driver streams. "
            "Times are distinct within a key, so pandas' frame (rows up to the current one) "
            "is SQL's peers-included `RANGE` frame here; rows compared within 1e-9.\n")
        body = [[e["aggregation"], _eps(e["swag_eps"]), _eps(e["pandas_eps"]),
                 _eps(e["pandas_compute_eps"]), f"{e['swag_eps'] / e['pandas_eps']:.3f}",
                 f"{e['swag_eps'] / e['pandas_compute_eps']:.3f}",
                 "yes" if e["check"]["equal"] else "**no**: " + e["check"]["detail"]]
                for e in over]
        out.append(table(["aggregation", "`WindowDriver` ev/s",
                          "pandas ev/s (build + compute)", "pandas ev/s (compute only)",
                          "driver / pandas", "driver / pandas compute", "rows equal"], body))

    out.append("### Goals\n")
    for label in AGGREGATIONS:
        e60, e1 = by.get((60, label)), by.get((1, label))
        if e60:
            out.append(goal(f"{label}: at least 10x the per-window driver's events/s at k = 60",
                            e60["speedup"] >= 10, _speedup_text(e60)))
        if e1:
            out.append(goal(f"{label}: never slower than the per-window driver at k = 1",
                            e1["speedup"] >= 1, _speedup_text(e1)))
    checks = [e["check"]["equal"] for e in sliding + over]
    out.append(goal("both drivers (and pandas, for OVER) emit the same rows in every run",
                    all(checks), f"{sum(checks)} of {len(checks)} runs equal"))
    for e in over:
        out.append(f"- OVER {e['aggregation']} (reported, no goal): the driver runs at "
                   f"{e['swag_eps'] / e['pandas_eps']:.3f}x pandas' events/s (build + "
                   f"compute), {e['swag_eps'] / e['pandas_compute_eps']:.3f}x pandas' compute "
                   "alone")
    out.append("")
    return "\n".join(out)


def _subset_text(partial: list[dict[str, Any]]) -> str:
    """Where the `WindowDriver` ran faster per event on the whole stream than on the subset:
    its per-call costs (the cross-key batch runtime's array set-up) are shared by all keys of
    a micro-batch, so the subset's ratio understates it."""
    slower = [e for e in partial if e["swag_eps"] > 1.2 * e["part_swag_eps"]]
    if not slower:
        return ""
    cells = "; ".join(f"{e['aggregation']} at k = {e['k']}: {_eps(e['part_swag_eps'])} vs "
                      f"{_eps(e['swag_eps'])} ev/s" for e in slower)
    return (" On the subset the `WindowDriver` runs slower per event than on the whole stream "
            f"({cells}): its per-call costs are shared by fewer keys' events, so there the "
            "speedup understates it.")


def _speedup_text(e: dict[str, Any]) -> str:
    rounds = e["round_speedups"]
    spread = f" (rounds {min(rounds):.2f}x-{max(rounds):.2f}x)" if len(rounds) > 1 else ""
    return f"{e['speedup']:.2f}x{spread}; CPU time {e['speedup_cpu']:.2f}x"


def _spread(times: list[float]) -> float:
    return max(times) / min(times)


def _rounds_text(sliding: list[dict[str, Any]]) -> str:
    rounds = max((e["rounds"] for e in sliding), default=1)
    if rounds == 1:
        return "One timed run per cell: expect noise."
    spreads = [_spread(e[name]) for e in sliding
               for name in ("round_part_swag_s", "round_baseline_s")]
    spread = (f"; one driver's rounds of one cell differed by up to {max(spreads):.2f}x"
              if spreads else "")
    return (f"Each sliding cell: {rounds} rounds alternating the two drivers; times are "
            "medians, the speedup is the median of the rounds' own ratios (range in the "
            f"goals below){spread}.")


def _reading_text(reading: dict[str, Any], n: int, at_k1: list[dict[str, Any]]) -> str:
    """What reading the events costs, next to both drivers' whole runs at k = 1."""
    def ns(seconds: float, events: int) -> str:
        return f"{seconds / events * 1e9:,.0f} ns"
    runs = "; ".join(
        f"{e['aggregation']}: per-window driver {ns(e['baseline_s'], e['part_events'])}, "
        f"`WindowDriver` {ns(e['part_swag_s'], e['part_events'])}" for e in at_k1)
    how = (f"by the compiled reader, `adapters/crosskey/_batch_reader.c`; by the pure-Python "
           f"reader, {ns(reading['intake_python_s'], n)}" if reading["reader"] == "compiled"
           else "by the pure-Python reader: the compiled one was not built")
    return (
        "**Where the time goes at k = 1.** Per event, a bare loop that unpacks each event and "
        f"reads its value costs {ns(reading['touch_s'], n)}; the `WindowDriver`'s reading "
        "alone (every event validated and turned into NumPy columns; no sorting, window work "
        f"or state) {ns(reading['intake_s'], n)} ({how}). Whole runs ({runs}).\n")


def _reader_text(ab: dict[str, Any]) -> str:
    """The whole driver with each reader (:func:`reader_ab`)."""
    def per_event(times: list[float]) -> str:
        def ns(t: float) -> str:
            return f"{t / ab['events'] * 1e9:,.0f}"
        return (f"{ns(statistics.median(times))} ns per event (rounds {ns(min(times))}-"
                f"{ns(max(times))})")
    return (f"**Without the compiled reader.** The whole `WindowDriver` run at k = {ab['k']}, "
            f"{ab['aggregation']}, {len(ab['compiled_s'])} rounds alternating the two readers: "
            f"{per_event(ab['compiled_s'])} with the compiled reader, "
            f"{per_event(ab['python_s'])} with the pure-Python one; rows equal: "
            f"{'yes' if ab['equal'] else '**no**'}.\n")


def _plot(payload: dict[str, Any], path: Any) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, marker, color in zip(AGGREGATIONS, ("o", "s"), ("C0", "C3")):
        pts = sorted((e["k"], e["part_swag_eps"], e["baseline_eps"]) for e in payload["sliding"]
                     if e["aggregation"] == label)
        if not pts:
            continue
        ks = [p[0] for p in pts]
        ax.plot(ks, [p[1] for p in pts], marker=marker, color=color,
                label=f"WindowDriver, {label}")
        ax.plot(ks, [p[2] for p in pts], marker=marker, color=color, linestyle="--",
                label=f"per-window assignment, {label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("k = range / slide (windows per event)")
    ax.set_ylabel("events / s")
    ax.set_title("Sliding 1 h windows: both drivers on the same events", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.driver --multi [--quick] [--events N] [--ks 1,60] [--check]
    --out DIR``: the several-output cells (:func:`measure_multi`), written to
    ``DIR/driver_multi.json`` (not into ``benchmarks/results``). The full suite runs with
    ``python -m benchmarks driver``."""
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="python -m benchmarks.driver")
    parser.add_argument("--multi", action="store_true", required=True,
                        help="the several-output cells")
    parser.add_argument("--quick", action="store_true", help="small stream (smoke run)")
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--ks", default="1,60", help="comma-separated k of " + str(list(SLIDES)))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--check", action="store_true", help="compare with the per-key path")
    parser.add_argument("--labels", default=",".join(MULTI_OUTPUTS),
                        help="comma-separated cells of " + str(list(MULTI_OUTPUTS)))
    parser.add_argument("--out", required=True, type=Path, help="directory of the JSON")
    args = parser.parse_args(argv)
    ks = tuple(int(k) for k in args.ks.split(","))
    labels = tuple(args.labels.split(","))
    if args.quick:
        payload = measure_multi(QUICK_EVENTS, keys=QUICK_KEYS, hours=QUICK_HOURS,
                                batch=QUICK_BATCH, ks=ks, repeats=args.repeats,
                                labels=labels, check=args.check)
    else:
        payload = measure_multi(args.events, ks=ks, repeats=args.repeats, labels=labels,
                                check=args.check)
    payload["quick"] = args.quick
    payload["clock"] = CLOCK
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "driver_multi.json"
    path.write_text(json.dumps({"machine": common.machine(), **payload}, indent=1,
                               sort_keys=True))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
