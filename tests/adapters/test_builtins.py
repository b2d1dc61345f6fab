"""The built-in declaration (``adapters/query/builtins.py``) is the one place a built-in is
declared: a built-in added at run time through :func:`register` parses, runs through the
driver on every replay mode and gets its engine types; the fast paths take exactly the fns
the declaration gives them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import reduce
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import QuerySpecError, parse_query
from adapters.crosskey import batch_runtime
from adapters.crosskey.over_runtime import over_outputs
from adapters.driver.kernels import kernel_for
from adapters.engine.presliced import SLICEABLE_FNS, sliced_query
from adapters.query.builtins import (
    BUILTINS,
    CROSS_KEY,
    KERNEL,
    OVER,
    PRESLICED,
    Builtin,
    Param,
    fns_taking,
    lowered_by,
    register,
    unregister,
)
from adapters.query.missing import is_missing
from adapters.query.output_types import INPUT, NAMED_TYPES, WIDENED
from adapters.query.specs import output_type, parse_aggregation
from swag_core import product
from swag_core.aggregations import Max, Min, Sum
from tests.adapters.brute import brute_force
from tests.adapters.util import assert_same_rows
from tests.conformance.driver_engine import MODES, DriverEngine


def _range_of(parts: dict[str, Any]) -> Any:
    return parts["max"] - parts["min"]


def _range() -> Any:
    """max - min, combined from two existing monoids."""
    return lowered_by(product({"max": Max(), "min": Min()}), "range",
                      lambda parts: None if parts["max"] is None else _range_of(parts))


def _scaled_sum(scale: int) -> Any:
    """The sum of the values times ``scale`` (a parameter, checked by the declaration)."""
    return lowered_by(Sum(), "scaledsum", lambda total: total * scale)


def _scale(value: Any, path: str) -> int:
    if type(value) is not int:
        raise QuerySpecError(path, f"must be an int, got {value!r}")
    return value


@pytest.fixture
def new_builtins() -> Iterator[None]:
    """``range`` (no parameter) and ``scaledsum`` (one) registered for one test."""
    register(Builtin("range", _range, INPUT, "largest minus smallest value"))
    register(Builtin("scaledsum", _scaled_sum, WIDENED, "sum times scale",
                     params={"scale": Param(1, _scale)}))
    try:
        yield
    finally:
        unregister("range")
        unregister("scaledsum")


# ----------------------------------------------------------------------------- a new built-in
def _brute_rows(query: dict[str, Any], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``query`` (one output ``r``, a range of field ``v``) by brute force: the
    window's values collected by the oracle, their range taken here."""
    collecting = {**query, "aggregations": {"r": {"fn": "collect", "field": "v"}}}
    per_step, _ = brute_force(collecting, steps)
    rows = []
    for row in (r for step in per_step for r in step):
        present = [x for x in row["r"] if not is_missing(x)]
        rows.append({**row, "r": max(present) - min(present) if present else None})
    return rows


@st.composite
def range_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    value = st.one_of(st.integers(-50, 50), st.floats(-1e3, 1e3), st.just(None),
                      st.just(math.nan))
    n = draw(st.integers(1, 60))
    events = [[draw(st.sampled_from(["a", "b"])), draw(st.integers(0, 80)),
               {"v": draw(value), "id": i}] for i in range(n)]
    window = draw(st.sampled_from([{"kind": "tumbling", "size": 20},
                                   {"kind": "sliding", "range": 30, "slide": 10},
                                   {"kind": "over", "range": 15},
                                   {"kind": "count", "size": 3}]))
    cut = draw(st.integers(0, n))
    return {"name": "range", "description": "a built-in registered at run time",
            "tags": [], "expect_error": None,
            "query": {"windows": [window], "aggregations": {"r": {"fn": "range", "field": "v"}},
                      "allowed_lateness": 0},
            "steps": [{"events": events[:cut]}, {"watermark": 40}, {"events": events[cut:]},
                      {"watermark": "end"}]}


@settings(max_examples=40, deadline=None)
@given(range_scenarios(), st.sampled_from(MODES))
def test_a_registered_builtin_runs_through_the_driver(scenario: dict[str, Any],
                                                      mode: str) -> None:
    register(Builtin("range", _range, INPUT, "largest minus smallest value"))
    try:
        got = DriverEngine(mode)(scenario)["rows"]
    finally:
        unregister("range")
    assert_same_rows(got, _brute_rows(scenario["query"], scenario["steps"]), mode)


def test_a_registered_builtin_parses_its_params_and_nulls(new_builtins: None) -> None:
    spec = parse_aggregation("s", {"fn": "scaledsum", "field": "v", "scale": 3})
    assert spec.fn == "scaledsum" and spec.skips_missing
    values = [2, None, 5, math.nan]
    agg = spec.aggregation
    got = agg.lower_fn(reduce(agg.combine, map(agg.lift_fn, values), agg.identity))
    assert got == 3 * sum(x for x in values if not is_missing(x))
    with pytest.raises(QuerySpecError, match=r"aggregations\.s\.scale"):
        parse_aggregation("s", {"fn": "scaledsum", "field": "v", "scale": "3"})
    with pytest.raises(QuerySpecError, match=r"aggregations\.s\.bits.*allowed: field, fn, "
                                             r"scale"):
        parse_aggregation("s", {"fn": "scaledsum", "field": "v", "bits": 3})
    with pytest.raises(QuerySpecError, match=r"aggregations\.r\.field.*required"):
        parse_aggregation("r", {"fn": "range"})
    strict = parse_aggregation("r", {"fn": "range", "field": "v"}, nulls="error")
    assert not strict.skips_missing


