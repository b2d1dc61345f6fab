"""flink_adapter: exact sliding-window aggregation for PyFlink, on the DataStream and Table
APIs.

>>> from flink_adapter import local_environment, sliding_aggregate, sliding
>>> env = local_environment()   # thread mode; local_environment("process") for workers
>>> rows = sliding_aggregate(flights, key="origin", time="dep_ms", watermark="1 minute",
...                          window=sliding("1 hour", "10 minutes"),
...                          aggregations={"worst": {"fn": "max", "field": "delay"}})

A ``KeyedProcessFunction`` with event-time timers and Flink managed keyed state drives
:class:`adapters.WindowDriver`, which does all the deciding; see ``docs/flink.md``.
"""

from adapters import BadEventError, QuerySpecError
from adapters.query.windows import count_window, over, sliding, tumbling

from .datastream import LATE_TAG_NAME, Aggregated, sliding_aggregate
from .environment import local_environment, python_settings
from .function import METRICS_GROUP, SwagProcessFunction
from .state import FlinkKeyState
from .table import sliding_aggregate_table

__all__ = [
    "LATE_TAG_NAME",
    "METRICS_GROUP",
    "Aggregated",
    "BadEventError",
    "FlinkKeyState",
    "QuerySpecError",
    "SwagProcessFunction",
    "count_window",
    "local_environment",
    "over",
    "python_settings",
    "sliding",
    "sliding_aggregate",
    "sliding_aggregate_table",
    "tumbling",
]
