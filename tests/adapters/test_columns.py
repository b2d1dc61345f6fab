"""The column transport of driver events and rows (``adapters.engine.columns``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from adapters import Output
from adapters.driver.results import LateEvent
from adapters.engine.columns import (
    AGGS_OUT,
    EVENT_OUT,
    KEY_OUT,
    LATE,
    TIME_OUT,
    TYPED_AGG_OUT,
    TYPED_EVENT_OUT,
    WINDOW_OUT,
    Typed,
    decode_key,
    json_fixer,
    json_values,
    order_key,
    wide_columns,
)


@dataclass
class Plan:
    key_names: tuple[str, ...] = ("k",)
    value_fixer: Any = None
    agg_encoders: dict[str, Any] = field(default_factory=dict)
    json_values: tuple[str, ...] = ()
    json_aggs: tuple[str, ...] = ()
    typed: Typed = field(default_factory=lambda: Typed(keys=None, values=(), aggs=()))
    has_order: bool = False


def test_keys_values_times_and_orders_decode():
    assert decode_key(Plan(), '{"k": "a"}') == "a"
    assert decode_key(Plan(key_names=("a", "b")), '{"a": 1, "b": "x"}') == (1, "x")
    assert decode_key(Plan(), '{"k": [1, 2]}') == '{"k": [1, 2]}'  # unhashable: the text
    assert sorted([3, None, math.nan, 1], key=order_key)[:2] == [1, 3]
    texts: dict[int, str] = {}
    values = json_values(Plan(value_fixer=json_fixer(("struct", (("x", "float"),)))),
                         ['{"x": "NaN"}', '{"x": 1.5}'], texts)
    assert math.isnan(values[0]["x"]) and values[1] == {"x": 1.5}
    assert texts[id(values[1])] == '{"x": 1.5}'


def test_the_fixer_repairs_non_finite_floats_only_where_the_shape_has_floats():
    fix = json_fixer(("struct", (("xs", ("array", "float")), ("s", None))))
    fixed = fix({"xs": ["Infinity", 1.0, None, "-Infinity"], "s": "NaN"})
    assert fixed == {"xs": [math.inf, 1.0, None, -math.inf], "s": "NaN"}
    assert json_fixer(("struct", (("s", None),))) is None and json_fixer(None) is None


def test_json_rows_carry_window_rows_over_rows_and_late_events():
    out = Output(rows=[{"window": 0, "key": "a", "start": 0, "end": 10, "m": 3},
                       {"window": 1, "key": "a", "time": 4, "event": {"v": 3}, "m": 3}],
                 late=[LateEvent("a", 2, {"v": 9})])
    cols = wide_columns(Plan(json_values=("v",), json_aggs=("m",)), '{"k":"a"}', out)
    assert cols[WINDOW_OUT] == [0, 1, LATE] and cols[TIME_OUT] == [None, 4, 2]
    assert cols[KEY_OUT] == ['{"k":"a"}'] * 3
    assert cols[EVENT_OUT] == [None, '{"v":3}', '{"v":9}']
    assert cols[AGGS_OUT] == ['{"m":3}', '{"m":3}', None]
    assert wide_columns(Plan(), "a", Output()) is None


def test_typed_rows_carry_typed_columns():
    plan = Plan(key_names=("a", "b"), typed=Typed(keys=("t1", "t2"), values=(("v", "long"),),
                                                  aggs=(("m", "long"),)))
    out = Output(rows=[{"window": 0, "key": ("x", 1), "time": 4, "event": {"v": 3}, "m": 3}])
    cols = wide_columns(plan, ("x", 1), out)
    assert (cols[f"{KEY_OUT}0"], cols[f"{KEY_OUT}1"]) == (["x"], [1])
    assert cols[f"{TYPED_EVENT_OUT}0"] == [3] and cols[f"{TYPED_AGG_OUT}0"] == [3]
    assert EVENT_OUT not in cols and AGGS_OUT not in cols
