"""Exact conversions between Beam times (``Timestamp``/``Duration``: integer microseconds) and
the library's integer milliseconds, and the watermark <-> timer mapping.

Beam's watermark ``wm`` (microseconds) means that elements with a timestamp ``< wm`` are
late; the library's watermark ``W`` (ms) means that every event with ``time < W`` has arrived.
For events at whole milliseconds these agree when ``W = ceil(wm / 1000)``. A watermark timer at
``T`` fires once ``wm > T``, i.e. ``wm >= T + 1``, so when it fires ``W >= T // 1000 + 1``.
The driver asks to be woken once ``W >= N``: the timer goes at ``T = (N - 1) * 1000``, and its
firing passes ``W = T // 1000 + 1 = N`` (the largest watermark the firing proves).
"""

from __future__ import annotations

from typing import Any

from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, Timestamp

from adapters import BadEventError
from adapters.engine.event_time import datetime_ms

#: Largest timer time a key may use: the end of Beam's global window (a timer there fires
#: only at the end of input).
GLOBAL_MAX_MICROS = GlobalWindow().max_timestamp().micros
MIN_MICROS = MIN_TIMESTAMP.micros


def timestamp_ms(ts: Timestamp, key: Any = None) -> int:
    """A Beam element timestamp as exact integer milliseconds.

    Raises :class:`~adapters.BadEventError` (field ``"timestamp"``) for an element without a
    timestamp (Beam's ``MIN_TIMESTAMP``, e.g. ``beam.Create`` without ``TimestampedValue``)
    or a timestamp that is not a whole number of milliseconds.
    """
    micros = ts.micros
    if micros <= MIN_MICROS or micros >= MAX_TIMESTAMP.micros:
        raise BadEventError(
            f"key {key!r}: the element has no event timestamp ({ts}); give the elements "
            f"timestamps (beam.window.TimestampedValue, or a source that sets them) or pass "
            f"time=<field or function> to SlidingAggregate", key=key, field="timestamp",
            time=None)
    ms, rest = divmod(micros, 1000)
    if rest:
        raise BadEventError(
            f"key {key!r}: element timestamp {ts} is not a whole number of milliseconds "
            f"({micros} us); event times are integer milliseconds. Note that float seconds "
            f"lose precision (TimestampedValue(x, 256.229) is 256228999 us): build timestamps "
            f"as Timestamp(micros=ms * 1000), or pass time=<field or function>", key=key,
            field="timestamp", time=ts)
    return ms


def to_ms(x: Any) -> Any:
    """A time or duration as integer ms when it is a Beam ``Timestamp``/``Duration``, a
    ``datetime`` (naive means UTC) or a ``timedelta``, exactly (a fraction of a millisecond
    is refused with ``ValueError``); anything else is returned as is (the driver parses ints,
    integral floats and decimal strings, and rejects the rest with a clear error)."""
    if isinstance(x, (Timestamp, Duration)):
        ms, rest = divmod(x.micros, 1000)
        if rest:
            raise ValueError(f"{x!r} is not a whole number of milliseconds")
        return ms
    return datetime_ms(x)


def timer_micros(n: int) -> int | None:
    """The watermark-timer time (us) that fires once the watermark reaches ``n`` ms, or
    ``None`` when it would lie outside Beam's timestamp range (the end-of-input timer then
    covers it)."""
    t = (n - 1) * 1000
    if t <= MIN_MICROS or t > GLOBAL_MAX_MICROS:
        return None
    return t


def fired_watermark(timer_ts: Timestamp) -> int:
    """The watermark (ms) a watermark timer's firing proves: ``W = T // 1000 + 1``."""
    return timer_ts.micros // 1000 + 1


def row_micros(row: dict[str, Any]) -> int:
    """A row's natural output timestamp (us): the window's last microsecond ``end - 1 us``
    (Beam's ``IntervalWindow.max_timestamp()``, where ``CombinePerKey`` puts its results) for
    ``[start, end)`` rows, the event's own timestamp for per-event (OVER) rows."""
    end = row.get("end")
    if end is not None:
        return end * 1000 - 1
    return row["time"] * 1000
