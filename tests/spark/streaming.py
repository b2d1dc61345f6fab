"""The conformance corpus through Spark Structured Streaming (``transformWithStateInPandas``),
many scenarios per streaming query.

**One scenario.** Each scenario gets a file source: one JSON-lines file per micro-batch,
``maxFilesPerTrigger=1`` (files are taken in modification-time order, so the files get
increasing mtimes). Its watermarks cannot come from the event times (Spark's watermark is
``max(event time) - delay``), so each watermark step is a *marker row* on a separate
timestamp column ``_wm`` carrying the watermark: the source is ``withWatermark("_wm",
"0 seconds")`` and the marker rows are filtered out by ``_wm IS NULL`` before the adapter
(the filter must reference the watermark column, or Spark pushes it below
``withWatermark`` and the markers never reach it). Spark applies a watermark from the
micro-batch after the one that carried it, which is the scenario order: the events of a
step are judged against the watermark steps before them. So a micro-batch holds the events
up to a watermark step plus that step's marker (:func:`step_batches`; consecutive watermark
steps without events between them become one marker, the largest: Spark's watermark is a
maximum, and the engine sees only that one). After the last file Spark runs one no-data
micro-batch to fire the timers of the last watermark (``processAllAvailable`` waits for
it). ``"end"`` is a marker at :data:`END_WATERMARK`, beyond every window of every scenario;
a scenario without ``"end"`` just stops. Results go to a memory sink (cheaper), or, for a
restart from the checkpoint, to a Parquet file sink (exactly once across the restart).

**Many scenarios per query.** A query start costs seconds whatever the data (planning, and
one fresh Python process per ``transformWithStateInPandas`` operator to read its state
schema) and so does every micro-batch (planning, offsets, state store commits, Python
round trips), so the corpus runs several scenarios in one query: one *branch* per scenario
(its own source, watermark, ``sliding_aggregate`` call, state, timers and observed metric
``swag<i>``), the branches unioned into one sink, each scenario's rows in its own struct
column ``r<i>``. Spark's watermark is global to a query (the minimum over the branches), so
the scenarios of a query must see the same watermark in every micro-batch. A scenario
cannot tell its times apart from the same times plus a constant ``c`` when ``c`` is a
multiple of every slide and tumbling size (window boundaries stay boundaries; over, count
and policy windows only use time differences), so scenarios whose watermark schedules
(the marker of each micro-batch) are translates of one another share a query: each member
is shifted so that its first numeric watermark lands on the group's (solving the
congruences ``A = w_first (mod alignment)``, :func:`plan_groups`), and its results are
shifted back. :func:`check_group` verifies that every member sees exactly its own schedule.
A scenario expecting an error runs alone (an error stops the whole query); so does a
scenario whose times are not all integers (they cannot be shifted). When a group's query
fails unexpectedly, its members are rerun one per query, so the failure is reported for the
scenario that caused it.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tests.spark.frames import (
    SHIFT_BASE,
    Event,
    active_session,
    aggregate,
    alignment,
    events_of,
    field_types,
    key_type,
    reported,
    result_columns,
    rows,
    schema,
    shift_for,
    time_is_int,
    to_result,
)

#: The marker of an ``"end"`` step (2**42 ms, year 2109): beyond every window end of every
#: (shifted) scenario; :func:`check_group` verifies it.
END_WATERMARK = 1 << 42
#: At most this many scenarios per streaming query.
MAX_MEMBERS = 16
#: Streaming queries running at once (threads of one SparkSession): much of a query's time
#: is waiting (a Python process starting, socket round trips), so more than the 2 cores.
CONCURRENCY = 4

#: A micro-batch's watermark: a number, ``"end"``, or None (no marker).
Mark = int | str | None
#: (events, watermark carried) of one micro-batch.
Batch = tuple[list[Event], Mark]


# ----------------------------------------------------------------------------- schedules
def step_batches(scenario: dict[str, Any]) -> list[Batch]:
    """The scenario's micro-batches: the events up to a watermark step and that step's
    watermark (consecutive watermark steps: the largest); the last batch carries no
    watermark when the scenario ends with events."""
    batches: list[Batch] = []
    cur: list[Event] = []
    wm: Mark = None
    for i, step in enumerate(scenario["steps"]):
        if "events" in step:
            if wm is not None:
                batches.append((cur, wm))
                cur, wm = [], None
            cur.extend((i, k, t, v) for k, t, v in step["events"])
        else:
            wm = _later(wm, step["watermark"])
    batches.append((cur, wm))
    return batches


def _later(a: Mark, b: Mark) -> Mark:
    if a is None or b == "end":
        return b
    if b is None or a == "end":
        return a
    return max(a, b)


def _first_number(batches: list[Batch]) -> int | None:
    return next((w for _, w in batches if isinstance(w, int)), None)


def shape(batches: list[Batch]) -> tuple[Mark, ...]:
    """The watermark schedule relative to its first number: equal shapes are translates."""
    first = _first_number(batches) or 0
    return tuple(w - first if isinstance(w, int) else w for _, w in batches)


def _span(scenario: dict[str, Any]) -> int:
    """How far after an event time its windows can end (+ allowed lateness)."""
    longest = max((w.get("range") or w.get("size") or 0 for w in scenario["query"]["windows"]
                   if w["kind"] in ("sliding", "tumbling")), default=0)
    return longest + scenario["query"].get("allowed_lateness", 0) + 1


# ----------------------------------------------------------------------------- groups
@dataclass(frozen=True)
class Member:
    """One scenario inside a streaming query: its micro-batches and its time shift."""

    scenario: dict[str, Any]
    batches: list[Batch]
    shift: int
    fields: dict[str, str]
    key: str
    int_time: bool

    @property
    def name(self) -> str:
        return self.scenario["name"]


@dataclass(frozen=True)
class Group:
    """Scenarios run by one streaming query, with the watermark marker of every
    micro-batch (absolute, shared by every member; None: no marker)."""

    members: tuple[Member, ...]
    watermarks: tuple[int | None, ...]


@dataclass
class _Draft:
    shape: tuple[Mark, ...]
    residue: int
    modulus: int
    alone: bool
    scenarios: list[dict[str, Any]] = field(default_factory=list)


def _congruence(batches: list[Batch], scenario: dict[str, Any]) -> tuple[int, int]:
    """(r, m): the group's first watermark A must satisfy A = r (mod m), so that the
    scenario's shift ``A - w_first`` is a multiple of its alignment."""
    first = _first_number(batches)
    if first is None:
        return 0, 1  # no numeric watermark: any shift of its own will do
    m = alignment(scenario)
    return first % m, m


