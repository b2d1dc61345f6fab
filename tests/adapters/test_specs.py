"""Query specs: dict form, dataclasses, errors that name the bad field, aggregation-like
objects (Beam CombineFn, Flink AggregateFunction)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from adapters import (
    CountWindow,
    OverWindow,
    PolicyWindow,
    Query,
    QuerySpecError,
    SlidingWindow,
    TumblingWindow,
    WindowDriver,
    aggregation_from,
    parse_query,
)
from swag_core import Aggregation
from swag_core.aggregations import Max

AGGS = {"mx": {"fn": "max", "field": "v"}}


def test_dict_and_dataclass_forms_agree() -> None:
    q = parse_query({"windows": [{"kind": "sliding", "range": 10, "slide": 5, "offset": 2},
                                 {"kind": "tumbling", "size": 7},
                                 {"kind": "over", "range": 3},
                                 {"kind": "count", "size": 4, "every": 2},
                                 {"kind": "policy", "measure": "sum", "field": "v",
                                  "limit": 10}],
                     "aggregations": AGGS, "allowed_lateness": 5})
    assert q.windows == (SlidingWindow(10, 5, 2), TumblingWindow(7), OverWindow(3),
                         CountWindow(4, 2), PolicyWindow("sum", 10, field="v"))
    assert q.allowed_lateness == 5
    again = Query.build([w.to_dict() for w in q.windows], AGGS, 5)
    assert again.windows == q.windows and again.fingerprint == q.fingerprint
    assert q.fingerprint == Query.build(list(q.windows), {"other": {"fn": "count"}},
                                        5).fingerprint


@pytest.mark.parametrize(("spec", "path"), [
    ({"aggregations": AGGS}, "windows"),
    ({"windows": [], "aggregations": AGGS}, "windows"),
    ({"windows": [{"kind": "sliding", "range": 10}], "aggregations": AGGS},
     "windows[0].slide"),
    ({"windows": [{"kind": "sliding", "range": 10, "slide": 0}], "aggregations": AGGS},
     "windows[0].slide"),
    ({"windows": [{"kind": "sliding", "range": 5, "slide": 10}], "aggregations": AGGS},
     "windows[0].slide"),
    ({"windows": [{"kind": "over", "range": 1}, {"kind": "tumbling", "size": "1h"}],
      "aggregations": AGGS}, "windows[1].size"),
    ({"windows": [{"kind": "hopping", "size": 1}], "aggregations": AGGS}, "windows[0].kind"),
    ({"windows": [{"kind": "over", "range": 1, "slide": 2}], "aggregations": AGGS},
     "windows[0].slide"),
    ({"windows": [{"kind": "count", "size": 0}], "aggregations": AGGS}, "windows[0].size"),
    ({"windows": [{"kind": "policy", "measure": "sum", "limit": 3}], "aggregations": AGGS},
     "windows[0].field"),
    ({"windows": [{"kind": "policy", "measure": "median", "limit": 3}],
      "aggregations": AGGS}, "windows[0].measure"),
    ({"windows": [{"kind": "policy", "measure": "count", "limit": -1}],
      "aggregations": AGGS}, "windows[0].limit"),
    ({"windows": [{"kind": "over", "range": 1}], "aggregations": {}}, "aggregations"),
    ({"windows": [{"kind": "over", "range": 1}], "aggregations": {"m": {"fn": "median"}}},
     "aggregations.m.fn"),
    ({"windows": [{"kind": "over", "range": 1}], "aggregations": {"m": {"fn": "max"}}},
     "aggregations.m.field"),
    ({"windows": [{"kind": "over", "range": 1}],
      "aggregations": {"m": {"fn": "max", "field": "v", "ddof": 1}}}, "aggregations.m.ddof"),
    ({"windows": [{"kind": "over", "range": 1}],
      "aggregations": {"m": {"fn": "stddev", "field": "v", "ddof": 2}}},
     "aggregations.m.ddof"),
    ({"windows": [{"kind": "over", "range": 1}],
      "aggregations": {"start": {"fn": "count"}}}, "aggregations.start"),
    ({"windows": [{"kind": "over", "range": 1}], "aggregations": AGGS,
      "allowed_lateness": -1}, "allowed_lateness"),
    ({"windows": [{"kind": "over", "range": 1}], "aggregations": AGGS, "lateness": 1},
     "lateness"),
])
def test_errors_name_the_bad_field(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(QuerySpecError) as info:
        parse_query(spec)
    assert info.value.path == path
    assert str(info.value).startswith(path + ":")


def _run(aggs: Any, events: list[Any], windows: Any = None) -> list[dict[str, Any]]:
    driver = WindowDriver(Query.build(windows or [TumblingWindow(100)], aggs))
    driver.process("k", [(t, v) for t, v in enumerate(events)])
    return driver.advance_watermark("k", "end").rows


def test_every_builtin_fn() -> None:
    events = [{"v": 3, "id": "a"}, {"v": 1, "id": "b"}, {"v": 3, "id": "c"},
              {"v": 2, "id": "d"}, {"v": None, "id": "e", "x": 1}]
    aggs = {
        "n": {"fn": "count"}, "nv": {"fn": "count", "field": "x"},
        "ids": {"fn": "collect", "field": "id"}, "f": {"fn": "first", "field": "id"},
        "l": {"fn": "last", "field": "id"},
    }
    row = _run(aggs, events)[0]
    assert (row["n"], row["nv"], row["ids"], row["f"], row["l"]) == (
        5, 1, ["a", "b", "c", "d", "e"], "a", "e")
    numeric = {
        "s": {"fn": "sum", "field": "v"}, "m": {"fn": "mean", "field": "v"},
        "lo": {"fn": "min", "field": "v"}, "hi": {"fn": "max", "field": "v"},
        "am": {"fn": "argmax", "field": "v", "result": "id"},
        "an": {"fn": "argmin", "field": "v", "result": "id"},
        "ae": {"fn": "argmax", "field": "v"},
        "mc": {"fn": "maxcount", "field": "v"}, "nc": {"fn": "mincount", "field": "v"},
        "var": {"fn": "variance", "field": "v"}, "pvar": {"fn": "variance", "field": "v",
                                                          "ddof": 0},
        "sd": {"fn": "stddev", "field": "v"}, "g": {"fn": "geomean", "field": "v"},
        "b": {"fn": "bloom", "field": "id", "bits": 64, "hashes": 2},
    }
    row = _run(numeric, events[:4])[0]
    assert row["s"] == 9 and row["m"] == 2.25 and (row["lo"], row["hi"]) == (1, 3)
    assert (row["am"], row["an"]) == ("a", "b")  # ties go to the oldest
    assert row["ae"] == {"v": 3, "id": "a"}
    assert (row["mc"], row["nc"]) == ([3, 2], [1, 1])
    assert math.isclose(row["var"], 11 / 12) and math.isclose(row["pvar"], 11 / 16)
    assert math.isclose(row["sd"], math.sqrt(11 / 12))
    assert math.isclose(row["g"], (3 * 1 * 3 * 2) ** 0.25)
    assert "a" in row["b"] and row["b"].bits == 64


class BeamMean:
    """A Beam CombineFn (mutates its accumulators, as Beam allows)."""

    def create_accumulator(self) -> list[float]:
        return [0.0, 0]

    def add_input(self, acc: list[float], x: float) -> list[float]:
        acc[0] += x
        acc[1] += 1
        return acc

    def merge_accumulators(self, accs: Any) -> list[float]:
        accs = iter(accs)
        first = next(accs)
        for a in accs:
            first[0] += a[0]
            first[1] += a[1]
        return first

    def extract_output(self, acc: list[float]) -> float | None:
        return acc[0] / acc[1] if acc[1] else None


class FlinkConcat:
    """A Flink AggregateFunction that reuses its first accumulator (allowed by Flink)."""

    def create_accumulator(self) -> list[str]:
        return []

    def add(self, value: dict[str, Any], acc: list[str]) -> list[str]:
        acc.append(value["id"])
        return acc

    def merge(self, a: list[str], b: list[str]) -> list[str]:
        a.extend(b)
        return a

    def get_result(self, acc: list[str]) -> str:
        return "".join(acc)


def test_combine_fn_and_aggregate_function_objects() -> None:
    events = [{"v": float(i), "id": c} for i, c in enumerate("abcdefgh")]
    windows = [SlidingWindow(4, 1), OverWindow(2)]
    rows = _run({"m": ("v", BeamMean()), "s": FlinkConcat()}, events, windows)
    sliding = {r["start"]: r for r in rows if r["window"] == 0}
    assert sliding[2]["s"] == "cdef" and sliding[2]["m"] == 3.5
    assert sliding[-3]["s"] == "a" and sliding[7]["s"] == "h"
    over = {r["time"]: r for r in rows if r["window"] == 1}
    assert over[5]["s"] == "def" and over[5]["m"] == 4.0


def test_aggregation_from() -> None:
    agg = Max()
    assert aggregation_from(agg) is agg
    with pytest.raises(TypeError, match="CombineFn"):
        aggregation_from(object())
    wrapped = aggregation_from(BeamMean(), name="bmean", commutative=True)
    assert wrapped.name == "bmean" and wrapped.commutative
    a, b = wrapped.lift_fn(2.0), wrapped.lift_fn(4.0)
    assert wrapped.lower_fn(wrapped.combine(a, b)) == 3.0
    assert wrapped.lower_fn(a) == 2.0  # the operands were not mutated
    with pytest.raises(QuerySpecError, match=r"aggregations\.x"):
        parse_query({"windows": [{"kind": "over", "range": 1}], "aggregations": {"x": 42}})


def test_user_aggregation_sees_the_whole_event() -> None:
    spread = Aggregation(combine=lambda a, b: (min(a[0], b[0]), max(a[1], b[1])),
                         identity=(math.inf, -math.inf), lift=lambda e: (e["v"], e["v"]),
                         lower=lambda a: a[1] - a[0], commutative=True, name="spread")
    rows = _run({"spread": spread}, [{"v": 4}, {"v": 9}, {"v": 1}])
    assert rows[0]["spread"] == 8
    rows = _run(spread, [{"v": 4}, {"v": 9}])  # a single aggregation is named after itself
    assert rows[0]["spread"] == 5


def _pickler() -> Any:
    """A pickler of closures, as the engines ship the parsed query to their workers (the
    engine environments have one; the core one may not)."""
    for name in ("cloudpickle", "pyspark.cloudpickle", "apache_beam.internal.pickler"):
        try:
            return __import__(name, fromlist=["dumps"])
        except ImportError:
            continue
    pytest.skip("no pickler of closures installed")


def test_plain_field_readers_stay_plain_through_pickling_and_not_through_wrapping() -> None:
    """The kernels (and the cross-key runtime) need to know an output reads a plain field;
    that must survive the trip to an engine's workers, and a wrapper of such a reader, which
    may do anything, must not pass for one."""
    import functools

    from adapters.driver.kernels import kernel_for
    from adapters.query.specs import parse_query, plain_field

    query = parse_query({"windows": [{"kind": "sliding", "range": 60, "slide": 10}],
                         "aggregations": {"mx": {"fn": "max", "field": "v"}}})
    extract = query.aggregations[0].extract
    assert plain_field(extract) == "v"
    pickler = _pickler()
    shipped = pickler.loads(pickler.dumps(query))
    assert plain_field(shipped.aggregations[0].extract) == "v"
    assert kernel_for(shipped.aggregations[0]) is not None
    assert WindowDriver(shipped).batch_runtime

    @functools.wraps(extract)
    def wrapper(value: Any) -> Any:
        return extract(value) * 2
    assert plain_field(wrapper) is None
    assert plain_field(lambda value: value["v"]) is None
