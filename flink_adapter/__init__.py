"""flink_adapter: exact sliding-window aggregation for PyFlink, on the DataStream and Table
APIs.

>>> from flink_adapter import local_environment, sliding_aggregate, sliding
>>> env = local_environment()   # thread mode; local_environment("process") for workers
>>> rows = sliding_aggregate(flights, key="origin", time="dep_ms", watermark="1 minute",
...                          window=sliding("1 hour", "10 minutes"),
...                          aggregations={"worst": {"fn": "max", "field": "delay"}})
>>> for row in rows.execute_and_collect():   # origin, window_start, window_end, worst
...     print(row)

A job that fails on a bad event raises swag's error (:class:`BadEventError`, message
first) rather than PyFlink's Java trace (:mod:`flink_adapter.java_errors`).

A ``KeyedProcessFunction`` with event-time timers and Flink managed keyed state drives
:class:`adapters.WindowDriver`, which does all the deciding; see ``docs/flink.md``.
"""

from typing import Any

from adapters import BadEventError, QueryPlan, QuerySpecError, WindowDriver, parse_query
from adapters.query.windows import count_window, over, sliding, tumbling

from .datastream import LATE_TAG_NAME, Aggregated, _query, sliding_aggregate
from .environment import local_environment, python_settings
from .function import FACTS, METRICS_GROUP, SwagProcessFunction
from .state import FlinkKeyState
from .table import sliding_aggregate_table


def explain(stream: Any = None, *, aggregations: Any, window: Any = None,
            windows: Any = None, allowed_lateness: Any = 0, algorithm: str | None = None,
            nulls: str = "skip", layout: str = "memory", **arguments: Any) -> QueryPlan:
    """The path :func:`sliding_aggregate` with the same arguments takes on Flink, and why
    (:class:`adapters.QueryPlan`; ``print()`` it). Nothing runs; ``stream`` and the
    arguments that only concern the stream (``key``, ``time``, ``watermark``, types, ...)
    are accepted and not read."""
    del stream, arguments
    query = _query(window, windows, aggregations, allowed_lateness, nulls, layout)
    return WindowDriver(parse_query(query), algorithm=algorithm).plan(FACTS)


__all__ = [
    "LATE_TAG_NAME",
    "METRICS_GROUP",
    "Aggregated",
    "BadEventError",
    "FlinkKeyState",
    "QuerySpecError",
    "SwagProcessFunction",
    "count_window",
    "explain",
    "local_environment",
    "over",
    "python_settings",
    "sliding",
    "sliding_aggregate",
    "sliding_aggregate_table",
    "tumbling",
]
