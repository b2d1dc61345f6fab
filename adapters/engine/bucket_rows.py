"""A bucket's rows as columns (engine-free): the driver events of one call's input, every key
of the bucket in one Arrow table whose keys are JSON text (:mod:`adapters.engine.columns`:
``swag_k``, the key's identity in the bucket's state), and the driver's output of the call
as one set of output columns. Spark's bucket layout: ``spark_adapter._buckets``."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from adapters.driver.results import Output
from adapters.engine.columns import (
    KEY_IN,
    ORDER_IN,
    TIME_IN,
    arrow_values,
    decode_key,
    order_key,
    wide_columns,
)
from adapters.engine.worker import Plan


def bucket_events(plan: Plan, table: Any, ids: dict[Hashable, bytes],
                  texts: dict[int, str]) -> list[tuple[Any, Any, Any]]:
    """``(key, time, value)`` events of a bucket's input ``table``, each key's in arrival
    order (or ``swag_o`` order, nulls last); ``ids`` receives each key's id (its JSON text),
    ``texts`` the JSON texts of the values (:func:`adapters.engine.columns.json_values`).
    Pre-sliced (``plan.slices``): one event per key and slice, at the slice's start, whose
    value holds the partials."""
    keys = _keys(plan, table.column(KEY_IN).to_pylist(), ids)
    times = table.column(TIME_IN).to_pylist()
    if plan.slices is not None:
        return list(zip(keys, times, plan.slices.table_values(table, keys)))
    return _events(keys, times, arrow_values(plan, table, texts),
                   table.column(ORDER_IN).to_pylist() if plan.has_order else None)


def _keys(plan: Plan, texts: list[str], ids: dict[Hashable, bytes]) -> list[Any]:
    """The driver keys of key JSON ``texts`` (each distinct one decoded once); ``ids``
    receives each key's id."""
    known: dict[str, Any] = {}
    keys = []
    for kj in texts:
        dk = known.get(kj)
        if dk is None:
            dk = known[kj] = decode_key(plan, kj)
            ids[dk] = kj.encode()
        keys.append(dk)
    return keys


def _events(keys: list[Any], times: list[Any], values: list[Any],
            orders: list[Any] | None) -> list[tuple[Any, Any, Any]]:
    """The events, in ``orders`` order if given (stable; nulls and NaN last)."""
    events = list(zip(keys, times, values))
    if orders is not None and events:
        idx = sorted(range(len(events)), key=lambda i: order_key(orders[i]))
        events = [events[i] for i in idx]
    return events


def bucket_columns(plan: Plan, out: Output, ids: Mapping[Hashable, bytes],
                   texts: dict[int, str] | None = None) -> dict[str, list[Any]] | None:
    """The driver's output of a bucket's call as output columns
    (:func:`adapters.engine.columns.wide_columns` of each key, concatenated; ``None`` if
    empty). ``ids``: each output key's id (keys that travel out as JSON text)."""
    parts: dict[Any, Output] = {}
    for row in out.rows:
        parts.setdefault(row["key"], Output()).rows.append(row)
    for ev in out.late:
        parts.setdefault(ev.key, Output()).late.append(ev)
    typed_keys = plan.typed.keys is not None
    cols: dict[str, list[Any]] | None = None
    for key, part in parts.items():
        c = wide_columns(plan, key if typed_keys else ids[key].decode(), part, texts)
        if c is None:
            continue
        if cols is None:
            cols = c
        else:
            for name, values in c.items():
                cols[name].extend(values)
    return cols


__all__ = ["bucket_columns", "bucket_events"]
