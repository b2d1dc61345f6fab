"""The conformance corpus through Spark: a batch engine and a streaming engine for
``tests/conformance/runner.py`` (``engine(scenario) -> {"rows": [...], "late": {...}}``).

Both build a DataFrame from the scenario's events and call
:func:`spark_adapter.sliding_aggregate` with the scenario's windows and aggregations, with
``late_rows="include"`` so that one query gives the rows and the late events.

Batch (``groupBy().applyInPandas``): everything is released at end of input, so it runs only
the scenarios whose expected result does not depend on the watermark steps
(:func:`batch_eligible`); arrival order comes from an ``order_by`` column.

Streaming (``transformWithStateInPandas``): each step becomes one micro-batch file read by a
file source with ``maxFilesPerTrigger=1``. The scenario's watermarks cannot come from the
event times (Spark's watermark is ``max(event time) - delay``), so each watermark step is a
*marker row* on a separate timestamp column ``_wm`` carrying the watermark (the query's
watermark is ``withWatermark("_wm", "0 seconds")``); marker rows are filtered out before the
adapter. Spark applies a watermark from the batch after the one that carried it, which is
exactly the scenario order: events of step i+1 are judged against the watermark of step i.
Spark's watermark cannot be negative (it starts at 0), so event times are shifted by a
constant ``SHIFT`` (a multiple of every slide, so window alignment is unchanged) and shifted
back in the results.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_adapter import sliding_aggregate
from tests.conformance.oracle import expected
from tests.conformance.runner import compare

#: Far enough in the future to release every window of every scenario.
END_WATERMARK = 4_000_000_000_000


def session() -> SparkSession:
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active SparkSession (the tests' conftest starts one)")
    return spark


# ----------------------------------------------------------------------------- data
def _events(scenario: dict[str, Any]) -> list[tuple[int, Any, Any, dict[str, Any]]]:
    """(step index, key, time, value) of every event, in arrival order."""
    out = []
    for i, step in enumerate(scenario["steps"]):
        for key, time, value in step.get("events", ()):
            out.append((i, key, time, value))
    return out


def _field_types(events: list[tuple[int, Any, Any, dict[str, Any]]],
                 scenario: dict[str, Any]) -> dict[str, str]:
    seen: dict[str, set[type]] = {}
    for spec in scenario["query"]["aggregations"].values():
        for param in ("field", "result"):
            if isinstance(spec, dict) and isinstance(spec.get(param), str):
                seen.setdefault(spec[param], set())
    for _, _, _, value in events:
        for name, x in value.items():
            seen.setdefault(name, set())
            if x is not None:
                seen[name].add(type(x))
    types = {}
    for name, ts in seen.items():
        if not ts:
            types[name] = "double"  # only nulls (or no events at all)
        elif ts <= {bool}:
            types[name] = "boolean"
        elif ts <= {int}:
            types[name] = "long"
        elif ts <= {int, float}:
            types[name] = "double"
        elif ts <= {str}:
            types[name] = "string"
        else:
            raise TypeError(f"field {name!r} mixes types {ts}: no single Spark column type")
    return types


def _key_type(events: list[tuple[int, Any, Any, dict[str, Any]]]) -> str:
    kinds = {type(k) for _, k, _, _ in events}
    if kinds <= {int}:
        return "long" if kinds else "string"
    if kinds <= {str}:
        return "string"
    raise TypeError(f"keys mix types {kinds}")


def _time_is_int(events: list[tuple[int, Any, Any, dict[str, Any]]]) -> bool:
    return all(type(t) is int for _, _, t, _ in events)


def shift_for(scenario: dict[str, Any]) -> int:
    """A constant near 2**40 ms that is a multiple of every sliding/tumbling step."""
    lcm = 1
    for w in scenario["query"]["windows"]:
        step = w.get("slide") or w.get("size") if w.get("kind") in ("sliding", "tumbling") \
            else None
        if step:
            lcm = lcm * step // math.gcd(lcm, step)
    return -(-(1 << 40) // lcm) * lcm


def _present_everywhere(events: list[tuple[int, Any, Any, dict[str, Any]]]) -> set[str]:
    names: set[str] | None = None
    for _, _, _, value in events:
        names = set(value) if names is None else names & set(value)
    return names or set()


# ----------------------------------------------------------------------------- results
def _to_result(scenario: dict[str, Any], records: list[dict[str, Any]], shift: int,
               fields: dict[str, str]) -> dict[str, Any]:
    events = _events(scenario)
    everywhere = _present_everywhere(events)
    agg_names = list(scenario["query"]["aggregations"])
    kinds = [w["kind"] for w in scenario["query"]["windows"]]
    rows: list[dict[str, Any]] = []
    late: dict[Any, int] = {}
    for rec in records:
        key = rec["key"]
        if rec["late"]:
            late[key] = late.get(key, 0) + 1
            continue
        w = int(rec["window"])
        row: dict[str, Any] = {"window": w, "key": key}
        if kinds[w] == "over":
            row["time"] = int(rec["time"]) - shift
            event = {}
            for name in fields:
                v = _plain(rec[name])
                if v is None and name not in everywhere:
                    continue
                event[name] = v
            row["event"] = event
        else:
            row["start"] = int(rec["window_start"]) - shift
            row["end"] = int(rec["window_end"]) - shift
        for name in agg_names:
            row[name] = _plain(rec[name])
        rows.append(row)
    return {"rows": rows, "late": late}


def _plain(v: Any) -> Any:
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return v


def _fix_pairs(scenario: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """mincount/maxcount come back as structs {value, count}: the corpus wants [v, c];
    argmin/argmax without ``result`` return the whole event, which here also holds the
    test's own ``seq`` (arrival order) column: drop it."""
    aggs = scenario["query"]["aggregations"]
    pairs = [n for n, a in aggs.items() if a.get("fn") in ("mincount", "maxcount")]
    events = [n for n, a in aggs.items()
              if a.get("fn") in ("argmin", "argmax") and "result" not in a]
    for row in result["rows"]:
        for n in pairs:
            v = row.get(n)
            if isinstance(v, dict):
                row[n] = [v["value"], v["count"]]
        for n in events:
            v = row.get(n)
            if isinstance(v, dict):
                v.pop("seq", None)
    return result


