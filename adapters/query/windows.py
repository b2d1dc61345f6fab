"""Window spec builders for the engine APIs, and the one duration parser they share.

``sliding("1 hour", "5 minutes")``, ``tumbling(timedelta(minutes=10))``, ``over(3_600_000)``
and ``count_window(100, every=10)`` return the dict form of a window spec
(``docs/adapters.md``, section 2) with every duration in integer milliseconds, ready for
:func:`adapters.parse_query`. The Spark and Beam adapters re-export them, so the same calls
work on every engine.
"""

from __future__ import annotations

import datetime
import operator
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hr": 3_600_000, "hrs": 3_600_000, "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
    "w": 604_800_000, "week": 604_800_000, "weeks": 604_800_000,
}
_TERM = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+)")
_EXPECTED = ("expected integer milliseconds, a timedelta, a Beam Duration or an interval "
             "string like '1 hour' or '5 minutes'")


def _whole_ms(micros: int, value: Any, what: str) -> int:
    ms, rest = divmod(micros, 1000)
    if rest:
        raise ValueError(f"{what}: {value!r} is not a whole number of milliseconds")
    return ms


def duration_ms(value: Any, what: str) -> int:
    """A duration in integer milliseconds, from an ``int`` (ms; also NumPy integers), an
    integral ``float``, a ``datetime.timedelta``, an object with integer ``micros`` (Beam's
    ``Duration``) or an interval string (``"1 hour"``, ``"90 s"``, ``"1 hour 30 minutes"``,
    ``"interval 2 days"``). ``what`` names the parameter in errors: ``TypeError`` for another
    type, ``ValueError`` for an unreadable string or a fraction of a millisecond."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: {_EXPECTED}, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError(f"{what}: {value!r} is not a whole number of milliseconds")
    if isinstance(value, datetime.timedelta):
        micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        return _whole_ms(micros, value, what)
    duck = getattr(value, "micros", None)
    if isinstance(duck, int) and not isinstance(duck, bool):
        return _whole_ms(duck, value, what)
    if isinstance(value, str):
        return _interval_ms(value, what)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: {_EXPECTED}, got {value!r}") from None


def _interval_ms(value: str, what: str) -> int:
    text = value.strip().lower()
    if text.startswith("interval"):
        text = text[len("interval"):].strip()
    terms = _TERM.findall(text)
    if terms and not _TERM.sub("", text).strip():
        total = Fraction(0)  # exact: "1.1 h" is 3960000 ms, not 3960000.0000000005
        for number, unit in terms:
            if unit not in _UNITS_MS:
                raise ValueError(f"{what}: unknown unit {unit!r} in {value!r} (known: ms, s, "
                                 f"min, h, d, w and their long forms)")
            total += Fraction(number) * _UNITS_MS[unit]
        if total.denominator == 1:
            return int(total)
        raise ValueError(f"{what}: {value!r} is not a whole number of milliseconds")
    raise ValueError(f"{what}: {_EXPECTED}, got {value!r}")


def sliding(range: Any, slide: Any, offset: Any = 0) -> dict[str, Any]:
    """Sliding windows ``[start, start + range)`` with ``start = offset + j * slide``, like
    Spark's ``window(ts, range, slide)``, Beam's ``SlidingWindows`` and Flink's
    ``SlidingEventTimeWindows`` (durations: see :func:`duration_ms`)."""
    return {"kind": "sliding", "range": duration_ms(range, "range"),
            "slide": duration_ms(slide, "slide"), "offset": duration_ms(offset, "offset")}


def tumbling(size: Any, offset: Any = 0) -> dict[str, Any]:
    """Tumbling windows: :func:`sliding` with ``slide == range == size``."""
    return {"kind": "tumbling", "size": duration_ms(size, "size"),
            "offset": duration_ms(offset, "offset")}


def over(range: Any) -> dict[str, Any]:
    """Per-event windows: for each event at ``t``, the key's events in ``[t - range, t]``
    (SQL ``RANGE BETWEEN range PRECEDING AND CURRENT ROW``, peers included)."""
    return {"kind": "over", "range": duration_ms(range, "range")}


def count_window(size: int, every: int = 1) -> dict[str, Any]:
    """The key's last ``size`` events, emitted after every ``every``-th event."""
    return {"kind": "count", "size": size, "every": every}


_DURATIONS = {"sliding": ("range", "slide", "offset"), "tumbling": ("size", "offset"),
              "over": ("range",)}


def normalize_window(spec: Any, path: str = "window") -> Any:
    """A window spec with its durations in ms: the dict form with durations given any way
    :func:`duration_ms` reads (errors name ``path.field``); other specs (``adapters`` spec
    objects, count and policy dicts) are returned as they are."""
    if isinstance(spec, Mapping) and spec.get("kind") in _DURATIONS:
        spec = dict(spec)
        for name in _DURATIONS[spec["kind"]]:
            if name in spec:
                spec[name] = duration_ms(spec[name], f"{path}.{name}")
    return spec


def query_of_call(window: Any, windows: Sequence[Any] | None, aggregations: Any,
                  allowed_lateness: Any, **settings: Any) -> dict[str, Any]:
    """The dict form of the query of an engine call with ``window=`` or ``windows=[...]``:
    windows with their durations in ms, ``aggregations`` as a mapping (one ``Aggregation``
    or ``CombineFn`` is named after itself), ``allowed_lateness`` in ms, and ``settings``
    (``nulls``, ``layout``, ...) as given."""
    if (window is None) == (windows is None):
        raise ValueError("give exactly one of window=... or windows=[...]")
    if aggregations is None:
        raise ValueError("aggregations=... is required")
    if isinstance(aggregations, (list, tuple, set, frozenset)):
        raise TypeError(f"aggregations must be a mapping {{output name: spec}} or one "
                        f"Aggregation / CombineFn, got a {type(aggregations).__name__}: "
                        f"name each output, e.g. {{'top': {{'fn': 'max', 'field': 'v'}}}}")
    if isinstance(aggregations, Mapping):
        aggs = dict(aggregations)
    else:
        aggs = {getattr(aggregations, "name", None) or type(aggregations).__name__:
                aggregations}
    specs = [window] if windows is None else list(windows)
    return {"windows": [normalize_window(w, f"windows[{i}]") for i, w in enumerate(specs)],
            "aggregations": aggs,
            "allowed_lateness": duration_ms(allowed_lateness, "allowed_lateness"),
            **settings}


__all__ = ["count_window", "duration_ms", "normalize_window", "over", "query_of_call",
           "sliding", "tumbling"]