def combine_congruences(r1: int, m1: int, r2: int, m2: int) -> tuple[int, int] | None:
    """The solutions of x = r1 (mod m1) and x = r2 (mod m2) as (r, m), or None."""
    g = math.gcd(m1, m2)
    if (r2 - r1) % g:
        return None
    m = m1 // g * m2
    r = next(x for x in range(r1 % m1, m, m1) if x % m2 == r2 % m2)
    return r, m


def _runs_alone(scenario: dict[str, Any]) -> bool:
    return bool(scenario.get("expect_error")) or not time_is_int(events_of(scenario))


def plan_groups(scenarios: Iterable[dict[str, Any]],
                max_members: int = MAX_MEMBERS) -> list[Group]:
    """Expanded scenarios -> streaming queries: scenarios with translated watermark
    schedules and compatible alignments share one (at most ``max_members``)."""
    drafts: list[_Draft] = []
    for s in scenarios:
        batches = step_batches(s)
        sh, (r, m), alone = shape(batches), _congruence(batches, s), _runs_alone(s)
        if alone or not _join(drafts, s, sh, r, m, max_members):
            drafts.append(_Draft(sh, r, m, alone, [s]))
    groups = [_finish(d) for d in drafts]
    for g in groups:
        check_group(g)
    return groups


