"""Event time as engines hand it over: an engine's ``time=`` argument (a field name or a
function of the value) turned into ``(key, value) -> time``, and exact ``datetime`` /
``timedelta`` -> integer ms. Each engine converts only its own time types first (Beam
``Timestamp``, Flink ``Instant``); the driver then parses the result
(:func:`adapters.query.times.parse_time`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from adapters.errors import BadEventError

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def datetime_ms(x: Any) -> Any:
    """A ``datetime`` (naive means UTC) or a ``timedelta`` as exact integer ms (a fraction
    of a millisecond raises ``ValueError``); anything else is returned as is. Engines convert
    their own time types first (Beam ``Timestamp``, Flink ``Instant``) and call this."""
    if isinstance(x, _dt.datetime):
        if x.tzinfo is None:
            x = x.replace(tzinfo=_dt.timezone.utc)
        x = x - _EPOCH
    elif not isinstance(x, _dt.timedelta):
        return x
    ms, rest = divmod((x.days * 86_400 + x.seconds) * 1_000_000 + x.microseconds, 1000)
    if rest:
        raise ValueError(f"{x!r} is not a whole number of milliseconds")
    return ms


def time_extractor(time: str | Callable[[Any], Any], read: Callable[[Any, str], Any],
                   to_ms: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """``(key, value) -> event time`` for an engine's ``time=`` argument: a field name (read
    by ``read(value, name)``) or a function of the value; ``to_ms`` is the engine's
    conversion of its time types. Failures raise :class:`BadEventError` naming the key and
    the field (``"time"`` for a function); the driver parses what it returns."""
    if isinstance(time, str):
        name = time

        def by_field(key: Any, value: Any) -> Any:
            try:
                return to_ms(read(value, name))
            except (KeyError, AttributeError, TypeError, IndexError):
                raise BadEventError(f"key {key!r}: the event has no time field {name!r}: "
                                    f"{value!r:.100}", key=key, field=name) from None
            except ValueError as exc:
                raise BadEventError(f"key {key!r}: time field {name!r}: {exc}", key=key,
                                    field=name) from None
        return by_field
    fn = time

    def by_function(key: Any, value: Any) -> Any:
        try:
            return to_ms(fn(value))
        except BadEventError:
            raise
        except Exception as exc:
            raise BadEventError(f"key {key!r}: the time function failed on {value!r:.100}: "
                                f"{exc!r}", key=key, field="time") from exc
    return by_function


__all__ = ["datetime_ms", "time_extractor"]
