"""Which fields of an event value a query reads, so that an engine can ship only those to
the driver (Spark moves each value across the JVM/Python boundary: every column it leaves
out is work saved)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from adapters.query.specs import OverWindow, PolicyWindow, Query


class FieldsRead(NamedTuple):
    """What the driver reads of each event value for one query."""

    #: the fields read by name (aggregated fields, argmax's ``result``, a policy's ``field``)
    names: frozenset[str]
    #: whether it also needs the whole value (then every field must travel)
    whole: bool


def fields_read(query: Query) -> FieldsRead:
    """What the driver reads of each event value to answer ``query``.

    The whole value is needed when

    * the query has an OVER window (its rows carry the event itself);
    * a policy window has a custom measure or rule (it is given ``(time, value)``);
    * an aggregation is custom (no ``fn``) or a whole-row ``argmin``/``argmax`` (no
      ``result`` field): it aggregates the value itself.

    The names are read in every case (an engine that drops fields it thinks unused, such as
    the key or time columns, must still ship these).
    """
    names: set[str] = set()
    whole = False
    for w in query.windows:
        if isinstance(w, OverWindow):
            whole = True
        elif isinstance(w, PolicyWindow):
            if w.rule is not None or not isinstance(w.measure, str):
                whole = True
            if w.field is not None:
                names.add(w.field)
    for a in query.aggregations:
        if a.reads_event:
            whole = True
        if a.field is not None:
            names.add(a.field)
        names.update(a.other_fields)
    return FieldsRead(frozenset(names), whole)


def shipped_fields(query: Query, fields: Sequence[str], key_names: Sequence[str], time: str,
                   every_field: bool) -> tuple[list[str], list[str]]:
    """``(event fields, value fields)`` of an input with these ``fields`` (in order) whose
    key and time fields travel apart from the value: the event fields are the other fields
    the call needs (all of them with ``every_field`` or when the driver needs whole values,
    else the ones it reads); the value fields, which travel to the driver in each event's
    value, are these plus the key and time fields that the driver reads. Raises
    ``ValueError`` for a read field the input does not have."""
    read, whole = fields_read(query)
    candidates = [c for c in fields if c not in key_names and c != time]
    also = [c for c in fields if c in read and (c in key_names or c == time)]
    if whole or every_field:
        return candidates, candidates + also
    missing = sorted(read.difference(fields))
    if missing:
        raise ValueError(f"aggregated column {missing[0]!r} is not in the input (columns: "
                         f"{', '.join(fields)})")
    events = [c for c in candidates if c in read]
    return events, events + also


def call_fields(fields: Sequence[str], key: str | Sequence[str], time: str,
                order_by: str | None = None, source: str = "the input") -> tuple[str, ...]:
    """The key field names of a call whose ``key`` (one field name or several), ``time``
    and ``order_by`` fields name fields of an input with these ``fields``. Raises
    ``ValueError`` for no key, a name the input does not have (naming ``source`` and its
    fields), or a time field that is also a key field."""
    key_names = (key,) if isinstance(key, str) else tuple(key)
    if not key_names:
        raise ValueError("key: at least one key column is required")
    named = [*((k, "key") for k in key_names), (time, "time")]
    for name, what in named + ([(order_by, "order_by")] if order_by is not None else []):
        if not isinstance(name, str) or name not in fields:
            raise ValueError(f"{what} column {name!r} is not in {source} (columns: "
                             f"{', '.join(fields)})")
    if time in key_names:
        raise ValueError(f"column {time!r} cannot be both the key and the time")
    return key_names


__all__ = ["FieldsRead", "call_fields", "fields_read", "shipped_fields"]
