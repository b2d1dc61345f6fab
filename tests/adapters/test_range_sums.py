"""``range_sums`` (the sums of a call's windows over the closed slices of every cached key)
equals summing each range by hand: counts (int64) and exact partials (ints of thousands of
bits), ranges of some keys only, overlapping or not, in any order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.crosskey.partials import range_sums

np = pytest.importorskip("numpy")


@st.composite
def closed_and_windows(draw: Any) -> tuple[Any, Any, Any]:
    """Closed-slice partials of several keys (contiguous spans) and windows, each inside one
    key's span."""
    exact = draw(st.booleans())
    spans = draw(st.lists(st.integers(0, 30), min_size=1, max_size=8))
    n = sum(spans)
    values = draw(st.lists(st.integers(-2**2100, 2**2100) if exact
                           else st.integers(-2**40, 2**40), min_size=n, max_size=n))
    parts = np.empty(n, object) if exact else np.array(values, np.int64)
    if exact:
        parts[:] = values
    lo, hi, start = [], [], 0
    for span in spans:
        if span and draw(st.booleans()):  # this key has windows in the call
            for _ in range(draw(st.integers(1, 12))):
                a = draw(st.integers(start, start + span - 1))
                lo.append(a)
                hi.append(draw(st.integers(a + 1, start + span)))
        start += span
    order = draw(st.permutations(range(len(lo))))
    return parts, np.array([lo[i] for i in order], np.int64), \
        np.array([hi[i] for i in order], np.int64)


@settings(max_examples=300, deadline=None)
@given(closed_and_windows())
def test_range_sums_equal_each_range_summed(case: tuple[Any, Any, Any]) -> None:
    parts, lo, hi = case
    got = range_sums(parts, lo, hi)
    assert got == [sum(int(x) for x in parts[a:b]) for a, b in zip(lo.tolist(), hi.tolist())]
    assert all(type(x) is int for x in got)
