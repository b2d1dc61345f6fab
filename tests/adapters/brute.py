"""A brute-force reference for the driver, independent of the window structures.

It replays the steps with the shared conventions (docs/adapters.md): lateness against the
watermark at arrival, and for every row the first watermark step at which it is final. Each
aggregate is computed directly from the window's values (no swag_core structure; only the
Bloom filter reuses ``BloomFilter.fold``, the definition of its value).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from swag_core.aggregations import BloomFilter

INF = math.inf


def _wm(w: Any) -> float:
    return INF if w == "end" else w


def aggregate(spec: Mapping[str, Any], values: list[Any]) -> Any:
    """One aggregate of the events ``values`` (window order) as the conventions define it."""
    fn = spec["fn"]
    field = spec.get("field")
    if fn == "count":
        if field is None:
            return len(values)
        return sum(1 for v in values if v.get(field) is not None)
    xs = [v[field] for v in values]
    if fn == "sum":
        return sum(xs)
    if fn == "mean":
        return sum(xs) / len(xs)
    if fn == "min":
        return min(xs)
    if fn == "max":
        return max(xs)
    if fn in ("argmax", "argmin"):
        best = 0
        for i, x in enumerate(xs):
            if (x > xs[best]) if fn == "argmax" else (x < xs[best]):
                best = i  # strict: ties stay with the oldest
        result = spec.get("result")
        return values[best][result] if result else values[best]
    if fn in ("maxcount", "mincount"):
        m = max(xs) if fn == "maxcount" else min(xs)
        return [m, sum(1 for x in xs if x == m)]
    if fn in ("variance", "stddev"):
        ddof = spec.get("ddof", 1)
        n = len(xs)
        if n <= ddof:
            return None
        mean = sum(xs) / n
        var = sum((x - mean) ** 2 for x in xs) / (n - ddof)
        return var if fn == "variance" else math.sqrt(var)
    if fn == "geomean":
        return math.exp(sum(math.log(x) for x in xs) / len(xs))
    if fn == "first":
        return xs[0]
    if fn == "last":
        return xs[-1]
    if fn == "collect":
        return list(xs)
    if fn == "bloom":
        return BloomFilter(spec.get("bits", 16384), spec.get("hashes", 4)).fold(xs)
    raise ValueError(fn)


def _policy_windows(spec: Mapping[str, Any], events: list[tuple[int, int, Any]]
                    ) -> list[tuple[int, int]]:
    """For each k: (first index, k) of the policy window after the k-th event."""
    measure, limit = spec["measure"], spec["limit"]
    out = []
    for k in range(len(events)):
        first = k
        while first > 0:
            run = events[first - 1:k + 1]
            if measure == "count":
                m: Any = len(run)
            elif measure == "span":
                m = run[-1][0] - run[0][0]
            else:
                m = sum(Fraction(e[2][spec["field"]]) for e in run)
            if m > limit:
                break
            first -= 1
        out.append((first, k))
    return out


def brute_force(query: Mapping[str, Any], steps: Iterable[Mapping[str, Any]]
                ) -> tuple[list[list[dict[str, Any]]], dict[Any, int]]:
    """``(rows emitted at each step, late count per key)`` for a dict query and steps."""
    steps = list(steps)
    lateness = query.get("allowed_lateness", 0)
    aggs = query["aggregations"]
    watermarks: list[float] = []  # watermark after each step
    w = -INF
    accepted: dict[Any, list[tuple[int, int, Any]]] = {}
    late: dict[Any, int] = {}
    arrival = 0
    for step in steps:
        if "events" in step:
            for key, time, value in step["events"]:
                if time < w - lateness:
                    late[key] = late.get(key, 0) + 1
                else:
                    accepted.setdefault(key, []).append((time, arrival, value))
                arrival += 1
        else:
            w = max(w, _wm(step["watermark"]))
        watermarks.append(w)

    per_step: list[list[dict[str, Any]]] = [[] for _ in steps]

    def emit(row: dict[str, Any], values: list[Any], final_after: float) -> None:
        # final once watermark - lateness >= final_after
        for j, wj in enumerate(watermarks):
            if "watermark" in steps[j] and wj - lateness >= final_after:
                for name, spec in aggs.items():
                    row[name] = aggregate(spec, values)
                per_step[j].append(row)
                return

    for index, wspec in enumerate(query["windows"]):
        kind = wspec["kind"]
        for key, evs in accepted.items():
            evs = sorted(evs, key=lambda e: (e[0], e[1]))
            times = [e[0] for e in evs]
            if kind in ("sliding", "tumbling"):
                r = wspec.get("range", wspec.get("size"))
                s = wspec.get("slide", r)
                o = wspec.get("offset", 0)
                starts = set()
                for t in times:
                    j_lo = -((-(t - r + 1 - o)) // s)  # ceil
                    j_hi = (t - o) // s
                    for j in range(j_lo, j_hi + 1):
                        starts.add(o + j * s)
                for start in sorted(starts):
                    inside = [e[2] for e in evs if start <= e[0] < start + r]
                    emit({"window": index, "key": key, "start": start, "end": start + r},
                         inside, start + r)
            elif kind == "over":
                r = wspec["range"]
                for t, _, value in evs:
                    inside = [e[2] for e in evs if t - r <= e[0] <= t]
                    emit({"window": index, "key": key, "time": t, "event": value}, inside,
                         t + 1)
            elif kind == "count":
                n, every = wspec["size"], wspec.get("every", 1)
                for k in range(1, len(evs) + 1):
                    if k % every == 0:
                        window = evs[max(0, k - n):k]
                        emit({"window": index, "key": key, "start": window[0][0],
                              "end": window[-1][0] + 1}, [e[2] for e in window],
                             window[-1][0] + 1)
            elif kind == "policy":
                every = wspec.get("every", 1)
                for first, k in _policy_windows(wspec, evs):
                    if (k + 1) % every == 0:
                        window = evs[first:k + 1]
                        emit({"window": index, "key": key, "start": window[0][0],
                              "end": window[-1][0] + 1}, [e[2] for e in window],
                             window[-1][0] + 1)
            else:
                raise ValueError(kind)
    return per_step, late