def _join(drafts: list[_Draft], scenario: dict[str, Any], sh: tuple[Mark, ...], r: int,
          m: int, max_members: int) -> bool:
    """Add the scenario to the first draft it fits (same shape, room left, alignments
    compatible); False if none."""
    for d in drafts:
        if d.alone or d.shape != sh or len(d.scenarios) >= max_members:
            continue
        solved = combine_congruences(d.residue, d.modulus, r, m)
        if solved is not None:
            d.residue, d.modulus = solved
            d.scenarios.append(scenario)
            return True
    return False


def _finish(draft: _Draft) -> Group:
    int_time = all(time_is_int(events_of(s)) for s in draft.scenarios)
    if int_time:
        anchor = SHIFT_BASE + (draft.residue - SHIFT_BASE) % draft.modulus
    else:  # times that cannot be shifted: the scenario's own watermarks (runs alone)
        anchor = _first_number(step_batches(draft.scenarios[0])) or 0
    members = []
    for s in draft.scenarios:
        batches = step_batches(s)
        events = events_of(s)
        own_first = _first_number(batches)
        if not int_time:
            shift = 0
        elif own_first is None:
            shift = shift_for(s)
        else:
            shift = anchor - own_first
        members.append(Member(s, batches, shift, field_types(events, s), key_type(events),
                              int_time))
    marks = tuple(None if w is None else END_WATERMARK if w == "end" else anchor + w
                  for w in draft.shape)
    return Group(tuple(members), marks)


def check_group(group: Group) -> None:
    """Raise AssertionError unless every member, shifted back, sees exactly its own
    micro-batches and watermarks, its window boundaries stay boundaries, and ``"end"`` is
    beyond every window."""
    for m in group.members:
        own = step_batches(m.scenario)
        assert [ev for ev, _ in m.batches] == [ev for ev, _ in own], m.name
        assert len(own) == len(group.watermarks), f"{m.name}: micro-batch count differs"
        for b, ((_, w), mark) in enumerate(zip(own, group.watermarks)):
            seen = None if mark is None else "end" if mark == END_WATERMARK else mark - m.shift
            assert seen == w, f"{m.name}: micro-batch {b} would carry {seen}, not {w}"
        if not m.int_time:
            assert m.shift == 0, f"{m.name}: non-integer times cannot be shifted"
            continue
        assert m.shift % alignment(m.scenario) == 0, f"{m.name}: shift breaks alignment"
        times = [t + m.shift for _, _, t, _ in events_of(m.scenario)]
        assert min(times, default=1) > 0, f"{m.name}: a shifted time is <= 0"
        assert max(times, default=0) + _span(m.scenario) < END_WATERMARK, \
            f"{m.name}: 'end' would not release every window"


# ----------------------------------------------------------------------------- inputs
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _marker(ms: int) -> dict[str, Any]:
    """A watermark marker row (every other column null)."""
    stamp = _EPOCH + datetime.timedelta(milliseconds=ms)
    return {"_wm": stamp.isoformat(timespec="milliseconds")}


def _write_inputs(group: Group, base: str, batches: range) -> None:
    """Each member's micro-batch files ``batches`` (one file per member per micro-batch,
    possibly empty, so that the members' sources advance together)."""
    for i, m in enumerate(group.members):
        directory = os.path.join(base, f"in{i}")
        os.makedirs(directory, exist_ok=True)
        seq = sum(len(ev) for ev, _ in m.batches[:batches.start])
        for b in batches:
            events = m.batches[b][0]
            out = rows(events, m.fields, m.int_time, m.shift, seq)
            seq += len(events)
            if group.watermarks[b] is not None:
                out.append(_marker(group.watermarks[b]))
            _write_file(directory, b, out)


