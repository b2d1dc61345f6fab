"""Output rows (the one output schema: ``adapters.engine.rows.output_columns``) back in the
conformance oracle's form, the driver's rows, so that real jobs are compared with
:func:`tests.conformance.runner.compare`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.engine.rows import WINDOW, WINDOW_END, WINDOW_START


def driver_row(record: Mapping[str, Any], *, key: str, time: str, fields: Sequence[str],
               aggregations: Sequence[str]) -> dict[str, Any]:
    """The driver's row of an output ``record`` (a dict of its columns): ``window`` (0 when
    the query has one spec), ``key``, then ``start``/``end`` for a ``[start, end)`` row or
    ``time`` and ``event`` (a dict of the event ``fields``) for a per-event row, then the
    ``aggregations``."""
    row = {"window": record.get(WINDOW, 0), "key": record[key]}
    if record.get(WINDOW_START) is not None:
        row["start"], row["end"] = record[WINDOW_START], record[WINDOW_END]
    else:
        row["time"] = record[time]
        row["event"] = {name: record[name] for name in fields}
    row.update({name: record[name] for name in aggregations})
    return row
