"""Per-event (OVER) windows of many events at once in NumPy: the frame of every event and its
aggregates as arrays, the same values, bit for bit, as the per-key path's structures.

What it covers (:func:`over_outputs`): a query of one ``{"kind": "over", "range": R}``
window whose outputs all have a column kernel (:func:`adapters.driver.kernels.kernel_for`):
``count`` of events, ``max`` / ``min`` / ``sum`` / ``mean`` of one plain field; the values
of a field either all ints (int64) or all floats, finite where present. A column that breaks
a rule (an infinity, a missing value under ``nulls="error"``) makes :func:`over_values`
return ``None``: the caller runs the per-key path, which reports or handles it.

The frame of event ``i`` (events of one key sorted by time, ties in arrival order) is the
events with time in ``[t_i - R, t_i]``, peers at equal time included: rows ``lo_i .. hi_i - 1``
with ``lo = searchsorted(t, t - R, "left")`` and ``hi = searchsorted(t, t, "right")``
(several keys: the same on ``id * span + t``, :func:`frame_bounds`). Then, per output:

* ``count``: ``hi - lo``;
* ``max`` / ``min``: a sparse table (Bentley and Saxe's idempotent range queries: level ``j``
  holds the extreme of ``2**j`` values, so a frame is the extreme of two overlapping
  blocks): O(n log m) to build for frames of at most ``m`` rows, O(1) per frame. The per-key
  combine keeps the older of equal values, which only shows for ``0.0`` / ``-0.0``; a frame
  whose extreme is zero takes its first zero (a suffix-minimum of zero positions);
* ``sum`` / ``mean`` of ints: int64 prefix sums (Python ints in an object array when the
  column's absolute sum could reach ``2**62``); a mean is ``sum / count``, which NumPy
  computes correctly rounded when both are exact doubles (``|sum| < 2**53``), as CPython's
  ``int / int`` does; other frames divide in Python;
* ``sum`` / ``mean`` of floats: prefix sums of each value's exact fixed-point int
  (:mod:`swag_core.exact`, units of ``2**-1074``) in an object array: a frame's exact sum is
  a difference of two, rounded once (:func:`swag_core.exact.ratio_to_float`), as the per-key
  path's ``lower`` does.

Missing values (``None``, NaN) under ``nulls="skip"`` are left out: a frame counts its present
values (a prefix sum of the mask) and gives ``None`` (a masked row) when it has none.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, NamedTuple

from adapters.driver.kernels import kernel_for
from adapters.query.builtins import OVER, fns_taking
from adapters.query.specs import OverWindow, Query
from swag_core.exact import FRACTION_BITS, fixed, ratio_to_float

try:
    import numpy as np
except ImportError:  # pragma: no cover - without NumPy the per-key path runs
    np = None  # type: ignore[assignment]

_UNIT = 1 << FRACTION_BITS
_I64_MIN, _I64_MAX = -2**63, 2**63 - 1
#: int64 prefix sums are safe while the column's absolute sum stays below this
_SAFE_SUM = 2.0**62
#: a window sum below this (in absolute value) is an exact double
_EXACT_DOUBLE = 2**53


class OverOutput(NamedTuple):
    """One output of a covered OVER query."""

    name: str
    #: ``count`` (of events), ``max``, ``min``, ``sum`` or ``mean``
    fn: str
    #: the field read (``None`` for ``count``)
    field: str | None
    #: whether missing values are skipped (``nulls="skip"``); else they are bad input
    skips_missing: bool


class OverPlan(NamedTuple):
    """A covered OVER query: its window index, range and outputs."""

    window: int
    range: int
    outputs: tuple[OverOutput, ...]

    @property
    def fields(self) -> list[str]:
        """The fields the outputs read, each once, in output order."""
        return list(dict.fromkeys(o.field for o in self.outputs if o.field is not None))


class Column(NamedTuple):
    """A field's values in frame order: ``data`` int64 or float64 (anything where
    ``missing``), ``missing`` a bool array or ``None`` (no value is missing)."""

    data: Any
    missing: Any


class Values(NamedTuple):
    """An output's values per event: ``data`` (int64, float64 or object array) and
    ``missing`` (a bool array where the row's value is ``None``, or ``None``)."""

    data: Any
    missing: Any

    def tolist(self) -> list[Any]:
        """Python values (``None`` where missing): what the per-key path's rows hold."""
        out = self.data.tolist()
        if self.missing is not None:
            for i in np.flatnonzero(self.missing).tolist():
                out[i] = None
        return out


def over_outputs(query: Query) -> OverPlan | None:
    """The plan of ``query`` if this module covers it (see the module docstring), else
    ``None``."""
    if np is None or len(query.windows) != 1 or type(query.windows[0]) is not OverWindow:
        return None
    outputs = []
    for spec in query.aggregations:
        kernel = kernel_for(spec)
        if kernel is None or spec.fn not in fns_taking(OVER):
            return None
        if spec.fn == "count" and kernel.field is None:
            outputs.append(OverOutput(spec.name, "count", None, False))
        elif spec.fn in ("max", "min", "sum", "mean") and kernel.field is not None:
            outputs.append(OverOutput(spec.name, spec.fn, kernel.field, spec.skips_missing))
        else:
            return None
    return OverPlan(0, query.windows[0].range, tuple(outputs))


def frame_bounds(times: Any, r: int, ids: Any = None) -> tuple[Any, Any]:
    """``(lo, hi)`` per event: its frame is rows ``lo .. hi - 1`` (see the module
    docstring). ``times`` int64 sorted within each key; ``ids`` (non-negative ints, sorted)
    the key of each row, or ``None`` for one key."""
    if ids is None:
        ids = np.zeros(len(times), np.int64)
    return frames_at(ids, times, ids, times, r)


def frames_at(ids: Any, times: Any, q_ids: Any, q_times: Any, r: int) -> tuple[Any, Any]:
    """``(lo, hi)`` per query row ``(q_ids[j], q_times[j])``: the rows of ``(ids, times)``
    (sorted by (id, time)) of key ``q_ids[j]`` with time in ``[q_times[j] - r, q_times[j]]``.
    Every query time lies within the data's time span."""
    if not len(q_ids) or not len(ids):
        return np.zeros(len(q_ids), np.intp), np.zeros(len(q_ids), np.intp)
    t0, t1 = int(times.min()), int(times.max())
    r = min(r, t1 - t0 + 1)  # an older start holds the same rows
    span = t1 - t0 + r + 1
    if span * (int(ids[-1]) + 1) < 2**62:  # times shifted to 0 .. span - 1, keys side by side
        key = (times - (t0 - r)) + ids.astype(np.int64) * span
        q = (q_times - (t0 - r)) + q_ids.astype(np.int64) * span
        return np.searchsorted(key, q - r, "left"), np.searchsorted(key, q, "right")
    # times spanning most of int64: Python ints, per query
    ts, ks = times.tolist(), ids.tolist()
    lo, hi = np.empty(len(q_ids), np.intp), np.empty(len(q_ids), np.intp)
    for j, (k, t) in enumerate(zip(q_ids.tolist(), q_times.tolist())):
        a, e = bisect_left(ks, k), bisect_right(ks, k)
        lo[j] = bisect_left(ts, t - r, a, e)
        hi[j] = bisect_right(ts, t, a, e)
    return lo, hi


def over_values(out: OverOutput, lo: Any, hi: Any, column: Column | None) -> Values | None:
    """The output's value for every frame ``lo[i] .. hi[i] - 1`` (``hi > lo``), or ``None``
    if the column breaks a rule of the module docstring (the per-key path must run)."""
    if out.fn == "count":
        return Values(hi - lo, None)
    assert column is not None
    data, missing = column.data, column.missing
    if missing is not None and not missing.any():
        missing = None
    if missing is not None and not out.skips_missing:
        return None  # the per-key path raises the bad-value error
    floats = data.dtype.kind == "f"
    if floats and not np.isfinite(data if missing is None else data[~missing]).all():
        return None
    present = None
    if missing is not None:
        counts = np.concatenate(([0], np.cumsum(~missing)))
        present = counts[hi] - counts[lo]
    empty = None if present is None else present == 0
    if out.fn in ("max", "min"):
        return Values(range_extreme(out.fn == "max", data, missing, lo, hi), empty)
    n = (hi - lo) if present is None else present
    if floats:
        return _float_sums(out.fn == "mean", data, missing, lo, hi, n, empty)
    return _int_sums(out.fn == "mean", data, missing, lo, hi, n, empty)


def range_extreme(is_max: bool, data: Any, missing: Any, lo: Any, hi: Any) -> Any:
    """Max or min of every frame (missing values never win; frames without a present value
    hold a sentinel the caller masks)."""
    ufunc = np.maximum if is_max else np.minimum
    x = data
    if missing is not None:
        if x.dtype.kind == "f":
            sentinel: Any = -np.inf if is_max else np.inf
        else:
            sentinel = _I64_MIN if is_max else _I64_MAX
        x = np.where(missing, sentinel, x)
    width = hi - lo
    levels = [x]
    top = int(width.max()).bit_length() - 1
    for j in range(1, top + 1):
        prev, step = levels[-1], 1 << (j - 1)
        levels.append(ufunc(prev[:len(prev) - step], prev[step:]))
    # floor(log2(width)): frexp's exponent of an int below 2**53 is its bit length
    k = np.frexp(width.astype(np.float64))[1].astype(np.intp) - 1
    out = np.empty(len(lo), x.dtype)
    for j in np.unique(k).tolist():
        at = np.flatnonzero(k == j)
        level = levels[j]
        a, b = lo[at], hi[at] - (1 << j)
        out[at] = ufunc(level[a], level[b])
    if x.dtype.kind == "f":
        zero = np.flatnonzero(out == 0)
        if len(zero):  # the older of 0.0 / -0.0 wins: the frame's first zero
            pos = np.where(x == 0, np.arange(len(x)), len(x))
            first = np.minimum.accumulate(pos[::-1])[::-1]
            out[zero] = x[first[lo[zero]]]
    return out


def _int_sums(mean: bool, data: Any, missing: Any, lo: Any, hi: Any, n: Any,
              empty: Any) -> Values:
    """Sums (ints) or means (correctly rounded floats) of int frames."""
    x = data if missing is None else np.where(missing, 0, data)
    if float(np.abs(x.astype(np.float64)).sum()) < _SAFE_SUM:
        prefix = np.concatenate(([0], np.cumsum(x, dtype=np.int64)))
        sums = prefix[hi] - prefix[lo]
    else:  # Python ints: exact at any size
        prefix = np.empty(len(x) + 1, object)
        prefix[0] = 0
        np.cumsum(x.astype(object), out=prefix[1:])
        sums = prefix[hi] - prefix[lo]
    if not mean:
        return Values(sums, empty)
    safe_n = np.maximum(n, 1)
    if sums.dtype != object and bool((np.abs(sums) < _EXACT_DOUBLE).all()):
        return Values(sums.astype(np.float64) / safe_n, empty)
    out = np.array([int(s) / int(c) for s, c in zip(sums.tolist(), safe_n.tolist())],
                   np.float64)
    return Values(out, empty)


def _float_sums(mean: bool, data: Any, missing: Any, lo: Any, hi: Any, n: Any,
                empty: Any) -> Values:
    """Sums or means of float frames, exactly rounded: prefix sums of exact fixed-point
    ints."""
    x = data if missing is None else np.where(missing, 0.0, data)
    prefix = np.empty(len(x) + 1, object)
    prefix[0] = 0
    np.cumsum(np.array(_fixed_points(x), object), out=prefix[1:])
    totals = (prefix[hi] - prefix[lo]).tolist()
    if mean:
        vals = [ratio_to_float(f, c << FRACTION_BITS) if c else 0.0
                for f, c in zip(totals, n.tolist())]
    else:
        vals = [ratio_to_float(f, _UNIT) for f in totals]
    return Values(np.array(vals, np.float64), empty)


def _fixed_points(x: Any) -> list[int]:
    """Each finite float of ``x`` as its exact int in units of ``2**-1074``
    (:func:`swag_core.exact.fixed`): ``m * 2**53`` shifted by ``e - 53 + 1074`` from
    ``frexp`` (a negative shift, below ``2**-1021``, takes ``fixed`` itself)."""
    m, e = np.frexp(x)
    shift = e.astype(np.int64) + (FRACTION_BITS - 53)
    if len(shift) and int(shift.min()) < 0:  # values below 2**-1021: the slow exact way
        return [fixed(v) for v in x.tolist()]
    mant = (m * 2.0**53).astype(np.int64).tolist()
    return [a << s for a, s in zip(mant, shift.tolist())]


__all__ = ["Column", "OverOutput", "OverPlan", "Values", "frame_bounds", "frames_at",
           "over_outputs", "over_values", "range_extreme"]
