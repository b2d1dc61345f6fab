"""The output schema a conformance scenario must give, engine-free: column names, their
order and their *logical* types.

**What "the same schema" means.** A schema is a list of ``(column name, logical type)``.
The expected one is a function of two things only: the scenario's query (parsed by
:func:`adapters.parse_query`, as every runner does) and the :class:`Feed`, what a runner
actually feeds its engine, in logical types: the key column (name, type), the time column
(name, type), the event's fields in input order with their types (``None`` when the engine
is given untyped values) and whether late events come back as rows flagged by a ``late``
column. From those, :func:`expected_schema` applies the one rule of ``docs/adapters.md``
("Output rows"): the names and order of :func:`adapters.engine.rows.output_columns`, and the
types

* ``window``: ``int`` (32-bit);
* ``window_start``, ``window_end`` and the time column: the feed's time type (``long`` for
  epoch milliseconds, ``time`` for a timestamp column);
* the key and the event's fields: the feed's types; the whole event when the engine knows
  no fields of it (column ``event``): the feed's ``event`` type (``any``);
* the aggregates: each built-in's declared output type (:mod:`adapters.query.builtins`),
  resolved against the feed's field types, exactly as the engines resolve it: ``input`` is
  the read field's type, ``long or double`` follows the field (``long`` for ``long`` /
  ``int``, ``double`` for ``double`` / ``float``), argmin/argmax give the ``result`` field's
  type, or without one the whole event: a struct of the event's fields other than the key
  and the time column (``any`` when the fields are unknown). A type that depends on an
  unknown field type is ``any``;
* ``late``: ``bool`` (only with ``late_rows="include"``, Spark).

Two runners fed the same :class:`Feed` must therefore give the same schema; runners fed
differently (Spark's columns are typed and carry the test's ``seq`` column and the ``late``
flag; Beam and Flink get untyped ``(key, value)`` elements, :func:`untyped_feed`) give the
schemas their feeds imply, and each is checked against that. So that typed inputs are
compared across engines too, the Beam and Flink suites also check, per scenario, the schema
their adapters declare over rows of the typed columns Spark gets (:func:`typed_feed`),
without running a job.

**Logical types.** ``long``, ``int`` (32-bit), ``short``, ``byte``, ``double``, ``float``
(32-bit), ``string``, ``bool``, ``binary``, ``time`` (any timestamp type: Spark
``timestamp``, Beam ``Timestamp``, Flink ``SQL_TIMESTAMP`` / ``LOCAL_DATE_TIME`` /
``INSTANT``), ``any`` (an engine's untyped value: Beam ``typing.Any``, Flink
``PICKLED_BYTE_ARRAY``), ``array<T>`` and ``struct<name: T, ...>``. Nullability is not part
of the schema. Each engine's test engine maps its native schema onto these
(``tests/spark/frames.py``, ``tests/beam/engine.py``, ``tests/flink/engine.py``); a native
type without a logical name keeps its own name, so that it shows up in a diff.

**Scenario value types** (:func:`value_type`): only ``bool`` values -> ``bool``; only ints ->
``long``; ints and floats -> ``double``; strings -> ``string``; no value but ``None`` ->
``double``; anything else -> ``any``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from adapters import parse_query
from adapters.engine.rows import output_columns
from adapters.query.specs import AggSpec, output_type

ANY, BOOL, LONG, INT = "any", "bool", "long", "int"
DOUBLE, STRING, TIME = "double", "string", "time"
#: the column Spark's ``late_rows="include"`` adds
LATE = "late"

#: one output column: (name, logical type)
Column = tuple[str, str]


@dataclass(frozen=True)
class Feed:
    """What a runner feeds its engine, in logical types (see the module docstring).

    ``fields``: the event's fields in input order (the key and time columns included when
    the event carries them), ``None`` when the engine gets untyped values; ``event``: the
    type of a whole untyped event; ``late_flag``: late events come back as rows, flagged by
    a ``bool`` column ``late`` (Spark's ``late_rows="include"``)."""

    key: Column
    time: Column
    fields: tuple[Column, ...] | None = None
    event: str = ANY
    late_flag: bool = False


def array_of(element: str) -> str:
    """The logical type of an array of ``element``."""
    return f"array<{element}>"


def struct_of(fields: Iterable[Column]) -> str:
    """The logical type of a struct of these fields, in order."""
    return "struct<" + ", ".join(f"{n}: {t}" for n, t in fields) + ">"


class _LogicalTypes:
    """The engine-neutral output types (:mod:`adapters.query.output_types`) as logical type
    names; an unknown input type stays unknown (``None``, later ``any``)."""

    def named(self, name: str) -> str:
        return name

    def array(self, element: str) -> str:
        return array_of(element)

    def struct(self, fields: list[tuple[str, str]]) -> str:
        return struct_of(fields)

    def numeric(self, t: str) -> str | None:
        return LONG if t in ("long", "int", "short", "byte") else \
            DOUBLE if t in ("double", "float") else None


LOGICAL_TYPES = _LogicalTypes()


# ----------------------------------------------------------------------------- scenario types
def events(scenario: dict[str, Any]) -> list[list[Any]]:
    """Every ``[key, time, value]`` of an expanded scenario, in arrival order."""
    return [ev for step in scenario["steps"] for ev in step.get("events", ())]


def value_type(values: Iterable[Any]) -> str:
    """The logical type of a column holding ``values`` (see the module docstring)."""
    kinds = {type(x) for x in values if x is not None}
    if not kinds:
        return DOUBLE
    if kinds <= {bool}:
        return BOOL
    if kinds <= {int}:
        return LONG
    if kinds <= {int, float}:
        return DOUBLE
    if kinds <= {str}:
        return STRING
    return ANY


def field_types(scenario: dict[str, Any]) -> dict[str, str]:
    """The logical type of every value field of an expanded scenario (and of every field an
    aggregation names), fields in order of first appearance (aggregations' first)."""
    seen: dict[str, list[Any]] = {}
    for spec in scenario["query"]["aggregations"].values():
        for param in ("field", "result"):
            if isinstance(spec, dict) and isinstance(spec.get(param), str):
                seen.setdefault(spec[param], [])
    for _, _, value in events(scenario):
        for name, x in value.items():
            seen.setdefault(name, []).append(x)
    return {name: value_type(xs) for name, xs in seen.items()}


def key_type(scenario: dict[str, Any]) -> str:
    """The logical type of the scenario's keys (``string`` when it has no event)."""
    keys = [k for k, _, _ in events(scenario)]
    return value_type(keys) if keys else STRING


def untyped_feed(scenario: dict[str, Any]) -> Feed:
    """The feed of a runner giving ``(key, value)`` elements with a typed key, the time in
    epoch ms and untyped values (Beam's and Flink's conformance runners)."""
    return Feed(("key", key_type(scenario)), ("time", LONG))


def typed_feed(scenario: dict[str, Any], extra: Sequence[Column] = ()) -> Feed:
    """The feed of rows with typed columns: ``key``, ``time`` (epoch ms), the ``extra``
    columns, then the scenario's value fields (:func:`field_types`)."""
    key, time = ("key", key_type(scenario)), ("time", LONG)
    return Feed(key, time, (key, time, *extra, *field_types(scenario).items()))


# ----------------------------------------------------------------------------- the rule
def _aggregate_type(spec: AggSpec, feed: Feed) -> str:
    fields = dict(feed.fields or ())
    if feed.fields is None:
        whole = feed.event
    else:
        whole = struct_of((n, t) for n, t in feed.fields
                          if n not in (feed.key[0], feed.time[0]))
    t = output_type(spec, LOGICAL_TYPES, lambda name: fields.get(name), whole)
    return ANY if t is None else t


def expected_schema(scenario: dict[str, Any], feed: Feed) -> list[Column]:
    """The output schema of ``scenario``'s query over ``feed`` (the module docstring's
    rule)."""
    query = parse_query(scenario["query"])
    columns = output_columns(query, key_names=[feed.key[0]], time_name=feed.time[0],
                             event_fields=None if feed.fields is None
                             else [n for n, _ in feed.fields],
                             late_events=feed.late_flag)
    fields = dict(feed.fields or ())
    aggs = {spec.name: spec for spec in query.aggregations}
    out: list[Column] = []
    for name, (kind, source) in zip(columns.names, columns.sources):
        if kind == "agg":
            t = _aggregate_type(aggs[source], feed)
        elif kind == "field":
            t = fields[source]
        else:
            t = {"window": INT, "key": feed.key[1], "start": feed.time[1],
                 "end": feed.time[1], "time": feed.time[1], "event": feed.event}[kind]
        out.append((name, t))
    if feed.late_flag:
        out.append((LATE, BOOL))
    return out


def schema_problem(expected: Sequence[Column], actual: Sequence[Column]) -> str | None:
    """Why ``actual`` is not the ``expected`` schema (None when it is): a name or order
    difference lists both column lists; a type difference names each column."""
    actual = [(str(n), str(t)) for n, t in actual]
    exp_names = [n for n, _ in expected]
    act_names = [n for n, _ in actual]
    if exp_names != act_names:
        missing = [n for n in exp_names if n not in act_names]
        extra = [n for n in act_names if n not in exp_names]
        what = ", ".join(filter(None, [missing and f"missing {missing}",
                                       extra and f"unexpected {extra}"])) or "order differs"
        return f"column names {act_names} != expected {exp_names} ({what})"
    bad = [f"column {i} {n!r}: {t} != expected {e}"
           for i, ((n, t), (_, e)) in enumerate(zip(actual, expected)) if t != e]
    return "; ".join(bad) or None


__all__ = [
    "ANY",
    "BOOL",
    "DOUBLE",
    "INT",
    "LATE",
    "LOGICAL_TYPES",
    "LONG",
    "STRING",
    "TIME",
    "Column",
    "Feed",
    "array_of",
    "events",
    "expected_schema",
    "field_types",
    "key_type",
    "schema_problem",
    "struct_of",
    "typed_feed",
    "untyped_feed",
    "value_type",
]
