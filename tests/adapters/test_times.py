"""The engine-free time glue the engine adapters share: ``datetime_ms`` and
``time_extractor`` (Beam and Flink convert their own time types, then call these)."""

from __future__ import annotations

import datetime as dt

import pytest

from adapters import BadEventError
from adapters.engine.event_time import datetime_ms, time_extractor


def test_datetime_ms_is_exact() -> None:
    utc = dt.timezone.utc
    assert datetime_ms(dt.datetime(1970, 1, 1, 0, 0, 1, 5000)) == 1005  # naive: UTC
    assert datetime_ms(dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=utc)) == -1000
    assert datetime_ms(dt.timedelta(hours=1)) == 3_600_000
    assert datetime_ms(7) == 7 and datetime_ms("7") == "7"  # left to the driver
    with pytest.raises(ValueError, match="whole number of milliseconds"):
        datetime_ms(dt.timedelta(microseconds=1500))


def test_time_extractor_names_key_and_field() -> None:
    by_field = time_extractor("t", lambda v, name: v[name], datetime_ms)
    assert by_field("k", {"t": dt.timedelta(seconds=2)}) == 2000
    with pytest.raises(BadEventError, match="key 'k': the event has no time field 't'") as e:
        by_field("k", {"x": 1})
    assert (e.value.key, e.value.field) == ("k", "t")
    with pytest.raises(BadEventError, match=r"time field 't': .*milliseconds"):
        by_field("k", {"t": dt.timedelta(microseconds=1)})
    by_function = time_extractor(lambda v: v[0], lambda v, name: None, datetime_ms)
    assert by_function("k", (5,)) == 5
    with pytest.raises(BadEventError, match="the time function failed") as e:
        by_function("k", ())
    assert e.value.field == "time"
