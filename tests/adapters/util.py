"""Row comparison for the adapters tests: multisets, floats within 1e-9."""

from __future__ import annotations

import math
from typing import Any


def same(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Equality with float tolerance, recursively through lists, tuples and dicts."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    return bool(a == b)


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key: window, key, start/time, end, then the row's ids (unique per row in tests)."""
    event = row.get("event")
    return (row["window"], str(row["key"]), row.get("start", row.get("time")),
            row.get("end", 0), repr(event.get("id")) if isinstance(event, dict) else "",
            repr(row.get("ids")))


def assert_same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]],
                     context: str = "") -> None:
    """``got`` and ``want`` hold the same rows as multisets."""
    g = sorted(got, key=row_key)
    w = sorted(want, key=row_key)
    if len(g) != len(w) or not all(same(x, y) for x, y in zip(g, w)):
        missing = [r for r in w if not any(same(r, x) for x in g)]
        extra = [r for r in g if not any(same(r, x) for x in w)]
        raise AssertionError(f"{context}: rows differ\n  missing: {missing[:5]}\n"
                             f"  extra: {extra[:5]}\n  got {len(g)}, want {len(w)}")
