"""``sliding_aggregate_table``: the same windows on the Table API, a ``Table`` in and a
``Table`` out, so SQL users can join the result.

The table goes through :func:`flink_adapter.sliding_aggregate` on its ``DataStream``
(``StreamTableEnvironment.to_data_stream``: a rowtime column becomes the records'
timestamps and the table's watermarks are Flink's watermarks) and back
(``from_data_stream``), with the columns of the DataStream API (the output schema every
engine gives). The window bounds and the time column come back as ``TIMESTAMP_LTZ(3)``
columns: ``window_start`` and ``window_end``, and the ``time`` column (the ``time=``
column's name; ``time`` for the rowtime) of per-event rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyflink.table import DataTypes, Table
from pyflink.table.expressions import call, col
from pyflink.table.types import LocalZonedTimestampType, TimestampType

from adapters.engine.rows import WINDOW_END, WINDOW_START

from .datastream import sliding_aggregate


def sliding_aggregate_table(table: Table, *, key: str, aggregations: Mapping[str, Any] | Any,
                            window: Any = None, windows: Sequence[Any] | None = None,
                            time: str | Callable[[Any], Any] | None = None,
                            watermark: Any = None, allowed_lateness: Any = 0,
                            nulls: str = "skip", t_env: Any = None, **options: Any) -> Table:
    """Exact window aggregates per ``key`` column of a ``Table`` (arguments as
    :func:`flink_adapter.sliding_aggregate`; ``time`` defaults to the table's rowtime
    attribute; a ``TIMESTAMP`` column named by ``time`` is read as UTC). ``nulls`` as there:
    with ``"skip"`` (default, as Flink SQL) SQL nulls and NaN of a column are left out, and
    an aggregate of a window without any other value is ``NULL``.

    ``t_env`` is the table's ``StreamTableEnvironment`` (default: the one the table was
    made in). Returns a ``Table`` with the columns of :func:`flink_adapter.sliding_aggregate`
    (``window`` INT when several specs are given; the ``key`` column; ``window_start``,
    ``window_end`` and the time column as ``TIMESTAMP_LTZ(3)``; the other input columns of
    per-event rows with their types; one column per aggregation).
    """
    env = t_env if t_env is not None else table._t_env
    stream = env.to_data_stream(table)
    rows = sliding_aggregate(stream, key=key, aggregations=aggregations, window=window,
                             windows=windows, time=time, watermark=watermark,
                             allowed_lateness=allowed_lateness, nulls=nulls, times_in_ms=True,
                             **options)
    times = (WINDOW_START, WINDOW_END, time if isinstance(time, str) else "time")
    schema = table.get_resolved_schema()
    inputs = dict(zip(schema.get_column_names(), schema.get_column_data_types()))
    return env.from_data_stream(rows).select(*[
        _column(n, n in times, inputs.get(n)) for n in rows.get_type().get_field_names()])


def _column(name: str, is_time: bool, input_type: Any) -> Any:
    """Output column ``name``: a time (ms) as ``TIMESTAMP_LTZ(3)``; an input timestamp
    column in its input precision (``from_data_stream`` widens it to 9 digits)."""
    if is_time:
        return call("TO_TIMESTAMP_LTZ", col(name), 3).alias(name)
    if isinstance(input_type, TimestampType):
        return col(name).cast(DataTypes.TIMESTAMP(input_type.precision)).alias(name)
    if isinstance(input_type, LocalZonedTimestampType):
        return col(name).cast(DataTypes.TIMESTAMP_LTZ(input_type.precision)).alias(name)
    return col(name)


__all__ = ["sliding_aggregate_table"]
