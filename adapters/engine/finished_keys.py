"""Many finished keys per call, for engines whose batch input arrives as a stream of Arrow
record batches sorted by key (Spark's ``mapInArrow`` over ``repartition(keys)
.sortWithinPartitions(keys)``): the batches are cut at key boundaries, a key still going on
at a batch's end is carried into the next one (memory: one key and one batch), and the
complete keys of each batch go to the driver together. An engine that gives each key its own
Python call pays its per-call cost once per key (Spark's ``groupBy().applyInArrow``: about
0.6 ms a key, ``python -m benchmarks.spark_matrix --floors``); here it pays it once per batch.

The driver gets the complete keys of a batch through one call: the OVER kernel over all of
them (:meth:`adapters.WindowDriver.finish_columns` with key ids, through
:func:`adapters.engine.arrow_kernel.over_table`), else their events or slice rows
(:meth:`adapters.WindowDriver.finish_keys`: the cross-key runtime over all of them, or each
key's own lanes). Each key's rows must come together (in arrival order; with ``order_by``
they are sorted here, stably, nulls last); the columns are :mod:`adapters.engine.columns`'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import Any

from adapters.driver.results import Output
from adapters.driver.window_driver import WindowDriver
from adapters.engine.arrow_kernel import over_table
from adapters.engine.bucket_rows import columnar_events
from adapters.engine.columns import (
    KEY_IN,
    KEY_OUT,
    ORDER_IN,
    TIME_IN,
    arrow_values,
    decode_key,
    wide_columns,
)
from adapters.engine.worker import Plan
from adapters.query.times import parse_time

try:
    import numpy as np
except ImportError:  # pragma: no cover - the Arrow engines bring NumPy
    np = None  # type: ignore[assignment]

#: the input rows of one driver call (:func:`key_runs`): the cross-key runtime's NumPy set-up
#: is paid once per call, and the call's output rows (up to windows per event times this)
#: are held at once
RUN_ROWS = 8192

#: builds the output table from output columns (the engine's schema and type errors)
ToTable = Callable[[dict[str, list[Any]]], Any]


def key_columns(plan: Plan) -> list[str]:
    """The input's key columns: ``swag_k`` (keys as JSON text) or ``swag_k<i>``."""
    typed = plan.typed
    if typed.keys is None or typed.json_keys_in:
        return [KEY_IN]
    return [f"{KEY_IN}{i}" for i in range(len(plan.key_names))]


def key_starts(table: Any, names: list[str]) -> Any:
    """The rows ``i >= 1`` of ``table`` whose key differs from row ``i - 1``'s (nulls equal
    each other, NaN equals NaN: the engine's grouping), as an int64 array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    if n < 2:
        return np.empty(0, np.int64)
    differs = None
    for name in names:
        col = table.column(name)
        a, b = col.slice(1), col.slice(0, n - 1)
        neq = pc.not_equal(a, b)
        if pa.types.is_floating(col.type):
            both_nan = pc.and_(pc.fill_null(pc.is_nan(a), False),
                               pc.fill_null(pc.is_nan(b), False))
            neq = pc.and_(neq, pc.invert(both_nan))
        if col.null_count:
            neq = pc.if_else(pc.is_null(neq), pc.xor(pc.is_null(a), pc.is_null(b)), neq)
        differs = neq if differs is None else pc.or_(differs, neq)
    assert differs is not None
    return np.flatnonzero(differs.to_numpy(zero_copy_only=False)) + 1


def complete_keys(batches: Iterable[Any], names: list[str]) -> Iterator[tuple[Any, Any]]:
    """``(table, starts)`` per run of complete keys of ``batches`` (record batches sorted
    by the key columns ``names``): the rows of whole keys and the first row of each key
    (int64, ``starts[0] == 0``). A key going on at a batch's end waits for the next batch."""
    import pyarrow as pa

    carry: list[Any] = []  # the unfinished key's rows, one table per batch
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        starts = key_starts(table, names)
        if carry:
            last = carry[-1].slice(carry[-1].num_rows - 1)
            if len(key_starts(pa.concat_tables([last, table.slice(0, 1)]), names)):
                starts = np.concatenate(([0], starts))
        if not len(starts):
            carry.append(table)
            continue
        offset = sum(t.num_rows for t in carry)
        whole = pa.concat_tables([*carry, table]).combine_chunks()
        cut = offset + int(starts[-1])
        yield whole.slice(0, cut), np.concatenate(([0], starts[:-1] + offset))
        carry = [whole.slice(cut)]
    if carry:
        yield pa.concat_tables(carry).combine_chunks(), np.zeros(1, np.int64)


