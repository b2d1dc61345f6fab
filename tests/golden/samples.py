"""What the golden state samples hold: the decoded content the committed bytes must decode to.

Each persisted format has one version, and these samples pin it. ``make_golden.py`` encodes
them into ``tests/golden/*.json`` (once, by hand, when a sample is added);
``tests/adapters/test_golden_formats.py`` decodes the committed bytes with the current code
and compares them with these definitions. Never regenerate the files to make that test pass:
a failure means checkpoints written by released code no longer load.
"""

from __future__ import annotations

import math
from typing import Any

NAN, INF = math.nan, math.inf

#: Event values (``encode_value``): name -> value. Each codec form and each JSON tag.
VALUES: dict[str, Any] = {
    "json_none": None,
    "json_bool": True,
    "json_int": -5,
    "json_big_int": 2**70,
    "json_str": "é\u2028x",
    "json_list": [1, "a", None, [2.5, -0.0]],
    "json_dict_without_floats": {"v": 1, "n": None, "s": "x"},
    "json_dict_nested": {"a": {"b": 1.5}, "c": [1]},
    "tag_f_nan_and_infinities": [NAN, INF, -INF],
    "tag_t_tuple": (1, "x", (2.5,)),
    "tag_b_bytes": b"\x00\x01\xff",
    "tag_d_non_str_keys": {1: "a", 2: None, (3, 4): 5},
    "tag_d_dollar_key": {"$t": 1},
    "packed_float": 2.5,
    "packed_float_negative_zero": -0.0,
    "packed_float_nan": NAN,
    "packed_float_infinity": -INF,
    "packed_record_floats": {"x": 1.0, "y": -2.5},
    "packed_record_mixed": {"v": 1.5, "n": None, "s": "é", "b": True, "i": 2**70, "z": INF},
}

#: Log entries (``encode_entry``): name -> (entry time, entry seq, times, values).
ENTRIES: dict[str, tuple[int, int, list[int], list[Any]]] = {
    "one_event": (7, 3, [7], [{"v": 1.5}]),
    "segment_json_body": (3, 0, [1, 3, 2], [1, "a", (1, 2)]),
    "segment_json_times_float_body": (2**70 + 1, 5, [2**70, 2**70 + 1], [1.5, 2.5]),
    "segment_float_body": (6, 9, [5, 6, 6], [0.5, -0.0, INF]),
    "segment_float_records": (2, 0, [1, 2], [{"v": 1.0}, {"v": NAN}]),
    "segment_mixed_records": (2, 4, [1, 2], [{"v": 1.5, "n": None, "s": "x"},
                                             {"v": -1.0, "n": 2, "s": "é"}]),
    "segment_negative_times": (-1, 0, [-5, -1], [{"a": 1.0, "b": 2.0},
                                                 {"a": 3.0, "b": 4.0}]),
}

#: Spark's packed segments (``adapters.state.segments``): name -> log entries.
SPARK_SEGMENTS: dict[str, list[tuple[int, int, bytes]]] = {
    "one_entry": [(5, 0, b"\x02\x00\x00\x00\x00\x00\x00\x04@")],
    "three_entries": [(5, 1, b'{"a":1}'), (-3, 2, b""), (2**40, 3, "é".encode())],
    "extreme_times": [(-2**63, 0, b"x"), (2**63 - 1, 2**63 - 1, b"y")],
}

#: Log entries as an engine stores them (Beam's coders, Flink's map state).
#: Spark streaming bucket blobs (adapters.state.buckets): bucket count, registered timer,
#: live and dead log elements, and per key id: (driver metadata or None, timer, trim bound).
SPARK_BUCKETS: dict[str, tuple[int, int | None, int, int,
                               dict[bytes, tuple[bytes | None, int | None, int | None]]]] = {
    "empty": (16, None, 0, 0, {}),
    "two_keys": (16, 3_600_000, 3, 1, {
        b'"JFK"': (b'{"codec":2,"q":"00000000000000aa","n":7,"wm":3599000,"seq":3,"rel":2,'
                   b'"late":0,"pol":[]}', 3_600_000, 1_000),
        b'["a",1]': (None, None, None)}),
    "extreme_values": (1, -2**63 + 1, 2**32 - 1, 0, {"é".encode(): (b"{}", 2**63 - 1, -2**62)}),
}
ENGINE_LOG: list[tuple[int, int, bytes]] = [
    (5, 0, b'{"a":1}'), (-3, 2, b""), (2**40, 2**40, b"\x02" + bytes(6) + b"\x04@")]

