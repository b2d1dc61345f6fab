"""Event times and watermarks: integer milliseconds, parsed strictly.

``parse_time`` accepts ints and int-likes (NumPy), integral floats and decimal strings;
``parse_watermark`` also accepts ``"end"`` / :data:`END_OF_INPUT`. Anything else raises
:class:`~adapters.errors.BadEventError` naming the key and field.
"""

from __future__ import annotations

import datetime as _dt
import math
import operator
from collections.abc import Callable
from typing import Any

from adapters.errors import BadEventError

INF = math.inf
#: The watermark that means "end of input": everything pending is released and emitted.
END_OF_INPUT = math.inf


def parse_watermark(watermark: Any) -> int | float:
    """A watermark as an ``int`` (ms), ``inf`` for ``"end"`` / ``END_OF_INPUT``, or ``-inf``.

    Raises :class:`~adapters.errors.BadEventError` (field ``"watermark"``) otherwise.
    """
    if type(watermark) is int:
        return watermark
    if isinstance(watermark, str) and watermark.strip().lower() == "end":
        return INF
    if isinstance(watermark, float) and not isinstance(watermark, bool):
        if watermark in (INF, -INF):
            return watermark
        if watermark.is_integer():
            return int(watermark)
    elif not isinstance(watermark, (bool, str)) and watermark is not None:
        try:
            return operator.index(watermark)
        except TypeError:
            pass
    raise BadEventError(f"a watermark must be integer milliseconds or 'end', got {watermark!r}",
                        field="watermark", time=watermark)


def _time_error(key: Any, time: Any, time_field: str) -> BadEventError:
    what = "null" if time is None else "not an integer number of milliseconds"
    return BadEventError(f"key {key!r}: event time {time!r} (field {time_field!r}) is {what}",
                         key=key, field=time_field, time=time)


def parse_time(time: Any, key: Any = None, time_field: str = "time") -> int:
    """An event time as ``int`` ms: ints and int-likes, integral floats and decimal strings
    are accepted; ``None``, bools, NaN, fractions and other strings raise
    :class:`~adapters.errors.BadEventError` naming the field and key."""
    if type(time) is int:
        return time
    if time is None or isinstance(time, bool):
        raise _time_error(key, time, time_field)
    if isinstance(time, float):
        if time.is_integer():
            return int(time)
        raise _time_error(key, time, time_field)
    if isinstance(time, str):
        try:
            return int(time.strip())
        except ValueError:
            raise _time_error(key, time, time_field) from None
    try:
        return operator.index(time)
    except TypeError:
        raise _time_error(key, time, time_field) from None


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


__all__ = ["END_OF_INPUT", "INF", "datetime_ms", "parse_time", "parse_watermark",
           "time_extractor"]