def key_runs(table: Any, starts: Any, rows: int = RUN_ROWS) -> Iterator[tuple[Any, Any]]:
    """``(table, starts)`` of :func:`complete_keys` cut into runs of whole keys of about
    ``rows`` rows each (a larger key is a run of its own), so that one driver call's output
    stays bounded whatever a batch holds."""
    n = table.num_rows
    if n <= rows:
        yield table, starts
        return
    ends = np.append(starts[1:], n)
    first = 0
    while first < len(starts):
        a = int(starts[first])
        last = max(first, int(np.searchsorted(ends, a + rows, "right")) - 1)
        b = int(ends[last])
        yield table.slice(a, b - a), starts[first:last + 1] - a
        first = last + 1


def finished_table(plan: Plan, driver: WindowDriver, schema: Any, table: Any, starts: Any,
                   to_table: ToTable) -> Any:
    """The output table (``schema``) of the complete keys in ``table`` (each key's rows
    together, ``starts`` its first rows), or ``None`` when they have no rows."""
    if plan.has_order and table.num_rows > 1:
        table = _in_order(table, starts)
    over = plan.route.over_kernel if plan.route is not None else None
    if over is not None:
        fast = over_table(plan, over, driver, schema, table, starts)
        if fast is not None:
            return fast
    dkeys, okeys = _keys(plan, table, starts)
    lengths = np.diff(np.append(starts, table.num_rows))
    texts: dict[int, str] = {}

    def rows() -> list[tuple[Any, Any, Any]]:
        row_keys = list(chain.from_iterable(map(repeat, dkeys, lengths.tolist())))
        times = table.column(TIME_IN).to_pylist()
        if plan.slices is None:
            values = arrow_values(plan, table, texts)
        else:
            if None in times:  # raises the event path's error, naming the key
                parse_time(None, row_keys[times.index(None)], plan.time_name)
            values = plan.slices.table_values(table, row_keys)
        return list(zip(row_keys, times, values))

    events: Sequence[tuple[Any, Any, Any]] | None = None
    if plan.slices is None and not plan.has_order and not plan.json_values:
        codes = np.repeat(np.arange(len(dkeys)), lengths)
        events = columnar_events(plan, table, dkeys, codes, rows)
    out = driver.finish_keys(rows() if events is None else events)
    cols = _keyed_columns(plan, out, dict(zip(dkeys, okeys)), texts)
    return None if cols is None else to_table(cols)


def _in_order(table: Any, starts: Any) -> Any:
    """Each key's rows in ``order_by`` order (a stable sort, nulls and NaN last; the keys
    stay where they are)."""
    import pyarrow as pa

    ids = np.zeros(table.num_rows, np.int64)
    ids[starts[1:]] = 1
    with_ids = table.append_column("_swag_id", pa.array(np.cumsum(ids)))
    ordered = with_ids.sort_by([("_swag_id", "ascending"), (ORDER_IN, "ascending")])
    return ordered.drop_columns(["_swag_id"])


def _keys(plan: Plan, table: Any, starts: Any) -> tuple[list[Any], list[Any]]:
    """Each key's driver key and output key (the JSON text, or the typed key), in order."""
    import pyarrow as pa

    at = pa.array(starts)
    if plan.typed.keys is None:
        texts = table.column(KEY_IN).take(at).to_pylist()
        return [decode_key(plan, t) for t in texts], texts
    parts = [table.column(n).take(at).to_pylist() for n in key_columns(plan)]
    keys = parts[0] if len(parts) == 1 else list(zip(*parts))
    return keys, keys


def _keyed_columns(plan: Plan, out: Output, out_keys: dict[Any, Any],
                   texts: dict[int, str]) -> dict[str, list[Any]] | None:
    """:func:`~adapters.engine.columns.wide_columns` of many keys' output: each row's key
    columns from its own key."""
    typed_keys = plan.typed.keys
    many = typed_keys is not None and len(typed_keys) > 1
    cols = wide_columns(plan, (None,) * len(plan.key_names) if many else None, out, texts)
    if cols is None:
        return None
    keys = [out_keys[r["key"]] for r in out.rows] + [out_keys[e.key] for e in out.late]
    if typed_keys is None:
        cols[KEY_OUT] = keys
    elif not many:
        cols[f"{KEY_OUT}0"] = keys
    else:
        for i in range(len(typed_keys)):
            cols[f"{KEY_OUT}{i}"] = [k[i] for k in keys]
    return cols


__all__ = ["RUN_ROWS", "ToTable", "complete_keys", "finished_table", "key_columns", "key_runs",
           "key_starts"]
