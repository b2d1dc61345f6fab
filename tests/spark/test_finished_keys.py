"""Many finished keys per call (``adapters.engine.finished_keys``) without a JVM: record
batches sorted by key, cut anywhere, come out as runs of whole keys, each key once and with
all of its rows in order (nulls equal nulls, NaN equals NaN, two key columns); runs of whole
keys are bounded; the batch function over many keys with two typed key columns equals one
call per key."""

from __future__ import annotations

from itertools import groupby, pairwise
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import DoubleType, LongType, StringType

from adapters import EngineFacts, WindowDriver
from adapters.engine.columns import Typed
from adapters.engine.finished_keys import complete_keys, key_runs, key_starts
from adapters.engine.worker import Plan
from adapters.query.specs import Query
from tests.spark.batch_tables import batches_of, run_batches, same

KEY_VALUES = st.sampled_from([None, 0.0, 1.5, float("nan"), -2.0])


def _ident(x: Any) -> Any:
    """A value's grouping identity: NaN equals NaN."""
    return "nan" if isinstance(x, float) and x != x else x


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 2))
def test_batches_cut_anywhere_give_each_key_once(data: Any, width: int) -> None:
    n = data.draw(st.integers(1, 30))
    parts = [data.draw(st.lists(KEY_VALUES, min_size=n, max_size=n)) for _ in range(width)]
    table = pa.table({**{f"swag_k{i}": pa.array(p, pa.float64()) for i, p in enumerate(parts)},
                      "seq": pa.array(range(n), pa.int64())})
    names = [f"swag_k{i}" for i in range(width)]
    cuts = data.draw(st.lists(st.integers(0, n), max_size=6))
    batches = batches_of(table, names, cuts)
    ordered = pa.Table.from_batches(batches)
    rows = list(zip(*[ordered.column(c).to_pylist() for c in [*names, "seq"]]))
    expected = [[r[-1] for r in g] for _, g in groupby(
        rows, key=lambda r: tuple(_ident(x) for x in r[:-1]))]
    got = []
    for run, starts in complete_keys(batches, names):
        assert starts[0] == 0 and list(starts) == sorted(set(starts.tolist()))
        seqs = run.column("seq").to_pylist()
        for a, b in zip(starts.tolist(), [*starts[1:].tolist(), run.num_rows]):
            got.append(seqs[a:b])
    assert got == expected


def test_key_starts_of_nulls_and_nan() -> None:
    table = pa.table({"k": pa.array([None, None, float("nan"), float("nan"), 0.0, 0.0, 1.0]),
                      "s": pa.array(["a", "a", "a", "b", "b", "b", None])})
    assert key_starts(table, ["k"]).tolist() == [2, 4, 6]
    assert key_starts(table, ["k", "s"]).tolist() == [2, 3, 4, 6]


@given(st.lists(st.integers(1, 40), min_size=1, max_size=12), st.integers(1, 50))
def test_runs_of_whole_keys_are_bounded(sizes: list[int], rows: int) -> None:
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    table = pa.table({"i": pa.array(range(sum(sizes)))})
    seen = []
    for run, first in key_runs(table, starts, rows):
        assert first[0] == 0
        keys = len(first)
        assert run.num_rows <= rows or keys == 1
        ends = [*first[1:].tolist(), run.num_rows]
        seen += [run.column("i").to_pylist()[a:b] for a, b in zip(first.tolist(), ends)]
    assert [len(s) for s in seen] == sizes
    assert [x for s in seen for x in s] == list(range(sum(sizes)))


def _two_key_plan(window: dict[str, Any], fns: list[str], over: bool) -> Plan:
    aggs: dict[str, Any] = {f"a{i}": {"fn": fn, "field": "x"} for i, fn in enumerate(fns)}
    aggs["n"] = {"fn": "count"}
    q = Query.build(window, aggs)
    types = [(n, DoubleType() if f == "mean" else LongType()) for n, f in zip(aggs, fns)]
    typed = Typed(keys=(StringType(), LongType()), values=(("x", LongType()),),
                  aggs=(*types, ("n", LongType())))
    facts = EngineFacts("spark", False, EngineFacts.FINISHED,
                        column_fields=frozenset({"x"}) if over else None)
    return Plan(q, ("k", "j"), "t", None, {}, (), (), False, typed,
                route=WindowDriver(q).plan(facts))


