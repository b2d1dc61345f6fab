"""The time lane: sliding, tumbling and OVER specs on one time-keyed structure, with general
stream slicing.

General stream slicing (Traub et al., "Efficient Window Aggregation with General Stream
Slicing", EDBT 2019): the stream is cut into *slices* at every point where
some window of the lane starts or ends, each slice is aggregated once, and the structure holds
one partial aggregate per slice instead of one entry per event. Windows are then answered
from slices. Here every spec of a lane is periodic (``[O + jS, O + jS + R)``), so the cut
points are one grid: slices ``[base + i*g, base + (i+1)*g)`` with

    g = gcd(every range, every slide, every offset difference)

(every window start and end is a multiple of ``g`` from ``base``). OVER specs need a cut at
every event time, so a lane with an OVER spec uses ``g = 1``: its slices are the distinct
event times (peers folded into one entry).

On release, the released events (sorted by time, ties in arrival order) are folded into their
slices: one ``combine`` per event, consecutive events of a slice folded left to right, so
non-commutative aggregations stay exact. Only *complete* slices (slice end ``<= B``, the
boundary ``watermark - allowed lateness``) enter the structure, with one structure insert per
emitted window at most; the partial of the *open* slice (the one ``B`` is inside) is kept in
the lane state and folded on. A window ``[start, end)`` is emitted once ``end <= B``, so it
only ever covers complete slices; it is answered by ``query()`` / ``query_since(start)`` over
slices, and expired slices go with ``bulk_evict``. The structure's aggregation is the query's
aggregation over already-lifted partials (no lift); a fold of a selective aggregation is one
of its arguments, so it stays selective.

Cost per event: one ``combine``, whatever ``range / slide`` (the per-window-assignment
approach of Spark, Beam and Flink costs ``range / slide`` updates per event). Cost per
window: O(1) structure operations amortized, on ``range / g`` slices instead of the window's
events.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from typing import Any

from adapters.driver.kernels import Kernel
from adapters.driver.key_runtime import INF, LIFTED, TIME, VALUE, KeyRuntime, LaneState, Record
from adapters.driver.position_lanes import evict_below, eviction_bounds
from adapters.query.specs import OverWindow, SlidingWindow
from swag_core import Aggregation, Window

_ORDER = operator.itemgetter(0, 1)


def slice_grid(specs: Sequence[SlidingWindow | OverWindow]) -> tuple[int, int]:
    """``(g, base)``: the slice width and the offset of the slice grid of a lane's specs.

    Every window start and end of the sliding specs is ``base + i * g`` for some integer
    ``i``; OVER specs force ``g = 1``.
    """
    if any(type(spec) is OverWindow for spec in specs):
        return 1, 0
    sliding = [spec for spec in specs if isinstance(spec, SlidingWindow)]
    base = sliding[0].offset
    g = 0
    for spec in sliding:
        g = math.gcd(g, spec.range, spec.slide, spec.offset - base)
    return g, base % g


_TIME = operator.itemgetter(TIME)
_LIFTED = operator.itemgetter(LIFTED)
Part = Callable[[Sequence[Record], int, int], Any]
PartOnto = Callable[[Any, Sequence[Record], int, int], Any]


def _run_folds(combine: Callable[[Any, Any], Any],
               kernels: list[Kernel] | None) -> tuple[Part, PartOnto]:
    """``part(records, i, j)``: the partial of ``records[i:j]`` (``j > i``);
    ``part_onto(acc, records, i, j)``: the left fold continued from ``acc``. Both fold left to
    right in time order, so a slice folded over several releases equals the same slice folded
    at once."""
    if kernels is None:
        def part(recs: Sequence[Record], i: int, j: int) -> Any:
            first = recs[i][LIFTED]
            return first if j == i + 1 else reduce(combine, map(_LIFTED, recs[i + 1:j]), first)

        def part_onto(acc: Any, recs: Sequence[Record], i: int, j: int) -> Any:
            return reduce(combine, map(_LIFTED, recs[i:j]), acc)
        return part, part_onto
    if len(kernels) == 1:
        fold, fold_onto = kernels[0].fold, kernels[0].fold_onto

        def part_one(recs: Sequence[Record], i: int, j: int) -> Any:
            return fold(map(_LIFTED, recs[i:j]), j - i)

        def part_one_onto(acc: Any, recs: Sequence[Record], i: int, j: int) -> Any:
            return fold_onto(acc, map(_LIFTED, recs[i:j]), j - i)
        return part_one, part_one_onto
    folds = [k.fold for k in kernels]
    ontos = [k.fold_onto for k in kernels]

    def part_all(recs: Sequence[Record], i: int, j: int) -> Any:
        n = j - i
        return tuple([f(c, n) for f, c in zip(folds, zip(*map(_LIFTED, recs[i:j])))])

    def part_all_onto(acc: Any, recs: Sequence[Record], i: int, j: int) -> Any:
        n = j - i
        return tuple([f(a, c, n)
                      for f, a, c in zip(ontos, acc, zip(*map(_LIFTED, recs[i:j])))])
    return part_all, part_all_onto


def end_after(x: int | float, slide: int, first_end: int) -> int:
    """The smallest window end ``> x`` of a sliding spec whose ends are ``first_end + j *
    slide`` (``first_end = offset + range``); ``x`` finite."""
    return first_end + slide * ((int(x) - first_end) // slide + 1)


def due_window_ends(times: Sequence[int], head: int, x: int | float, b: int | float,
                     r: int, s: int, e0: int) -> Iterator[int]:
    """Ends ``e``, ascending, of the windows ``[e - r, e)`` of a sliding spec (``e0 + j*s``)
    that end after ``x`` and by ``b`` and hold a retained event (``times[head:]``, sorted).
    Empty windows are skipped by binary search, so a long quiet stretch costs nothing."""
    n = len(times)
    e = end_after(x, s, e0)
    lo = head
    while e <= b:
        i = bisect_left(times, e - r, lo, n)
        if i == n:
            return
        t = times[i]
        if t < e:  # the window [e - r, e) holds the event at t
            yield int(e)
            e += s
            lo = i
        else:      # skip the empty windows up to the first one holding t
            e = end_after(t, s, e0)


def _insert_before(w: Window, starts: Sequence[int], parts: Sequence[Any], inserted: int,
                   ns: int, limit: int | float) -> int:
    """Insert the completed slices ``inserted ..`` that start before ``limit`` (one insert,
    or one bulk insert for several); returns how many of the ``ns`` slices are inserted."""
    k = bisect_left(starts, limit, inserted, ns)
    if k > inserted:
        if k == inserted + 1:
            w.insert(starts[inserted], parts[inserted])
        else:
            w.bulk_insert(zip(starts[inserted:k], parts[inserted:k]))
    return k


class TimeLane:
    """Sliding/tumbling and OVER specs over one time-keyed structure holding slices."""

    kind = "time"

    def __init__(self, specs: list[tuple[int, SlidingWindow | OverWindow]], algorithm: str,
                 aggregation: Aggregation, kernels: list[Kernel] | None = None,
                 out: str | None = None) -> None:
        self.specs = specs
        self.out = out  # rows get row[out] = result, or row.update(result) if None
        self.algorithm = algorithm
        self.aggregation = aggregation
        self.combine = aggregation.combine
        self.width, self.base = slice_grid([spec for _, spec in specs])
        # How a run of the values the pending buffer holds becomes a slice partial: lifted
        # values folded with combine, or raw field values folded by kernels.
        self.kernels = kernels
        self._part, self._part_onto = _run_folds(aggregation.combine, kernels)
        if kernels is not None and self.width == 1:
            raise ValueError("kernels need slices wider than 1 ms")
        #: sliding specs as (spec order, window index, range, slide, offset + range): the
        #: first window end after x is  e0 + slide * ((x - e0) // slide + 1)
        self.sliding = [(order, idx, spec.range, spec.slide, spec.offset + spec.range)
                         for order, (idx, spec) in enumerate(specs)
                         if isinstance(spec, SlidingWindow)]
        self._over = [(order, idx, spec.range) for order, (idx, spec) in enumerate(specs)
                      if isinstance(spec, OverWindow)]
        self._over_range = max((r for _, _, r in self._over), default=None)
        self._shared = len(specs) > 1
        #: the lane answers one sliding (or tumbling) spec and nothing else
        self.single = len(self.sliding) == 1 and not self._over

    @property
    def has_over(self) -> bool:
        """Whether the lane answers an OVER spec (rows per event)."""
        return bool(self._over)

    def need(self, b: int | float) -> int | float:
        """Oldest time any window emitted after boundary ``b`` can need (a slice start)."""
        if b == INF or b == -INF:
            return b
        need = INF if self._over_range is None else b - self._over_range
        for _, _, r, s, e0 in self.sliding:
            v = end_after(b, s, e0) - r
            if v < need:
                need = v
        return need

    # ------------------------------------------------------------------ slicing
    def fold(self, ls: LaneState, recs: Sequence[Record],
             b: int | float) -> tuple[Sequence[int], Sequence[Any]]:
        """Fold released records (sorted by time, all newer than the lane's open slice) into
        slices; returns the slices that are complete at boundary ``b`` as ``(starts,
        partials)``, oldest first, and keeps the open one in ``ls``."""
        g = self.width
        m = len(recs)
        if g == 1:
            # every slice [t, t + 1) with t < b is complete; equal times (peers) fold together
            times = list(map(_TIME, recs))
            if len(set(times)) == m:  # (no kernels here: they need slices wider than 1)
                return times, list(map(_LIFTED, recs))
            part = self._part
            starts: list[int] = []
            parts: list[Any] = []
            i = 0
            while i < m:
                t = times[i]
                j = i + 1
                while j < m and times[j] == t:
                    j += 1
                starts.append(t)
                parts.append(part(recs, i, j))
                i = j
            return starts, parts
        base, part, part_onto = self.base, self._part, self._part_onto
        starts, parts = [], []
        cur, acc = ls.open_start, ls.open_acc
        i = 0
        while i < m:
            t = recs[i][0]
            s = t - (t - base) % g
            j = bisect_left(recs, s + g, i + 1, m, key=_TIME)  # records [i, j): slice s
            if s == cur:
                acc = part_onto(acc, recs, i, j)
            else:
                if cur is not None:
                    starts.append(cur)
                    parts.append(acc)
                cur = s
                acc = part(recs, i, j)
            i = j
        if cur is not None and cur + g <= b:
            starts.append(cur)
            parts.append(acc)
            cur = acc = None
        ls.open_start, ls.open_acc = cur, acc
        return starts, parts

    # ------------------------------------------------------------------ lane operations
    def release(self, ls: LaneState, rt: KeyRuntime, key: Any, new: list[Record],
                b_old: int | float, b: int | float, rows: list[dict[str, Any]]) -> None:
        m = len(new)
        if m or ls.open_start is not None:
            starts, parts = self.fold(ls, new, b)
        else:
            starts, parts = (), ()
        times, head = rt.times, rt.head
        n = len(times)
        if self.single:
            self._release_single(ls, rt, key, starts, parts, b_old, b, rows)
            return
        # Emission points (limit, spec order, start, window index, payload): insert the
        # slices starting before limit, then answer the range [start, limit).
        points: list[tuple[Any, ...]] = []
        add = points.append
        if head < n:
            x = times[head] if b_old == -INF else b_old
            for order, idx, r, s, e0 in self.sliding:
                for e in due_window_ends(times, head, x, b, r, s, e0):
                    add((e, order, e - r, idx, None))
        for order, idx, r in self._over:
            j = 0
            while j < m:
                t = new[j][0]
                k = j + 1
                while k < m and new[k][0] == t:
                    k += 1
                add((t + 1, order, t - r, idx, new[j:k]))
                j = k
        final = self.need(b)
        w, low = ls.w, ls.low
        inserted, ns = 0, len(starts)
        if points:
            if self._shared:
                points.sort(key=_ORDER)
            inserted, low = self._emit(w, low, key, points, final, starts, parts, rows)
        if inserted < ns:
            w.bulk_insert(zip(starts[inserted:], parts[inserted:]))
        if final > low:
            evict_below(w, final)
            low = final
        ls.low = low

    def _release_single(self, ls: LaneState, rt: KeyRuntime, key: Any,
                        starts: Sequence[int], parts: Sequence[Any], b_old: int | float,
                        b: int | float, rows: list[dict[str, Any]]) -> None:
        """:meth:`release` for a lane of one sliding spec: its windows, in order, each
        evicting what it no longer holds, so a FIFO structure answers with ``query()``."""
        _, idx, r, s, e0 = self.sliding[0]
        times, head = rt.times, rt.head
        n = len(times)
        w, low = ls.w, ls.low
        inserted, ns = 0, len(starts)
        out = self.out
        if head < n:
            x = times[head] if b_old == -INF else int(b_old)
            for e in due_window_ends(times, head, x, b, r, s, e0):
                start = e - r
                inserted = _insert_before(w, starts, parts, inserted, ns, e)
                if start > low:
                    w.bulk_evict(start - 1)
                    low = start
                row = {"window": idx, "key": key, "start": start, "end": e}
                if out is None:
                    row.update(w.query())
                else:
                    row[out] = w.query()
                rows.append(row)
        if inserted < ns:
            w.bulk_insert(zip(starts[inserted:], parts[inserted:]))
        final = self.need(b)
        if final > low:
            evict_below(w, final)
            low = final
        ls.low = low

    def _emit(self, w: Window, low: int | float, key: Any, points: list[tuple[Any, ...]],
              final: int | float, starts: Sequence[int], parts: Sequence[Any],
              rows: list[dict[str, Any]]) -> tuple[int, int | float]:
        """Emit the rows of ``points`` in order; returns how many slices were inserted and
        the new eviction bound."""
        bounds = eviction_bounds(points, final)
        finish_row = rows.append
        out = self.out
        inserted, ns = 0, len(starts)
        for (limit, _, start, idx, payload), bound in zip(points, bounds):
            inserted = _insert_before(w, starts, parts, inserted, ns, limit)
            if bound > low:
                evict_below(w, bound)
                low = bound
            result = w.query() if start <= low else w.query_since(start)
            if payload is None:
                row = {"window": idx, "key": key, "start": start, "end": limit}
                if out is None:
                    row.update(result)
                else:
                    row[out] = result
                finish_row(row)
            else:
                t = limit - 1
                for rec in payload:
                    row = {"window": idx, "key": key, "time": t, "event": rec[VALUE]}
                    if out is None:
                        row.update(result)
                    else:
                        row[out] = result
                    finish_row(row)
        return inserted, low

    def retention(self, ls: LaneState, rt: KeyRuntime, b: int | float) -> int | float:
        return self.need(b)

    def restore(self, ls: LaneState, rt: KeyRuntime, released: list[Record], b: int | float,
                key: Any, policy_lengths: Iterator[int]) -> None:
        need = self.need(b)
        i = bisect_left(released, need, key=_TIME)
        starts, parts = self.fold(ls, released[i:], b)
        ls.w.bulk_insert(zip(starts, parts))
        ls.low = need


__all__ = ["TimeLane", "due_window_ends", "end_after", "slice_grid"]
