"""Which path a query takes, and why: the one place that decides (engine-free).

An engine describes what it can do with :class:`EngineFacts` (its name, batch or streaming,
how it calls the driver, the kinds of its value columns, ...) and gets a :class:`QueryPlan`
from :meth:`adapters.WindowDriver.plan`. The plan says, each with its reason:

* **pre-sliced** (:mod:`adapters.engine.presliced`): the engine aggregates each
  ``(key, slice)`` itself and hands the driver one row per non-empty slice (Traub et al.,
  "General Stream Slicing", EDBT 2019); the driver runs :attr:`QueryPlan.driver_query`;
* **OVER kernel** (:mod:`adapters.crosskey.over_runtime`): finished keys' per-event rows
  computed from their columns in NumPy, many keys at once, no structure at all;
* **runtime**: the cross-key NumPy runtime (:mod:`adapters.crosskey.batch_runtime`) or the
  per-key lanes, per the way the engine calls (:data:`PER_KEY`, :data:`MANY_KEYS`,
  :data:`FINISHED`) and the batch's size (:func:`use_cross_key`);
* **kernels or structures** (:func:`kernel_mode`): the lanes fold runs of raw values with C
  builtins (:mod:`adapters.driver.kernels`) or lift every event;
* **KVS layout**: whether the engine's per-key state offers the pair map
  (:mod:`adapters.driver.kvs_lanes`), and where the per-event structures live;
* **engine plan** (:func:`engine_plan`): a batch query the engine's own window plan answers
  with the identical rows (every output exact in the engine, ``Builtin.engine_exact``), at
  few windows per event, where that plan measured faster (:data:`ENGINE_PLAN_MAX_K`): the
  engine runs it, swag does not.

Engines read the plan; they never import the driver's internals. A new path is added here.

For benchmarks only, :data:`BENCHMARK_WITHOUT` names paths to leave off, so that an A/B runs
the same code with one path off (:func:`benchmark_without`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from adapters.crosskey.columnar import MIN_BATCH
from adapters.crosskey.over_runtime import OverPlan, over_outputs
from adapters.driver.kernels import Kernel, kernel_for
from adapters.driver.kvs_lanes import uses_pairs
from adapters.driver.time_lane import slice_grid
from adapters.engine.presliced import SliceLayout, slice_layout
from adapters.query.builtins import BUILTINS, NO_FIELD
from adapters.query.specs import CountWindow, OverWindow, PolicyWindow, Query, SlidingWindow

#: how an engine calls the driver: one key per call (``process`` / ``advance_watermark``)
PER_KEY = "per key"
#: many keys per call (``process_batch`` / ``advance_keys``)
MANY_KEYS = "many keys"
#: whole bounded inputs of finished keys, many keys per call (``finish_keys`` /
#: ``finish_columns``: batch mode; an engine with one call per key pays its per-call cost per
#: key, which with many small keys exceeds the driver's own: ``docs/spark.md``)
FINISHED = "finished"
CALLS = (PER_KEY, MANY_KEYS, FINISHED)

#: The most windows per event (``ceil(range / slide)``) of a batch sliding query that takes the
#: engine's own plan (:func:`engine_plan`). Spark's ``window()`` groupBy copies each event into
#: ``k`` windows (its cost grows with ``k``); swag's pre-sliced path pays a Python stage (one
#: call per Arrow batch of finished keys) whatever ``k`` is. Measured
#: (``benchmarks/spark_matrix.py``: keys 3 / 100 / 10^4 x events per key and slice 1 / 10 /
#: 1,000): Spark's plan faster in 4 of 6 cells at k = 1 and 1 of 6 at k = 6 (swag's own path
#: 0.41-1.75x, noisy), swag's in all at k = 60 and 360; on the flights (``spark_flights.py``,
#: 3 keys, 4.4 events per key and slice) Spark's at k = 8 (swag 0.59x: the crossover near
#: k = 13 there). The query's k is all the planner knows: up to 12, Spark's.
ENGINE_PLAN_MAX_K = 12

#: For benchmarks only, never in production: the environment variable that names paths to
#: leave off, comma-separated (``kernels``, ``over kernel``), read by
#: :func:`benchmark_without` when a driver plans its query. The rows are the same either way.
BENCHMARK_WITHOUT = "SWAG_BENCHMARK_WITHOUT"


def benchmark_without(path: str) -> bool:
    """Whether a benchmark switched ``path`` off (:data:`BENCHMARK_WITHOUT`)."""
    return path in os.environ.get(BENCHMARK_WITHOUT, "").split(",")


@dataclass(frozen=True)
class EngineFacts:
    """What an engine tells the planner about one call of its ``sliding_aggregate``."""

    PER_KEY: ClassVar[str] = PER_KEY
    MANY_KEYS: ClassVar[str] = MANY_KEYS
    FINISHED: ClassVar[str] = FINISHED

    #: the engine's name (``"spark"``, ``"beam"``, ``"flink"``, ...), for the plan's text
    engine: str
    #: a streaming query (else batch: every event, then the end of input)
    streaming: bool
    #: how the engine calls the driver: :data:`PER_KEY`, :data:`MANY_KEYS`, :data:`FINISHED`
    calls: str = PER_KEY
    #: the engine's own state layout, for the plan's text (e.g. ``"16 key buckets"``)
    state: str = ""
    #: whether the engine's per-key state can offer a pair map (the KVS layout)
    pair_maps: bool = False
    #: the value fields the engine can pre-slice, by column kind (``adapters.engine.
    #: presliced.INT``, ``LONG``, ``FLOAT``; others: not numeric); ``None``: the engine
    #: does not pre-slice
    slice_kinds: Mapping[str, str] | None = None
    #: the user's ``presliced`` argument (``None``: the planner's choice)
    presliced: bool | None = None
    #: why this call cannot pre-slice whatever its query (``None``: it may)
    preslice_block: str | None = None
    #: the fields a finished key's input can be handed over as number columns
    #: (``None``: the engine hands events only, no OVER kernel)
    column_fields: frozenset[str] | None = None
    #: the engine's own plan of a batch sliding-window query (e.g. ``"Spark's window()
    #: groupBy"``) that it can run instead of swag (:func:`engine_plan`); ``None``: none
    own_plan: str | None = None
    #: the engine's own plan of a batch per-event (OVER) query, offered when its cost does
    #: not grow with the events in a frame (e.g. Spark's segment-tree frame); ``None``: none
    own_over_plan: str | None = None
    #: why the engine offers no :attr:`own_over_plan` (for the plan's text)
    own_over_missing: str = ""
    #: why this call cannot take the engine's own plan whatever its query (``None``: it may)
    own_plan_block: str | None = None


@dataclass(frozen=True)
class QueryPlan:
    """The path a query takes on one engine (:meth:`adapters.WindowDriver.plan`); ``str()``
    is the printable explanation."""

    facts: EngineFacts
    #: the query the driver runs (the sliced query when pre-sliced)
    driver_query: Query
    #: the pre-slicing layout, or ``None`` (:attr:`reasons` ``["presliced"]`` says why)
    presliced: SliceLayout | None
    #: the OVER kernel's plan for finished keys, or ``None``
    over_kernel: OverPlan | None
    #: the driver's runtime: ``"cross-key"`` or ``"per-key"`` (``"cross-key"`` for finished
    #: keys means: when a call's keys hold at least :data:`MIN_BATCH` events together)
    runtime: str
    #: the lanes fold raw values with kernels (else one lift per event)
    kernels: bool
    #: ``(kind, window indices, algorithm)`` of each structure a key holds
    structures: tuple[tuple[str, tuple[int, ...], str], ...]
    #: the engine's per-key state offers a pair map (KVS layout possible)
    pair_map: bool
    #: why each decision went the way it did, by decision name
    reasons: dict[str, str] = field(default_factory=dict)
    #: the engine's own plan that runs the query instead of swag (``None``: swag runs it;
    #: the other fields then say what swag would run)
    engine_plan: str | None = None

    @property
    def path(self) -> str:
        """The path in a few words, e.g. ``"pre-sliced, cross-key runtime, kernels"``."""
        if self.engine_plan is not None:
            return f"the engine's own plan ({self.engine_plan})"
        parts = ["pre-sliced"] if self.presliced is not None else []
        if self.over_kernel is not None:
            parts.append("OVER kernel")
        parts.append(f"{self.runtime} runtime")
        parts.append("kernels" if self.kernels else "structures")
        if self.pair_map and self.driver_query.layout != "memory":
            parts.append("KVS layout")
        return ", ".join(parts)

    def lines(self) -> list[str]:
        """The explanation, one decision per line."""
        f = self.facts
        mode = "streaming" if f.streaming else "batch"
        head = f"{f.engine} {mode}" + (f", state: {f.state}" if f.state else "")
        out = [head, f"  path: {self.path}"]
        if self.engine_plan is not None:
            return [*out, f"  engine plan: {self.reasons['engine plan']}"]
        offered = f.own_plan is not None  # (no line on an engine that has none)
        for name in ("engine plan", "presliced", "over kernel", "runtime", "structures",
                     "kvs layout"):
            if name in self.reasons and (offered or name != "engine plan"):
                out.append(f"  {name}: {self.reasons[name]}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def kernel_mode(query: Query, time_groups: Sequence[Sequence[Any]]) -> list[Kernel] | None:
    """The lanes' kernels (:mod:`adapters.driver.kernels`) when every output has one and
    every lane is a sliced time lane (no lane needs per-event lifted values), else
    ``None``. ``time_groups``: the specs of each time lane."""
    if benchmark_without("kernels"):
        return None
    found = [k for k in map(kernel_for, query.aggregations) if k is not None]
    if len(found) < len(query.aggregations) or not time_groups:
        return None
    if any(isinstance(w, (CountWindow, PolicyWindow)) for w in query.windows):
        return None
    if not all(slice_grid(list(group))[0] > 1 for group in time_groups):
        return None
    return found


def use_cross_key(batch_runtime: bool, events: int) -> bool:
    """Whether finished keys of ``events`` events together (one call) run in the cross-key
    runtime (it pays off from :data:`MIN_BATCH` events; smaller calls take the per-key
    lanes)."""
    return batch_runtime and events >= MIN_BATCH


def preslicing(query: Query, facts: EngineFacts) -> tuple[SliceLayout | None, str]:
    """The pre-slicing layout of ``query`` on the engine (or ``None``) and why; raises
    :class:`ValueError` when the user asked for it (``presliced=True``) and it cannot be."""
    if facts.slice_kinds is None:
        return None, f"no ({facts.engine} does not pre-slice)"
    if facts.presliced is False:
        return None, "no (presliced=False)"
    if facts.presliced is None and facts.streaming:
        return None, ("no (streaming pre-slices only when asked, presliced=True: it follows "
                      "the engine's lateness rule)")
    found: SliceLayout | str
    if facts.preslice_block is not None:
        found = facts.preslice_block
    elif facts.streaming and query.allowed_lateness:
        found = ("allowed_lateness > 0 (the engine's slice aggregation closes a slice as soon "
                 "as the watermark passes it)")
    else:
        found = slice_layout(query, facts.slice_kinds, floating_sums=not facts.streaming)
    if isinstance(found, str):
        if facts.presliced:
            raise ValueError(f"presliced=True, but this query cannot be pre-sliced: {found}")
        return None, f"no ({found})"
    windows = [w for w in query.windows if isinstance(w, SlidingWindow)]
    per_slide = ", ".join(f"{w.slide // found.width}" for w in windows)
    per_window = ", ".join(f"{w.range // found.width}" for w in windows)
    return found, (f"yes: the engine aggregates each (key, slice of {found.width} ms) into one "
                   f"row; slice rows per key and window slide: at most {per_slide}; slices "
                   f"per window: {per_window} (window spec order)")


def over_kernel(query: Query, facts: EngineFacts,
                presliced: SliceLayout | None) -> tuple[OverPlan | None, str]:
    """The OVER kernel's plan for the engine's finished keys (or ``None``) and why."""
    over = over_outputs(query)
    if over is None:
        return None, "no (not one over window of count, or max/min/sum/mean of a field)"
    if benchmark_without("over kernel"):
        return None, f"no (switched off by {BENCHMARK_WITHOUT}, for a benchmark)"
    if facts.calls != FINISHED:
        return None, f"no ({facts.engine} {'streaming' if facts.streaming else 'batch'} " \
                     f"calls the driver {facts.calls}, not with finished keys)"
    if presliced is not None or facts.column_fields is None:
        return None, "no (the engine hands the driver events, not number columns)"
    missing = [f for f in over.fields if f not in facts.column_fields]
    if missing:
        return None, f"no (field {missing[0]!r} is not a typed number column)"
    return over, ("yes: the frames and aggregates of a call's finished keys from their "
                  "columns in NumPy, all keys at once, no frame crossing a key (a call whose "
                  "values break a kernel rule, e.g. an infinity, takes the driver)")


def runtime(facts: EngineFacts, batch_runtime: bool, over: bool = False) -> tuple[str, str]:
    """The driver's runtime for the engine's calls (``over``: the OVER kernel takes the
    keys it can), and why."""
    path, why = _runtime(facts, batch_runtime)
    return path, ("keys the OVER kernel refuses: " + why) if over else why


def _runtime(facts: EngineFacts, batch_runtime: bool) -> tuple[str, str]:
    if facts.calls == PER_KEY:
        return "per-key", "per-key lanes (the engine calls the driver one key at a time)"
    if not batch_runtime:
        many = (", each of a call's many finished keys in turn" if facts.calls == FINISHED
                else "")
        return "per-key", (f"per-key lanes{many} (the cross-key runtime does not cover this "
                           f"query: it takes one sliding or tumbling window of kernel "
                           f"outputs)")
    if facts.calls == FINISHED:
        return "cross-key", (f"cross-key NumPy runtime over each call's finished keys "
                             f"together (many keys per call) when they hold at least "
                             f"{MIN_BATCH} events, per-key lanes for smaller calls")
    return "cross-key", "cross-key NumPy runtime (many keys per call)"


def kvs_layout(query: Query, facts: EngineFacts) -> tuple[bool, str]:
    """Whether the engine's per-key state offers the pair map, and where the per-event
    structures live."""
    if not uses_pairs(query):
        return False, "not used (no over window)"
    if not facts.streaming:
        return False, "not used (batch: a key's structures live only while it runs)"
    if not facts.pair_maps:
        return False, (f"no pair map on {facts.engine}" +
                       (f" ({facts.state})" if facts.state else "") +
                       ": per-event structures in worker memory, rebuilt from the log")
    where = {"memory": "worker memory, rebuilt from the log (layout='memory')",
             "kvs": "the key's pair map from its next load (layout='kvs')",
             "auto": "worker memory, moved to the pair map once large (layout='auto')"}
    return True, f"pair map offered; per-event structures in {where[query.layout]}"


def windows_per_event(window: SlidingWindow) -> int:
    """How many windows of a sliding spec hold each event: ``ceil(range / slide)``."""
    return -(-window.range // window.slide)


def engine_plan(query: Query, facts: EngineFacts) -> tuple[str | None, str]:
    """The engine's own plan (:attr:`EngineFacts.own_plan`) when it runs ``query`` instead of
    swag, else ``None``; and why. It does when the rows are identical (batch: no lateness;
    one sliding or tumbling spec; missing values skipped; every output ``Builtin.
    engine_exact`` on its field's kind) and at most :data:`ENGINE_PLAN_MAX_K` windows per
    event; only the query's shape decides, not its data. ``presliced=True/False`` or a
    named ``algorithm`` ask for swag's own path."""
    if facts.own_plan is None:
        return None, f"no ({facts.engine} {'streaming' if facts.streaming else 'batch'} " \
                     f"offers none)"
    why = _engine_block(query, facts)
    if why is not None:
        return None, f"no ({why})"
    if facts.presliced is not None or query.algorithm is not None:
        asked = (f"presliced={facts.presliced}" if facts.presliced is not None
                 else f"algorithm={query.algorithm!r}")
        return None, f"no ({asked} asks for swag's own path)"
    exact = (f"gives the identical rows (batch, every output exact in {facts.engine}: "
             f"{', '.join(a.name for a in query.aggregations)})")
    window = query.windows[0]
    if isinstance(window, OverWindow):
        own = facts.own_over_plan
        if own is None:
            return None, f"no ({facts.own_over_missing or 'no per-event plan offered'})"
        return own, (f"yes: {own} {exact} and its cost does not grow with the events in a "
                     f"frame; presliced=False keeps swag's own path")
    assert isinstance(window, SlidingWindow)
    k = windows_per_event(window)
    if k > ENGINE_PLAN_MAX_K:
        return None, (f"no ({k} windows per event, above {ENGINE_PLAN_MAX_K}: swag's own "
                      f"path measured faster)")
    return facts.own_plan, (f"yes: {facts.own_plan} {exact} and measured faster at {k} windows "
                            f"per event (at most {ENGINE_PLAN_MAX_K}); presliced=False or True "
                            f"keeps swag's own path")


def _engine_block(query: Query, facts: EngineFacts) -> str | None:
    """Why the engine's own plan would not give swag's rows for ``query`` (``None``: it
    would)."""
    if facts.streaming:
        return "streaming: lateness and the watermark are swag's"
    if benchmark_without("engine plan"):
        return f"switched off by {BENCHMARK_WITHOUT}, for a benchmark"
    if facts.own_plan_block is not None:
        return facts.own_plan_block
    if len(query.windows) != 1 or not isinstance(query.windows[0], (SlidingWindow,
                                                                    OverWindow)):
        return "not one sliding, tumbling or over window spec"
    if query.nulls != "skip":
        return f"nulls={query.nulls!r}: the engine's aggregates skip missing values"
    kinds = facts.slice_kinds or {}
    for a in query.aggregations:
        builtin = BUILTINS.get(a.fn or "")
        kind = NO_FIELD if a.field is None else kinds.get(a.field, "")
        if builtin is None or kind not in builtin.engine_exact:
            what = a.fn or "a custom aggregation"
            of = "" if a.field is None else f" of {kind or 'a non-numeric'} field {a.field!r}"
            return (f"output {a.name!r}: {what}{of} is not exact in {facts.engine}'s own "
                    f"aggregate (Builtin.engine_exact)")
    return None


#: what a driver of a query runs: ``(cross-key runtime covers it, kernel mode, structures)``
DriverView = tuple[bool, bool, Sequence[tuple[str, tuple[int, ...], str]]]


def decide(query: Query, facts: EngineFacts, view: Callable[[Query], DriverView]
           ) -> QueryPlan:
    """The :class:`QueryPlan` of ``query`` on the engine; ``view(q)``: what a driver of
    query ``q`` runs (asked for the query the driver will run: the sliced one when
    pre-sliced)."""
    if facts.calls not in CALLS:
        raise ValueError(f"EngineFacts.calls must be one of {CALLS}, got {facts.calls!r}")
    reasons: dict[str, str] = {}
    sliced, reasons["presliced"] = preslicing(query, facts)
    driver_query = query if sliced is None else sliced.query
    over, reasons["over kernel"] = over_kernel(query, facts, sliced)
    batch_runtime, kernels, structures = view(driver_query)
    path, reasons["runtime"] = runtime(facts, batch_runtime, over is not None)
    lanes = ", ".join(f"{kind} lane of windows {list(idx)}: {algo}"
                      for kind, idx, algo in structures)
    reasons["structures"] = ("kernels (runs of raw values folded by C builtins); "
                             if kernels else "one lift per event; ") + lanes
    pairs, reasons["kvs layout"] = kvs_layout(query, facts)
    own, reasons["engine plan"] = engine_plan(query, facts)
    return QueryPlan(facts, driver_query, sliced, over, path, kernels, tuple(structures),
                     pairs, reasons, own)


__all__ = ["BENCHMARK_WITHOUT", "CALLS", "ENGINE_PLAN_MAX_K", "FINISHED", "MANY_KEYS",
           "PER_KEY", "DriverView", "EngineFacts", "QueryPlan", "benchmark_without", "decide",
           "engine_plan", "kernel_mode", "kvs_layout", "over_kernel", "preslicing", "runtime",
           "use_cross_key", "windows_per_event"]