@settings(max_examples=30, deadline=None)
@given(st.data(), st.booleans())
def test_two_key_columns_many_keys_equal_one_call_per_key(data: Any, over: bool) -> None:
    window = {"kind": "over", "range": 4} if over else \
        {"kind": "sliding", "range": 6, "slide": 2}
    plan = _two_key_plan(window, ["max", "mean", "sum"], over)
    n = data.draw(st.integers(1, 90))
    ks = data.draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    js = data.draw(st.lists(st.integers(0, 2) | st.none(), min_size=n, max_size=n))
    table = pa.table({"swag_t": pa.array(data.draw(st.lists(st.integers(0, 20), min_size=n,
                                                            max_size=n)), pa.int64()),
                      "swag_k0": pa.array(ks, pa.string()), "swag_k1": pa.array(js, pa.int64()),
                      "swag_v0": pa.array(data.draw(st.lists(
                          st.integers(-100, 100) | st.none(), min_size=n, max_size=n)),
                          pa.int64())})
    names = ["swag_k0", "swag_k1"]
    cuts = data.draw(st.lists(st.integers(0, n), max_size=4))
    together = run_batches(plan, batches_of(table, names, cuts))
    ordered = pa.Table.from_batches(batches_of(table, names, []))
    starts = [0, *key_starts(ordered, names).tolist(), n]
    alone = [run_batches(plan, batches_of(ordered.slice(a, b - a), names, []))
             for a, b in pairwise(starts)]
    same(together, pa.concat_tables(alone))


BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 30), st.integers(-9, 9)),
                min_size=1, max_size=120),
       st.booleans())
def test_spark_keys_straddling_arrow_batches(spark: Any, rows: list[tuple[int, ...]],
                                             over_window: bool) -> None:
    """Through Spark, Arrow batches of 7 rows (most keys straddle two): the rows of every
    key equal the driver's ``finish`` of that key alone, for a non-commutative ``collect``
    in ``order_by`` order (unique, against the input order: the event path) and for the OVER
    kernel."""
    from spark_adapter import over, sliding, sliding_aggregate

    data = [(f"k{k}", t, v, i, -i) for i, (k, t, v) in enumerate(rows)]
    df = spark.createDataFrame(data, "k string, t long, v long, i long, o int")
    if over_window:
        window, spec = over(5), {"kind": "over", "range": 5}
        aggs: dict[str, Any] = {"mx": {"fn": "max", "field": "v"}, "n": {"fn": "count"}}
    else:
        window, spec = sliding(6, 3), {"kind": "sliding", "range": 6, "slide": 3}
        aggs = {"ids": {"fn": "collect", "field": "i"}, "n": {"fn": "count"}}
    spark.conf.set(BATCH_ROWS, "7")
    try:
        got = sliding_aggregate(df.repartition(3), key="k", time="t", window=window,
                                aggregations=aggs, order_by="o").collect()
    finally:
        spark.conf.unset(BATCH_ROWS)
    driver = WindowDriver({"windows": [spec], "aggregations": aggs})
    want = []
    for key in sorted({r[0] for r in data}):
        mine = sorted((r for r in data if r[0] == key), key=lambda r: r[4])  # order_by o
        out = driver.finish(key, [(r[1], {"k": r[0], "t": r[1], "v": r[2], "i": r[3], "o": r[4]})
                                  for r in mine])
        for row in out.rows:
            if over_window:
                want.append(repr((key, row["time"], row["event"]["i"], row["mx"], row["n"])))
            else:
                want.append(repr((key, row["start"], row["end"], row["ids"], row["n"])))
    if over_window:
        found = [repr((r.k, r.t, r.i, r.mx, r.n)) for r in got]
    else:
        found = [repr((r.k, r.window_start, r.window_end, r.ids, r.n)) for r in got]
    assert sorted(found) == sorted(want)
