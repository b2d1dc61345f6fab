"""Window builders and the shared duration parser (``adapters.query.windows``)."""

from __future__ import annotations

import datetime as dt

import pytest

from adapters import WindowDriver
from adapters.query.windows import (
    count_window,
    duration_ms,
    normalize_window,
    over,
    query_of_call,
    sliding,
    tumbling,
)
from swag_core.aggregations import Max


class Micros:
    """Duck-typed like Beam's ``Duration`` (the engine-free code imports no engine)."""

    def __init__(self, micros: int) -> None:
        self.micros = micros


@pytest.mark.parametrize(("value", "ms"), [
    (1500, 1500), (2.0, 2), (dt.timedelta(hours=1, milliseconds=5), 3_600_005),
    (Micros(90_000_000), 90_000), ("1 hour", 3_600_000), ("90 s", 90_000),
    ("1 hour 30 minutes", 5_400_000), ("interval 2 days", 172_800_000), ("10s", 10_000),
    ("0.5 s", 500), (" 3 MS ", 3), ("250ms", 250), ("interval 10 seconds", 10_000),
    # decimals summed exactly (a float sum refused these as fractions of a millisecond)
    ("1.1 h", 3_960_000), ("1.001 s", 1_001), ("4.1 min", 246_000),
])
def test_durations(value: object, ms: int) -> None:
    assert duration_ms(value, "range") == ms


@pytest.mark.parametrize(("value", "error", "message"), [
    (True, TypeError, "range: expected integer milliseconds"),
    (None, TypeError, "range: expected integer milliseconds"),
    (object(), TypeError, "range: expected"),
    (1.5, ValueError, "not a whole number of milliseconds"),
    (dt.timedelta(microseconds=1500), ValueError, "not a whole number"),
    (Micros(1), ValueError, "not a whole number"),
    ("1 fortnight", ValueError, "unknown unit 'fortnight'"),
    ("soon", ValueError, "range: expected"),
    ("0.0001 s", ValueError, "not a whole number"),
    ("0.5 ms", ValueError, "not a whole number"),
    ("1.0000000000000001 h", ValueError, "not a whole number"),  # a float sum rounds it away
])
def test_bad_durations_name_the_parameter(value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        duration_ms(value, "range")


def test_builders_give_specs_the_driver_reads() -> None:
    assert sliding("1 hour", "5 minutes") == {
        "kind": "sliding", "range": 3_600_000, "slide": 300_000, "offset": 0}
    assert tumbling(dt.timedelta(minutes=10), 5) == {
        "kind": "tumbling", "size": 600_000, "offset": 5}
    assert over("1 h") == {"kind": "over", "range": 3_600_000}
    assert count_window(3, 2) == {"kind": "count", "size": 3, "every": 2}
    spec = {"kind": "sliding", "range": "2 s", "slide": dt.timedelta(seconds=1)}
    assert normalize_window(spec, "windows[0]") == {"kind": "sliding", "range": 2000,
                                                    "slide": 1000}
    assert spec["range"] == "2 s"  # not modified
    with pytest.raises(ValueError, match=r"windows\[1\]\.range"):
        normalize_window({"kind": "over", "range": "never"}, "windows[1]")
    count = {"kind": "count", "size": 4}
    assert normalize_window(count) is count
    driver = WindowDriver({"windows": [sliding("2 s", "1 s"), over("1 s")],
                           "aggregations": {"n": {"fn": "count"}}})
    assert [w.range for w in driver.query.windows] == [2000, 1000]


def test_query_of_call_for_the_engines() -> None:
    query = query_of_call(sliding("1 hour", "10 minutes"), None, {"n": {"fn": "count"}},
                          "5 s", nulls="skip")
    assert query == {"windows": [{"kind": "sliding", "range": 3_600_000, "slide": 600_000,
                                  "offset": 0}],
                     "aggregations": {"n": {"fn": "count"}}, "allowed_lateness": 5000,
                     "nulls": "skip"}
    one = Max()
    assert query_of_call(None, [over(10)], one, 0)["aggregations"] == {one.name: one}
    with pytest.raises(ValueError, match="exactly one of window"):
        query_of_call(over(10), [over(10)], {"n": {"fn": "count"}}, 0)
    with pytest.raises(ValueError, match=r"aggregations=\.\.\. is required"):
        query_of_call(over(10), None, None, 0)
    for wrong in ([{"fn": "count"}], ({"fn": "count"},)):
        with pytest.raises(TypeError, match=r"aggregations must be a mapping .* got a "
                                            rf"{type(wrong).__name__}: name each output"):
            query_of_call(over(10), None, wrong, 0)
