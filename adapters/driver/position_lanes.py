"""Position-keyed lanes: count windows and policy windows, one entry per event.

A *lane* is one structure per key and the window specs it answers. Every lane offers the
same three operations, called by the driver:

* ``release(ls, rt, key, new, b_old, b, rows)``: the watermark boundary moved from
  ``b_old`` to ``b`` and ``new`` (records sorted by ``(time, arrival)``) were released: insert
  them, append the rows that became final to ``rows`` in time order, evict;
* ``retention(ls, rt, b)``: the oldest event time the lane may still need (older log
  entries can be removed);
* ``restore(ls, rt, released, b, key, policy_lengths)``: rebuild the structure from the
  retained released records after a cache miss.

Time-keyed lanes (sliding, tumbling, over windows, with stream slicing) are in
:mod:`adapters.driver.time_lane`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

from adapters.driver.key_runtime import INF, LIFTED, POLICY, TIME, KeyRuntime, LaneState, Record
from adapters.errors import StateError
from adapters.query.specs import CountWindow, PolicyWindow
from swag_core import Aggregation, Window

_ORDER = operator.itemgetter(0, 1)


def evict_below(w: Window, bound: int | float) -> None:
    """Evict every entry with key ``< bound`` (all of them for ``inf``)."""
    if bound == INF:
        if len(w):
            w.bulk_evict(w.youngest())
    else:
        w.bulk_evict(int(bound) - 1)


def eviction_bounds(points: list[tuple[Any, ...]], final: int | float) -> list[Any]:
    """For each emission point ``(limit, order, start, ...)``: the smallest start of this
    point and every later one, and ``final`` (what no later row needs can go before it)."""
    bounds: list[Any] = [0] * len(points)
    cur = final
    for j in range(len(points) - 1, -1, -1):
        start = points[j][2]
        if start < cur:
            cur = start
        bounds[j] = cur
    return bounds


class CountLane:
    """Count specs over one position-keyed structure (position = release rank, from 1)."""

    kind = "count"

    def __init__(self, specs: list[tuple[int, CountWindow]], algorithm: str,
                 aggregation: Aggregation, out: str | None = None) -> None:
        self.specs = specs
        self.out = out  # rows get row[out] = result, or row.update(result) if None
        self.algorithm = algorithm
        self.aggregation = aggregation
        self.nmax = max(spec.size for _, spec in specs)

    def release(self, ls: LaneState, rt: KeyRuntime, key: Any, new: list[Record],
                b_old: int | float, b: int | float, rows: list[dict[str, Any]]) -> None:
        m = len(new)
        if not m:
            return
        last = rt.released
        first = last - m + 1  # release position of new[0]
        points: list[tuple[int, int, int, int, int]] = []
        for order, (idx, spec) in enumerate(self.specs):
            size, every = spec.size, spec.every
            k = -(-first // every) * every
            while k <= last:
                points.append((k + 1, order, max(1, k - size + 1), idx, k))
                k += every
        if len(self.specs) > 1:
            points.sort(key=_ORDER)
        final = max(1, last + 2 - self.nmax)  # positions start at 1, like the starts
        bounds = eviction_bounds(points, final)
        w, low = ls.w, ls.low
        time_of = rt.time_of
        inserted = 0
        for (limit, _, start, idx, k), bound in zip(points, bounds):
            upto = limit - first
            if upto > inserted:
                w.bulk_insert([(first + i, new[i][LIFTED]) for i in range(inserted, upto)])
                inserted = upto
            if bound > low:
                w.bulk_evict(bound - 1)
                low = bound
            result = w.query() if start <= low else w.query_since(start)
            row = {"window": idx, "key": key, "start": time_of(start), "end": time_of(k) + 1}
            if self.out is None:
                row.update(result)
            else:
                row[self.out] = result
            rows.append(row)
        if inserted < m:
            w.bulk_insert([(first + i, new[i][LIFTED]) for i in range(inserted, m)])
        if final > low:
            w.bulk_evict(final - 1)
            low = final
        ls.low = low

    def retention(self, ls: LaneState, rt: KeyRuntime, b: int | float) -> int | float:
        released = rt.released
        first_retained = released - (len(rt.times) - rt.head) + 1
        position = max(released + 2 - self.nmax, first_retained)
        return rt.time_of(position) if position <= released else INF

    def restore(self, ls: LaneState, rt: KeyRuntime, released: list[Record], b: int | float,
                key: Any, policy_lengths: Iterator[int]) -> None:
        n = len(released)
        first = rt.released - n + 1
        keep = min(n, max(self.nmax - 1, 0))
        ls.w.bulk_insert([(first + i, released[i][LIFTED]) for i in range(n - keep, n)])
        ls.low = rt.released - keep + 1


class PolicyLane:
    """One policy spec over its own position-keyed structure with ``enforce``."""

    kind = "policy"

    def __init__(self, index: int, spec: PolicyWindow, algorithm: str,
                 aggregation: Aggregation, rule: Callable[[Any, Any], bool],
                 measure_lift: Callable[[int, Any], Any], slot: int,
                 finish: Callable[[Any], Any], out: str | None = None) -> None:
        self.specs = [(index, spec)]
        self.index = index
        self.every = spec.every
        self.algorithm = algorithm
        self.aggregation = aggregation
        self.rule = rule
        self.measure_lift = measure_lift
        self.slot = slot  # index into a record's policy lifts
        self.finish = finish  # lowers the outputs component
        self.out = out  # rows get row[out] = result, or row.update(result) if None

    def release(self, ls: LaneState, rt: KeyRuntime, key: Any, new: list[Record],
                b_old: int | float, b: int | float, rows: list[dict[str, Any]]) -> None:
        w = ls.w
        rule, every, idx, slot = self.rule, self.every, self.index, self.slot
        finish = self.finish
        position = rt.released - len(new)
        time_of = rt.time_of
        for rec in new:
            position += 1
            w.insert(position, (rec[LIFTED], rec[POLICY][slot]))
            w.enforce(rule)  # type: ignore[attr-defined]
            if position % every == 0:
                row = {"window": idx, "key": key,
                       "start": time_of(position - len(w) + 1), "end": rec[TIME] + 1}
                result = finish(w.query()[0])
                if self.out is None:
                    row.update(result)
                else:
                    row[self.out] = result
                rows.append(row)

    def retention(self, ls: LaneState, rt: KeyRuntime, b: int | float) -> int | float:
        n = len(ls.w)
        return rt.time_of(rt.released - n + 1) if n else INF

    def restore(self, ls: LaneState, rt: KeyRuntime, released: list[Record], b: int | float,
                key: Any, policy_lengths: Iterator[int]) -> None:
        n = len(released)
        first = rt.released - n + 1
        keep = next(policy_lengths, 0)
        if keep > n:
            raise StateError(f"key {key!r}: policy window {self.index} holds {keep} "
                             f"events but only {n} are stored")
        slot = self.slot
        ls.w.bulk_insert([(first + i, (released[i][LIFTED], released[i][POLICY][slot]))
                          for i in range(n - keep, n)])


__all__ = ["CountLane", "PolicyLane", "evict_below", "eviction_bounds"]
