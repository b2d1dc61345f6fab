"""Event times and watermarks: integer milliseconds, parsed strictly.

``parse_time`` accepts ints and int-likes (NumPy), integral floats and decimal strings;
``parse_watermark`` also accepts ``"end"`` / :data:`END_OF_INPUT`. Anything else raises
:class:`~adapters.errors.BadEventError` naming the key and field.
"""

from __future__ import annotations

import math
import operator
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


__all__ = ["END_OF_INPUT", "INF", "parse_time", "parse_watermark"]
