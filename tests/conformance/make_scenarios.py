"""Write the conformance scenarios to ``scenarios/*.json`` (the committed source of truth).

    python -m tests.conformance.make_scenarios          # (re)write every scenario file
    python -m tests.conformance.make_scenarios --check  # exit 1 if a file is out of date

The JSON files are what engines read; this script only keeps them consistent and readable
(one event per line). Expected results are never written here: they come from the oracle.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .corpus import SCENARIO_DIR, events_digest, generate

Event = list[Any]
Step = dict[str, Any]

SCENARIOS: list[dict[str, Any]] = []


# --------------------------------------------------------------------------- helpers
def ev(key: Any, t: Any, **value: Any) -> Event:
    """One event ``[key, time, {fields}]``."""
    return [key, t, value]


def E(*events: Event) -> Step:
    """An events step."""
    return {"events": list(events)}


def W(w: int | str) -> Step:
    """A watermark step (``"end"`` for end of input)."""
    return {"watermark": w}


END = W("end")


def G(**spec: Any) -> Step:
    """A generate step, with the digest of the events it must produce."""
    return {"generate": {**spec, "digest": events_digest(generate(spec))}}


def sliding(range_: int, slide: int, offset: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "sliding", "range": range_, "slide": slide}
    if offset is not None:
        spec["offset"] = offset
    return spec


def tumbling(size: int, offset: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "tumbling", "size": size}
    if offset is not None:
        spec["offset"] = offset
    return spec


def over(range_: int) -> dict[str, Any]:
    return {"kind": "over", "range": range_}


def count(size: int, every: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "count", "size": size}
    if every is not None:
        spec["every"] = every
    return spec


def policy(measure: str, limit: float, field: str | None = None,
           every: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "policy", "measure": measure, "limit": limit}
    if field is not None:
        spec["field"] = field
    if every is not None:
        spec["every"] = every
    return spec


def agg(fn: str, field: str | None = None, **params: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"fn": fn}
    if field is not None:
        spec["field"] = field
    spec.update(params)
    return spec


def add(name: str, description: str, tags: list[str], windows: list[dict[str, Any]],
        aggregations: dict[str, dict[str, Any]], steps: list[Step], lateness: int = 0,
        expect_error: dict[str, Any] | None = None, nulls: str | None = None) -> None:
    query: dict[str, Any] = {"windows": windows, "aggregations": aggregations,
                             "allowed_lateness": lateness}
    if nulls is not None:  # default "skip"
        query["nulls"] = nulls
    SCENARIOS.append({
        "name": name, "description": description, "tags": tags,
        "query": query, "steps": steps, "expect_error": expect_error,
    })


def series(key: Any, times: list[int], field: str = "v", values: list[Any] | None = None,
           first_id: int = 0) -> list[Event]:
    """Events of one key at ``times`` with ``v`` values (default: a fixed pattern) and ids."""
    if values is None:
        values = [(7 * i + 3) % 11 for i in range(len(times))]
    return [ev(key, t, **{field: v, "id": first_id + i})
            for i, (t, v) in enumerate(zip(times, values))]


KEYS50 = [f"k{i:02d}" for i in range(50)]
BASIC = {"count": agg("count"), "sum_v": agg("sum", "v"), "max_v": agg("max", "v")}

# --------------------------------------------------------------------------- in order
add("inorder_sliding_max",
    "In-order events of one key; sliding windows with range a multiple of the slide; "
    "watermarks after every few events, then end of input.",
    ["in-order", "sliding", "sliding-divisible", "single-key", "end-of-input"],
    [sliding(1000, 500)], {"max_v": agg("max", "v"), "count": agg("count")},
    [E(ev("a", 100, v=3), ev("a", 400, v=7)), W(500),
     E(ev("a", 900, v=1), ev("a", 1200, v=5)), W(1000),
     E(ev("a", 1700, v=2)), W(2000),
     E(ev("a", 2600, v=9)), END])

add("inorder_tumbling_sum_count",
    "Tumbling windows of 1000 ms with events on both sides of every boundary (999 / 1000, "
    "2999 / 3000): a boundary event belongs to the window it starts.",
    ["in-order", "tumbling", "single-key", "end-of-input"],
    [tumbling(1000)],
    {"sum_v": agg("sum", "v"), "count": agg("count"), "mean_v": agg("mean", "v")},
    [E(ev("a", 0, v=1), ev("a", 999, v=2), ev("a", 1000, v=4)), W(1000),
     E(ev("a", 1500, v=8), ev("a", 2999, v=16)), W(2999),
     E(ev("a", 3000, v=32)), END])

add("sliding_nondivisible_range",
    "Sliding windows whose range (1000) is not a multiple of the slide (300), so windows "
    "overlap unevenly; events every 170 ms.",
    ["in-order", "sliding", "sliding-nondivisible", "single-key", "end-of-input"],
    [sliding(1000, 300)], {"min_v": agg("min", "v"), "mean_v": agg("mean", "v")},
    [E(*series("a", list(range(0, 2001, 170)))), W(1200), END])

add("sliding_offset",
    "Sliding windows (600 / 200) with offset 50: events just before and at the shifted "
    "boundaries 49 / 50, 249 / 250, 649 / 650; collect shows each window's exact members.",
    ["in-order", "sliding", "sliding-divisible", "offset", "non-commutative", "single-key"],
    [sliding(600, 200, 50)], {"ids": agg("collect", "id")},
    [E(*series("a", [49, 50, 249, 250, 649, 650, 1049])), END])

add("sliding_offset_out_of_range",
    "The same events under two sliding specs whose offsets lie outside [0, slide): 1250 with "
    "slide 300 (same windows as offset 50) and -70 with slide 250; range not a multiple.",
    ["in-order", "sliding", "sliding-nondivisible", "offset", "multi-window", "single-key"],
    [sliding(700, 300, 1250), sliding(550, 250, -70)],
    {"count": agg("count"), "ids": agg("collect", "id")},
    [E(*series("a", [-100, 0, 49, 50, 180, 349, 350, 720, 1001])), END])

add("negative_times_sliding",
    "Event times and watermarks below zero, crossing zero: window starts at negative "
    "multiples of the slide.",
    ["in-order", "sliding", "sliding-divisible", "negative-time", "single-key"],
    [sliding(1000, 250)], {"sum_v": agg("sum", "v"), "first_id": agg("first", "id")},
    [E(*series("a", [-2500, -2001, -1750, -1000, -999, -1, 0])), W(-1000),
     E(*series("a", [1, 249, 250, 500], first_id=10)), END])

add("negative_times_tumbling_offset",
    "Tumbling windows of 400 ms with offset -150 over negative and positive times: windows "
    "[-550, -150), [-150, 250), ...",
    ["in-order", "tumbling", "offset", "negative-time", "single-key"],
    [tumbling(400, -150)], {"count": agg("count"), "last_id": agg("last", "id")},
    [E(*series("a", [-1000, -551, -550, -151, -150, 0, 249, 250, 300])), W(0), END])

add("tumbling_equals_sliding",
    "A tumbling spec and a sliding spec with range == slide over the same stream: identical "
    "rows except for the window index.",
    ["in-order", "tumbling", "sliding", "sliding-divisible", "multi-window", "single-key"],
    [tumbling(500), sliding(500, 500)], BASIC,
    [E(*series("a", [0, 120, 499, 500, 730, 1999, 2000])), END])

add("sliding_small_slide",
    "Range 50 ms, slide 1 ms: every event lies in 50 windows (k = R/S = 50).",
    ["in-order", "sliding", "sliding-divisible", "single-key"],
    [sliding(50, 1)], {"sum_v": agg("sum", "v"), "count": agg("count")},
    [E(*series("a", [0, 3, 17, 40, 49, 50, 51, 90, 140, 141, 199])), END])

add("large_watermark_jump",
    "Five keys, 200 events, then one watermark releases everything: k = 50 windows per event "
    "(range 5000, slide 100) emitted at once.",
    ["in-order", "sliding", "sliding-divisible", "multi-key", "generated", "end-of-input"],
    [sliding(5000, 100)], {"sum_v": agg("sum", "v"), "max_v": agg("max", "v")},
    [G(kind="stream", seed=11, keys=["a", "b", "c", "d", "e"], start=0, count=200,
       step=[0, 60], disorder=0, fields={"v": {"int": [-50, 50]}}), W(20000), END])

# --------------------------------------------------------------------------- out of order
add("out_of_order_no_late",
    "Events arrive shuffled but never behind the watermark; collect must list each window's "
    "values in time order, not arrival order.",
    ["out-of-order", "sliding", "sliding-divisible", "non-commutative", "single-key"],
    [sliding(1000, 500)], {"ids": agg("collect", "id"), "sum_v": agg("sum", "v")},
    [E(ev("a", 700, v=1, id=1), ev("a", 200, v=2, id=2), ev("a", 950, v=3, id=3),
       ev("a", 50, v=4, id=4)), W(100),
     E(ev("a", 1400, v=5, id=5), ev("a", 100, v=6, id=6), ev("a", 1100, v=7, id=7)),
     W(1000), E(ev("a", 1000, v=8, id=8), ev("a", 1999, v=9, id=9)), END])

add("out_of_order_equal_times",
    "Several events share a time and arrive interleaved with others: ties are ordered by "
    "arrival (collect, first, last).",
    ["out-of-order", "ties", "tumbling", "non-commutative", "single-key"],
    [tumbling(1000)],
    {"ids": agg("collect", "id"), "first_id": agg("first", "id"),
     "last_id": agg("last", "id")},
    [E(ev("a", 500, id="p"), ev("a", 300, id="q"), ev("a", 500, id="r")),
     E(ev("a", 300, id="s"), ev("a", 500, id="t"), ev("a", 999, id="u"),
       ev("a", 0, id="v")), W(500),
     E(ev("a", 500, id="w")), END])

add("collect_sliding_out_of_order",
    "Non-commutative collect on sliding windows with range not a multiple of the slide, "
    "events arriving out of order in several batches.",
    ["out-of-order", "sliding", "sliding-nondivisible", "non-commutative", "single-key"],
    [sliding(900, 400)], {"names": agg("collect", "name")},
    [E(ev("a", 1200, name="l"), ev("a", 300, name="c"), ev("a", 800, name="h")),
     E(ev("a", 0, name="a"), ev("a", 1650, name="q"), ev("a", 450, name="e")), W(300),
     E(ev("a", 300, name="d"), ev("a", 2000, name="u"), ev("a", 1199, name="k")), END])

add("no_watermark_until_end",
    "No watermark until end of input: every event is on time however disordered, and all "
    "windows are emitted at the end.",
    ["out-of-order", "tumbling", "end-of-input", "single-key", "non-commutative"],
    [tumbling(250)], {"ids": agg("collect", "id"), "count": agg("count")},
    [E(*series("a", [900, 10, 600, 250, 249, 1000, 0, 500])), END])

add("many_keys_stream",
    "Fifty keys, 2000 generated events with up to 300 ms disorder, in four batches; the "
    "watermark trails by 250 ms, so some events are late; two windows, five aggregations.",
    ["many-keys", "out-of-order", "generated", "late", "sliding", "sliding-divisible",
     "tumbling", "multi-window", "multi-aggregation"],
    [sliding(2000, 500), tumbling(1000)],
    {"count": agg("count"), "sum_v": agg("sum", "v"), "max_v": agg("max", "v"),
     "argmax_v": agg("argmax", "v", result="id"), "mean_v": agg("mean", "v")},
    [G(kind="stream", seed=1, keys=KEYS50, start=0, count=500, step=[0, 4], disorder=300,
       fields={"v": {"int": [0, 1000]}, "id": {"seq": 0}}), W(750),
     G(kind="stream", seed=2, keys=KEYS50, start=1000, count=500, step=[0, 4], disorder=300,
       fields={"v": {"int": [0, 1000]}, "id": {"seq": 500}}), W(1750),
     G(kind="stream", seed=3, keys=KEYS50, start=2000, count=500, step=[0, 4], disorder=300,
       fields={"v": {"int": [0, 1000]}, "id": {"seq": 1000}}), W(2750),
     G(kind="stream", seed=4, keys=KEYS50, start=3000, count=500, step=[0, 4], disorder=300,
       fields={"v": {"int": [0, 1000]}, "id": {"seq": 1500}}), END])

add("single_key_long_stream",
    "One key, 3000 in-order generated events, several per millisecond at times (step 0), "
    "sliding 1000 / 300; variance, stddev, min, max over float values.",
    ["in-order", "single-key", "generated", "sliding", "sliding-nondivisible", "floats",
     "ties"],
    [sliding(1000, 300)],
    {"var_v": agg("variance", "v"), "std0_v": agg("stddev", "v", ddof=0),
     "min_v": agg("min", "v"), "max_v": agg("max", "v")},
    [G(kind="stream", seed=5, keys=["solo"], start=0, count=3000, step=[0, 3],
       fields={"v": {"eighths": [-100, 100]}}), W(4000), END])

# --------------------------------------------------------------------------- late data
add("late_no_lateness",
    "Allowed lateness 0: events older than the watermark are late, counted per key and "
    "never aggregated; an event at exactly the watermark is on time.",
    ["late", "lateness-boundary", "tumbling", "multi-key"],
    [tumbling(1000)], {"count": agg("count"), "sum_v": agg("sum", "v")},
    [E(ev("a", 100, v=1), ev("b", 200, v=2), ev("a", 1500, v=3)), W(2000),
     E(ev("a", 1500, v=10), ev("b", 1999, v=20), ev("b", 2000, v=30), ev("a", 2500, v=40),
       ev("a", 10, v=50)), END])

add("late_boundary_exact",
    "Lateness 0 and watermark 1000: time 999 is late, 1000 and 1001 are on time; then the "
    "watermark moves to 1001 and 1000 becomes late.",
    ["late", "lateness-boundary", "sliding", "sliding-divisible", "single-key"],
    [sliding(200, 100)], {"count": agg("count"), "ids": agg("collect", "id")},
    [E(*series("a", [950, 1000])), W(1000),
     E(*series("a", [999, 1000, 1001], first_id=10)), W(1001),
     E(*series("a", [1000, 1001, 1100], first_id=20)), END])

add("allowed_lateness_accepts",
    "Allowed lateness 500: with watermark 2000 an event at 1500 (exactly W - L) is on time "
    "and counted in [1500, 2000), which ends at the watermark but is not emitted before "
    "W - L reaches 2000; 1499 is late.",
    ["late", "lateness", "lateness-boundary", "tumbling", "single-key"],
    [tumbling(500)], {"count": agg("count"), "ids": agg("collect", "id")},
    [E(*series("a", [100, 600, 1100, 1600])), W(2000),
     E(*series("a", [1499, 1500, 1200, 1999], first_id=10)), W(2600),
     E(*series("a", [2099, 2100, 2300], first_id=20)), END], lateness=500)

add("allowed_lateness_no_end",
    "Allowed lateness 300 and no end of input: the final watermark 3000 emits only windows "
    "ending at or before 2700; later windows stay open.",
    ["lateness", "no-end-of-input", "sliding", "sliding-divisible", "single-key"],
    [sliding(600, 300)], {"sum_v": agg("sum", "v"), "count": agg("count")},
    [E(*series("a", [0, 250, 900, 1400, 2000, 2450, 2699, 2700, 2950])), W(1000),
     E(*series("a", [800, 699, 2300], first_id=20)), W(3000),
     E(*series("a", [2699, 2700, 3500], first_id=30))], lateness=300)

add("lateness_over_windows",
    "Per-event windows with allowed lateness 200 and no end of input: final watermark 2000 "
    "emits rows only for events before 1800 (W - L > t); 1799 emitted, 1800 not.",
    ["over", "lateness", "lateness-boundary", "no-end-of-input", "late", "single-key"],
    [over(500)], {"sum_v": agg("sum", "v"), "count": agg("count")},
    [E(*series("a", [1000, 1300, 1600, 1799, 1800, 1900])), W(1500),
     E(*series("a", [1299, 1300, 1450], first_id=10)), W(2000)], lateness=200)

add("window_with_only_late_events",
    "A window whose only events are late emits nothing, though the late events are counted.",
    ["late", "empty-window", "tumbling", "single-key"],
    [tumbling(1000)], BASIC,
    [E(ev("a", 100, v=1)), W(3000),
     E(ev("a", 1200, v=2), ev("a", 1800, v=3), ev("a", 3100, v=4)), END])

add("burst_then_late_burst",
    "A burst of 1000 events at time 5000, the watermark passes 5000, then a second burst at "
    "5000 (500 events, all late) and one on-time event.",
    ["burst", "late", "generated", "single-key", "sliding", "sliding-divisible"],
    [sliding(2000, 1000)], {"count": agg("count"), "sum_v": agg("sum", "v")},
    [G(kind="burst", seed=6, keys=["a"], time=5000, count=1000,
       fields={"v": {"int": [1, 9]}}), W(5001),
     G(kind="burst", seed=7, keys=["a"], time=5000, count=500,
       fields={"v": {"int": [1, 9]}}),
     E(ev("a", 5001, v=100)), END])

add("watermark_first",
    "The first step is a watermark: events before it are late from the start, none was ever "
    "on time for that key.",
    ["late", "multi-key", "tumbling"],
    [tumbling(1000)], {"count": agg("count")},
    [W(5000), E(ev("a", 4000, v=1), ev("b", 4999, v=1), ev("b", 5000, v=1), ev("c", 7000, v=1)),
     END])

# --------------------------------------------------------------------------- watermarks
add("watermark_regression",
    "Watermarks that go backwards are ignored: after 3000 then 1000, an event at 2000 is "
    "still late and window [2000, 3000) is not emitted twice.",
    ["watermark-regression", "late", "tumbling", "single-key"],
    [tumbling(1000)], {"count": agg("count"), "sum_v": agg("sum", "v")},
    [E(ev("a", 500, v=1), ev("a", 2500, v=2)), W(3000), W(1000),
     E(ev("a", 2000, v=4), ev("a", 2999, v=8), ev("a", 3000, v=16)), W(2000), W(2999),
     E(ev("a", 3500, v=32)), END])

add("watermark_stall",
    "The watermark stays at 1000 while events up to 5000 arrive: nothing after 1000 is "
    "released until end of input.",
    ["watermark-stall", "in-order", "sliding", "sliding-divisible", "single-key"],
    [sliding(1000, 500)], {"count": agg("count"), "max_v": agg("max", "v")},
    [E(*series("a", [100, 900])), W(1000),
     E(*series("a", [1000, 1800], first_id=10)), W(1000),
     E(*series("a", [2600, 3400], first_id=20)), W(1000), W(1000),
     E(*series("a", [4200, 5000], first_id=30)), END])

add("no_end_of_input",
    "The input stops at watermark 2500 without end of input: only windows and rows whose "
    "emission point the watermark reached appear, for every window kind.",
    ["no-end-of-input", "multi-window", "sliding", "sliding-divisible", "over",
     "count-window", "single-key"],
    [sliding(1000, 500), over(1000), count(2)],
    {"count": agg("count"), "ids": agg("collect", "id")},
    [E(*series("a", [0, 700, 1400, 2100, 2499, 2500, 2800])), W(2500)])

add("no_watermark_no_end",
    "Events but no watermark at all: nothing is late and nothing is emitted.",
    ["no-end-of-input", "tumbling", "over", "multi-window", "single-key"],
    [tumbling(100), over(100)], {"count": agg("count")},
    [E(*series("a", [0, 50, 300]))])

add("idle_keys_no_end",
    "Three keys receive events early, then go idle while the watermark advances in many "
    "small steps and stops without end of input: every window, per-event row and count row "
    "that the last watermark released must be emitted by the timers alone.",
    ["no-end-of-input", "multi-key", "multi-window", "sliding", "sliding-nondivisible",
     "over", "count-window", "in-order"],
    [sliding(500, 200), over(300), count(2, 2)],
    {"count": agg("count"), "ids": agg("collect", "id")},
    [E(*series("a", [0, 150, 420]), *series("b", [90, 700], first_id=10),
       *series("c", [1300, 1500, 1700], first_id=20)),
     *[W(w) for w in range(100, 1701, 100)]])

add("mixed_kinds_stream",
    "Twenty keys, 1500 generated events with up to 400 ms disorder and allowed lateness 150, "
    "watermarks just behind the newest events, so some events are late and others land in windows "
    "only just due; sliding, tumbling, per-event and count windows together.",
    ["many-keys", "out-of-order", "generated", "late", "lateness", "sliding",
     "sliding-nondivisible", "tumbling", "over", "count-window", "multi-window",
     "multi-aggregation", "non-commutative"],
    [sliding(700, 300, 50), tumbling(400), over(250), count(5, 3)],
    {"count": agg("count"), "sum_v": agg("sum", "v"), "ids": agg("collect", "id"),
     "argmax_v": agg("argmax", "v", result="id"), "var_v": agg("variance", "v")},
    [*[step for i in range(5) for step in (
        G(kind="stream", seed=20 + i, keys=[f"u{j}" for j in range(20)], start=1000 * i,
          count=300, step=[0, 6], disorder=400,
          fields={"v": {"int": [0, 99]}, "id": {"seq": 300 * i}}),
        W(1000 * i + 900))], END], lateness=150)

# --------------------------------------------------------------------------- empty
add("empty_windows_gaps",
    "Gaps far longer than the range: windows that hold no event are never emitted.",
    ["empty-window", "sliding", "sliding-divisible", "single-key", "in-order"],
    [sliding(1000, 500)], BASIC,
    [E(*series("a", [0, 100])), W(2000), E(*series("a", [10000], first_id=5)), W(20000),
     E(*series("a", [50000], first_id=9)), END])

add("empty_input",
    "No events at all, only watermarks: no rows and no late counts for any window kind.",
    ["empty-input", "multi-window", "sliding", "over", "count-window", "tumbling"],
    [sliding(1000, 500), tumbling(100), over(1000), count(3)], BASIC,
    [W(0), W(1000), W(500), END])

# --------------------------------------------------------------------------- bursts
add("burst_single_key",
    "A burst of 5000 events of one key at one time between ordinary events; sliding "
    "2000 / 500.",
    ["burst", "generated", "single-key", "sliding", "sliding-divisible", "multi-aggregation"],
    [sliding(2000, 500)],
    {"count": agg("count"), "sum_v": agg("sum", "v"), "max_v": agg("max", "v"),
     "mean_v": agg("mean", "v")},
    [E(ev("a", 9000, v=-5), ev("a", 9999, v=-6)),
     G(kind="burst", seed=8, keys=["a"], time=10000, count=5000,
       fields={"v": {"int": [-1000, 1000]}}),
     E(ev("a", 10001, v=7), ev("a", 11500, v=8)), W(10000), END])

add("burst_many_keys",
    "3000 events at time 0 spread over 50 keys, one tumbling and one sliding spec.",
    ["burst", "generated", "many-keys", "tumbling", "sliding", "sliding-divisible",
     "multi-window"],
    [tumbling(1000), sliding(3000, 1000)],
    {"count": agg("count"), "sum_v": agg("sum", "v"), "min_v": agg("min", "v")},
    [G(kind="burst", seed=9, keys=KEYS50, time=0, count=3000,
       fields={"v": {"int": [0, 99]}}), W(1), END])

# --------------------------------------------------------------------------- over
add("over_basic",
    "Per-event windows of range 1000 (RANGE BETWEEN 1000 PRECEDING AND CURRENT ROW), "
    "in order; the range includes t - 1000 itself.",
    ["over", "in-order", "single-key"],
    [over(1000)], {"sum_v": agg("sum", "v"), "max_v": agg("max", "v"),
                   "count": agg("count")},
    [E(*series("a", [0, 400, 1000, 1001, 1400, 2401, 3500])), W(1200), END])

add("over_peers_equal_times",
    "Per-event windows with peers at equal times: every peer's row includes all peers, even "
    "those that arrived after it; collect orders peers by arrival.",
    ["over", "peers", "ties", "non-commutative", "out-of-order", "single-key"],
    [over(300)], {"ids": agg("collect", "id"), "count": agg("count")},
    [E(ev("a", 1000, id="a1"), ev("a", 700, id="b"), ev("a", 1000, id="a2")),
     E(ev("a", 1300, id="c"), ev("a", 1000, id="a3"), ev("a", 699, id="d")), W(1000),
     E(ev("a", 1300, id="c2")), END])

add("over_out_of_order_late",
    "Per-event windows with out-of-order arrival and late events on two keys: late events "
    "get no row and are in no other event's window.",
    ["over", "out-of-order", "late", "multi-key"],
    [over(500)], {"sum_v": agg("sum", "v"), "first_v": agg("first", "v")},
    [E(ev("x", 1000, v=1), ev("y", 800, v=2), ev("x", 600, v=4)), W(900),
     E(ev("x", 899, v=8), ev("x", 900, v=16), ev("y", 850, v=32), ev("y", 1300, v=64)),
     W(1250), E(ev("x", 1200, v=128), ev("y", 1250, v=256)), END])

add("over_burst",
    "1000 events at one time between two ordinary events: 1000 peer rows, each over every "
    "peer and the preceding event.",
    ["over", "burst", "peers", "generated", "single-key"],
    [over(100)], {"count": agg("count"), "sum_v": agg("sum", "v"), "max_v": agg("max", "v")},
    [E(ev("a", 950, v=0, id=-1)),
     G(kind="burst", seed=10, keys=["a"], time=1000, count=1000,
       fields={"v": {"int": [0, 50]}, "id": {"seq": 0}}),
     E(ev("a", 1101, v=1, id=1000)), END])

add("over_range_zero",
    "Per-event window of range 0: only the peers at the same time.",
    ["over", "peers", "ties", "single-key", "non-commutative"],
    [over(0)], {"ids": agg("collect", "id")},
    [E(*series("a", [5, 5, 6, 5, 7, 7])), END])

# --------------------------------------------------------------------------- count windows
add("count_window_basic",
    "Count windows over the last 3 events, emitted after every event (every = 1); the first "
    "two windows hold fewer events.",
    ["count-window", "in-order", "single-key", "non-commutative"],
    [count(3)], {"sum_v": agg("sum", "v"), "ids": agg("collect", "id")},
    [E(*series("a", [10, 20, 30, 40, 50])), W(35), E(*series("a", [60], first_id=5)), END])

add("count_window_every",
    "Two count specs: last 4 events every 2, and last 2 events every 3 (windows skip "
    "events); with two keys.",
    ["count-window", "multi-window", "multi-key", "in-order", "non-commutative"],
    [count(4, 2), count(2, 3)], {"ids": agg("collect", "id"), "max_v": agg("max", "v")},
    [E(*series("a", [1, 2, 3, 4, 5, 6, 7]), *series("b", [1, 5, 9, 13], first_id=100)),
     END])

add("count_window_out_of_order_ties",
    "Count windows order events by time, ties by arrival, not by arrival alone.",
    ["count-window", "out-of-order", "ties", "non-commutative", "single-key"],
    [count(3)], {"ids": agg("collect", "id"), "last_id": agg("last", "id")},
    [E(ev("a", 300, id="c"), ev("a", 100, id="a"), ev("a", 300, id="d"),
       ev("a", 200, id="b")), W(150),
     E(ev("a", 300, id="e"), ev("a", 150, id="b0")), END])

add("count_window_partial_emission",
    "Count windows without end of input: the k-th window is emitted only once the "
    "watermark passes the k-th event's time (W > t_k); allowed lateness 100 delays that.",
    ["count-window", "no-end-of-input", "lateness", "lateness-boundary", "single-key"],
    [count(2)], {"sum_v": agg("sum", "v")},
    [E(*series("a", [100, 200, 300, 400, 500])), W(500)], lateness=100)

# --------------------------------------------------------------------------- policy windows
add("policy_count_equals_count_window",
    "The slide policy with the count measure and limit 3 gives the same windows as a count "
    "window of size 3 (window index aside), and with every = 2 as count(3, 2).",
    ["policy", "count-window", "multi-window", "out-of-order", "non-commutative",
     "single-key"],
    [policy("count", 3), count(3), policy("count", 3, every=2), count(3, 2)],
    {"ids": agg("collect", "id"), "sum_v": agg("sum", "v")},
    [E(*series("a", [10, 30, 20, 40, 60, 50, 70])), W(45),
     E(*series("a", [80, 80], first_id=10)), END])

add("policy_span",
    "Slide policy with the span measure (newest time - oldest time <= 100, MTA paper "
    "Listing 1): the boundary 100 is kept, 101 is evicted; peers and out-of-order arrival.",
    ["policy", "out-of-order", "ties", "non-commutative", "single-key"],
    [policy("span", 100)], {"ids": agg("collect", "id"), "first_at": agg("first", "at")},
    [E(ev("a", 0, at=0, id="a"), ev("a", 100, at=100, id="b"), ev("a", 50, at=50, id="c")),
     E(ev("a", 201, at=201, id="d"), ev("a", 100, at=100, id="e"), ev("a", 201, at=201, id="f")),
     W(150), E(ev("a", 500, at=500, id="g"), ev("a", 600, at=600, id="h")), END])

add("policy_sum_no_end",
    "Slide policy with the sum measure (keep the newest events whose w sums to <= 10, the "
    "MTA paper's running example), float weights, a row every 2 events, allowed lateness 50 "
    "and no end of input; an event heavier than the limit stays alone.",
    ["policy", "floats", "lateness", "no-end-of-input", "multi-key", "non-commutative"],
    [policy("sum", 10, field="w", every=2)],
    {"ids": agg("collect", "id"), "total": agg("sum", "w")},
    [E(*series("a", [0, 10, 20, 30, 40, 50, 60, 70], field="w",
               values=[4, 2.5, 3.5, 12, 0, 1.25, 8.75, 0.125]),
       *series("b", [5, 15, 25, 35], field="w", values=[10, 0.5, 9.5, 0.5], first_id=100)),
     W(100)], lateness=50)

# --------------------------------------------------------------------------- aggregations
add("first_last_ties",
    "First and last when the oldest and youngest times are shared by several events: "
    "arrival order breaks the tie.",
    ["ties", "non-commutative", "tumbling", "out-of-order", "single-key"],
    [tumbling(100)], {"first_id": agg("first", "id"), "last_id": agg("last", "id")},
    [E(ev("a", 50, id=1), ev("a", 10, id=2), ev("a", 50, id=3), ev("a", 10, id=4),
       ev("a", 99, id=5), ev("a", 99, id=6), ev("a", 10, id=7)), END])

add("argmax_argmin_ties",
    "argmax / argmin with equal extreme values at different and at equal times: the oldest "
    "event (time, then arrival) wins; without 'result' argmax returns the whole event value.",
    ["ties", "non-commutative", "sliding", "sliding-divisible", "out-of-order", "single-key"],
    [sliding(200, 100)],
    {"argmax": agg("argmax", "v", result="id"), "argmin": agg("argmin", "v", result="id"),
     "argmax_event": agg("argmax", "v")},
    [E(ev("a", 150, v=9, id="late-arrival-older"), ev("a", 120, v=1, id="min1"),
       ev("a", 160, v=9, id="newer"), ev("a", 100, v=5, id="x")),
     E(ev("a", 150, v=9, id="peer2"), ev("a", 120, v=1, id="min2"),
       ev("a", 199, v=1, id="min3"), ev("a", 250, v=9, id="y")), END])

add("mincount_maxcount",
    "mincount and maxcount over repeated extreme values: [value, how many times].",
    ["tumbling", "multi-key", "duplicates"],
    [tumbling(1000)], {"minc": agg("mincount", "v"), "maxc": agg("maxcount", "v")},
    [E(*series("a", [0, 1, 2, 3, 4, 5], values=[3, 1, 3, 1, 2, 3]),
       *series("b", [10, 1200, 1300], values=[7, 7, 7], first_id=10)), END])

add("variance_stddev_ddof",
    "Sample (ddof 1) and population (ddof 0) variance and stddev; a window of one event has "
    "no sample variance (null) but population variance 0.",
    ["tumbling", "floats", "single-key", "multi-aggregation"],
    [tumbling(1000)],
    {"var1": agg("variance", "v"), "var0": agg("variance", "v", ddof=0),
     "std1": agg("stddev", "v", ddof=1), "std0": agg("stddev", "v", ddof=0)},
    [E(*series("a", [0, 100, 200, 300, 2500],
               values=[1.5, -2.25, 4.0, 0.125, 7.75])), END])

add("geomean_positive",
    "Geometric mean of positive ints and floats on sliding windows.",
    ["sliding", "sliding-divisible", "floats", "single-key"],
    [sliding(300, 100)], {"gm": agg("geomean", "v")},
    [E(*series("a", [0, 50, 120, 260, 330], values=[1, 8, 0.5, 27, 2.25])), END])

add("bloom_filter",
    "Bloom filters (256 bits, 3 hashes) of a string field on sliding windows: every member "
    "is contained and the filter equals the OR of its members' single-item filters.",
    ["sliding", "sliding-divisible", "multi-key", "duplicates"],
    [sliding(1000, 500)], {"seen": agg("bloom", "name", bits=256, hashes=3)},
    [E(ev("a", 0, name="alpha"), ev("a", 300, name="beta"), ev("a", 700, name="alpha"),
       ev("b", 200, name="gamma"), ev("a", 1200, name="delta"), ev("b", 1600, name="eps")),
     END])

add("all_aggregations_one_query",
    "Every aggregation of the conventions in one query, over sliding, tumbling, per-event "
    "and count windows, two keys, out of order.",
    ["multi-aggregation", "multi-window", "sliding", "sliding-nondivisible", "tumbling",
     "over", "count-window", "out-of-order", "multi-key", "non-commutative", "floats"],
    [sliding(1000, 400), tumbling(700), over(600), count(3, 2)],
    {"count": agg("count"), "sum": agg("sum", "v"), "mean": agg("mean", "v"),
     "min": agg("min", "v"), "max": agg("max", "v"),
     "argmin": agg("argmin", "v", result="name"), "argmax": agg("argmax", "v", result="name"),
     "mincount": agg("mincount", "v"), "maxcount": agg("maxcount", "v"),
     "variance": agg("variance", "v"), "stddev": agg("stddev", "v", ddof=0),
     "geomean": agg("geomean", "v"), "first": agg("first", "name"),
     "last": agg("last", "name"), "collect": agg("collect", "name"),
     "bloom": agg("bloom", "name", bits=128, hashes=2)},
    [E(ev("p", 300, v=2.5, name="p1"), ev("q", 100, v=4, name="q1"),
       ev("p", 100, v=6, name="p0"), ev("p", 900, v=2.5, name="p2")), W(200),
     E(ev("q", 800, v=0.75, name="q2"), ev("p", 1500, v=10, name="p3"),
       ev("q", 250, v=4, name="q1b"), ev("p", 900, v=6, name="p2b")), W(1000),
     E(ev("p", 2100, v=1, name="p4"), ev("q", 1999, v=3.5, name="q3")), END])

add("int_keys",
    "Integer keys, including 0 and a negative key, on tumbling and per-event windows.",
    ["int-keys", "multi-key", "tumbling", "over", "multi-window"],
    [tumbling(100), over(50)], {"sum_v": agg("sum", "v"), "count": agg("count")},
    [E(ev(0, 10, v=1), ev(7, 20, v=2), ev(-3, 30, v=4), ev(0, 60, v=8), ev(7, 150, v=16)),
     W(100), E(ev(-3, 99, v=32), ev(-3, 100, v=64)), END])

add("duplicate_events",
    "Identical events (same key, time and value) are distinct events: each is counted.",
    ["duplicates", "ties", "tumbling", "over", "multi-window", "single-key"],
    [tumbling(1000), over(0)], {"count": agg("count"), "sum_v": agg("sum", "v")},
    [E(ev("a", 10, v=1), ev("a", 10, v=1), ev("a", 10, v=1)), W(5),
     E(ev("a", 10, v=1)), END])

add("float_values",
    "Float values (multiples of 1/8, so sums are exact) with large and small magnitudes: "
    "sum, mean, min, max.",
    ["floats", "sliding", "sliding-divisible", "multi-key", "generated", "out-of-order"],
    [sliding(400, 200)],
    {"sum_v": agg("sum", "v"), "mean_v": agg("mean", "v"), "min_v": agg("min", "v"),
     "max_v": agg("max", "v")},
    [G(kind="stream", seed=12, keys=["a", "b", "c"], start=0, count=600, step=[0, 7],
       disorder=50, fields={"v": {"eighths": [-1000000, 1000000]}}), END])

# --------------------------------------------------------------------------- exact floats
# Doubles whose float sum depends on the order of additions (1e16 + 1.0 - 1e16), spread over
# slices, windows and micro-batches: sums, means and variances are exactly rounded (the
# oracle computes them over the rationals), so every engine must give them bit for bit.
EXACT_FLOATS = {"sum_v": agg("sum", "v"), "mean_v": agg("mean", "v"),
                "var_v": agg("variance", "v"), "std_v": agg("stddev", "v", ddof=0)}

add("exact_floats_cancellation",
    "1e16, 1.0, -1e16 and other cancelling doubles (subnormals, +-1e308, 0.1, -0.0) in "
    "different slices and micro-batches, some out of order: exactly rounded sum, mean, "
    "variance and stddev, compared bit for bit.",
    ["floats", "sliding", "sliding-divisible", "tumbling", "multi-window", "multi-key",
     "multi-aggregation", "out-of-order"],
    [sliding(300, 100), tumbling(100)], EXACT_FLOATS,
    [E(ev("a", 10, v=1e16), ev("b", 15, v=1e308), ev("a", 120, v=1.0)), W(50),
     E(ev("a", 150, v=-1e16), ev("b", 110, v=-1e308), ev("b", 160, v=1e-300)),
     E(ev("a", 60, v=0.1), ev("a", 230, v=-0.3), ev("b", 205, v=5e-324)), W(200),
     E(ev("a", 250, v=-0.0), ev("b", 260, v=3.3), ev("a", 210, v=2.0 ** -60),
       ev("b", 299, v=-1e16)), W(300),
     E(ev("a", 330, v=1e16), ev("b", 310, v=1e16), ev("a", 340, v=-1e16)),
     E(ev("b", 350, v=1.0), ev("a", 399, v=1.0)), END])

add("exact_floats_stream",
    "A generated stream of cancelling doubles (1e16, -1e16, 1.0, 0.1, 1e300, -1e300, "
    "subnormals), out of order, over sliding windows: exactly rounded sum, mean, variance "
    "and stddev, compared bit for bit.",
    ["floats", "sliding", "sliding-divisible", "multi-key", "generated", "out-of-order",
     "multi-aggregation"],
    [sliding(200, 50)], EXACT_FLOATS,
    [G(kind="stream", seed=1616, keys=["a", "b", "c"], start=0, count=400, step=[0, 5],
       disorder=40, fields={"v": {"choice": [1e16, -1e16, 1.0, 0.1, -0.3, 1e300, -1e300,
                                               5e-324, 2.0 ** -1022, 3.3, -0.0]}}),
     W(700), END])

add("exact_floats_geomean",
    "Geometric mean of positive doubles of wildly different magnitudes (1e300, 1e-300, "
    "the smallest subnormal): exp of the exactly rounded mean of the logs.",
    ["floats", "tumbling", "single-key"],
    [tumbling(100)], {"geo_v": agg("geomean", "v"), "mean_v": agg("mean", "v")},
    [E(ev("a", 1, v=1e300), ev("a", 2, v=1e-300), ev("a", 3, v=7.0)), W(50),
     E(ev("a", 4, v=5e-324), ev("a", 5, v=1.5), ev("a", 150, v=0.1)), END])

# --------------------------------------------------------------------------- bad input
add("bad_null_time",
    "An event with a null time: the engine must fail with BadEventError naming the key.",
    ["bad-input", "tumbling", "single-key"],
    [tumbling(1000)], {"count": agg("count")},
    [E(ev("a", 10, v=1)), W(5), E(ev("a", None, v=2)), END],
    expect_error={"class": "BadEventError", "key": "a",
                  "description": "null event time"})

add("bad_unparsable_time",
    "An event whose time is a string that is not a number of milliseconds.",
    ["bad-input", "sliding", "sliding-divisible", "single-key"],
    [sliding(1000, 500)], {"count": agg("count")},
    [E(ev("k1", 10, v=1), ev("k1", "ten", v=2)), END],
    expect_error={"class": "BadEventError", "key": "k1",
                  "description": "event time is not an integer"})

add("bad_missing_field",
    "An event lacks the aggregated field 'v': the error names the field and the key. "
    "Strict nulls: an engine of typed rows (Spark) has no absent field, only a null one.",
    ["bad-input", "tumbling", "multi-key"],
    [tumbling(1000)], {"sum_v": agg("sum", "v")},
    [E(ev("a", 10, v=1), ev("b", 20, w=2)), END],
    expect_error={"class": "BadEventError", "field": "v", "key": "b",
                  "description": "field v missing"}, nulls="error")

add("bad_nan_into_max",
    "NaN into max (order-based aggregations cannot take NaN).",
    ["bad-input", "over", "single-key"],
    [over(100)], {"max_v": agg("max", "v")},
    [E(ev("a", 10, v=1.0)), W(11), E(ev("a", 20, v=float("nan"))), END],
    expect_error={"class": "BadEventError", "field": "v", "key": "a",
                  "description": "NaN into max"}, nulls="error")

add("bad_policy_weight",
    "A negative weight for a policy window's sum measure is bad input naming the field.",
    ["bad-input", "policy", "single-key"],
    [policy("sum", 10, field="w")], {"count": agg("count")},
    [E(ev("a", 10, w=1), ev("a", 20, w=-1)), END],
    expect_error={"class": "BadEventError", "field": "w", "key": "a",
                  "description": "negative policy weight"})

add("bad_null_value",
    "A null value into mean, after rows were already emitted for the key.",
    ["bad-input", "tumbling", "single-key"],
    [tumbling(100)], {"mean_v": agg("mean", "v")},
    [E(ev("a", 10, v=1), ev("a", 150, v=2)), W(200), E(ev("a", 210, v=None)), END],
    expect_error={"class": "BadEventError", "field": "v", "key": "a",
                  "description": "null value into mean"}, nulls="error")


# --------------------------------------------------------------------------- nulls and NaN
NAN = float("nan")
#: every built-in over the nullable int field v (x: a nullable float field with NaN)
NULL_AGGS = {"n": agg("count"), "n_v": agg("count", "v"), "sum_v": agg("sum", "v"),
             "mean_v": agg("mean", "v"), "min_v": agg("min", "v"), "max_v": agg("max", "v"),
             "argmax_v": agg("argmax", "v", result="id"),
             "argmin_v": agg("argmin", "v", result="id"),
             "maxcount_v": agg("maxcount", "v"), "var_v": agg("variance", "v", ddof=0),
             "sd_v": agg("stddev", "v"), "geo_v": agg("geomean", "v"),
             "first_v": agg("first", "v"), "last_v": agg("last", "v"),
             "all_v": agg("collect", "v"), "n_x": agg("count", "x"),
             "max_x": agg("max", "x"), "min_x": agg("min", "x")}

add("nulls_skipped",
    "SQL null semantics (the default nulls='skip'): nulls and NaN in a field are left out "
    "of every built-in aggregation of it; count counts events, count(field) present values.",
    ["nulls", "tumbling", "sliding", "sliding-divisible", "multi-window", "multi-key",
     "multi-aggregation", "out-of-order", "floats", "non-commutative", "end-of-input"],
    [tumbling(100), sliding(200, 100)], NULL_AGGS,
    [E(ev("a", 10, v=4, x=0.5, id=0), ev("a", 20, v=None, x=NAN, id=1),
       ev("b", 30, v=None, x=None, id=2), ev("a", 5, v=2, x=None, id=3),
       ev("b", 40, v=7, x=1.25, id=4), ev("a", 120, v=None, x=NAN, id=5)), W(150),
     E(ev("a", 160, v=4, x=-2.0, id=6), ev("b", 199, v=None, x=NAN, id=7),
       ev("a", 199, v=1, x=NAN, id=8)), END])

add("nulls_all_null_windows",
    "Windows whose values are all null or NaN give null for every built-in except count "
    "(count(field) gives 0), on time, over and count windows.",
    ["nulls", "tumbling", "over", "count-window", "multi-window", "single-key",
     "multi-aggregation", "floats", "non-commutative", "in-order", "end-of-input"],
    [tumbling(100), over(10), count(2)], NULL_AGGS,
    [E(ev("a", 10, v=None, x=None, id=0), ev("a", 20, v=None, x=NAN, id=1),
       ev("a", 130, v=3, x=2.5, id=2), ev("a", 160, v=None, x=NAN, id=3),
       ev("a", 210, v=None, x=None, id=4)), END])

add("nulls_generated_stream",
    "Three keys, 1200 generated events in two batches with about one null in four (NaN too "
    "in x); count, sum, mean and max over sliding windows, so that the fast paths (column "
    "kernels, the batch runtime, Spark's pre-slicing) take it.",
    ["nulls", "generated", "out-of-order", "multi-key", "sliding", "sliding-divisible",
     "floats", "multi-aggregation"],
    [sliding(100, 50)],
    {"n": agg("count"), "sum_v": agg("sum", "v"), "mean_v": agg("mean", "v"),
     "max_x": agg("max", "x")},
    [G(kind="stream", seed=21, keys=["a", "b", "c"], start=0, count=600, step=[0, 2],
       disorder=20, fields={"v": {"choice": [1, 2, 5, None]},
                            "x": {"choice": [0.5, -1.25, 3.0, None, NAN]}}), W(1100),
     G(kind="stream", seed=22, keys=["a", "b", "c"], start=1200, count=600, step=[0, 2],
       disorder=20, fields={"v": {"choice": [3, None, 4, 8]},
                            "x": {"choice": [NAN, 2.0, -0.5, 1.0]}}), END])

add("bad_null_strict",
    "With nulls='error' a null into max is bad input naming the key and field, as NaN is.",
    ["bad-input", "nulls", "tumbling", "single-key"],
    [tumbling(100)], {"n_v": agg("count", "v"), "max_v": agg("max", "v")},
    [E(ev("a", 10, v=1), ev("a", 20, v=None)), END],
    expect_error={"class": "BadEventError", "field": "v", "key": "a",
                  "description": "null into max with nulls='error'"}, nulls="error")


# --------------------------------------------------------------------------- writing
def _dump(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False)


def render(scenario: dict[str, Any]) -> str:
    """A scenario as readable JSON: one event, window, aggregation and step per line."""
    q = scenario["query"]
    aggs = ",\n".join(f"      {_dump(k)}: {_dump(v)}" for k, v in q["aggregations"].items())
    windows = ",\n".join(f"      {_dump(w)}" for w in q["windows"])
    steps = []
    for step in scenario["steps"]:
        if step.get("events"):
            evs = ",\n".join(f"      {_dump(e)}" for e in step["events"])
            steps.append(f'    {{"events": [\n{evs}\n    ]}}')
        else:
            steps.append(f"    {_dump(step)}")
    steps_text = "[\n" + ",\n".join(steps) + "\n  ]" if steps else "[]"
    return (
        "{\n"
        f'  "name": {_dump(scenario["name"])},\n'
        f'  "description": {_dump(scenario["description"])},\n'
        f'  "tags": {_dump(scenario["tags"])},\n'
        '  "query": {\n'
        f'    "windows": [\n{windows}\n    ],\n'
        f'    "aggregations": {{\n{aggs}\n    }},\n'
        f'    "allowed_lateness": {_dump(q["allowed_lateness"])}'
        + (f',\n    "nulls": {_dump(q["nulls"])}\n' if "nulls" in q else "\n")
        + "  },\n"
        f'  "steps": {steps_text},\n'
        f'  "expect_error": {_dump(scenario["expect_error"])}\n'
        "}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.make_scenarios")
    parser.add_argument("--check", action="store_true",
                        help="only check that the files are up to date")
    args = parser.parse_args(argv)
    names = [s["name"] for s in SCENARIOS]
    if len(set(names)) != len(names):
        print("duplicate scenario names", file=sys.stderr)
        return 1
    wanted = {f"{s['name']}.json": render(s) for s in SCENARIOS}
    existing = {p.name for p in SCENARIO_DIR.glob("*.json")} if SCENARIO_DIR.exists() else set()
    stale = sorted(n for n, text in wanted.items()
                   if n not in existing or (SCENARIO_DIR / n).read_text("utf-8") != text)
    extra = sorted(existing - set(wanted))
    if args.check:
        for n in stale:
            print(f"out of date: {n}", file=sys.stderr)
        for n in extra:
            print(f"not generated by make_scenarios: {n}", file=sys.stderr)
        return 1 if stale or extra else 0
    SCENARIO_DIR.mkdir(exist_ok=True)
    for n in stale:
        (SCENARIO_DIR / n).write_text(wanted[n], "utf-8")
    for n in extra:
        (SCENARIO_DIR / n).unlink()
    print(f"{len(wanted)} scenarios; wrote {len(stale)}, removed {len(extra)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