def _write_file(directory: str, index: int, records: list[dict[str, Any]]) -> None:
    """One JSON-lines file, written to a temp name and renamed (the file source never sees
    a half-written file), with an mtime giving the micro-batch order."""
    path = os.path.join(directory, f"batch-{index:05d}.json")
    tmp = os.path.join(directory, f".batch-{index:05d}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    stamp = 1_000_000_000 + index
    os.utime(tmp, (stamp, stamp))
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- the query
def metric_name(index: int) -> str:
    """Observed metric of member ``index`` (``swag`` for the first: a one-scenario query
    reports under the adapter's default name)."""
    return "swag" if index == 0 else f"swag{index}"


def _branch(spark: SparkSession, m: Member, index: int, base: str,
            schemas: dict[int, Any]) -> DataFrame:
    """Member ``index``'s branch of the query; its output schema goes to ``schemas``."""
    src = (spark.readStream.schema(schema(m.fields, m.key, m.int_time, marker=True))
           .option("maxFilesPerTrigger", 1).json(os.path.join(base, f"in{index}"))
           .withWatermark("_wm", "0 seconds")
           .where(F.col("_wm").isNull()).drop("_wm"))
    out = aggregate(src, m.scenario, metric=metric_name(index))
    schemas[index] = out.schema
    return out.select(F.lit(index).alias("member"),
                      F.struct(*result_columns(out)).alias(f"r{index}"))


def _query(spark: SparkSession, group: Group, base: str, schemas: dict[int, Any]
           ) -> DataFrame:
    branches = [_branch(spark, m, i, base, schemas) for i, m in enumerate(group.members)]
    return functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True),
                            branches)


