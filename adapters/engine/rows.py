"""The columns of the driver's output rows, for engines that declare an output schema.

Every row the driver emits is a dict ``{"window": spec index, "key": key, ...}`` followed by
the bounds of its window and then one entry per aggregation (output name, in the query's
order):

* ``"start", "end"`` (ms, ``[start, end)``) for sliding, tumbling, count and policy windows;
* ``"time", "event"`` (the event's time and value) for per-event (OVER) windows.

A query that mixes both kinds emits both shapes; an engine with one declared row type gives
it both groups of columns, and a row leaves the other group's columns empty.
"""

from __future__ import annotations

from adapters.query.specs import OverWindow, Query

#: the columns of a row of a ``[start, end)`` window, after ``window`` and ``key``
RANGE_BOUNDS = ("start", "end")
#: the columns of a per-event (OVER) row, after ``window`` and ``key``
EVENT_BOUNDS = ("time", "event")


def row_columns(query: Query) -> tuple[str, ...]:
    """The columns of ``query``'s rows in order: ``window, key``, the bounds of each window
    kind the query has (:data:`RANGE_BOUNDS`, :data:`EVENT_BOUNDS`), then the
    aggregations."""
    over = [isinstance(w, OverWindow) for w in query.windows]
    columns = ["window", "key"]
    if not all(over):
        columns += RANGE_BOUNDS
    if any(over):
        columns += EVENT_BOUNDS
    return (*columns, *(a.name for a in query.aggregations))


__all__ = ["EVENT_BOUNDS", "RANGE_BOUNDS", "row_columns"]
