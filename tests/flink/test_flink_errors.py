"""Mistakes a user makes on Flink get swag's own message first.

* When the job is built (``sliding_aggregate``; no job runs): what the stream's declared
  ``Types.ROW_NAMED`` already shows (a missing key, time, value or aggregated field, a time
  field that is not an integer nor a timestamp) and a stream without a row type given field
  names.
* When the job runs: a bad event (a null time, a null value with ``nulls="error"``) raises
  :class:`adapters.BadEventError` from PyFlink's own ``execute_and_collect``/``execute``
  and a table's ``collect``, in both Python execution modes, instead of a ``Py4JJavaError``
  with the error deep in its Java trace (``flink_adapter.java_errors``).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyflink.common import Row, Types

import flink_adapter as fa
from flink_adapter.java_errors import swag_error_of
from tests.flink.conftest import MODES

ROW = Types.ROW_NAMED(["origin", "dep", "delay", "label"],
                      [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING()])
AGGS = {"worst": {"fn": "max", "field": "delay"}}
WINDOW = fa.tumbling(1_000)


@pytest.fixture(scope="module")
def env(flink_env: Any) -> Any:
    return flink_env(streaming=True)


def _build(stream: Any, **arguments: Any) -> Any:
    return fa.sliding_aggregate(stream, **{"key": "origin", "time": "dep", "window": WINDOW,
                                           "aggregations": AGGS, "watermark": 0,
                                           **arguments})


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"key": "airport"}, fa.QuerySpecError, r"^key: 'airport' is not a field of the "
                                            r"stream's rows \(fields: origin, dep, delay"),
    ({"time": "dep_ms"}, fa.QuerySpecError, r"^time: 'dep_ms' is not a field"),
    ({"value": "payload"}, fa.QuerySpecError, r"^value: 'payload' is not a field"),
    ({"aggregations": {"worst": {"fn": "max", "field": "arr_delay"}}}, fa.QuerySpecError,
     r"^aggregations: worst read\(s\) field\(s\) \['arr_delay'\] that the stream's rows do "
     r"not have \(fields: origin, dep, delay, label\)"),
    ({"aggregations": {"who": {"fn": "argmax", "field": "delay", "result": "flight"}}},
     fa.QuerySpecError, r"who read\(s\) field\(s\) \['flight'\]"),
    ({"time": "label"}, TypeError, r"^time field 'label' has type String; declare it as "
                                   r"integer epoch milliseconds \(Types.LONG\(\)\) or a "
                                   r"timestamp"),
    ({"time": "delay"}, TypeError, r"^time field 'delay' has type Double"),
])
def test_declared_row_type_checked_when_built(env: Any, arguments: dict[str, Any],
                                              error: type, message: str) -> None:
    stream = env.from_collection([Row("EWR", 0, 1.0, "UA1")], ROW)
    with pytest.raises(error, match=message):
        _build(stream, **arguments)


def test_value_rows_fields_checked(env: Any) -> None:
    nested = Types.ROW_NAMED(["origin", "dep", "payload"],
                             [Types.STRING(), Types.LONG(),
                              Types.ROW_NAMED(["delay"], [Types.DOUBLE()])])
    stream = env.from_collection([Row("EWR", 0, Row(1.0))], nested)
    with pytest.raises(fa.QuerySpecError, match=r"the rows of the value field 'payload' do "
                                                r"not have \(fields: delay\)"):
        _build(stream, value="payload", aggregations={"n": {"fn": "sum", "field": "x"}})
    _build(stream, value="payload")  # the field is there


@pytest.mark.parametrize("declared", [None, Types.TUPLE([Types.STRING(), Types.LONG()])])
def test_stream_without_row_type_and_field_names(env: Any, declared: Any) -> None:
    data = [("EWR", 0)]
    stream = (env.from_collection(data) if declared is None
              else env.from_collection(data, declared))
    with pytest.raises(TypeError, match=r"key='origin' names a field, but the stream's "
                                        r"elements have no declared field names .*"
                                        r"output_type=Types.ROW_NAMED"):
        _build(stream, aggregations={"n": {"fn": "count"}})
    # functions read such elements
    _build(stream, key=lambda e: e[0], time=lambda e: e[1], key_type=Types.STRING(),
           aggregations={"n": {"fn": "count"}})


@pytest.mark.parametrize("mode", MODES)
def test_null_time_raises_swags_error_from_collect(flink_env: Any, mode: str) -> None:
    env = flink_env(streaming=True, mode=mode)
    stream = env.from_collection([Row("EWR", 0, 1.0, "UA1"), Row("JFK", None, 2.0, "B61")],
                                 ROW)
    rows = _build(stream)
    with pytest.raises(fa.BadEventError) as info:
        list(rows.execute_and_collect())
    assert str(info.value).startswith("key 'JFK': event time None (field 'dep') is null")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert "JobExecutionException" in str(info.value.flink_error)  # type: ignore[attr-defined]


def test_null_value_raises_swags_error_from_execute(flink_env: Any) -> None:
    """``env.execute()`` of a job that writes its rows to a sink (``nulls="error"``)."""
    env = flink_env(streaming=True, mode="thread")
    stream = env.from_collection([Row("EWR", 0, 1.0, "UA1"), Row("EWR", 5, None, "UA2")],
                                 ROW)
    _build(stream, nulls="error").print()
    with pytest.raises(fa.BadEventError, match=r"^key 'EWR'.*'delay'"):
        env.execute("bad value")


class _Cause:
    """A stand-in for a Java exception: a message and a cause."""

    def __init__(self, message: str | None, cause: _Cause | None = None) -> None:
        self.message, self.cause = message, cause

    def getMessage(self) -> str | None:  # Java's name
        return self.message

    def getCause(self) -> _Cause | None:
        return self.cause


class _JavaError(Exception):
    def __init__(self, chain: _Cause) -> None:
        self.java_exception = chain


@pytest.mark.parametrize("text", [
    # process mode: the worker's traceback in a RuntimeException's message
    "Error received from SDK harness for instruction 3: Traceback (most recent call "
    "last):\n  File \"x.py\", line 1, in f\n    raise _time_error(key, time, time_field)\n"
    "adapters.errors.BadEventError: key 'a': event time None (field 't') is null\n\n\tat java",
    # thread mode: PEMJA's PythonException
    "<class 'adapters.errors.BadEventError'>: key 'a': event time None (field 't') is null",
])
def test_swag_error_found_in_the_java_cause_chain(text: str) -> None:
    error = _JavaError(_Cause("Job execution failed.", _Cause(None, _Cause(text))))
    found = swag_error_of(error)
    assert isinstance(found, fa.BadEventError)
    assert str(found).startswith("key 'a': event time None (field 't') is null (raised in")
    assert found.flink_error is error  # type: ignore[attr-defined]


def test_other_errors_are_left_alone() -> None:
    chain = _Cause("Job execution failed.", _Cause("ValueError: adapters are fine: no"))
    assert swag_error_of(_JavaError(chain)) is None
    assert swag_error_of(ValueError("no Java error")) is None