def _collect(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


def _aggregate(df: DataFrame, scenario: dict[str, Any], *, streaming: bool,
               metric: str | None = None) -> DataFrame:
    q = scenario["query"]
    return sliding_aggregate(
        df, key="key", time="time", window=list(q["windows"]),
        aggregations=q["aggregations"], allowed_lateness=q.get("allowed_lateness", 0),
        algorithm=q.get("algorithm") or "auto", late_rows="include", order_by="seq",
        watermark=None, metric=metric)


# ----------------------------------------------------------------------------- batch
def batch_eligible(scenario: dict[str, Any]) -> bool:
    """True when the scenario's expected result equals the result with every event present
    and then the end of input (what a batch run computes): no late events, and every
    window released."""
    if scenario.get("expect_error"):
        return True
    events = [[k, t, v] for _, k, t, v in _events(scenario)]
    as_batch = dict(scenario, steps=[{"events": events}, {"watermark": "end"}])
    return compare(expected(scenario), expected(as_batch)) is None


def _schema(fields: dict[str, str], key_type: str, int_time: bool, markers: bool) -> str:
    cols = [f"key {key_type}", f"time {'long' if int_time else 'string'}", "seq long"]
    cols += [f"`{n}` {t}" for n, t in fields.items()]
    if markers:
        cols += ["_wm timestamp", "_marker boolean"]
    return ", ".join(cols)


def _rows(events: list[tuple[int, Any, Any, dict[str, Any]]], fields: dict[str, str],
          int_time: bool, shift: int, seq0: int = 0) -> list[dict[str, Any]]:
    out = []
    for j, (_, key, time, value) in enumerate(events):
        t = time + shift if int_time and time is not None else (
            None if time is None else str(time))
        row = {"key": key, "time": t, "seq": seq0 + j}
        for n, typ in fields.items():
            x = value.get(n)
            row[n] = float(x) if typ == "double" and x is not None else x
        out.append(row)
    return out


def batch_engine(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run a scenario as one batch DataFrame (``applyInPandas``)."""
    spark = session()
    events = _events(scenario)
    fields = _field_types(events, scenario)
    key_type, int_time = _key_type(events), _time_is_int(events)
    shift = shift_for(scenario) if int_time else 0
    schema = _schema(fields, key_type, int_time, markers=False)
    df = spark.createDataFrame(_rows(events, fields, int_time, shift), schema)
    out = _aggregate(df, scenario, streaming=False)
    records = _collect(out.select(*_result_columns(out)))
    return _fix_pairs(scenario, _to_result(scenario, records, shift, fields))


def _result_columns(out: DataFrame) -> list[Any]:
    cols = []
    for name, typ in out.dtypes:
        if name in ("window_start", "window_end", "time") and typ.startswith("timestamp"):
            cols.append(F.unix_millis(F.col(name)).alias(name))
        else:
            cols.append(F.col(f"`{name}`"))
    return cols


# ----------------------------------------------------------------------------- streaming
def _step_batches(scenario: dict[str, Any]) -> list[tuple[list[Any], Any]]:
    """The micro-batches: (events, watermark to carry or None). A watermark step travels with
    the events of the preceding batch (it takes effect from the next batch on)."""
    batches: list[tuple[list[Any], Any]] = []
    cur: list[Any] = []
    wm: Any = None
    for i, step in enumerate(scenario["steps"]):
        if "events" in step:
            if wm is not None:
                batches.append((cur, wm))
                cur, wm = [], None
            cur.extend((i, k, t, v) for k, t, v in step["events"])
        else:
            w = step["watermark"]
            w = END_WATERMARK if w == "end" else w
            wm = w if wm is None else max(wm, w)
    batches.append((cur, wm))
    return batches


def streaming_engine(scenario: dict[str, Any], workdir: str | None = None) -> dict[str, Any]:
    """Run a scenario as a streaming query, one micro-batch per step group."""
    return streaming_run(scenario, workdir=workdir)


def streaming_run(scenario: dict[str, Any], *, restart_after: int | None = None,
                  workdir: str | None = None,
                  progress: list[Any] | None = None) -> dict[str, Any]:
    """:func:`streaming_engine`, optionally stopping the query after micro-batch file
    ``restart_after`` and starting a new one (a new ``sliding_aggregate`` call, so the
    workers' structure caches start cold) from the same checkpoint. Results go to a Parquet
    file sink (exactly-once across the restart). ``progress`` collects every
    ``StreamingQueryProgress``."""
    spark = session()
    events = _events(scenario)
    fields = _field_types(events, scenario)
    key_type, int_time = _key_type(events), _time_is_int(events)
    shift = shift_for(scenario) if int_time else 0
    base = workdir or tempfile.mkdtemp(prefix="swag-spark-")
    src_dir = os.path.join(base, "in")
    out_dir = os.path.join(base, "out")
    os.makedirs(src_dir, exist_ok=True)
    schema = _schema(fields, key_type, int_time, markers=True)
    files = []
    seq = 0
    for evs, wm in _step_batches(scenario):
        rows = _rows(evs, fields, int_time, shift, seq)
        seq += len(evs)
        for r in rows:
            r["_wm"], r["_marker"] = None, False
        if wm is not None:
            marker = {"key": None, "time": None, "seq": None, "_marker": True,
                      "_wm": pd.Timestamp(int(wm) + shift, unit="ms")}
            marker.update({n: None for n in fields})
            rows.append(marker)
        files.append(rows)
    parts = [files] if restart_after is None else [files[:restart_after + 1],
                                                   files[restart_after + 1:]]
    try:
        written = 0
        for part in parts:
            for rows in part:
                _write_batch(src_dir, written, rows, schema)
                written += 1
            src = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                   .json(src_dir).withWatermark("_wm", "0 seconds")
                   # The filter must reference the watermark column: Spark pushes other
                   # filters below withWatermark, and the markers would never reach it.
                   .where(F.col("_wm").isNull()).drop("_wm", "_marker"))
            out = _aggregate(src, scenario, streaming=True, metric="swag")
            query = (out.select(*_result_columns(out)).writeStream.format("parquet")
                     .option("path", out_dir).outputMode("append")
                     .option("checkpointLocation", os.path.join(base, "ckpt")).start())
            try:
                query.processAllAvailable()
            finally:
                query.stop()
            if progress is not None:
                progress.extend(query.recentProgress)
        if os.path.isdir(out_dir) and any(n.endswith(".parquet") for n in os.listdir(out_dir)):
            records = _collect(spark.read.parquet(out_dir))
        else:
            records = []
    finally:
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
    return _fix_pairs(scenario, _to_result(scenario, records, shift, fields))


def _write_batch(directory: str, index: int, rows: list[dict[str, Any]], schema: str) -> None:
    """One JSON-lines file per micro-batch (written to a temp name, then renamed, so the
    file source never sees a half-written file)."""
    path = os.path.join(directory, f"batch-{index:05d}.json")
    tmp = os.path.join(directory, f".batch-{index:05d}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            r = dict(r)
            if r.get("_wm") is not None:
                r["_wm"] = r["_wm"].isoformat() + "Z"
            f.write(json.dumps(r) + "\n")
    # The file source takes files in modification-time order: make it the batch order.
    stamp = 1_000_000_000 + index
    os.utime(tmp, (stamp, stamp))
    os.replace(tmp, path)
