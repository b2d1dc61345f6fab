"""The one output schema (``adapters.engine.rows.output_columns``) on Flink: the names and
order of the columns, their declared Flink types (written out here), and the values of
each kind of row, for one ``[start, end)`` spec, one ``over`` spec and several specs, with
an integer and a timestamp time field, a key field and a key function, a ``value=`` row
field, and a stream without a row type. All the queries run in one job (a job costs ~15-20 s)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyflink.common import Row, Types
from pyflink.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

import flink_adapter as fa
from adapters import parse_query
from adapters.engine.rows import output_columns
from swag_core.aggregations import Count

LONG_ROW = Types.ROW_NAMED(["k", "t", "v", "flight"],
                           [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING()])
STAMP_ROW = Types.ROW_NAMED(["k", "t", "v", "flight"],
                            [Types.STRING(), Types.SQL_TIMESTAMP(), Types.DOUBLE(),
                             Types.STRING()])
NESTED_ROW = Types.ROW_NAMED(["k", "t", "payload"],
                             [Types.STRING(), Types.LONG(),
                              Types.ROW_NAMED(["v", "flight"],
                                              [Types.DOUBLE(), Types.STRING()])])
EVENTS = [("a", 0, 1.0, "f1"), ("a", 1_500, 3.0, "f2"), ("b", 500, 2.0, "f3")]
AGGS = {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "v"}}
TUMBLING, OVER = fa.tumbling(1_000), fa.over(1_000)
EPOCH = dt.datetime(1970, 1, 1)


def _stamp(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


#: the aggregations of the table test: AGGS over its ``delay`` column
AGGS_OF_DELAY = {"n": {"fn": "count"}, "mx": {"fn": "max", "field": "delay"}}


def _names(windows: list[Any], key: str, time: str, fields: list[str] | None
           ) -> list[str]:
    query = parse_query({"windows": windows, "aggregations": AGGS})
    return list(output_columns(query, key_names=[key], time_name=time,
                               event_fields=fields).names)


#: name -> (windows, stream type, sliding_aggregate's key and time, the expected column
#: names (output_columns), their expected types, the expected rows)
CASES: dict[str, tuple[Any, ...]] = {
    "sliding": (
        [TUMBLING], LONG_ROW, "k", "t",
        _names([TUMBLING], "k", "t", ["k", "t", "v", "flight"]),
        [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.DOUBLE()],
        [("a", 0, 1_000, 1, 1.0), ("a", 1_000, 2_000, 1, 3.0), ("b", 0, 1_000, 1, 2.0)]),
    "over": (
        [OVER], LONG_ROW, "k", "t",
        _names([OVER], "k", "t", ["k", "t", "v", "flight"]),
        [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING(), Types.LONG(),
         Types.DOUBLE()],
        [("a", 0, 1.0, "f1", 1, 1.0), ("a", 1_500, 3.0, "f2", 1, 3.0),
         ("b", 500, 2.0, "f3", 1, 2.0)]),
    "several_timestamp": (
        [TUMBLING, OVER], STAMP_ROW, "k", "t",
        _names([TUMBLING, OVER], "k", "t", ["k", "t", "v", "flight"]),
        [Types.INT(), Types.STRING(), Types.SQL_TIMESTAMP(), Types.SQL_TIMESTAMP(),
         Types.SQL_TIMESTAMP(), Types.DOUBLE(), Types.STRING(), Types.LONG(), Types.DOUBLE()],
        [(0, "a", _stamp(0), _stamp(1_000), None, None, None, 1, 1.0),
         (0, "a", _stamp(1_000), _stamp(2_000), None, None, None, 1, 3.0),
         (0, "b", _stamp(0), _stamp(1_000), None, None, None, 1, 2.0),
         (1, "a", None, None, _stamp(0), 1.0, "f1", 1, 1.0),
         (1, "a", None, None, _stamp(1_500), 3.0, "f2", 1, 3.0),
         (1, "b", None, None, _stamp(500), 2.0, "f3", 1, 2.0)]),
    "over_key_function_record_time": (
        [OVER], LONG_ROW, lambda r: r[0], None,
        _names([OVER], "key", "time", ["k", "t", "v", "flight"]),
        [Types.STRING(), Types.LONG(), Types.STRING(), Types.LONG(), Types.DOUBLE(),
         Types.STRING(), Types.LONG(), Types.DOUBLE()],
        [("a", 0, "a", 0, 1.0, "f1", 1, 1.0), ("a", 1_500, "a", 1_500, 3.0, "f2", 1, 3.0),
         ("b", 500, "b", 500, 2.0, "f3", 1, 2.0)]),
    "over_value_row": (
        [OVER], NESTED_ROW, "k", "t",
        _names([OVER], "k", "t", ["v", "flight"]),
        [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.STRING(), Types.LONG(),
         Types.DOUBLE()],
        [("a", 0, 1.0, "f1", 1, 1.0), ("a", 1_500, 3.0, "f2", 1, 3.0),
         ("b", 500, 2.0, "f3", 1, 2.0)]),
    "over_untyped": (
        [OVER], None, lambda e: e[0], lambda e: e[1],
        _names([OVER], "key", "time", None),
        [Types.STRING(), Types.LONG(), Types.PICKLED_BYTE_ARRAY(), Types.LONG(),
         Types.LONG()],
        [("a", 0, ("a", 0, 1.0, "f1"), 1, 1), ("a", 1_500, ("a", 1_500, 3.0, "f2"), 1, 1),
         ("b", 500, ("b", 500, 2.0, "f3"), 1, 1)]),
}


def _stream(env: Any, row_type: Any) -> Any:
    if row_type is None:  # an untyped stream of tuples (pickled)
        return env.from_collection([tuple(e) for e in EVENTS])
    if row_type is NESTED_ROW:
        return env.from_collection([Row(k, t, Row(v, f)) for k, t, v, f in EVENTS], row_type)
    if row_type is STAMP_ROW:
        return env.from_collection([Row(k, _stamp(t), v, f) for k, t, v, f in EVENTS],
                                   row_type)
    return env.from_collection([Row(*e) for e in EVENTS], row_type)


@pytest.fixture(scope="module")
def outputs(flink_env: Any) -> dict[str, tuple[Any, list[tuple[Any, ...]]]]:
    """``{case: (declared row type, rows collected)}``, every case in one job."""
    env = flink_env(streaming=True, mode="thread")
    declared, tagged = {}, None
    for name, (windows, row_type, key, time, *_) in CASES.items():
        # the untyped stream's tuples: a custom aggregation of the whole event
        aggs = AGGS if row_type else {"n": {"fn": "count"}, "mx": Count()}
        # the record timestamp: assigned by the stream's own strategy
        watermark = 0 if time is not None else WatermarkStrategy.for_monotonous_timestamps(
        ).with_timestamp_assigner(_SecondField())
        out = fa.sliding_aggregate(_stream(env, row_type), key=key, time=time,
                                   watermark=watermark,
                                   value="payload" if row_type is NESTED_ROW else None,
                                   windows=windows, aggregations=aggs,
                                   key_type=None if isinstance(key, str) else Types.STRING(),
                                   output_types=None if row_type else {"mx": Types.LONG()})
        declared[name] = out.get_type()
        mapped = out.map(lambda r, name=name: (name, tuple(r)), Types.PICKLED_BYTE_ARRAY())
        tagged = mapped if tagged is None else tagged.union(mapped)
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in CASES}
    for name, row in tagged.execute_and_collect():
        rows[name].append(row)
    return {name: (declared[name], rows[name]) for name in CASES}


class _SecondField(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


@pytest.mark.parametrize("case", list(CASES))
def test_names_order_types_and_rows(outputs: dict[str, Any], case: str) -> None:
    *_, names, types, rows = CASES[case]
    row_type, got = outputs[case]
    assert row_type.get_field_names() == names
    assert [repr(t) for t in row_type.get_field_types()] == [repr(t) for t in types]
    assert sorted(got, key=repr) == sorted(rows, key=repr)


def test_the_expected_names_are_the_schema() -> None:
    """The names the cases expect, written out once, so that a change of
    ``output_columns`` shows here too."""
    assert CASES["sliding"][4] == ["k", "window_start", "window_end", "n", "mx"]
    assert CASES["over"][4] == ["k", "t", "v", "flight", "n", "mx"]
    assert CASES["several_timestamp"][4] == ["window", "k", "window_start", "window_end",
                                             "t", "v", "flight", "n", "mx"]
    assert CASES["over_key_function_record_time"][4] == ["key", "time", "k", "t", "v",
                                                         "flight", "n", "mx"]
    assert CASES["over_value_row"][4] == ["k", "t", "v", "flight", "n", "mx"]
    assert CASES["over_untyped"][4] == ["key", "time", "event", "n", "mx"]


def test_table_columns_with_timestamps(flink_env: Any) -> None:
    """``sliding_aggregate_table`` gives the same columns; the window bounds and the time
    column as ``TIMESTAMP_LTZ(3)``, the other input columns with their own types (no job
    runs: the schema is known when the table is built)."""
    from pyflink.table import DataTypes, StreamTableEnvironment

    t_env = StreamTableEnvironment.create(flink_env(streaming=True, mode="thread"))
    table = t_env.from_elements(
        [("EWR", _stamp(0), 5, _stamp(60_000))],
        DataTypes.ROW([DataTypes.FIELD("origin", DataTypes.STRING()),
                       DataTypes.FIELD("dep", DataTypes.TIMESTAMP(3)),
                       DataTypes.FIELD("delay", DataTypes.BIGINT()),
                       DataTypes.FIELD("arr", DataTypes.TIMESTAMP(3))]))
    out = fa.sliding_aggregate_table(
        table, key="origin", time="dep", windows=[TUMBLING, OVER],
        aggregations=AGGS_OF_DELAY)
    names = _names([TUMBLING, OVER], "origin", "dep", ["origin", "dep", "delay", "arr"])
    assert names == ["window", "origin", "window_start", "window_end", "dep", "delay", "arr",
                     "n", "mx"]
    schema = out.get_resolved_schema()
    assert list(schema.get_column_names()) == names
    types = ["INT", "STRING", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)",
             "BIGINT", "TIMESTAMP(3)", "BIGINT", "BIGINT"]
    text = str(schema)  # Flink's "(`window` INT, `origin` STRING, ...)"
    want = ", ".join(f"`{name}` {t}" for name, t in zip(names, types))
    assert " ".join(text.split()).replace("( ", "(").replace(" )", ")") == f"({want})", text
