"""The rows a query gives: the driver's row dicts, and the one output schema every engine
gives users (``docs/adapters.md``, "Output rows").

**Driver rows.** Every row the driver emits is a dict ``{"window": spec index, "key": key,
...}`` followed by the bounds of its window and then one entry per aggregation (output name,
in the query's order):

* ``"start", "end"`` (ms, ``[start, end)``) for sliding, tumbling, count and policy windows;
* ``"time", "event"`` (the event's time and value) for per-event (OVER) windows.

**Output rows** (:func:`output_columns`), the same names in the same order on Spark, Beam and
Flink:

* one window spec of the ``[start, end)`` kinds: ``<key>, window_start, window_end,
  <aggregations>``;
* one per-event (OVER) spec: the event as it came in (its fields in input order; the key and
  time columns first when the event does not carry them; ``<key>, <time>, event`` when the
  engine knows no fields of it), then ``<aggregations>``;
* several specs: ``window`` (the spec's index), ``<key>, window_start, window_end``, then,
  when a spec is per-event, ``<time>`` and the event's other fields, then ``<aggregations>``;
  a row leaves the other kind's columns empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.query.specs import OverWindow, Query

#: the columns of a row of a ``[start, end)`` window, after ``window`` and ``key``
RANGE_BOUNDS = ("start", "end")
#: the columns of a per-event (OVER) row, after ``window`` and ``key``
EVENT_BOUNDS = ("time", "event")

#: output column names of the window index and the window bounds
WINDOW, WINDOW_START, WINDOW_END = "window", "window_start", "window_end"
#: output column of a per-event row's whole event, when the engine knows no fields of it
EVENT = "event"


def row_columns(query: Query) -> tuple[str, ...]:
    """The keys of ``query``'s driver rows in order: ``window, key``, the bounds of each
    window kind the query has (:data:`RANGE_BOUNDS`, :data:`EVENT_BOUNDS`), then the
    aggregations."""
    over = [isinstance(w, OverWindow) for w in query.windows]
    columns = ["window", "key"]
    if not all(over):
        columns += RANGE_BOUNDS
    if any(over):
        columns += EVENT_BOUNDS
    return (*columns, *(a.name for a in query.aggregations))


@dataclass(frozen=True)
class OutputColumns:
    """A query's output columns and where each one's value comes from in a driver row.

    ``sources[i]`` is ``(kind, name)``: ``("window", "")``, ``("key", "")`` (the key; with
    several key columns ``("key", "<index>")``: that part of the key tuple), ``("start",
    "")``, ``("end", "")``, ``("time", "")`` (the driver's times, in ms: the engine gives
    them the time column's type), ``("field", name)`` (a field of the event),
    ``("event", "")`` (the whole event) or ``("agg", name)``.
    """

    names: tuple[str, ...]
    sources: tuple[tuple[str, str], ...]

    def values(self, row: dict[str, Any], read: Callable[[Any, str], Any]) -> list[Any]:
        """``row``'s values in column order; ``read(event, field)`` reads an event's field.
        A column the row does not have (the other window kind's) is ``None``."""
        out: list[Any] = []
        for kind, name in self.sources:
            if kind == "agg":
                out.append(row.get(name))
            elif kind == "field":
                out.append(read(row["event"], name) if "event" in row else None)
            elif kind == "key" and name:
                out.append(row["key"][int(name)])
            else:
                out.append(row.get(kind))
        return out


def output_columns(query: Query, *, key_names: Sequence[str], time_name: str,
                   event_fields: Sequence[str] | None,
                   late_events: bool = False) -> OutputColumns:
    """The output columns of ``query`` on every engine (see the module docstring).

    Args:
        key_names: the key's column names (``["key"]`` when the user's key has no name).
        time_name: the time's column name (``"time"`` when it is the element timestamp).
        event_fields: the input event's field names in order (key and time columns
            included when the event carries them), or ``None`` when unknown.
        late_events: the rows also carry late events (Spark's ``late_rows="include"``):
            the several-specs form, with the event's columns whatever the specs.
    """
    keyed = ([("key", "")] if len(key_names) == 1
             else [("key", str(i)) for i in range(len(key_names))])
    key_cols = list(zip(key_names, keyed))
    aggs = [(a.name, ("agg", a.name)) for a in query.aggregations]
    over = [isinstance(w, OverWindow) for w in query.windows]
    bounds = [(WINDOW_START, ("start", "")), (WINDOW_END, ("end", ""))]
    if event_fields is None:
        event = [*key_cols, (time_name, ("time", "")), (EVENT, ("event", ""))]
    else:
        carried = set(event_fields)
        event = [c for c in key_cols if c[0] not in carried]
        if time_name not in carried:
            event.append((time_name, ("time", "")))
        event += [(f, input_source(f, key_names, time_name)) for f in event_fields]
    if len(query.windows) == 1 and not late_events:
        columns = [*event, *aggs] if over[0] else [*key_cols, *bounds, *aggs]
    else:
        columns = [(WINDOW, ("window", "")), *key_cols, *bounds]
        if any(over) or late_events:
            columns += [(time_name, ("time", ""))]
            columns += [c for c in event if c[0] not in key_names and c[0] != time_name]
        columns += aggs
    names = tuple(name for name, _ in columns)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"output column(s) {duplicated} appear twice: an aggregation's "
                         f"output name clashes with an input or window column; rename it")
    return OutputColumns(names, tuple(source for _, source in columns))


def input_source(name: str, key_names: Sequence[str], time_name: str) -> tuple[str, str]:
    """Where an input field's value is in the driver's rows (an :class:`OutputColumns`
    source): the key and time fields come from the driver's key and time (one source for
    each), the others from the event."""
    if name in key_names:
        return ("key", "" if len(key_names) == 1 else str(list(key_names).index(name)))
    return ("time", "") if name == time_name else ("field", name)


__all__ = ["EVENT", "EVENT_BOUNDS", "RANGE_BOUNDS", "WINDOW", "WINDOW_END", "WINDOW_START",
           "OutputColumns", "input_source", "output_columns", "row_columns"]
