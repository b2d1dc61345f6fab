"""The engines' own types of the built-ins' declared output types (``spark_adapter/_types.py``,
``flink_adapter/_types.py``), a built-in registered at run time included. Each part runs in
the environment that has its engine (``.venvs/spark``, ``.venvs/flink``) and is skipped
elsewhere; neither needs a JVM."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from adapters.query.builtins import Builtin, lowered_by, register, unregister
from adapters.query.output_types import INPUT
from adapters.query.specs import parse_aggregation, parse_query
from swag_core.aggregations import Max


@pytest.fixture
def doubled_max() -> Iterator[None]:
    register(Builtin("doubledmax", lambda: lowered_by(Max(), "doubledmax", lambda m: 2 * m),
                     INPUT, "twice the largest value"))
    try:
        yield
    finally:
        unregister("doubledmax")


SPECS: list[dict[str, Any]] = [
    {"fn": "count"}, {"fn": "count", "field": "s"}, {"fn": "sum", "field": "i"},
    {"fn": "sum", "field": "f"}, {"fn": "mean", "field": "i"}, {"fn": "max", "field": "i"},
    {"fn": "last", "field": "s"}, {"fn": "stddev", "field": "f"},
    {"fn": "collect", "field": "i"}, {"fn": "mincount", "field": "f"},
    {"fn": "argmax", "field": "i"}, {"fn": "argmin", "field": "i", "result": "s"},
    {"fn": "bloom", "field": "s"}, {"fn": "doubledmax", "field": "f"},
]


def test_spark_types(doubled_max: None) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    from spark_adapter._types import SparkTypeError, aggregate_encoder, aggregate_type

    fields = {"i": IntegerType(), "f": FloatType(), "s": StringType()}
    row = StructType([StructField(n, t, True) for n, t in fields.items()])
    pair = StructType([StructField("value", FloatType(), True),
                       StructField("count", LongType(), True)])
    want = [LongType(), LongType(), LongType(), DoubleType(), DoubleType(), IntegerType(),
            StringType(), DoubleType(), ArrayType(IntegerType(), True), pair, row,
            StringType(), BinaryType(), FloatType()]
    got = [aggregate_type(parse_aggregation("x", s), fields, {}) for s in SPECS]
    assert got == want
    mincount = parse_aggregation("x", {"fn": "mincount", "field": "f"})
    encode = aggregate_encoder(mincount, pair)
    assert encode is not None and encode([1.5, 2]) == {"value": 1.5, "count": 2}
    with pytest.raises(SparkTypeError, match=r"'x': sum of column 's' \(string\)"):
        aggregate_type(parse_aggregation("x", {"fn": "sum", "field": "s"}), fields, {})
    with pytest.raises(SparkTypeError, match="column 'nope'"):
        aggregate_type(parse_aggregation("x", {"fn": "max", "field": "nope"}), fields, {})


def test_flink_types(doubled_max: None) -> None:
    pytest.importorskip("pyflink")
    from pyflink.common import Types

    from flink_adapter._types import StreamNames, aggregate_type, layout_and_type

    fields = {"i": Types.INT(), "f": Types.FLOAT(), "s": Types.STRING()}
    row = Types.ROW_NAMED(list(fields), list(fields.values()))
    pair = Types.ROW_NAMED(["value", "count"], [Types.FLOAT(), Types.LONG()])
    want = [Types.LONG(), Types.LONG(), Types.LONG(), Types.DOUBLE(), Types.DOUBLE(),
            Types.INT(), Types.STRING(), Types.DOUBLE(), Types.LIST(Types.INT()), pair, row,
            Types.STRING(), Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.FLOAT()]
    got = [aggregate_type(parse_aggregation("x", s), fields, row, {}) for s in SPECS]
    assert [repr(t) for t in got] == [repr(t) for t in want]
    assert aggregate_type(parse_aggregation("x", {"fn": "sum", "field": "s"}), fields, row,
                          {}) == Types.PICKLED_BYTE_ARRAY()
    query = parse_query({"windows": [{"kind": "tumbling", "size": 10}],
                         "aggregations": {"p": {"fn": "maxcount", "field": "f"},
                                          "b": {"fn": "bloom", "field": "s"},
                                          "e": {"fn": "argmax", "field": "i"}}})
    layout, _ = layout_and_type(query, Types.STRING(), row, StreamNames("key"), {})
    assert layout.converters == {"p": "pair", "b": "bytes", "e": "row"}