def _process(spark: SparkSession, group: Group, base: str, sink: str,
             progress: list[Any], schemas: dict[int, Any]) -> None:
    """Start the group's query, process every file, stop. ``sink``: the name of a memory
    table, or ``""`` for a Parquet file sink in ``base/out``, which (unlike the memory sink)
    can resume from the checkpoint, exactly once. Each member's output schema goes to
    ``schemas``."""
    df = _query(spark, group, base, schemas)
    if sink:
        writer = df.writeStream.format("memory").queryName(sink)
    else:
        writer = df.writeStream.format("parquet").option("path", os.path.join(base, "out"))
    query = (writer.option("checkpointLocation", os.path.join(base, "ckpt"))
             .outputMode("append").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
        progress.extend(query.recentProgress)


def _emitted(spark: SparkSession, base: str, sink: str) -> list[Any]:
    """Every row the sink received (the memory table is dropped)."""
    if sink:
        try:
            return spark.table(sink).collect()
        finally:
            spark.catalog.dropTempView(sink)
    out = os.path.join(base, "out")
    if os.path.isdir(out) and any(n.endswith(".parquet") for n in os.listdir(out)):
        return spark.read.parquet(out).collect()
    return []


# ----------------------------------------------------------------------------- results
@dataclass
class MemberRun:
    """One scenario's outcome: its result (or the query's error) and what the observed
    metric counted (late events, emitted rows)."""

    result: dict[str, Any] | None = None
    error: BaseException | None = None
    observed_late: int = 0
    observed_rows: int = 0

    def replay(self, scenario: dict[str, Any]) -> dict[str, Any]:
        """An engine for the runner that gives this recorded outcome (raises the error)."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def _records(group: Group, emitted: list[Any]) -> list[list[dict[str, Any]]]:
    """The emitted rows of each member (its struct column ``r<i>``)."""
    per: list[list[dict[str, Any]]] = [[] for _ in group.members]
    for row in emitted:
        i = row["member"]
        per[i].append(row[f"r{i}"].asDict())
    return per


def _observed(progress: list[Any], index: int) -> tuple[int, int]:
    late = emitted = 0
    for p in progress:
        metrics = (p.get("observedMetrics") or {}).get(metric_name(index))
        if metrics is not None:
            late += int(observed_field(metrics, "late_events"))
            emitted += int(observed_field(metrics, "rows"))
    return late, emitted


def observed_field(metrics: Any, name: str) -> Any:
    """A field of an observed metric's row. Spark Connect's progress (PySpark 4.3) gives the
    row as ``Row(values=[...], schema={"fields": [...]})`` instead of a row of the fields."""
    if "schema" in metrics.__fields__ and "values" in metrics.__fields__:
        names = [f["name"] for f in metrics["schema"]["fields"]]
        return metrics["values"][names.index(name)]
    return metrics[name]


def _parts(n: int, restart_after: int | Sequence[int] | None) -> list[range]:
    """The micro-batch files of each query run: a new run after each of ``restart_after``."""
    after = [] if restart_after is None else (
        [restart_after] if isinstance(restart_after, int) else list(restart_after))
    cuts = [0] + [c for c in (min(n, a + 1) for a in after) if 0 < c < n] + [n]
    return [range(a, b) for a, b in pairwise(cuts)]


def _with_query(group: Group, overrides: dict[str, Any]) -> Group:
    """``group`` with ``overrides`` in every member's query."""
    if not overrides:
        return group
    members = tuple(replace(m, scenario={
        **m.scenario, "query": {**m.scenario["query"], **overrides}}) for m in group.members)
    return Group(members, group.watermarks)


def run_group(spark: SparkSession, group: Group, *,
              restart_after: int | Sequence[int] | None = None,
              workdir: str | None = None, progress: list[Any] | None = None,
              part_queries: Sequence[dict[str, Any]] = ()) -> dict[str, MemberRun]:
    """Run one group as a streaming query (raises the query's error). ``restart_after``:
    stop the query after micro-batch file ``restart_after`` (or after each of several) and
    start a new one (new ``sliding_aggregate`` calls, so the workers' caches start cold)
    from the same checkpoint. ``part_queries``: query fields each run overrides (e.g.
    ``layout``). ``progress`` collects every ``StreamingQueryProgress``."""
    check_group(group)
    base = workdir or tempfile.mkdtemp(prefix="swag-spark-")
    parts = _parts(len(group.watermarks), restart_after)
    sink = "" if restart_after is not None else f"swag_{uuid.uuid4().hex}"
    seen: list[Any] = []
    schemas: dict[int, Any] = {}
    try:
        for i, part in enumerate(parts):
            _write_inputs(group, base, part)
            overrides = part_queries[i] if i < len(part_queries) else {}
            _process(spark, _with_query(group, overrides), base, sink, seen, schemas)
        records = _records(group, _emitted(spark, base, sink))
    finally:
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
        if progress is not None:
            progress.extend(seen)
    runs = {}
    for i, m in enumerate(group.members):
        late, counted = _observed(seen, i)
        schema_of = reported(spark, "streaming", schemas[i], m.fields, m.key, m.int_time)
        runs[m.name] = MemberRun(to_result(m.scenario, records[i], m.shift, m.fields,
                                           schema_of),
                                 observed_late=late, observed_rows=counted)
    return runs


def _run_attributed(spark: SparkSession, group: Group) -> dict[str, MemberRun]:
    """:func:`run_group`, errors recorded; a failed group's members rerun one per query."""
    try:
        return run_group(spark, group)
    except Exception as exc:  # recorded: the test of its scenario judges it
        if len(group.members) == 1:
            return {group.members[0].name: MemberRun(error=exc)}
    runs: dict[str, MemberRun] = {}
    for m in group.members:
        runs.update(_run_attributed(spark, Group((m,), group.watermarks)))
    return runs


def run_corpus(spark: SparkSession, scenarios: Iterable[dict[str, Any]], *,
               concurrency: int = CONCURRENCY,
               max_members: int = MAX_MEMBERS) -> dict[str, MemberRun]:
    """Every (expanded) scenario through streaming, grouped by :func:`plan_groups`,
    ``concurrency`` queries at a time (longest first): scenario name -> outcome."""
    groups = sorted(plan_groups(scenarios, max_members),
                    key=lambda g: (len(g.watermarks), len(g.members)), reverse=True)
    runs: dict[str, MemberRun] = {}
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for part in pool.map(functools.partial(_run_attributed, spark), groups):
            runs.update(part)
    return runs


# ----------------------------------------------------------------------------- one scenario
def streaming_run(scenario: dict[str, Any], *,
                  restart_after: int | Sequence[int] | None = None,
                  workdir: str | None = None, progress: list[Any] | None = None,
                  part_queries: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """One expanded scenario as its own streaming query (see :func:`run_group` for the
    options); raises the query's error."""
    spark = active_session()
    (group,) = plan_groups([scenario])
    run = run_group(spark, group, restart_after=restart_after, workdir=workdir,
                    progress=progress, part_queries=part_queries)
    result = run[scenario["name"]].result
    assert result is not None
    return result