def test_a_registered_builtin_takes_no_fast_path(new_builtins: None) -> None:
    for fn in ("range", "scaledsum"):
        spec = parse_aggregation("x", {"fn": fn, "field": "v"})
        assert kernel_for(spec) is None
        over = parse_query({"windows": [{"kind": "over", "range": 5}],
                            "aggregations": {"x": {"fn": fn, "field": "v"}}})
        assert over_outputs(over) is None
        sliding = parse_query({"windows": [{"kind": "sliding", "range": 10, "slide": 5}],
                               "aggregations": {"x": {"fn": fn, "field": "v"}}})
        assert isinstance(sliced_query(sliding), str)


def test_builtin_names_are_unique_and_paths_known() -> None:
    with pytest.raises(ValueError, match="exists already"):
        register(Builtin("max", Max, INPUT, "again"))
    with pytest.raises(ValueError, match="unknown fast paths"):
        Builtin("x", Max, INPUT, "x", paths=frozenset({"warp"}))
    with pytest.raises(QuerySpecError, match=r"fn: must be one of count, sum"):
        parse_aggregation("x", {"fn": "nope", "field": "v"})


# ----------------------------------------------------------------------------- engine types
class _TextTypes:
    """An engine whose types are strings (the core env has neither Spark nor Flink)."""

    def named(self, name: str) -> str:
        assert name in NAMED_TYPES
        return name.upper()

    def array(self, element: str) -> str:
        return f"ARRAY<{element}>"

    def struct(self, fields: list[tuple[str, str]]) -> str:
        return "ROW<" + ", ".join(f"{n} {t}" for n, t in fields) + ">"

    def numeric(self, t: str) -> str | None:
        return {"INT": "long", "BIGINT": "long", "FLOAT": "double"}.get(t)


_FIELDS = {"i": "BIGINT", "f": "FLOAT", "s": "STRING", "id": "INT"}


def _type_of(spec: dict[str, Any]) -> str | None:
    return output_type(parse_aggregation("x", spec), _TextTypes(), _FIELDS.get, "EVENT")


@pytest.mark.parametrize(("spec", "want"), [
    ({"fn": "count"}, "LONG"),
    ({"fn": "count", "field": "s"}, "LONG"),
    ({"fn": "sum", "field": "i"}, "LONG"),
    ({"fn": "sum", "field": "f"}, "DOUBLE"),
    ({"fn": "sum", "field": "s"}, None),
    ({"fn": "max", "field": "i"}, "BIGINT"),
    ({"fn": "first", "field": "s"}, "STRING"),
    ({"fn": "mean", "field": "i"}, "DOUBLE"),
    ({"fn": "variance", "field": "i"}, "DOUBLE"),
    ({"fn": "stddev", "field": "i"}, "DOUBLE"),
    ({"fn": "geomean", "field": "i"}, "DOUBLE"),
    ({"fn": "collect", "field": "s"}, "ARRAY<STRING>"),
    ({"fn": "maxcount", "field": "f"}, "ROW<value FLOAT, count LONG>"),
    ({"fn": "argmax", "field": "i"}, "EVENT"),
    ({"fn": "argmin", "field": "i", "result": "id"}, "INT"),
    ({"fn": "bloom", "field": "s"}, "BINARY"),
])
def test_declared_output_types_map_onto_an_engine(spec: dict[str, Any], want: str | None
                                                  ) -> None:
    assert _type_of(spec) == want


def test_a_registered_builtin_gets_engine_types(new_builtins: None) -> None:
    assert _type_of({"fn": "range", "field": "i"}) == "BIGINT"
    assert _type_of({"fn": "range", "field": "f"}) == "FLOAT"
    assert _type_of({"fn": "scaledsum", "field": "i"}) == "LONG"


# ----------------------------------------------------------------------------- fast paths
def _spec(fn: str) -> dict[str, Any]:
    return {"fn": fn} if fn == "count" else {"fn": fn, "field": "v",
                                             **({"result": "v"} if fn.startswith("arg") else {})}


@pytest.mark.parametrize("fn", list(BUILTINS))
def test_the_fast_paths_take_exactly_the_declared_fns(fn: str) -> None:
    """Each fast path takes a built-in iff the declaration gives it the path (the path's
    own code holds the kernel; this checks the two agree)."""
    paths = BUILTINS[fn].paths
    spec = parse_aggregation("x", _spec(fn))
    assert (kernel_for(spec) is not None) == (KERNEL in paths)
    assert (fn in batch_runtime._FNS) == (CROSS_KEY in paths)
    over = parse_query({"windows": [{"kind": "over", "range": 5}],
                        "aggregations": {"x": _spec(fn)}})
    assert (over_outputs(over) is not None) == (OVER in paths)
    assert (fn in SLICEABLE_FNS) == (PRESLICED in paths)
    sliding = parse_query({"windows": [{"kind": "sliding", "range": 10, "slide": 5}],
                           "aggregations": {"x": _spec(fn)}})
    assert (not isinstance(sliced_query(sliding), str)) == (PRESLICED in paths)
    assert (fn in fns_taking(KERNEL)) == (KERNEL in paths)
