"""swag on Apache Spark (PySpark 4.x): exact sliding, tumbling, per-event (OVER), count and
policy window aggregates for streaming and batch DataFrames, with one call.

>>> from spark_adapter import local_session, sliding_aggregate, sliding
>>> spark = local_session()                                     # doctest: +SKIP
>>> out = sliding_aggregate(flights, key="origin", time="dep_ts",   # doctest: +SKIP
...                         window=sliding("1 hour", "5 minutes"),
...                         aggregations={"n": {"fn": "count"},
...                                       "max_delay": {"fn": "max", "field": "dep_delay"}},
...                         watermark="30 minutes")

See ``docs/spark.md``.
"""

from adapters.engine.java import JavaNotFoundError
from adapters.query.windows import duration_ms
from spark_adapter._types import SparkTypeError
from spark_adapter.api import (
    METRIC,
    SparkConfigError,
    count_window,
    explain,
    over,
    sliding,
    sliding_aggregate,
    tumbling,
)
from spark_adapter.session import java_version, local_session

__all__ = [
    "METRIC",
    "JavaNotFoundError",
    "SparkConfigError",
    "SparkTypeError",
    "count_window",
    "duration_ms",
    "explain",
    "java_version",
    "local_session",
    "over",
    "sliding",
    "sliding_aggregate",
    "tumbling",
]
