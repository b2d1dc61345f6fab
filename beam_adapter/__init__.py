"""beam_adapter: exact sliding-window aggregation for Apache Beam, as one composite transform.

>>> import apache_beam as beam
>>> from beam_adapter import SlidingAggregate, sliding
>>> rows = (flights                    # PCollection of beam.Row(origin=..., dep_ms=..., ...)
...         | SlidingAggregate(window=sliding(3_600_000, 60_000), key="origin", time="dep_ms",
...                            aggregations={"worst": {"fn": "max", "field": "delay"}}))

``rows``: ``beam.Row(origin, window_start, window_end, worst)`` elements with a declared
schema (the columns every engine gives, :func:`adapters.engine.rows.output_columns`).

A stateful ``DoFn`` with watermark timers and Beam state drives :class:`adapters.WindowDriver`,
which does all the deciding; see ``docs/beam.md``.
"""

from adapters import BadEventError, QuerySpecError
from adapters.query.windows import count_window, over, sliding, tumbling

from .dofn import LATE_TAG, METRICS_NAMESPACE, SwagDoFn, dofn_class
from .state import BagLogState, OrderedLogState
from .transform import SlidingAggregate, explain

__all__ = [
    "LATE_TAG",
    "METRICS_NAMESPACE",
    "BadEventError",
    "BagLogState",
    "OrderedLogState",
    "QuerySpecError",
    "SlidingAggregate",
    "SwagDoFn",
    "count_window",
    "dofn_class",
    "explain",
    "over",
    "sliding",
    "tumbling",
]
