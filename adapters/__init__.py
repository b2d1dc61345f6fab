"""adapters: the engine-free window driver shared by the Spark, Beam and Flink adapters.

>>> from adapters import WindowDriver
>>> driver = WindowDriver({"windows": [{"kind": "tumbling", "size": 10}],
...                        "aggregations": {"top": {"fn": "max", "field": "v"}}})
>>> out = driver.process("k", [(1, {"v": 3}), (4, {"v": 7})])
>>> out.next_timer                     # wake me when the watermark reaches 10
10
>>> driver.advance_watermark("k", 10).rows
[{'window': 0, 'key': 'k', 'start': 0, 'end': 10, 'top': 7}]

Entry points: :class:`WindowDriver` (engines: per key ``process`` / ``advance_watermark``,
many keys ``process_batch`` / ``advance_keys``, a finished key ``finish`` /
``finish_columns``; which path a query takes: ``plan(EngineFacts(...)) -> QueryPlan``),
:func:`run_steps` / :func:`run_scenario`
(scripted runs, conformance), :func:`parse_query` and the window spec classes,
:func:`choose_algorithm`, the :class:`KeyState` protocol engines implement, and the state
codec. See ``docs/adapters.md``.
"""

from adapters.conformance.runner import RunResult, run_scenario, run_steps
from adapters.driver import KeyInfo, LateEvent, Output, WindowDriver
from adapters.driver.selection import choose_algorithm
from adapters.errors import BadEventError, CodecError, QuerySpecError, StateError
from adapters.planning import EngineFacts, QueryPlan
from adapters.query.specs import (
    AggSpec,
    CountWindow,
    OverWindow,
    PolicyWindow,
    Query,
    SlidingWindow,
    TumblingWindow,
    aggregation_from,
    parse_aggregation,
    parse_query,
    parse_window,
)
from adapters.query.times import END_OF_INPUT, parse_time, parse_watermark
from adapters.query.windows import (
    count_window,
    duration_ms,
    normalize_window,
    over,
    sliding,
    tumbling,
)
from adapters.state import (
    KeyState,
    LogEntry,
    MemoryKeyState,
    MemoryStateBackend,
    StateBackend,
    TransientKeyState,
)
from adapters.state.codec import CODEC_VERSION, decode_value, encode_value

__all__ = [
    "CODEC_VERSION",
    "END_OF_INPUT",
    "AggSpec",
    "BadEventError",
    "CodecError",
    "CountWindow",
    "EngineFacts",
    "KeyInfo",
    "KeyState",
    "LateEvent",
    "LogEntry",
    "MemoryKeyState",
    "MemoryStateBackend",
    "Output",
    "OverWindow",
    "PolicyWindow",
    "Query",
    "QueryPlan",
    "QuerySpecError",
    "RunResult",
    "SlidingWindow",
    "StateBackend",
    "StateError",
    "TransientKeyState",
    "TumblingWindow",
    "WindowDriver",
    "aggregation_from",
    "choose_algorithm",
    "count_window",
    "decode_value",
    "duration_ms",
    "encode_value",
    "normalize_window",
    "over",
    "parse_aggregation",
    "parse_query",
    "parse_time",
    "parse_watermark",
    "parse_window",
    "run_scenario",
    "run_steps",
    "sliding",
    "tumbling",
]
