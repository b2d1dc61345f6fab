"""ALGORITHMS, make_window and the errors every algorithm shares."""

from __future__ import annotations

import pytest

from swag_core import (
    ALGORITHMS,
    AlgorithmMismatchError,
    EmptyWindowError,
    InvalidTimeError,
    OutOfOrderError,
    UnknownAlgorithmError,
    UnsupportedQueryError,
    algorithms_for,
    make_window,
    range_query_algorithms,
)
from swag_core.aggregations import Collect, Max, Sum

from .helpers import concat

DESIGN_NAMES = {"recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite",
                "flatfat", "flatfit", "slickdeque", "log_mta", "amta", "fiba", "reactive"}


def test_algorithms_are_exactly_the_designed_ones() -> None:
    assert set(ALGORITHMS) == DESIGN_NAMES
    for name, cls in ALGORITHMS.items():
        assert cls.name == name
        assert cls.complexity, f"{name} must state its complexity"
        assert cls.__doc__, f"{name} needs a docstring"


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(UnknownAlgorithmError, match="daba") as err:
        make_window("dabba", Sum())
    assert isinstance(err.value, KeyError)


@pytest.mark.parametrize("name,agg,needs", [
    ("soe", Max(), "invertible"), ("slickdeque", Collect(), "selective"),
])
def test_mismatch_says_what_is_missing_and_what_fits(name: str, agg: object, needs: str) -> None:
    with pytest.raises(AlgorithmMismatchError, match=needs) as err:
        make_window(name, agg)  # type: ignore[arg-type]
    assert isinstance(err.value, ValueError)
    assert "two_stacks_lite" in str(err.value)  # a fitting algorithm is suggested


def test_algorithms_for_respects_needs() -> None:
    fits = algorithms_for(concat())
    assert "daba" in fits and "fiba" in fits
    assert "soe" not in fits and "slickdeque" not in fits
    assert "slickdeque" in algorithms_for(Max()) and "soe" in algorithms_for(Sum())


def test_range_query_algorithms_are_those_with_range_queries() -> None:
    names = range_query_algorithms()
    assert names == [name for name in ALGORITHMS if ALGORITHMS[name].range_queries]
    assert "fiba" in names and "flatfat" in names and "two_stacks" not in names


def test_make_window_refuses_a_non_aggregation() -> None:
    with pytest.raises(TypeError, match="Aggregation"):
        make_window("daba", max)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(DESIGN_NAMES))
def test_shared_errors(name: str) -> None:
    cls = ALGORITHMS[name]
    agg = Sum() if cls.mismatch(Sum()) is None else Max()
    w = make_window(name, agg)
    with pytest.raises(EmptyWindowError):
        w.evict()
    with pytest.raises(IndexError):
        w.oldest()
    with pytest.raises(IndexError):
        w.youngest()
    for bad in (1.5, None, "10", True):
        with pytest.raises(InvalidTimeError, match="integer"):
            w.insert(bad, 1)  # type: ignore[arg-type]
    w.insert(10, 1)
    if cls.in_order:
        with pytest.raises(OutOfOrderError, match="fiba"):
            w.insert(9, 1)
    else:
        w.insert(9, 1)
    if not cls.range_queries:
        with pytest.raises(UnsupportedQueryError, match="fiba"):
            w.query_since(0)
    assert len(w) >= 1 and "entries" in repr(w)


def test_the_selection_guide_covers_every_algorithm() -> None:
    from pathlib import Path
    guide = (Path(__file__).resolve().parents[2] / "docs" / "algorithms.md").read_text()
    for name in DESIGN_NAMES:
        assert f"| `{name}` |" in guide, f"docs/algorithms.md has no row for {name}"
