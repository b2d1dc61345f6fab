"""A bucket's rows as columns (engine-free): the driver events of one call's input, every key
of the bucket in one Arrow table whose keys are JSON text (:mod:`adapters.engine.columns`:
``swag_k``, the key's identity in the bucket's state), and the driver's output of the call
as one set of output columns. Spark's bucket layout: ``spark_adapter._buckets``."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from adapters.crosskey.columnar import MIN_BATCH, ArrowEvents
from adapters.driver.results import Output
from adapters.engine.columns import (
    KEY_IN,
    ORDER_IN,
    TIME_IN,
    VALUE_IN,
    arrow_values,
    decode_key,
    order_key,
    wide_columns,
)
from adapters.engine.worker import Plan

try:  # optional: without NumPy every bucket's events are read row by row
    import numpy as np
except ImportError:  # pragma: no cover
    np = None  # type: ignore[assignment]


def bucket_events(plan: Plan, table: Any, ids: dict[Hashable, bytes],
                  texts: dict[int, str]) -> Sequence[tuple[Any, Any, Any]]:
    """``(key, time, value)`` events of a bucket's input ``table``, each key's in arrival
    order (or ``swag_o`` order, nulls last); ``ids`` receives each key's id (its JSON text),
    ``texts`` the JSON texts of the values (:func:`adapters.engine.columns.json_values`).
    Pre-sliced (``plan.slices``): one event per key and slice, at the slice's start, whose
    value holds the partials. Numbers without nulls in arrival order come as columns
    (:class:`~adapters.crosskey.columnar.ArrowEvents`: the cross-key runtime takes them as
    they are; any other path reads them as the same tuples)."""
    if plan.slices is None and not plan.has_order and not plan.json_values:
        columnar = _arrow_events(plan, table, ids, texts)
        if columnar is not None:
            return columnar
    keys = _keys(plan, table.column(KEY_IN).to_pylist(), ids)
    times = table.column(TIME_IN).to_pylist()
    if plan.slices is not None:
        return list(zip(keys, times, plan.slices.table_values(table, keys)))
    return _events(keys, times, arrow_values(plan, table, texts),
                   table.column(ORDER_IN).to_pylist() if plan.has_order else None)


def _numeric(column: Any) -> bool | None:
    """Whether an Arrow column's values are Python ints (a signed integer type), floats
    (a floating type), or ``None``: another type, or nulls."""
    import pyarrow as pa

    t = column.type
    if column.null_count:
        return None
    if pa.types.is_signed_integer(t):
        return True
    return False if pa.types.is_floating(t) else None


def _arrow_events(plan: Plan, table: Any, ids: dict[Hashable, bytes],
                  texts: dict[int, str]) -> ArrowEvents | None:
    """The events of a bucket's ``table`` as columns (:func:`columnar_events`), its keys
    the distinct JSON texts of ``swag_k`` in order of first appearance; else ``None``."""
    if np is None or table.num_rows < MIN_BATCH:
        return None
    encoded = table.column(KEY_IN).combine_chunks().dictionary_encode()
    first_seen = _keys(plan, encoded.dictionary.to_pylist(), ids)
    codes = encoded.indices.to_numpy(zero_copy_only=False)

    def rows() -> list[tuple[Any, Any, Any]]:
        keys = [first_seen[c] for c in codes.tolist()]
        return _events(keys, table.column(TIME_IN).to_pylist(),
                       arrow_values(plan, table, texts), None)

    return columnar_events(plan, table, first_seen, codes, rows)


def columnar_events(plan: Plan, table: Any, keys: list[Any], codes: Any,
                    rows: Callable[[], list[tuple[Any, Any, Any]]]) -> ArrowEvents | None:
    """The events of ``table`` (each row's key: ``keys[codes[row]]``, ``keys`` distinct) as
    columns (:class:`~adapters.crosskey.columnar.ArrowEvents`), which the cross-key
    runtime takes as they are, when every value column holds numbers without nulls and the
    times are integers without nulls; else ``None`` (read ``rows()`` instead). ``rows``
    makes the same events as Python tuples, for any path that asks for them."""
    if np is None or table.num_rows < MIN_BATCH:
        return None
    names = tuple(name for name, _ in plan.typed.values)
    value_columns = [table.column(f"{VALUE_IN}{i}") for i in range(len(names))]
    kinds = [_numeric(c) for c in value_columns]
    time_column = table.column(TIME_IN)
    if not names or None in kinds or _numeric(time_column) is not True:
        return None
    try:
        if len(set(keys)) != len(keys):
            return None  # two texts of one driver key: read row by row
    except TypeError:
        return None
    code_type = np.int16 if len(keys) < 2**15 else np.intp
    ints = tuple(bool(k) for k in kinds)
    values = [c.to_numpy().astype(np.int64 if i else np.float64)
              for c, i in zip(value_columns, ints)]
    return ArrowEvents(keys, np.asarray(codes).astype(code_type), time_column.to_numpy()
                       .astype(np.int64), names, values, ints, rows)


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
