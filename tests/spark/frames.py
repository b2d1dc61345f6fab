"""Conformance scenarios as Spark rows and Spark results as corpus rows: what the batch
engine (``engine.py``) and the streaming engine (``streaming.py``) share.

Event times are shifted by a constant (a multiple of every slide, so window alignment is
unchanged) because Spark's watermark cannot be negative (it starts at 0); results are
shifted back. Arrival order travels in a ``seq`` column (``order_by``).
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_adapter import sliding_aggregate
from tests.conformance import schema as schema_rule
from tests.conformance.schema import BOOL, DOUBLE, LONG, STRING, Column, Feed, array_of, struct_of

#: (step index, key, time, value) of one event.
Event = tuple[int, Any, Any, dict[str, Any]]

#: Times are shifted to about this much (2**40 ms, year 2004), far from 0 and from
#: the end-of-input watermark.
SHIFT_BASE = 1 << 40


def active_session() -> SparkSession:
    """The active SparkSession (the tests' conftest starts one)."""
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("no active SparkSession (the tests' conftest starts one)")
    return spark


# ----------------------------------------------------------------------------- data
def events_of(scenario: dict[str, Any]) -> list[Event]:
    """(step index, key, time, value) of every event, in arrival order."""
    out = []
    for i, step in enumerate(scenario["steps"]):
        for key, time, value in step.get("events", ()):
            out.append((i, key, time, value))
    return out


#: Spark DDL types of the logical types a scenario's values have (:mod:`.schema`)
SPARK_DDL = {BOOL: "boolean", LONG: "long", DOUBLE: "double", STRING: "string"}


def field_types(events: list[Event], scenario: dict[str, Any]) -> dict[str, str]:
    """Spark type of every value field (and of every field an aggregation names): the
    engine-free :func:`tests.conformance.schema.field_types`."""
    types = {}
    for name, logical in schema_rule.field_types(scenario).items():
        if logical not in SPARK_DDL:
            kinds = sorted({type(v.get(name)).__name__ for _, _, _, v in events})
            raise TypeError(f"field {name!r} mixes types {kinds}: no single Spark column type")
        types[name] = SPARK_DDL[logical]
    return types


def key_type(events: list[Event]) -> str:
    """Spark type of the key column."""
    kinds = {type(k) for _, k, _, _ in events}
    if kinds <= {int}:
        return "long" if kinds else "string"
    if kinds <= {str}:
        return "string"
    raise TypeError(f"keys mix types {kinds}")


def time_is_int(events: list[Event]) -> bool:
    """True when every event time is an int (else the time column is a string and times
    are not shifted: only bad-input scenarios have such times)."""
    return all(type(t) is int for _, _, t, _ in events)


def alignment(scenario: dict[str, Any]) -> int:
    """The lcm of every sliding slide and tumbling size: a time shift that is a multiple
    of it leaves every window boundary on a window boundary."""
    lcm = 1
    for w in scenario["query"]["windows"]:
        step = w.get("slide") or w.get("size") if w.get("kind") in ("sliding", "tumbling") \
            else None
        if step:
            lcm = lcm * step // math.gcd(lcm, step)
    return lcm


def shift_for(scenario: dict[str, Any]) -> int:
    """The smallest multiple of :func:`alignment` that is >= ``SHIFT_BASE``."""
    step = alignment(scenario)
    return -(-SHIFT_BASE // step) * step


def schema(fields: dict[str, str], key: str, int_time: bool, *, marker: bool) -> str:
    """DDL schema of a scenario's rows (``marker``: plus the ``_wm`` watermark column)."""
    cols = [f"key {key}", f"time {'long' if int_time else 'string'}", "seq long"]
    cols += [f"`{n}` {t}" for n, t in fields.items()]
    if marker:
        cols.append("_wm timestamp")
    return ", ".join(cols)


def rows(events: list[Event], fields: dict[str, str], int_time: bool, shift: int,
         seq0: int = 0) -> list[dict[str, Any]]:
    """The events as row dicts (times shifted, ``seq`` = ``seq0`` + arrival index)."""
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


def aggregate(df: DataFrame, scenario: dict[str, Any], metric: Any = None) -> DataFrame:
    """``sliding_aggregate`` with the scenario's query, late rows included (``late`` flag),
    arrival order from ``seq``; a streaming ``df`` must already carry a watermark. The
    scenario's optional ``"spark"`` dict adds keyword arguments (e.g. ``key_buckets``)."""
    q = scenario["query"]
    return sliding_aggregate(
        df, key="key", time="time", window=list(q["windows"]),
        aggregations=q["aggregations"], allowed_lateness=q.get("allowed_lateness", 0),
        algorithm=q.get("algorithm") or "auto", late_rows="include", order_by="seq",
        watermark=None, metric=metric, nulls=q.get("nulls", "skip"),
        layout=q.get("layout", "auto"), **scenario.get("spark", {}))


def result_columns(out: DataFrame) -> list[Any]:
    """The output columns with timestamps as epoch milliseconds."""
    cols = []
    for name, typ in out.dtypes:
        if name in ("window_start", "window_end", "time") and typ.startswith("timestamp"):
            cols.append(F.unix_millis(F.col(name)).alias(name))
        else:
            cols.append(F.col(f"`{name}`"))
    return cols


# ----------------------------------------------------------------------------- schema
#: Spark's scalar types by logical type name (:mod:`tests.conformance.schema`)
_LOGICAL = ((T.LongType, "long"), (T.IntegerType, "int"), (T.ShortType, "short"),
            (T.ByteType, "byte"), (T.DoubleType, "double"), (T.FloatType, "float"),
            (T.StringType, "string"), (T.BooleanType, "bool"), (T.BinaryType, "binary"),
            (T.TimestampType, "time"), (T.TimestampNTZType, "time"))


def logical_type(dt: T.DataType) -> str:
    """A Spark type as a logical type (arrays and structs recursively; a type without a
    logical name as its own, e.g. ``spark:decimal(10,2)``)."""
    if isinstance(dt, T.ArrayType):
        return array_of(logical_type(dt.elementType))
    if isinstance(dt, T.StructType):
        return struct_of((f.name, logical_type(f.dataType)) for f in dt.fields)
    for cls, name in _LOGICAL:
        if isinstance(dt, cls):
            return name
    return f"spark:{dt.simpleString()}"


def logical_schema(struct: T.StructType) -> list[Column]:
    """A DataFrame's schema as ``(column, logical type)`` pairs, in order."""
    return [(f.name, logical_type(f.dataType)) for f in struct.fields]


def feed(fields: dict[str, str], key: str, int_time: bool) -> Feed:
    """What the Spark engines give ``sliding_aggregate`` (the columns of :func:`schema`
    without the marker), with late rows included (``late_rows="include"``)."""
    by_ddl = {ddl: logical for logical, ddl in SPARK_DDL.items()}
    time = ("time", LONG if int_time else STRING)
    columns = (("key", by_ddl[key]), time, ("seq", LONG),
               *((n, by_ddl[t]) for n, t in fields.items()))
    return Feed(columns[0], time, columns, late_flag=True)


def reported(spark: SparkSession, mode: str, out: T.StructType, fields: dict[str, str],
             key: str, int_time: bool) -> dict[str, Any]:
    """The ``schema``, ``feed`` and ``runner`` (``"Spark <mode>"``, or ``"Spark Connect
    <mode>"``) a Spark engine reports for an output of schema ``out``."""
    connect = type(spark).__module__.startswith("pyspark.sql.connect")
    return {"schema": logical_schema(out), "feed": feed(fields, key, int_time),
            "runner": f"Spark {'Connect ' if connect else ''}{mode}"}


# ----------------------------------------------------------------------------- results
def _present_everywhere(events: list[Event]) -> set[str]:
    names: set[str] | None = None
    for _, _, _, value in events:
        names = set(value) if names is None else names & set(value)
    return names or set()


def to_result(scenario: dict[str, Any], records: list[dict[str, Any]], shift: int,
              fields: dict[str, str], reported: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """Output records (``late_rows="include"``, times in ms) as the runner's
    ``{"rows": [...], "late": {...}}``, times shifted back; ``reported``: the output's
    ``schema``, ``feed`` and ``runner`` (:mod:`tests.conformance.runner`), added to it."""
    events = events_of(scenario)
    everywhere = _present_everywhere(events)
    agg_names = list(scenario["query"]["aggregations"])
    kinds = [w["kind"] for w in scenario["query"]["windows"]]
    out_rows: list[dict[str, Any]] = []
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
                v = plain(rec[name])
                if v is None and name not in everywhere:
                    continue
                event[name] = v
            row["event"] = event
        else:
            row["start"] = int(rec["window_start"]) - shift
            row["end"] = int(rec["window_end"]) - shift
        for name in agg_names:
            row[name] = plain(rec[name])
        out_rows.append(row)
    return fix_pairs(scenario, {"rows": out_rows, "late": late, **(reported or {})})


def plain(v: Any) -> Any:
    """Spark ``Row`` values as plain dicts, lists and bytes."""
    if hasattr(v, "asDict"):
        return {k: plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    return v


def fix_pairs(scenario: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """mincount/maxcount come back as structs {value, count}: the corpus wants [v, c];
    argmin/argmax without ``result`` return the whole event, which here also holds the
    test's own ``seq`` (arrival order) column: drop it."""
    aggs = scenario["query"]["aggregations"]
    pairs = [n for n, a in aggs.items() if a.get("fn") in ("mincount", "maxcount")]
    whole = [n for n, a in aggs.items()
             if a.get("fn") in ("argmin", "argmax") and "result" not in a]
    for row in result["rows"]:
        for n in pairs:
            v = row.get(n)
            if isinstance(v, dict):
                row[n] = [v["value"], v["count"]]
        for n in whole:
            v = row.get(n)
            if isinstance(v, dict):
                v.pop("seq", None)
    return result
