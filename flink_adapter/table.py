"""``sliding_aggregate_table``: the same windows on the Table API, a ``Table`` in and a
``Table`` out, so SQL users can join the result.

The table goes through :func:`flink_adapter.sliding_aggregate` on its ``DataStream``
(``StreamTableEnvironment.to_data_stream``: a rowtime column becomes the records'
timestamps and the table's watermarks are Flink's watermarks) and back
(``from_data_stream``). Times come back as ``TIMESTAMP_LTZ(3)`` columns: ``start`` and
``end`` for ``[start, end)`` windows, ``time`` for per-event rows (whose ``event`` column,
a Python value, is left out of the table).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyflink.table import Table
from pyflink.table.expressions import call, col

from .datastream import sliding_aggregate

_TIME_COLUMNS = ("start", "end", "time")


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
    made in). Returns a ``Table`` with columns ``window`` (INT), ``key``, ``start``/``end``
    and/or ``time`` (``TIMESTAMP_LTZ(3)``) and one column per aggregation.
    """
    env = t_env if t_env is not None else table._t_env
    stream = env.to_data_stream(table)
    rows = sliding_aggregate(stream, key=key, aggregations=aggregations, window=window,
                             windows=windows, time=time, watermark=watermark,
                             allowed_lateness=allowed_lateness, nulls=nulls, **options)
    out = env.from_data_stream(rows)
    names = [n for n in rows.get_type().get_field_names() if n != "event"]
    return out.select(*[
        call("TO_TIMESTAMP_LTZ", col(n), 3).alias(n) if n in _TIME_COLUMNS else col(n)
        for n in names])


__all__ = ["sliding_aggregate_table"]