_SUM_COUNT = {"s": {"fn": "sum", "field": "v"}, "c": {"fn": "count"},
              "ids": {"fn": "collect", "field": "v"}}

#: Whole checkpoints of one key per lane kind: query, the calls made before the checkpoint
#: (``events``: [time, value], then ``watermark`` if not None) and the key's stored meta and
#: log, then
#: the rows a driver restored from them emits at the end of input.
CHECKPOINTS: dict[str, dict[str, Any]] = {
    "time_lane_sliding": {
        "query": {"windows": [{"kind": "sliding", "range": 10, "slide": 5}],
                  "aggregations": _SUM_COUNT, "allowed_lateness": 2},
        "calls": [{"events": [[1, 1], [4, 2]], "watermark": None},
                  {"events": [[12, 3], [3, 4], [14, 5]], "watermark": 11},
                  {"events": [[1, 6]], "watermark": None}],
    },
    "time_lane_no_watermark": {
        "query": {"windows": [{"kind": "tumbling", "size": 5}, {"kind": "over", "range": 3}],
                  "aggregations": _SUM_COUNT},
        "calls": [{"events": [[2, 1]], "watermark": None},
                  {"events": [[4, 2], [7, 3]], "watermark": None}],
    },
    "count_lane": {
        "query": {"windows": [{"kind": "count", "size": 3, "every": 1}],
                  "aggregations": _SUM_COUNT},
        "calls": [{"events": [[1, 1], [2, 2], [3, 3]], "watermark": 2},
                  {"events": [[5, 4]], "watermark": 4}],
    },
    "policy_lanes": {
        "query": {"windows": [{"kind": "policy", "measure": "count", "limit": 2},
                              {"kind": "policy", "measure": "sum", "field": "v",
                               "limit": 6}],
                  "aggregations": _SUM_COUNT},
        "calls": [{"events": [[1, 1], [2, 2], [3, 3]], "watermark": 3},
                  {"events": [[4, 4]], "watermark": 4}],
    },
    "ended": {
        "query": {"windows": [{"kind": "count", "size": 2},
                              {"kind": "policy", "measure": "count", "limit": 3}],
                  "aggregations": _SUM_COUNT},
        "calls": [{"events": [[1, 1], [2, 2], [3, 3]], "watermark": 2},
                  {"events": [[4, 4]], "watermark": "end"}],
    },
}

#: KVS-layout checkpoints (``adapters/state/pairs.py``): one key, calls on an OVER query with
#: ``layout="kvs"``; recorded: meta, log (the entries with pending events only) and the pair
#: map. Enough events that pairs leave the tails (levels of several pairs); the first call's
#: log entry is trimmed by the second, so its events are in the map only.
KVS_CHECKPOINTS: dict[str, dict[str, Any]] = {
    "over_max_amta": {
        "query": {"windows": [{"kind": "over", "range": 6}],
                  "aggregations": {"c": {"fn": "count"},
                                   "m": {"fn": "max", "field": "v"}},
                  "layout": "kvs"},
        "calls": [{"events": [[t, (t * 7) % 11] for t in range(1, 20)], "watermark": 12},
                  {"events": [[20, 3], [21, 9]], "watermark": 20}],
    },
    "over_collect_log_mta": {
        "query": {"windows": [{"kind": "over", "range": 8}],
                  "aggregations": {"ids": {"fn": "collect", "field": "v"}},
                  "algorithm": "log_mta", "layout": "kvs"},
        "calls": [{"events": [[t, t] for t in range(0, 30, 2)], "watermark": 25},
                  {"events": [[31, 100]], "watermark": 29}],
    },
    # partials that are exact sums (ints beyond 64 bits, stored as packed big ints)
    "over_sum_mean": {
        "query": {"windows": [{"kind": "over", "range": 6}],
                  "aggregations": {"a": {"fn": "mean", "field": "v"},
                                   "s": {"fn": "sum", "field": "v"}},
                  "layout": "kvs"},
        "calls": [{"events": [[t, ((t * 7) % 11) / 4] for t in range(1, 20)], "watermark": 12},
                  {"events": [[20, -0.5], [21, 1e300]], "watermark": 20}],
    },
    # a longer window whose pairs reach the map (a write buffer of 16 pairs filled, dead pairs
    # deleted, several pages)
    "over_max_long": {
        "query": {"windows": [{"kind": "over", "range": 300}],
                  "aggregations": {"m": {"fn": "max", "field": "v"}}, "layout": "kvs"},
        "calls": [{"events": [[t, (t * 7) % 101] for t in range(c, c + 100)],
                   "watermark": c + 95} for c in range(0, 700, 100)],
    },
}
