"""Spark's schema of the Python side's JSON output; the column names are
:mod:`adapters.engine.columns`' (those imported here are read by the bucket layout)."""

from adapters.engine.columns import (
    AGGS_OUT,
    END_OUT,
    EVENT_OUT,
    KEY_IN,
    KEY_OUT,
    ORDER_IN,
    START_OUT,
    TIME_IN,
    TIME_OUT,
    VALUE_IN,
    WINDOW_OUT,
)

#: Output of the Python side in streaming with JSON rows (window index -1 marks a late event).
WIDE_SCHEMA = (f"{KEY_OUT} string, {WINDOW_OUT} int, {START_OUT} long, {END_OUT} long, "
               f"{TIME_OUT} long, {EVENT_OUT} string, {AGGS_OUT} string")

__all__ = ["KEY_IN", "ORDER_IN", "TIME_IN", "VALUE_IN", "WIDE_SCHEMA"]
