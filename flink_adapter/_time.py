"""Flink times <-> the library's integer milliseconds, and the watermark <-> timer mapping.

Flink's watermark ``wm`` (ms) means that no element with a timestamp ``<= wm`` is still to
come; the driver's watermark ``W`` means that every event with ``time < W`` has arrived, so
``W = wm + 1``. Flink starts at ``Long.MIN_VALUE`` (no watermark yet: ``W = None``) and ends
bounded input at ``Long.MAX_VALUE`` (``W = END_OF_INPUT``: everything is released).

An event-time timer at ``T`` fires once ``wm >= T``. The driver asks to be woken once
``W >= N``, i.e. ``wm >= N - 1``: the timer goes at ``T = N - 1``. When it fires, the
operator's current watermark is at least ``T``, and that watermark (which may have jumped
further) is what the firing passes to the driver.
"""

from __future__ import annotations

from typing import Any

from adapters import END_OF_INPUT
from adapters.engine.event_time import datetime_ms

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


def driver_watermark(wm: int | None) -> int | float | None:
    """The driver's watermark ``W`` for Flink's current watermark ``wm``."""
    if wm is None or wm <= LONG_MIN:
        return None
    if wm >= LONG_MAX:
        return END_OF_INPUT
    return wm + 1


def timer_for(n: int | None) -> int | None:
    """The event-time timer (ms) that fires once the driver's watermark reaches ``n``
    (``None``: no timer needed). Beyond Flink's range it is the end-of-input timer."""
    if n is None:
        return None
    return min(max(n - 1, LONG_MIN + 1), LONG_MAX)


def to_ms(x: Any) -> Any:
    """A time as integer ms when it is a ``datetime`` (naive means UTC, as Flink's
    ``TIMESTAMP`` columns arrive), a PyFlink ``Instant`` (``TIMESTAMP_LTZ``) or a
    ``timedelta``, exactly (a fraction of a millisecond raises ``ValueError``); anything
    else is returned as is (the driver parses ints, integral floats and decimal strings, and
    rejects the rest with a clear error)."""
    if type(x).__name__ == "Instant" and hasattr(x, "nanos"):
        ms, rest = divmod(x.seconds * 1_000_000_000 + x.nanos, 1_000_000)
        if rest:
            raise ValueError(f"{x!r} is not a whole number of milliseconds")
        return ms
    return datetime_ms(x)


__all__ = ["LONG_MAX", "LONG_MIN", "driver_watermark", "timer_for", "to_ms"]
